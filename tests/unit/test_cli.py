import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from sbclab.cli import main_group
from sbclab.cluster import inventory
from sbclab.cluster import spec as cluster_spec
from sbclab.cluster.inventory import BoardAccess
from sbclab.cluster.state import ClusterInfo, ClusterState


def sbclab(*args):
    return subprocess.run([sys.executable, "-c", "from sbclab.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("path", [[], ["cluster"], ["cluster", "up"], ["cluster", "status"], ["cluster", "down"],
                                  ["run"], ["results", "summary"], ["stack", "fetch"], ["profiles", "list"],
                                  ["report"], ["compare"], ["query"], ["micro"], ["hpl"]])
def test_every_command_has_help(path):
    result = CliRunner().invoke(main_group, [*path, "--help"])
    assert result.exit_code == 0
    assert "Usage:" in result.output


def test_run_accepts_the_documented_options():
    help_text = CliRunner().invoke(main_group, ["run", "--help"]).output
    for option in ("--workers", "--profile", "--storage", "--size", "--preset", "--results"):
        assert option in help_text


def test_bad_size_is_a_sentence_with_an_example_not_a_traceback():
    done = sbclab("run", "--size", "lots")
    assert done.returncode != 0
    assert "256MB" in done.stderr and "Traceback" not in done.stderr


def test_a_workload_the_tuner_does_not_run_is_refused_with_the_ones_it_does():
    result = CliRunner().invoke(main_group, ["tune", "terasort,tpch"])
    assert result.exit_code == 2 and "tpch is not a workload the tuner runs" in result.output
    assert "wordcount, grep, terasort, sort, pi" in result.output and "Traceback" not in result.output


def test_unknown_profile_lists_valid_names():
    done = sbclab("cluster", "up", "--profile", "rpi9")
    assert done.returncode == 2
    assert "rpi5b" in done.stderr and "Traceback" not in done.stderr


