"""A run's memory per node on fake cgroup hierarchies and synthetic samples: the peak against the limit,
the OOM kills of the run, the flag they raise, and stored runs from before memory was recorded."""

import os
from pathlib import Path

import pytest

from sbclab.cluster import cgroups, spec
from sbclab.cluster.transport import NodeParts
from sbclab.monitor import measure, readings
from sbclab.monitor.memory import MemoryWatch, sampled_oom_kills
from sbclab.results.store import ResultsStore

from .test_monitor_measure import SHAPE, recording
from .test_results import make_run

FIXTURES = Path(__file__).parent / "fixtures"
V1_OOM_CONTROL = "oom_kill_disable 0\nunder_oom 0\noom_kill {}\n"
V2_EVENTS = "low 0\nhigh 12\nmax 3\noom 1\noom_kill {}\noom_group_kill 0\n"


@pytest.fixture
def v1(tmp_path, monkeypatch):
    for controller in cgroups.V1_CONTROLLERS:
        (tmp_path / controller).mkdir()
    monkeypatch.setattr(cgroups, "ROOT", tmp_path)
    return tmp_path


@pytest.fixture
def v2(tmp_path, monkeypatch):
    (tmp_path / "cgroup.controllers").write_text("cpu io memory pids\n")
    monkeypatch.setattr(cgroups, "ROOT", tmp_path)
    return tmp_path


def v1_group(root: Path, node: str, max_usage: int, oom_kills: int | None) -> Path:
    group = root / "memory" / "sbclab" / "lab" / node
    group.mkdir(parents=True, exist_ok=True)
    (group / "memory.max_usage_in_bytes").write_text(f"{max_usage}\n")
    control = V1_OOM_CONTROL.format(oom_kills) if oom_kills is not None else "oom_kill_disable 0\nunder_oom 0\n"
    (group / "memory.oom_control").write_text(control)
    return group


def v2_group(root: Path, node: str, peak: int | None, oom_kills: int) -> Path:
    group = root / "sbclab" / "lab" / node
    group.mkdir(parents=True, exist_ok=True)
    if peak is not None:
        (group / "memory.peak").write_text(f"{peak}\n")
    (group / "memory.events").write_text(V2_EVENTS.format(oom_kills))
    return group


def test_v1_peak_starts_over_at_zero_and_the_oom_counter_is_read(v1):
    group_dir = v1_group(v1, "worker1", max_usage=3 * 2**30, oom_kills=2)
    group = cgroups.NodeCgroup("lab", "worker1")
    assert group.oom_kills() == 2
    peak = group.memory_peak()
    peak.start()
    assert (group_dir / "memory.max_usage_in_bytes").read_text() == "0", "the high before the run is forgotten"
    (group_dir / "memory.max_usage_in_bytes").write_text(f"{700 * 2**20}\n")  # what the kernel kept during the run
    assert peak.read() == 700 * 2**20


def test_a_kernel_that_does_not_count_oom_kills_gives_none_not_zero(v1):
    v1_group(v1, "worker1", max_usage=0, oom_kills=None)
    assert cgroups.NodeCgroup("lab", "worker1").oom_kills() is None


def test_v2_peak_starts_over_for_its_own_open_file(v2):
    group_dir = v2_group(v2, "worker1", peak=3 * 2**30, oom_kills=0)
    group = cgroups.NodeCgroup("lab", "worker1")
    assert group.oom_kills() == 0
    peak = group.memory_peak()
    peak.start()
    (group_dir / "memory.peak").write_text(f"{900 * 2**20}\n")  # the kernel's answer through the reset file
    assert peak.read() == 900 * 2**20


def test_v2_lifetime_peak_counts_only_when_the_run_raised_it(v2, monkeypatch):
    group_dir = v2_group(v2, "worker1", peak=2**30, oom_kills=0)
    opened = os.open

    def read_only_peak(path, flags, *args):  # memory.peak of Linux 5.19-6.11 takes no write
        if str(path).endswith("memory.peak") and flags & os.O_RDWR:
            raise PermissionError(13, "Permission denied")
        return opened(path, flags, *args)

    monkeypatch.setattr(cgroups.os, "open", read_only_peak)
    group = cgroups.NodeCgroup("lab", "worker1")
    below = group.memory_peak()
    below.start()
    assert below.read() is None and "did not pass it" in below.why
    raised = group.memory_peak()
    raised.start()
    (group_dir / "memory.peak").write_text(f"{3 * 2**30}\n")
    assert raised.read() == 3 * 2**30


def test_v2_without_memory_peak_says_so(v2):
    v2_group(v2, "worker1", peak=None, oom_kills=0)
    peak = cgroups.NodeCgroup("lab", "worker1").memory_peak()
    peak.start()
    assert peak.read() is None and "no memory.peak" in peak.why


class CgroupNodes:
    """The two facts of a transport a MemoryWatch asks: each node's memory cgroup and its limit."""

    spec = SHAPE

    def memory_group(self, node):
        return cgroups.NodeCgroup("lab", node.name)

    def parts(self, node):
        return NodeParts(scope="node", memory_limit=node.memory_bytes)


def watched_run(root: Path, kills_during_run: int) -> dict[str, dict]:
    """A recording's cgroup readings: worker1 peaks at 1.5 GiB and loses kills_during_run processes."""
    for node in ("master", "worker1"):
        v1_group(root, node, max_usage=4 * 2**30, oom_kills=3)
    watch = MemoryWatch(CgroupNodes())
    watch.start()
    worker = root / "memory" / "sbclab" / "lab" / "worker1"
    (worker / "memory.max_usage_in_bytes").write_text(f"{3 * 2**29}\n")
    (worker / "memory.oom_control").write_text(V1_OOM_CONTROL.format(3 + kills_during_run))
    return watch.stop()


