"""The catalogue of Pi knobs: each one with its exact change and its source, listed by the CLI."""

from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from sbclab import cli
from sbclab.cluster import knobs, spec
from sbclab.cluster.state import ClusterInfo
from sbclab.errors import SbclabError
from sbclab.stack import config
from sbclab.stack.choices import StackChoices
from sbclab.stack.distribution import Distribution
from sbclab.stack.versions import STACKS


def test_every_knob_says_what_it_changes_where_and_from_which_seed():
    assert {k.name for k in knobs.KNOBS} == {"pcie-gen3", "overclock", "fstrim", "crc-off", "quick-start",
                                             "open-ports", "master-separate"}
    assert all(k.change and k.where and k.source for k in knobs.KNOBS)
    assert "dtparam=pciex1_gen=3" in knobs.get("pcie-gen3").change
    assert knobs.get("overclock").change.splitlines() == ["arm_freq=3000", "over_voltage_delta=50000"]


def test_the_cli_lists_them_and_an_unknown_one_is_named():
    out = CliRunner().invoke(cli.main_group, ["knobs"]).output
    assert "pcie-gen3" in out and "crc-off" in out
    with pytest.raises(SbclabError, match="Knobs: pcie-gen3"):
        knobs.get("turbo")


def test_cluster_knobs_are_taken_and_firmware_or_layout_ones_are_pointed_elsewhere():
    assert knobs.check_cluster_knobs(["fstrim", "crc-off", "fstrim"]) == ("crc-off", "fstrim")
    with pytest.raises(SbclabError, match="knobs apply pcie-gen3"):
        knobs.check_cluster_knobs(["pcie-gen3"])
    with pytest.raises(SbclabError, match="not applied by sbclab"):
        knobs.check_cluster_knobs(["master-separate"])
    assert config.knob_overrides(("crc-off",)) == {"hdfs-site": {"dfs.checksum.type": "NULL"}}
    assert config.knob_overrides(("fstrim",)) == {}


def test_crc_off_reaches_hdfs_site_and_every_run_records_the_knobs(tmp_path):
    s = spec.build(backend="emulated", workers=2, cores=2, memory_bytes=24 * 2**30).model_copy(update={"knobs": ("crc-off",)})
    layout = config.NodeLayout(tmp_path / "conf", tmp_path / "disk", tmp_path / "logs")
    values = config.settings(s, StackChoices(), s.master, layout, Distribution(STACKS["lee-park-2026"], tmp_path / "h", tmp_path / "s", tmp_path / "j.jar"))
    assert values["hdfs-site"]["dfs.checksum.type"] == "NULL"

    found = knobs.of_cluster(SimpleNamespace(spec=s, info=ClusterInfo()))
    assert found == {"crc-off": [n.name for n in s.nodes], "master-separate": [s.master.name]}


def test_a_firmware_knob_goes_in_a_marked_block_and_comes_out_exactly():
    original = "dtparam=audio=on\n[pi4]\narm_boost=1\n"
    applied = knobs.with_knob(original, "overclock")
    assert applied.startswith(original)
    block = applied[len(original):].splitlines()
    assert block == ["# sbclab knob overclock: begin", "[all]", "arm_freq=3000", "over_voltage_delta=50000",
                     "# sbclab knob overclock: end"], "under [all], so the [pi4] section above does not take it"
    assert knobs.applied_in(applied) == ["overclock"]
    assert knobs.with_knob(applied, "overclock") == applied, "applying twice changes nothing"
    both = knobs.with_knob(applied, "pcie-gen3")
    assert knobs.applied_in(both) == ["pcie-gen3", "overclock"]
    assert knobs.without_knob(knobs.without_knob(both, "overclock"), "pcie-gen3") == original
    assert knobs.with_knob("no_newline=1", "pcie-gen3").startswith("no_newline=1\n# sbclab knob pcie-gen3")
    with pytest.raises(SbclabError, match="not a firmware knob"):
        knobs.with_knob(original, "crc-off")


def test_quick_start_reaches_every_jvm_of_the_cluster(tmp_path):
    s = spec.build(backend="emulated", workers=2, cores=2, memory_bytes=24 * 2**30).model_copy(
        update={"knobs": ("quick-start",)})
    layout = config.NodeLayout(tmp_path / "conf", tmp_path / "disk", tmp_path / "logs")
    values = config.settings(s, StackChoices(), s.master, layout, Distribution(STACKS["lee-park-2026"], tmp_path / "h", tmp_path / "s", tmp_path / "j.jar"))
    for file, key in (("mapred-site", "mapreduce.map.java.opts"), ("mapred-site", "yarn.app.mapreduce.am.command-opts"),
                      ("spark-defaults", "spark.executor.extraJavaOptions"),
                      ("spark-defaults", "spark.driver.extraJavaOptions")):
        # The ApplicationMaster's after the heap a node given a share of its board's RAM gives it (heaps.py).
        *heap, flag = values[file][key].split()
        assert flag == "-XX:TieredStopAtLevel=1" and all(h.startswith("-Xmx") for h in heap), key
    # The knob's documented setting is what the configuration gets: the two are written apart
    # (the knob list sits below the stack that renders it).
    documented = [line.split("=", 1) for line in knobs.get("quick-start").change.splitlines() if not line.startswith("-")]
    rendered = {key: value for file in values.values() for key, value in file.items()}
    assert documented and all(rendered.get(key) == value for key, value in documented), documented
    assert config.jvm_flags(s.knobs) == ["-XX:TieredStopAtLevel=1"] and config.jvm_flags(()) == []
