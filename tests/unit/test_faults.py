"""Faults as declared, scheduled, recorded and undone, and read back in the report; with stand-ins for the
cluster (tests/integration/test_faults.py applies them to a real one)."""

import time
from types import SimpleNamespace

import pytest

from sbclab import faults
from sbclab.analysis import faults as fault_analysis
from sbclab.analysis.cells import exclusion_reason, group
from sbclab.cluster import faultrecords
from sbclab.cluster import spec as cluster_spec
from sbclab.cluster.transport import Captured
from sbclab.errors import SbclabError
from sbclab.experiments import model, plan
from sbclab.faults import effects, partition, schedule
from sbclab.faults.base import Applied
from sbclab.results.faults import FaultEffects, FaultRun, FaultSpec
from sbclab.stack.choices import StackChoices

from .test_results import make_run


class _State:
    def __init__(self):
        self.resources = []

    def record(self, kind, **fields):
        entry = {"kind": kind, **fields}
        self.resources.append(entry)
        return entry

    def update(self, entry, **fields):
        entry.update(fields)

    def forget(self, entry):
        if entry in self.resources:
            self.resources.remove(entry)

    def of_kind(self, kind):
        return [r for r in self.resources if r["kind"] == kind]


class _Transport:
    """Runs nothing: remembers what it was asked to run on which node."""

    def __init__(self, spec, fail=()):
        self.spec, self.state, self.ran, self.fail = spec, _State(), [], set(fail)

    def capture(self, node, argv, env=None, timeout_s=120):
        self.ran.append((node.name, argv))
        return Captured(1 if node.name in self.fail else 0, b"", b"no such chain" if node.name in self.fail else b"")


def _cluster(workers=3):
    spec = cluster_spec.build(backend="emulated", board="rpi4b-4gb", storage="microsd-evo", workers=workers, cores=2)
    health = {"dead_datanodes": 0, "under_replicated_blocks": 0, "pending_replication_blocks": 0, "missing_blocks": 0}
    stack = SimpleNamespace(namenode_health=lambda: dict(health), yarn_health=lambda: {"lost_nodemanagers": 0},
                            health=health)
    return SimpleNamespace(spec=spec, choices=StackChoices(), transport=_Transport(spec), stack=stack)


class _Marker:
    """A lasting fault that records an undoing command and counts its applications."""

    name, lasting = "marker", True

    def __init__(self):
        self.applied = []
        self.takes_s = 0.0  # how long applying takes (an iptables chain or a throttle is not instant)

    def check(self, spec):
        pass

    def unsupported(self, backend):
        return None

    def apply(self, cluster, spec, node_name):
        time.sleep(self.takes_s)
        entry = faultrecords.record(cluster.transport, node_name, self.name, heal=[["true", node_name]])
        faultrecords.applied(cluster.transport, entry)
        self.applied.append((node_name, time.monotonic()))
        cluster.stack.health["under_replicated_blocks"] = 7
        return Applied(f"marked {node_name}", entry)


@pytest.fixture
def marker(monkeypatch):
    kind = _Marker()
    monkeypatch.setitem(faults.KINDS, "marker", kind)
    return kind


def test_each_kind_refuses_what_it_cannot_take():
    for declared, said in [({"kind": "kill"}, "needs process"), ({"kind": "kill", "process": "datanode", "for_s": 5},
                                                                   "leave out for_s"),
                           ({"kind": "pause"}, "needs for_s"), ({"kind": "partition"}, "needs for_s"),
                           ({"kind": "fill-disk"}, "needs level_pct"), ({"kind": "slow-disk"}, "needs speed_pct"),
                           ({"kind": "melt"}, "unknown fault 'melt'")]:
        with pytest.raises(ValueError, match=said):
            faults.check(FaultSpec(**declared))
    faults.check(FaultSpec(kind="partition", for_s=30, loss_pct=5))
    assert FaultSpec(kind="partition", for_s=30, loss_pct=5, node="worker2").label == \
        "5 % packet loss on worker2 at 10 s for 30 s"
    assert partition.unsupported("processes") and partition.unsupported("emulated") is None
    assert faults.get("slow-disk").unsupported("ssh") and faults.get("slow-disk").unsupported("emulated") is None
    assert FaultSpec(kind="slow-disk", speed_pct=10, node="worker1").label == "disk slowed to 10 % on worker1 at 10 s"


