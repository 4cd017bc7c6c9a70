import shutil

import pytest
from click.testing import CliRunner

from sbclab.cli import main_group
from sbclab.errors import SbclabError
from sbclab.cluster import spec as cluster_spec
from sbclab.experiments import model, plan
from sbclab.experiments.orchestrator import describe
from sbclab.stack import versions

from .test_spec import host

BASE = {"workloads": ["wordcount", "pi"], "workers": [1, 2], "sizes": ["8MB", "16MB"], "repetitions": 2}


def test_expansion_covers_the_matrix_once():
    cells = model.cells(model.parse(BASE))
    # wordcount: 2 workers x 2 sizes x 2 reps x 2 engines; pi ignores sizes: 2 workers x 2 reps x 2 engines
    assert len(cells) == 16 + 8
    assert len({c.key for c in cells}) == len(cells)
    assert {c.size_bytes for c in cells if c.workload == "pi"} == {None}


def test_cells_are_grouped_by_cluster_shape():
    shapes = [c.shape for c in model.cells(model.parse({**BASE, "storage": ["nvme", "microsd"]}))]
    changes = sum(1 for a, b in zip(shapes, shapes[1:]) if a != b)
    assert changes == len(set(shapes)) - 1


def test_keys_are_stable_and_depend_on_what_defines_a_run():
    a = model.cells(model.parse(BASE))
    b = model.cells(model.parse(BASE))
    assert [c.key for c in a] == [c.key for c in b]
    other = model.cells(model.parse({**BASE, "parameters": {"wordcount": {"seed": 7}}}))
    assert {c.key for c in a if c.workload == "wordcount"}.isdisjoint({c.key for c in other if c.workload == "wordcount"})
    assert {c.key for c in a if c.workload == "pi"} == {c.key for c in other if c.workload == "pi"}


def test_defaults_are_the_seeds():
    e = model.parse({"workloads": ["pi", "dfsio-write"]})
    assert e.repetitions == 5 and e.engines_for("pi") == ["hadoop", "spark"]
    cell = next(c for c in model.cells(e) if c.workload == "pi")
    assert cell.parameters == {"maps": 100, "samples_per_map": 10_000}
    assert next(c for c in model.cells(e) if c.workload == "dfsio-write").parameters["files"] == 10


@pytest.mark.parametrize("raw, message", [
    ({"workloads": ["wordcont"]}, "unknown workload 'wordcont'"),
    ({"workloads": ["pi"], "engines": ["flink"]}, "engines.0"),
    ({"workloads": ["pi"], "workers": [0]}, "out of range"),
    ({"workloads": ["pi"], "sizes": ["lots"]}, "size"),
    ({"workloads": ["pi"], "parameters": {"pi": {"slices": 3}}}, "unknown parameter"),
    ({"workloads": ["pi"], "colour": "red"}, "colour"),
    ({"workloads": ["wordcount"], "sizes": [True]}, "True is not a data size"),
    ({"workloads": ["wordcount"], "sizes": [float("-inf")]}, "finite number"),
    ({"workloads": ["wordcount"], "sizes": [float("nan")]}, "finite number"),
    ({"workloads": ["pi"], "parameters": {"pi": {"maps": -5}}}, "Pi's maps -5 is not a count of 1 to 10,000"),
    ({"workloads": ["pi"], "parameters": {"pi": {"maps": 0}}}, "Pi's maps 0"),
    ({"workloads": ["pi"], "parameters": {"pi": {"samples_per_map": True}}}, "Pi's samples_per_map True"),
    ({"workloads": ["pi"], "parameters": {"pi": {"samples_per_map": "many"}}}, "Pi's samples_per_map 'many'"),
    ({"workloads": ["pi"], "cluster": {"master_board": "rpi5b"}, "layouts": ["master-is-worker"]}, "master of its own"),
])
def test_bad_experiments_are_refused_naming_the_field(raw, message):
    with pytest.raises(SbclabError, match=message):
        model.parse(raw, "x.yaml")