def test_a_run_with_an_oom_kill_is_flagged_naming_the_node_and_count(v1):
    raw = recording()
    raw.memory = watched_run(v1, kills_during_run=2)
    m, _ = measure.summarise(raw, start=105.0, end=115.0, spec=SHAPE, engine=None, counters={},
                             input_bytes=None, engine_phases=[])
    worker, master = m.memory["worker1"], m.memory["master"]
    assert (worker.limit_bytes, worker.peak_bytes, worker.peak_source, worker.oom_kills) == \
        (SHAPE.node("worker1").memory_bytes, 3 * 2**29, "cgroup", 2)
    assert master.oom_kills == 0 and master.peak_bytes == 0, "the master's high before the run is not its peak"
    [flag] = [f for f in m.flags if f.kind == "oom_kill"]
    assert flag.node == "worker1" and "killed 2 processes of worker1" in flag.detail
    run = make_run().model_copy(update={"measurements": m})
    assert run.valid and run.flagged and not run.headline


def test_a_run_without_oom_kills_is_not_flagged_by_memory(v1):
    raw = recording()
    raw.memory = watched_run(v1, kills_during_run=0)
    m, _ = measure.summarise(raw, start=105.0, end=115.0, spec=SHAPE, engine=None, counters={},
                             input_bytes=None, engine_phases=[])
    assert not m.flags and m.memory["worker1"].oom_kills == 0
    assert m.memory["worker1"].peak_share == pytest.approx(3 * 2**29 / SHAPE.node("worker1").memory_bytes)


def test_a_cgroup_without_a_peak_of_the_run_falls_back_to_the_samplers_labelled_as_such(v2):
    for node in ("master", "worker1"):
        v2_group(v2, node, peak=None, oom_kills=0)
    watch = MemoryWatch(CgroupNodes())
    watch.start()
    raw = recording()
    raw.memory = watch.stop()
    m, _ = measure.summarise(raw, start=105.0, end=115.0, spec=SHAPE, engine=None, counters={},
                             input_bytes=None, engine_phases=[])
    worker = m.memory["worker1"]
    assert worker.peak_source == "sampled" and worker.peak_bytes == 2**30  # the samples' resident memory
    assert any("no memory.peak" in n for n in worker.notes)


def board_samples(oom_kills: list[int | None]) -> list[dict]:
    return [{"t": 100.0 + i, "memory": {"total": 4 * 2**30, "used": (1 + i % 3) * 2**29, "available": 2**30,
                                        "cached": 0, "swap_used": 0},
             **({"oom_kills": k} if k is not None else {})} for i, k in enumerate(oom_kills)]


def test_a_boards_memory_comes_from_its_samples_and_its_kernels_oom_counter():
    counts = [5] * 8 + [6] * 13  # one kill at 108 s
    assert sampled_oom_kills(board_samples(counts)) == (1, 108.0)
    assert sampled_oom_kills(board_samples([5, 2, 2])) == (0, None), "a counter that went back is a reboot"
    raw = recording()
    for name in ("master", "worker1"):
        raw.nodes[name]["samples"] = board_samples(counts if name == "worker1" else [0] * 21)
        raw.nodes[name]["target"] = {"scope": "node"}
    m, _ = measure.summarise(raw, start=105.0, end=115.0, spec=SHAPE, engine=None, counters={},
                             input_bytes=None, engine_phases=[])
    worker = m.memory["worker1"]
    assert (worker.limit_bytes, worker.peak_source, worker.oom_kills) == (4 * 2**30, "sampled", 1)
    assert worker.peak_bytes == 3 * 2**29
    [flag] = [f for f in m.flags if f.kind == "oom_kill"]
    assert flag.node == "worker1" and flag.at == 108.0


def test_samples_without_an_oom_counter_record_none_with_the_reason():
    raw = recording()
    raw.nodes["worker1"]["samples"] = board_samples([None] * 21)
    raw.nodes["worker1"]["samples"][0]["errors"] = {"oom kills": "ValueError: no oom_kill in /proc/vmstat"}
    raw.nodes["worker1"]["target"] = {"scope": "node"}
    m, _ = measure.summarise(raw, start=105.0, end=115.0, spec=SHAPE, engine=None, counters={},
                             input_bytes=None, engine_phases=[])
    worker = m.memory["worker1"]
    assert worker.oom_kills is None and any("no oom_kill in /proc/vmstat" in n for n in worker.notes)
    assert not [f for f in m.flags if f.kind == "oom_kill"]


def test_the_kernels_oom_counter_is_read_from_vmstat():
    assert readings.vmstat_oom_kills((FIXTURES / "monitor" / "vmstat.txt").read_text()) == 0
    with pytest.raises(ValueError, match="Linux 4.13"):
        readings.vmstat_oom_kills("pswpin 0\npswpout 0\n")


def test_runs_stored_before_memory_was_recorded_still_load(tmp_path):
    runs = ResultsStore(FIXTURES / "results").runs()
    assert runs and all(r.measurements is None or r.measurements.memory == {} for r in runs)
    sampled = [r for r in runs if r.measurements]
    assert sampled and all(not any(f.kind == "oom_kill" for f in r.measurements.flags) for r in sampled)