def test_an_experiments_faults_add_a_faulted_cell_beside_each_and_are_refused_where_they_cannot_apply():
    raw = {"workloads": ["terasort"], "engines": ["hadoop"], "repetitions": 2, "sizes": ["8MB"],
           "faults": [{"kind": "kill", "process": "datanode", "node": "worker2", "at_s": 20}]}
    cells = model.cells(model.parse(raw))
    assert [c.fault is not None for c in cells] == [False, True, False, True]
    assert "under kill datanode on worker2 at 20 s" in cells[1].label()
    only = model.cells(model.parse({**raw, "workloads": ["terasort", "pi"], "engines": None, "engines_of":
                                    {"terasort": ["hadoop"], "pi": ["spark"]}, "repetitions": 1,
                                    "faults": [{"kind": "pause", "for_s": 5, "workloads": ["pi"]}]}))
    assert [(c.workload, c.fault is not None) for c in only] == [("terasort", False), ("pi", False), ("pi", True)]
    with pytest.raises(SbclabError, match="names workload grep, which the experiment does not run"):
        model.parse({**raw, "faults": [{"kind": "pause", "for_s": 5, "workloads": ["grep"]}]})
    with pytest.raises(SbclabError, match="not a worker of its 1-worker cluster"):
        plan._check_faults(model.parse({**raw, "workers": [1]}), "emulated", model.default_node_names)
    with pytest.raises(SbclabError, match="this host's address"):
        plan._check_faults(model.parse({**raw, "faults": [{"kind": "partition", "for_s": 9}]}), "processes",
                           model.default_node_names)
    with pytest.raises(SbclabError, match="sysbench-cpu runs none"):
        plan._check_faults(model.parse({**raw, "workloads": ["sysbench-cpu"], "engines": None}), "emulated",
                           model.default_node_names)


def test_the_nemesis_applies_on_time_undoes_lasting_faults_on_time_and_watches_the_namenode(marker):
    cluster = _cluster()
    spec = FaultSpec(kind="marker", at_s=0.2, for_s=0.3)
    with schedule.Nemesis(cluster, [spec], "run-1") as nemesis:
        time.sleep(0.8)
    [run] = nemesis.runs
    assert run.node in {"worker1", "worker2", "worker3"} and run.detail == f"marked {run.node}"
    assert 0.15 <= run.applied_s < run.healed_s and run.healed_s >= 0.45
    assert cluster.transport.ran == [(run.node, ["true", run.node])]  # undone once, on its node
    assert cluster.transport.state.of_kind("fault") == []
    assert nemesis.watch.worst["under_replicated_blocks"] == 7
    # The node a random fault hits follows from the run's id.
    again = schedule.Nemesis(_cluster(), [spec], "run-1")
    assert again.runs[0].node == run.node


def test_a_lasting_fault_lasts_its_time_from_when_it_was_in_place_however_long_applying_took(marker, monkeypatch):
    marker.takes_s = 0.25
    monkeypatch.setattr(schedule, "WATCH_EVERY_S", 0.05)  # the timeline wakes often, as it does over a long fault
    with schedule.Nemesis(_cluster(), [FaultSpec(kind="marker", at_s=0.1, for_s=0.3, node="worker1")], "r") as nemesis:
        time.sleep(1.0)
    [run] = nemesis.runs
    assert run.applied_s >= 0.35 and run.healed_s >= run.applied_s + 0.3


def test_a_fault_still_in_place_when_the_job_ends_is_undone_then_and_one_not_yet_due_never_applied(marker):
    cluster = _cluster()
    with schedule.Nemesis(cluster, [FaultSpec(kind="marker", at_s=0, for_s=60, node="worker1"),
                                    FaultSpec(kind="marker", at_s=60, for_s=1, node="worker2")], "r") as nemesis:
        time.sleep(0.3)
    first, second = nemesis.runs
    assert first.applied_s is not None and first.healed_s is not None and second.applied_s is None
    assert second.problems == ["the job ended before the fault was due (marker on worker2 at 60 s for 1 s): not applied"]
    assert [n for n, _ in marker.applied] == ["worker1"] and cluster.transport.state.resources == []