def test_a_master_board_of_its_own_is_kept_for_a_separate_master():
    e = model.parse({"workloads": ["pi"], "cluster": {"board": "rock5b", "master_board": "rpi5b"}})
    assert e.cluster.master_board == "rpi5b" and e.layouts == ["separate-master"]


def test_storage_need_counts_intermediate_data():
    e = model.parse({"workloads": ["terasort", "grep"], "sizes": ["1GB"], "presets": ["paper"]})
    need, which = plan.storage_needed(e, 2, "paper")
    assert which.startswith("terasort") and need == 6 * 10**9


def test_node_benchmarks_run_once_per_node_and_the_mix_on_the_last_shape():
    e = model.parse({"workloads": ["sysbench-cpu", "iperf", "hpl"], "workers": [2], "repetitions": 1,
                     "parameters": {"hpl": {"nodes": [1, 2]}}})
    cells = model.cells(e)
    assert [c.parameters["node"] for c in cells if c.workload == "sysbench-cpu"] == ["master", "worker1", "worker2"]
    assert [(c.parameters["node"], c.parameters["peer"]) for c in cells if c.workload == "iperf"] == [
        ("worker1", "master"), ("worker2", "master")]
    assert [c.parameters["nodes"] for c in cells if c.workload == "hpl"] == [1, 2]
    assert {c.engine for c in cells} == {"node", "mpi"}
    mixed = model.cells(model.parse({**BASE, "concurrent": {"size": "4MB", "workloads": ["wordcount", "pi"]}}))
    assert [c.workload for c in mixed[-2:]] == ["mix-sequential", "mix-concurrent"]
    assert mixed[-1].shape == mixed[-3].shape


def test_a_workload_given_no_engine_it_runs_on_is_refused():
    with pytest.raises(SbclabError, match="none of the engines"):
        model.parse({"workloads": ["sysbench-cpu"], "engines": ["hadoop"]})


def _fixed_host(monkeypatch):
    """This test's host: 2 cores, 24 GiB and the calibration of tests/unit/test_spec.py."""
    monkeypatch.setattr(plan.calibration, "current", lambda progress=None: host())
    monkeypatch.setattr(plan.cluster_spec, "host_cores", lambda: 2)
    monkeypatch.setattr(plan.cluster_spec, "host_memory_bytes", lambda: 24 * 2**30)
    monkeypatch.setattr(plan, "_check_host_disk", lambda spec: None)


