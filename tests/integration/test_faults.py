"""What happens when something fails: a bring-up that fails or is interrupted removes everything it made;
a daemon lost during a run flags it and is started again before the next; faults applied during a job
(a DataNode or NodeManager killed, a worker cut off) are recorded, undone and reported; a corrupted or
unordered output is caught by its validation. The runs share one cluster of three workers at replication 2."""

import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from sbclab import faults, paths
from sbclab import workloads as registry
from sbclab.cluster import faultrecords, nodes
from sbclab.cluster.state import ClusterState
from sbclab.errors import SbclabError
from sbclab.experiments import model
from sbclab.experiments.orchestrator import check_disks
from sbclab.stack.choices import StackChoices
from sbclab.results.faults import PROCESSES, FaultSpec
from sbclab.stack import lifecycle, liveness, webhdfs
from sbclab.workloads.base import Attempt, exited
from sbclab.workloads.sort import Sort
from sbclab.workloads.terasort import TeraSort

from .conftest import NOTHING, leaked, mechanics_spec, remove_if_left, runner


def test_daemons_not_ready_in_time_is_one_sentence_and_no_leftovers(clean_host):
    """Daemons that miss the start-up deadline give one sentence naming the log to read, and nothing is left."""
    remove_if_left("ifault")
    with pytest.raises(SbclabError) as err:
        lifecycle.up(mechanics_spec("ifault"), timeout_s=0.5)
    message = str(err.value)
    assert "not ready within" in message and "Read " in message and ".log" in message
    assert "ifault" not in ClusterState.names()


def test_a_cluster_name_in_use_is_refused(clean_host):
    """A second cluster under a name in use is refused before anything is created."""
    remove_if_left("idup")
    ClusterState.create(mechanics_spec("idup"))
    try:
        with pytest.raises(SbclabError) as err:
            lifecycle.up(mechanics_spec("idup"))
        assert "down --force" in str(err.value)
    finally:
        assert nodes.down("idup", force=True) == []