def test_a_fault_that_cannot_be_applied_is_the_runs_finding_not_a_crash():
    cluster = _cluster()
    cluster.transport.node_processes = lambda node, pattern: []  # no task runs there
    with schedule.Nemesis(cluster, [FaultSpec(kind="kill", process="task", at_s=0, node="worker1")], "r") as nemesis:
        time.sleep(0.3)
    [run] = nemesis.runs
    assert run.applied_s is None and "nothing was killed" in run.problems[0]


def test_a_kill_passes_over_a_pid_gone_since_it_was_read_and_fails_only_when_none_is_left():
    cluster = _cluster()
    transport = cluster.transport
    transport.node_processes = lambda node, pattern: [101, 202]  # 202: a fork of the daemon, exec'd since
    alive = {101}

    def capture(node, argv, env=None, timeout_s=120):
        transport.ran.append((node.name, argv))
        pids = [p for p in argv[4:] if int(p) in alive]
        return Captured(0, "".join(f"{p}\n" for p in pids).encode(),
                        b"".join(b"kill: No such process\n" for p in argv[4:] if int(p) not in alive))
    transport.capture = capture
    applied = faults.get("kill").apply(cluster, FaultSpec(kind="kill", process="nodemanager", at_s=0, node="worker1"),
                                       "worker1")
    assert applied.detail == "SIGKILL to nodemanager on worker1 (pid 101)"
    assert applied.record["applied_at"] and transport.state.resources == [applied.record]
    transport.state.forget(applied.record)
    alive.clear()
    with pytest.raises(SbclabError, match="none of pids 101, 202 could be signalled.*No such process"):
        faults.get("kill").apply(cluster, FaultSpec(kind="kill", process="nodemanager", at_s=0, node="worker1"),
                                 "worker1")
    assert transport.state.resources == []


def test_a_fault_that_fails_half_way_is_undone_and_leaves_no_record():
    cluster = _cluster()
    cluster.transport.fail = {"worker2"}
    with pytest.raises(SbclabError, match="Cutting worker2 off failed: no such chain"):
        partition.apply(cluster, FaultSpec(kind="partition", at_s=0, for_s=5, node="worker2"), "worker2")
    assert cluster.transport.state.resources == []
    assert [n for n, _ in cluster.transport.ran] == ["worker2", "worker2"]  # the rules it may have left, removed


def test_what_a_dead_sbclab_left_in_place_is_undone_by_the_next_and_a_failure_is_said():
    cluster = _cluster()
    transport = cluster.transport
    faultrecords.record(transport, "worker1", "pause", heal=[["kill", "-CONT", "12"]])
    orphan = faultrecords.record(transport, "worker2", "partition", heal=[["iptables", "-X", "x"]])
    orphan["owner_pid"] = 1 << 22  # no such process: its sbclab is gone
    assert [e["node"] for e in faultrecords.unhealed(transport, orphans_only=True)] == ["worker2"]
    transport.fail = {"worker2"}
    undone, problems = faultrecords.heal_all(transport, orphans_only=True)
    assert undone == ["partition on worker2"] and "exited 1: no such chain" in problems[0]
    undone, problems = faultrecords.heal_all(transport)
    assert undone == ["pause on worker1"] and problems == [] and transport.state.resources == []


def test_the_cause_of_a_failed_job_is_named_from_its_log():
    assert effects.cause("... org.apache.hadoop.hdfs.BlockMissingException: Could not obtain block: BP-1 ...") \
        .startswith("blocks lost")
    assert effects.cause("Job job_1_0001 failed with state FAILED due to: Task failed task_1_0001_m_000003") \
        == "a task failed every attempt it is given"
    assert effects.cause("Application application_1_0002 failed 2 times due to AM Container").startswith(
        "the ApplicationMaster")
    assert effects.cause("Error: java.io.IOException: All datanodes [DatanodeInfoWithStorage[10.0.0.12:9866]] are bad. "
                         "Aborting...\nJob failed as tasks failed. failedMaps:0 failedReduces:1").startswith(
        "HDFS could not write a block")
    assert effects.cause("all fine") is None