def test_a_processes_cluster_larger_than_this_hosts_free_disk_is_refused_before_it_starts(monkeypatch, tmp_path):
    monkeypatch.setenv("SBCLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(plan.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**12, 950 * 10**9, 50 * 10**9))

    def terasort(size: str) -> model.Experiment:
        return model.parse({"workloads": ["terasort"], "sizes": [size], "repetitions": 1,
                            "cluster": {"backend": "processes"}})
    with pytest.raises(SbclabError) as err:
        plan.prepare(terasort("200GB"), tmp_path / "r")
    assert "of node disks" in err.value.message and "has 50 GB free" in err.value.message
    assert "SBCLAB_HOME" in err.value.hint
    plan.prepare(terasort("64MB"), tmp_path / "r")


@pytest.mark.parametrize("size", ["1001TB", "100000000000000000000000TB", 1.0e23, "9" * 400])
def test_a_size_no_cluster_could_hold_is_refused(size):
    with pytest.raises(SbclabError) as err:
        model.parse({"workloads": ["terasort"], "sizes": [size]})
    assert "more data than any cluster sbclab runs could hold (1 PB at most)" in err.value.message
    assert model.parse({"workloads": ["terasort"], "sizes": ["1000TB"]}).sizes == [10**15]


def test_one_experiment_runs_every_shape_at_one_scale(monkeypatch, tmp_path):
    _fixed_host(monkeypatch)
    e = model.parse({"workloads": ["pi"], "workers": [1, 2, 4], "repetitions": 1,
                     "cluster": {"backend": "emulated"}})
    found = plan.prepare(e, tmp_path)
    own = {shape[2]: scale.factor for shape, scale in found.own_scales.items()}
    assert own[1] > own[2] > own[4]  # each shape on its own would get a different factor
    factors = {spec.scale.factor for spec in found.specs.values()}
    memory = {spec.scale.memory_factor for spec in found.specs.values()}
    assert factors == {own[4]} and len(memory) == 1  # the largest all of them can have
    assert found.shared_scale.set_by.startswith("4 x rpi5b")
    assert all(s.scale.limited_by == found.shared_scale.set_by for s in found.specs.values())
    one = found.specs[("nvme", "paper", 1, "separate-master", "native", versions.DEFAULT)]
    four = found.specs[("nvme", "paper", 4, "separate-master", "native", versions.DEFAULT)]
    assert one.worker_nodes[0].cpu_cores == four.worker_nodes[0].cpu_cores


def test_a_fixed_scale_is_kept_and_one_shape_keeps_its_own(monkeypatch, tmp_path):
    _fixed_host(monkeypatch)
    fixed = plan.prepare(model.parse({"workloads": ["pi"], "workers": [1, 2], "repetitions": 1,
                                      "cluster": {"backend": "emulated", "scale": 0.05}}), tmp_path)
    assert {s.scale.factor for s in fixed.specs.values()} == {0.05} and fixed.shared_scale is None
    alone = plan.prepare(model.parse({"workloads": ["pi"], "workers": [2], "repetitions": 1,
                                      "cluster": {"backend": "emulated"}}), tmp_path)
    assert alone.shared_scale is None and alone.specs[("nvme", "paper", 2, "separate-master", "native", versions.DEFAULT)].scale.limited_by != ""


def test_the_dry_run_shows_each_shape_with_its_scale(monkeypatch, tmp_path):
    _fixed_host(monkeypatch)
    done = CliRunner().invoke(main_group, ["bench", "--workloads", "pi", "--workers", "1,4", "--repetitions", "1",
                                           "--backend", "emulated", "--dry-run", "--results", str(tmp_path)])
    assert done.exit_code == 0, (done.output, done.exception)
    assert "one scale for the whole experiment" in done.output and "set by 4 x rpi5b" in done.output
    estimated = CliRunner().invoke(main_group, ["bench", "--workloads", "pi,grep", "--engines", "hadoop",
                                                "--workers", "1,4", "--repetitions", "1", "--backend", "emulated",
                                                "--estimate", "--results", str(tmp_path)])
    assert estimated.exit_code == 0, (estimated.output, estimated.exception)
    assert "total: about" in estimated.output and "without an estimate" not in estimated.output
    # Nobody published a Grep time: WordCount's stand in, and the estimate says so.
    assert "as wordcount's" in " ".join(estimated.output.split())


def test_bring_up_names_the_master_of_each_layout():
    build = lambda **kw: cluster_spec.build(backend="emulated", board="rpi4b-4gb", storage="microsd-evo", cores=2,  # noqa: E731
                                            memory_bytes=24 * 2**30, **kw)
    assert describe(build()) == "master + 2 x rpi4b-4gb/microsd-evo"
    assert describe(build(layout="desktop-master")) == "master (desktop-i5-9600k/nvme-p31-gen3) + 2 x rpi4b-4gb/microsd-evo"
    assert describe(build(layout="master-is-worker")) == "2 x rpi4b-4gb/microsd-evo, the first also the master"


def test_container_cells_are_dropped_and_said_once_where_no_container_can_run(monkeypatch, tmp_path):
    _fixed_host(monkeypatch)
    said = []
    e = model.parse({"workloads": ["pi"], "workers": [1], "repetitions": 2, "runtimes": ["native", "container"],
                     "cluster": {"backend": "processes"}})
    found = plan.prepare(e, tmp_path, say=said.append)
    assert found.cells and {c.runtime for c in found.cells} == {"native"}
    assert len(said) == 1 and "plain processes" in said[0] and "native cells go ahead" in said[0]