def test_ctrl_c_during_cluster_up_leaves_nothing(clean_host, tmp_path):
    """Ctrl-C while `cluster up` starts the daemons exits 130, says so, and removes all it made."""
    remove_if_left("intr")
    # A shell runs a background job with SIGINT ignored, and Python keeps it ignored: restore what a
    # terminal gives, or the test would depend on how the test run itself was started.
    up = subprocess.Popen([sys.executable, "-c", "from sbclab.cli import main; main()", "cluster", "up", "--name", "intr",
                           "--disk-size", "2GiB"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        state_file = paths.cluster_dir("intr") / "state.json"
        # Interrupt once daemons are starting: the most resources exist then.
        while time.monotonic() < deadline:
            if state_file.exists() and '"kind": "process"' in state_file.read_text():
                break
            assert up.poll() is None, up.stdout.read()
            time.sleep(0.2)
        else:
            pytest.fail("cluster up never started a daemon")
        os.kill(up.pid, signal.SIGINT)
        output, _ = up.communicate(timeout=120)
    finally:
        if up.poll() is None:
            up.kill()
        remove_if_left("intr")
    assert up.returncode == 130, output
    assert "interrupted" in output
    assert leaked() == NOTHING


def test_a_cluster_whose_maker_was_killed_is_found_and_removed_as_abandoned(clean_host):
    """A cluster whose `cluster up` was killed mid-way is found abandoned and `cluster down --abandoned` removes it
    whole."""
    remove_if_left("ikill")
    up = subprocess.Popen([sys.executable, "-c", "from sbclab.cli import main; main()", "cluster", "up", "--name", "ikill",
                           "--disk-size", "2GiB"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        state_file = paths.cluster_dir("ikill") / "state.json"
        while not (state_file.exists() and '"kind": "process"' in state_file.read_text()):
            assert time.monotonic() < deadline and up.poll() is None, "cluster up never started a daemon"
            time.sleep(0.2)
        assert "ikill" not in nodes.abandoned(), "its maker is still at work"
        up.kill()  # no cleanup can run: what a CI time limit or the OOM killer does
        up.wait(timeout=30)
        assert "ikill" in nodes.abandoned()
        done = subprocess.run([sys.executable, "-c", "from sbclab.cli import main; main()", "cluster", "down", "--abandoned"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "cluster 'ikill' removed" in done.stderr + done.stdout
    finally:
        if up.poll() is None:
            up.kill()
        remove_if_left("ikill")
    assert leaked() == NOTHING


# --- a cluster that loses things -------------------------------------------------------------------

SIZE = 4 * 10**6
# Two replicas, so a lost DataNode costs no block of the input. TeraSort still writes its output at one
# (its own default): a reduce on the killed DataNode's node fails its attempt ("All datanodes are bad",
# its local DataNode taking the only replica) and is tried again, where the four attempts it has let it finish.
# A reader of a block no DataNode holds gives up after three tries spaced from 3 s (growing) by default;
# 0.3 s here, so the run at replication 1 fails in seconds rather than a minute, for the same reason.
# YARN declares a NodeManager that stopped heartbeating lost after ten minutes by default, giving it
# containers until then, and an ApplicationMaster tries to start one there for three minutes: 20 s here.
SETTINGS = {"hdfs-site": {"dfs.replication": "2", "dfs.client.retry.window.base": "300"},
            "yarn-site": {"yarn.nm.liveness-monitor.expiry-interval-ms": "20000",
                          "yarn.client.nodemanager-connect.max-wait-ms": "20000",
                          "yarn.client.nodemanager-connect.retry-interval-ms": "2000"}}
PI = {"maps": 6, "samples_per_map": 1000}


@pytest.fixture(scope="module")
def faulty():
    remove_if_left("ifaulty")
    assert leaked() == NOTHING
    spec = mechanics_spec("ifaulty", workers=3, subnet="10.219.0.0/24")
    up = lifecycle.up(spec, StackChoices(settings=StackChoices.settings_of(SETTINGS)))
    try:
        yield up
    finally:
        remove_if_left("ifaulty")
    assert leaked() == NOTHING


def _faulted(cluster, results, workload, engine, *faults, size=SIZE, params=None):
    chosen = registry.get(workload) if isinstance(workload, str) else workload
    return runner(cluster, results).measure(chosen, engine, chosen.parameters(size, params), faults=list(faults))


def _whole(cluster):
    found = liveness.census(cluster.stack)
    assert found.whole, found.missing


def test_a_datanode_killed_mid_terasort_at_replication_2_costs_no_block_and_is_reported(faulty, tmp_path):
    kill = FaultSpec(kind="kill", process="datanode", node="worker2", phase="map", at_s=2)  # mid-job, whatever its pace
    run = _faulted(faulty, tmp_path, "terasort", "hadoop", kill)
    assert run.status == "faulted" and not run.headline
    assert run.exit_status == 0 and run.valid, [c for c in run.validity.checks if not c.passed]
    [fault] = run.faults
    assert fault.node == "worker2" and fault.phase_s is not None and fault.applied_s >= fault.phase_s + 2 - 0.011
    assert "SIGKILL to datanode on worker2" in fault.detail
    assert "DataNode on worker2: its process has ended" in run.liveness.after
    effects = run.fault_effects
    assert effects.completed and "DataNode restarted on worker2" in effects.recovery and effects.recovered_s
    assert {"failed_map_attempts", "launched_maps"} <= set(effects.reactions)
    _whole(faulty)


def test_a_datanode_killed_at_replication_1_loses_blocks_and_the_run_says_so(faulty, tmp_path):
    ctx = runner(faulty, tmp_path).context()
    data = TeraSort().prepare(ctx, "hadoop", TeraSort().parameters(SIZE, None))
    ctx.hdfs(["-setrep", "-w", "1", data["path"]], tmp_path / "setrep.log")
    deadline = time.monotonic() + 90  # the DataNodes delete the excess replicas on their next heartbeats
    held = _input_replicas(faulty, data["path"])
    while any(len(nodes) > 1 for nodes in held) and time.monotonic() < deadline:
        time.sleep(1)
        held = _input_replicas(faulty, data["path"])
    # The input's own blocks decide it, not the disks' count: the module's other files are on them too,
    # and a node holding many of those may hold none of the input.
    holder = max(faulty.spec.worker_nodes, key=lambda n: sum(nodes == [n.name] for nodes in held))
    assert any(nodes == [holder.name] for nodes in held), held
    try:
        run = _faulted(faulty, tmp_path, "terasort", "hadoop",
                       FaultSpec(kind="kill", process="datanode", node=holder.name, at_s=1))
        assert run.status == "faulted" and run.exit_status != 0 and not run.valid
        assert run.fault_effects.cause.startswith("blocks lost"), run.fault_effects
        # Its DataNode back, the blocks are whole again: the time that took is the recovery.
        assert run.fault_effects.recovered_s is not None and not faulty.stack.namenode_health()["missing_blocks"]
    finally:  # its second replicas are made in the background while the other tests run
        ctx.hdfs(["-setrep", "2", data["path"]], tmp_path / "setrep.log", check=False)
    _whole(faulty)


def _input_replicas(cluster, path) -> list[list[str]]:
    """The nodes holding each block of the files in PATH, as the NameNode has them."""
    named = {n.address: n.name for n in cluster.spec.nodes}
    found = []
    for file in webhdfs.files(cluster.stack, f"{path}/part-*"):
        answer = webhdfs.ask(cluster.stack, "GET", file, "GET_BLOCK_LOCATIONS", offset="0", length=str(1 << 40))
        answer.raise_for_status()
        for block in answer.json()["LocatedBlocks"]["locatedBlocks"]:
            found.append(sorted(named.get(where["ipAddr"], where["ipAddr"]) for where in block["locations"]))
    return found


def test_a_nodemanager_killed_mid_job_is_faulted_with_the_applicationmasters_attempts(faulty, tmp_path):
    run = _faulted(faulty, tmp_path, "pi", "hadoop", FaultSpec(kind="kill", process="nodemanager", node="worker1", at_s=6),
                   size=None, params=PI)
    assert run.status == "faulted" and run.faults[0].applied_s is not None
    assert "appmaster_attempts" in run.fault_effects.reactions
    assert "NodeManager restarted on worker1" in run.fault_effects.recovery
    _whole(faulty)


def test_a_worker_cut_off_for_a_while_during_a_spark_job_is_undone_and_its_executors_counted(faulty, tmp_path):
    cut = FaultSpec(kind="partition", node="worker3", at_s=5, for_s=30)
    run = _faulted(faulty, tmp_path, "wordcount", "spark", cut)
    [fault] = run.faults
    # Undone after its 30 s, or when the job ended first (the other workers' executors may finish it).
    assert run.status == "faulted" and fault.applied_s >= 5 and fault.healed_s is not None
    assert fault.healed_s >= fault.applied_s + 30 or fault.healed_s >= run.wall_time_s - 5, (fault, run.wall_time_s)
    assert "executors_removed" in run.fault_effects.reactions
    assert ClusterState.load("ifaulty").of_kind("fault") == []  # nothing left to undo
    # The packet filter is gone from worker3.
    left = faulty.transport.capture(faulty.spec.node("worker3"), ["sh", "-c", "iptables -S | grep -c sbclab-fault || true"])
    assert left.stdout.strip() == b"0"


def test_a_daemon_killed_by_hand_flags_the_run_and_is_restarted_before_the_next(faulty, tmp_path):
    """Nothing injected: a DataNode killed from outside sbclab mid-run is caught by the census after it."""
    worker = faulty.spec.node("worker3")

    def kill_by_hand():
        time.sleep(4)
        for pid in faulty.transport.node_processes(worker, PROCESSES["datanode"]):
            os.kill(pid, signal.SIGKILL)
    killer = threading.Thread(target=kill_by_hand)
    killer.start()
    try:
        run = _faulted(faulty, tmp_path, "pi", "hadoop", size=None, params=PI)
    finally:
        killer.join()
    assert run.status == "flagged" and run.faults == []
    assert run.liveness.lost == ["DataNode on worker3: its process has ended"]
    # The next run only has to find the DataNode gone and start it again first: two maps do.
    after = _faulted(faulty, tmp_path, "pi", "hadoop", size=None, params={**PI, "maps": 2})
    assert after.liveness.repaired == ["DataNode restarted on worker3"] and not after.liveness.lost
    # (Two maps on three workers leave one idle, which flags a run on its own: not the point here.)
    assert after.valid and not [r for r in after.flag_reasons if r.startswith("lost")]


def test_a_slowed_disk_is_throttled_to_its_share_and_given_back_its_mediums_figures(faulty):
    node = faulty.spec.node("worker1")
    applied = faults.get("slow-disk").apply(faulty, FaultSpec(kind="slow-disk", speed_pct=10, node="worker1"), "worker1")
    assert [e["node"] for e in ClusterState.load("ifaulty").of_kind("fault")] == ["worker1"]  # recorded first
    for (path, slowed), (_, medium) in zip(faulty.transport.disk_throttle(node, 0.1), faulty.transport.disk_throttle(node, 1)):
        assert slowed in path.read_text() and medium not in path.read_text()
    assert faultrecords.heal(faulty.transport, applied.record) == []
    for path, medium in faulty.transport.disk_throttle(node, 1):
        assert medium in path.read_text()


def _still_stopped(pid: int) -> bool:
    """A JVM that ends once continued (a finished job's container winding down) is not stopped."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_STOPPED
    except psutil.NoSuchProcess:
        return False


def test_a_pause_and_a_full_disk_left_by_a_killed_sbclab_are_undone_by_the_next(faulty):
    """Applied, then their sbclab "killed" (its recorded pid made one that no longer runs): the next
    sbclab on the cluster continues the paused JVMs and removes the filler, and a run refuses the full disk."""
    worker = faulty.spec.node("worker2")
    paused = faults.get("pause").apply(faulty, FaultSpec(kind="pause", node="worker2", for_s=60), "worker2")
    filled = faults.get("fill-disk").apply(faulty, FaultSpec(kind="fill-disk", node="worker2", level_pct=95), "worker2")
    try:
        pids = paused.record["pids"]
        assert pids and all(psutil.Process(pid).status() == psutil.STATUS_STOPPED for pid in pids)
        filler = faulty.transport.node_disk(worker) / "sbclab-fault-filler"
        assert filler.exists()
        with pytest.raises(SbclabError, match="worker2's data disk is 9[5-9] % full"):
            check_disks(faulty.transport, model.cells(model.parse({"workloads": ["wordcount"], "engines": ["hadoop"],
                                                                   "repetitions": 1, "sizes": ["1MB"]}))[0])
        for entry in faulty.transport.state.of_kind("fault"):
            faulty.transport.state.update(entry, owner_pid=1 << 22)  # no such process: their sbclab is gone
        undone, problems = faultrecords.heal_all(faulty.transport, orphans_only=True)
        assert sorted(undone) == ["fill-disk on worker2", "pause on worker2"] and problems == []
        assert not any(_still_stopped(pid) for pid in pids) and not filler.exists()
    finally:
        faultrecords.heal_all(faulty.transport)
    _whole(faulty)


def _unsorted(workload_class, input_parts: str):
    """The workload with its job replaced by a copy of its unsorted input: what a bad sort would leave.
    No job runs (its checks are the point, and each real sort took a minute of the module's time)."""
    class Unsorted(workload_class):
        def run_job(self, ctx, engine, run_id, params, data):
            output, log = f"/sbclab/out/{run_id}", ctx.job_log(run_id, "unsorted")
            ctx.hdfs(["-mkdir", "-p", output], log)
            copied = ctx.hdfs(["-cp", f"{data['path']}/{input_parts}", output], log)
            return Attempt(copied, [exited(copied, "job")], output=output)
    return Unsorted()


@pytest.mark.parametrize("workload, failing", [(_unsorted(TeraSort, "part-m-*"), "TeraValidate error rows"),
                                               (_unsorted(Sort, "part-*"), "records out of order within files")])
def test_an_unordered_output_is_invalid_with_the_failing_check_named(faulty, tmp_path, workload, failing):
    run = _faulted(faulty, tmp_path, workload, "hadoop")
    assert run.exit_status == 0 and run.status == "invalid"
    assert [c.name for c in run.validity.checks if not c.passed] == [failing]