def _faulted(run_id, seconds, valid=True, node="worker2", **effect):
    run = make_run(run_id, valid=valid, exit_status=0 if valid else 1)
    return run.model_copy(update={
        "wall_time_s": seconds,
        "faults": [FaultRun(spec=FaultSpec(kind="kill", process="datanode", at_s=20), node=node, applied_s=20.3)],
        "fault_effects": FaultEffects(completed=valid, cause=None if valid else "blocks lost: HDFS had no live replica",
                                      reactions={"failed_map_attempts": 1, "appmaster_attempts": 1, **effect},
                                      hdfs={"missing_blocks": 0},
                                      recovered_s=41.0)})


def test_faulted_runs_are_kept_out_of_the_cell_and_set_beside_it_with_their_slowdown():
    base = [make_run(f"u{i}").model_copy(update={"wall_time_s": t}) for i, t in enumerate([100.0, 104.0, 96.0])]
    hit = [_faulted("f1", 150.0), _faulted("f2", 160.0, killed_map_attempts=2), _faulted("f3", 0.0, valid=False)]
    cells = group(base + hit)
    [cell] = cells
    assert len(cell.runs) == 3 and {r.run_id for r in cell.excluded} == {"f1", "f2", "f3"}
    assert all(r.status == "faulted" and not r.headline for r in hit)
    assert exclusion_reason(hit[0]) == "faulted: kill datanode on worker2 at 20 s"
    [row] = fault_analysis.rows(cells)
    assert (row["runs"], row["completed"], row["validated"], row["unfaulted_runs"]) == (3, 2, 2, 3)
    assert row["slowdown"] == pytest.approx(1.55) and row["slowdown_ci95_low"] < 1.55 < row["slowdown_ci95_high"]
    # Task attempts summed over the runs; the ApplicationMaster's attempts at their worst in one run.
    assert row["reactions"] == "failed map attempts 3, appmaster attempts 1, killed map attempts 2"
    assert row["recovered_s"] == "41; 41; 41" and row["cause"].startswith("blocks lost")


def test_a_single_faulted_run_has_a_slowdown_without_an_interval():
    base = [make_run(f"u{i}").model_copy(update={"wall_time_s": t}) for i, t in enumerate([100.0, 100.0])]
    [row] = fault_analysis.rows(group(base + [_faulted("f", 200.0)]))
    assert row["slowdown"] == pytest.approx(2.0) and row["slowdown_ci95_low"] is None


def _df_transport(free_by_node: dict[str, int], size=10 * 2**30, own=True):
    spec = cluster_spec.build(backend="emulated", board="rpi4b-4gb", storage="microsd-evo", workers=2, cores=2)

    def capture(node, argv, env=None, timeout_s=120):
        out = f"Filesystem 1-blocks Used Available Capacity Mounted\n/dev/loop0 {size} 0 {free_by_node[node.name]} 1% /d\n"
        return Captured(0, out.encode(), b"")
    return SimpleNamespace(spec=spec, own_filesystems=own, shares_host=True, capture=capture,
                           node_disk=lambda node: f"/disks/{node.name}")


def test_a_nearly_full_or_too_small_disk_refuses_the_run_naming_node_need_and_free_space():
    from sbclab.experiments.orchestrator import check_disks
    cell = model.cells(model.parse({"workloads": ["terasort"], "engines": ["hadoop"], "repetitions": 1,
                                    "sizes": ["1GB"]}))[0]
    check_disks(_df_transport({"worker1": 9 * 2**30, "worker2": 9 * 2**30}), cell)
    with pytest.raises(SbclabError, match=r"worker2's data disk is 95 % full \(537 MB free of 10.7 GB\)"):
        check_disks(_df_transport({"worker1": 9 * 2**30, "worker2": 2**29}), cell)
    with pytest.raises(SbclabError, match=r"needs about 3 GB on worker1, which has 2 GB free"):
        check_disks(_df_transport({"worker1": 2 * 10**9, "worker2": 2 * 10**9}, size=2 * 10**9 + 10**8), cell)
    # The processes backend's nodes share one filesystem: the whole need against its free space.
    with pytest.raises(SbclabError, match=r"needs about 6 GB on worker1, which has 5 GB free"):
        check_disks(_df_transport({"worker1": 5 * 10**9, "worker2": 5 * 10**9}, size=5 * 10**9 + 10**8, own=False), cell)