def test_status_of_a_cluster_that_is_not_up(tmp_path):
    done = subprocess.run([sys.executable, "-c", "from sbclab.cli import main; main()", "cluster", "status",
                           "--name", "nosuch"], capture_output=True, text=True, env={"SBCLAB_HOME": str(tmp_path),
                                                                                     "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert "sbclab cluster up" in done.stderr


def test_profiles_list_shows_boards_and_media():
    out = CliRunner().invoke(main_group, ["profiles", "list"]).output
    assert "rpi5b" in out and "microsd" in out


def test_a_bad_power_file_names_the_field(tmp_path):
    power = tmp_path / "power.yml"
    power.write_text("worker1: {source: http-plug, format: shelly}\n")
    done = sbclab("run", "--power-file", str(power))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "url" in done.stderr and "power.worker1" in done.stderr


def test_a_power_source_for_a_node_the_cluster_lacks_is_refused():
    from sbclab.errors import SbclabError
    from sbclab.monitor.settings import MonitorSettings
    settings = MonitorSettings(power={"worker7": {"source": "rapl"}})
    with pytest.raises(SbclabError, match="worker7"):
        settings.check_nodes(["master", "worker1", "worker2"])


def test_containers_that_cannot_run_are_said_once_and_the_native_runs_go_ahead():
    done = sbclab("micro", "--benchmarks", "web", "--container", "podman", "--backend", "processes", "--node", "nowhere")
    assert done.stderr.count("native runs go ahead") == 1 and "emulated nodes" in done.stderr
    assert "no node 'nowhere'" in done.stderr and "Traceback" not in done.stderr


def test_an_unknown_micro_benchmark_lists_the_known_ones():
    done = sbclab("micro", "--benchmarks", "cpu,gpu")
    assert done.returncode != 0 and "gpu" in done.stderr and "netpipe" in done.stderr


def test_hpl_refuses_more_nodes_than_workers():
    done = sbclab("hpl", "--workers", "2", "--nodes", "1,4")
    assert done.returncode != 0 and "more workers" in done.stderr


@pytest.mark.parametrize("command", [["run"], ["cluster", "up"]])
def test_a_firmware_knob_given_to_a_cluster_says_where_it_goes(command):
    done = sbclab(*command, "--knob", "overclock", "--backend", "processes")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "sbclab knobs apply overclock" in done.stderr


def test_web_uis_are_exposed_only_on_boards():
    done = sbclab("run", "--expose-web-uis", "--backend", "processes")
    assert done.returncode != 0 and "--inventory" in done.stderr and "Traceback" not in done.stderr


def test_an_experiment_on_boards_takes_its_shapes_from_the_inventory():
    from pathlib import Path
    example = str(Path(__file__).parents[2] / "examples" / "inventory.yml")
    done = CliRunner().invoke(main_group, ["bench", "--workloads", "wordcount", "--engines", "hadoop", "--workers", "1,2",
                                           "--sizes", "1MB", "--repetitions", "1", "--inventory", example, "--dry-run",
                                           "--results", "/nonexistent-sbclab-results"])
    assert done.exit_code == 0, (done.output, done.exception)
    assert "1w rpi5b/nvme-p31-gen3" in done.output and "2w rpi5b/nvme-p31-gen3" in done.output
    too_many = CliRunner().invoke(main_group, ["bench", "--workloads", "wordcount", "--workers", "3", "--sizes", "1MB",
                                               "--inventory", example, "--dry-run"])
    assert too_many.exit_code != 0 and "has 2 worker(s); 3 were asked for" in str(too_many.exception)
    other = CliRunner().invoke(main_group, ["bench", "--workloads", "wordcount", "--workers", "1", "--sizes", "1MB",
                                            "--storage", "microsd", "--inventory", example, "--dry-run"])
    assert other.exit_code != 0 and "the inventory's workers are rpi5b/nvme-p31-gen3" in str(other.exception)


def _boards_nobody_answers(tmp_path) -> Path:
    """An inventory of boards on this host's loopback, on ports nothing listens on."""
    ports = []
    for _ in range(3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    key = tmp_path / "id"
    key.write_text("unused: the connection is refused first\n")
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(textwrap.dedent(f"""\
        all:
          vars: {{address: 127.0.0.1, key: {key}, board: rpi5b, storage: nvme-p31-gen3, data_dir: /srv/sbclab}}
          children:
            master: {{hosts: {{pi0: {{port: {ports[0]}}}}}}}
            workers: {{hosts: {{pi1: {{port: {ports[1]}}}, pi2: {{port: {ports[2]}}}}}}}
        """))
    return hosts


def test_a_cluster_on_boards_that_are_gone_is_forgotten_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("SBCLAB_HOME", str(tmp_path / "home"))
    inv = inventory.load(_boards_nobody_answers(tmp_path))
    state = ClusterState.create(cluster_spec.from_inventory(inv, name="gone"),
                                ClusterInfo(boards=BoardAccess(inventory=inv, known_hosts=str(tmp_path / "known"))))
    state.set_phase("up")

    kept = CliRunner().invoke(main_group, ["cluster", "down", "--name", "gone"])
    assert kept.exit_code != 0 and "--forget" in str(kept.exception), kept.output
    assert "gone" in ClusterState.names()

    forgotten = CliRunner().invoke(main_group, ["cluster", "down", "--name", "gone", "--force", "--forget"])
    assert forgotten.exit_code == 0, (forgotten.output, forgotten.exception)
    assert "forgotten" in forgotten.output and "pi1" in forgotten.output
    assert ClusterState.names() == []


def test_forget_is_refused_for_a_cluster_on_this_host(tmp_path, monkeypatch):
    monkeypatch.setenv("SBCLAB_HOME", str(tmp_path))
    ClusterState.create(cluster_spec.build(name="here", backend="processes", workers=1)).set_phase("up")
    refused = CliRunner().invoke(main_group, ["cluster", "down", "--name", "here", "--forget"])
    assert refused.exit_code != 0 and "real boards" in str(refused.exception)
    assert "here" in ClusterState.names()


def test_a_board_clusters_spec_is_built_in_one_place_and_keeps_its_web_uis_choice(tmp_path):
    """`run --inventory --expose-web-uis` goes through an experiment whose plan builds the boards' spec
    again: the choice must reach it (it used to be lost on the way)."""
    from sbclab.experiments import model, plan

    inv = inventory.load(Path(__file__).resolve().parents[2] / "examples" / "inventory.yml")
    access = BoardAccess(inventory=inv, known_hosts=str(tmp_path / "known"))
    for exposed, web_uis in ((True, "cluster"), (False, "loopback")):
        experiment = model.parse({"workloads": ["pi"], "engines": ["hadoop"], "workers": [2], "repetitions": 1,
                                  "storage": ["nvme-p31-gen3"], "presets": ["stock"],
                                  "cluster": {"backend": "ssh", "board": "rpi5b", "expose_web_uis": exposed,
                                              "spark_manager": "yarn"}})
        found = plan.prepare(experiment, tmp_path / "results", boards=access)
        (shape, spec), = found.specs.items()
        assert found.choices[shape].web_uis == web_uis and spec.workers == 2
        assert plan.board_spec_for(inv, name=spec.name, workers=2) == spec
        assert plan.choices_for(preset="stock", on_boards=True, expose_web_uis=exposed) == found.choices[shape]