def test_a_fault_aimed_at_a_phase_waits_for_it_then_its_time(marker, monkeypatch):
    seen = {"reduce": False}
    monkeypatch.setattr(schedule.phases, "reached", lambda cluster, phase, since_ms: seen.get(phase, False))
    cluster = _cluster()
    spec = FaultSpec(kind="marker", phase="reduce", at_s=0.2, for_s=0.1, node="worker1")
    assert spec.label == "marker on worker1 at 0.2 s into reduce for 0.1 s"
    with schedule.Nemesis(cluster, [spec], "r") as nemesis:
        time.sleep(1.2)
        assert nemesis.runs[0].applied_s is None  # not before its phase
        seen["reduce"] = True
        time.sleep(1.6)
    [run] = nemesis.runs
    rounding = 0.011  # the times are kept to hundredths
    assert run.phase_s >= 1.2 and run.applied_s >= run.phase_s + 0.2 - rounding
    assert run.healed_s >= run.applied_s + 0.1 - rounding
    never = schedule.Nemesis(_cluster(), [FaultSpec(kind="marker", phase="stage 3", for_s=1)], "r")
    with never:
        time.sleep(0.1)
    assert never.runs[0].problems == ["the job ended before its stage 3 phase was seen: not applied"]
    with pytest.raises(ValueError):
        FaultSpec(kind="marker", phase="sort")


def test_a_mapreduce_jobs_phase_is_read_from_its_applicationmaster_and_a_spark_stage_from_its_event_log(tmp_path):
    job = {"mapsRunning": 0, "mapsCompleted": 0, "reducesRunning": 0, "reducesCompleted": 0, "reduceProgress": 0.0}
    events = tmp_path / "application_9_0002.inprogress"
    events.write_text('{"Event":"SparkListenerStageSubmitted","Stage Info":{"Stage ID":0,"Stage Attempt ID":0}}\n')
    apps = [{"id": "application_9_0001", "applicationType": "MAPREDUCE", "startedTime": 2000},
            {"id": "application_9_0002", "applicationType": "SPARK", "startedTime": 2000},
            {"id": "application_9_0000", "applicationType": "MAPREDUCE", "startedTime": 10}]
    stack = SimpleNamespace(running_applications=lambda since: [a for a in apps if a["startedTime"] >= since],
                            mapreduce_job=lambda app: job, layout=lambda node: SimpleNamespace(spark_events=tmp_path))
    spec = cluster_spec.build(backend="emulated", board="rpi4b-4gb", storage="microsd-evo", workers=2, cores=2)
    cluster = SimpleNamespace(spec=spec, choices=StackChoices(), stack=stack,
                              transport=SimpleNamespace(read_text=lambda node, path: path.read_text() if path.exists() else None))
    assert not schedule.phases.reached(cluster, "map", 1000)
    job.update(mapsRunning=2)
    assert schedule.phases.reached(cluster, "map", 1000) and not schedule.phases.reached(cluster, "shuffle", 1000)
    job.update(reducesRunning=1, reduceProgress=20.0)
    assert schedule.phases.reached(cluster, "shuffle", 1000) and not schedule.phases.reached(cluster, "reduce", 1000)
    job.update(reduceProgress=40.0)
    assert schedule.phases.reached(cluster, "reduce", 1000)
    assert not schedule.phases.reached(cluster, "map", 5000)  # a job started before the run is not its
    assert schedule.phases.reached(cluster, "stage 0", 1000) and not schedule.phases.reached(cluster, "stage 1", 1000)
