"""What Hadoop and Spark did about a run's faults, and how long the cluster took to be whole again.

Read from the engines themselves: the MapReduce job's counters (failed and killed task attempts), the
ResourceManager (ApplicationMaster attempts, lost NodeManagers), Spark's event log (failed tasks,
executors removed, stage attempts resubmitted), the NameNode (dead DataNodes, under-replicated and
missing blocks, watched during the run by the nemesis) and the job's own log for why it failed.
"""

import re
import time

from ..results.faults import FaultEffects
from ..stack import liveness
from ..stack.lifecycle import Cluster

# Why a job failed, from its client log: the first pattern found names the cause, the specific
# before the general (a task fails every attempt because of one of the others).
_CAUSES = (
    (r"BlockMissingException|Could not obtain block|No live nodes contain", "blocks lost: HDFS had no live replica "
     "of a block the job read"),
    (r"All datanodes .* are bad|could only be written to 0 of the 1 minReplication",
     "HDFS could not write a block to any live DataNode (a one-replica output whose DataNode was gone)"),
    (r"failed \d+ times due to AM Container|ApplicationMaster .* failed|Application .* failed \d+ times",
     "the ApplicationMaster failed every attempt YARN gives it"),
    (r"Lost executor|ExecutorLostFailure", "executors were lost"),
    (r"Task failed task_|Job failed as tasks failed|failed \d+ times, most recent failure",
     "a task failed every attempt it is given"),
)


def cause(client_log: str) -> str | None:
    for pattern, said in _CAUSES:
        if re.search(pattern, client_log):
            return said
    return None


def reactions(cluster: Cluster, engine: str, counters: dict, job_ids: list[str]) -> dict:
    """The engine's own account of the faults: retried and lost work."""
    if engine == "hadoop":
        jobs = counters.get("Job Counters", {})
        found = {key: int(jobs.get(name, 0)) for key, name in (
            ("failed_map_attempts", "Failed map tasks"), ("killed_map_attempts", "Killed map tasks"),
            ("failed_reduce_attempts", "Failed reduce tasks"), ("killed_reduce_attempts", "Killed reduce tasks"),
            ("launched_maps", "Launched map tasks"), ("launched_reduces", "Launched reduce tasks"))}
    else:
        tasks = counters.get("tasks", {})
        found = {"failed_task_attempts": int(tasks.get("failed_tasks", 0)),
                 "executors_removed": int(tasks.get("executors_removed", 0)),
                 "stage_attempts_resubmitted": sum(1 for group in counters if "(attempt " in group)}
    apps = [j.replace("job_", "application_") if j.startswith("job_") else j for j in job_ids]
    attempts = [a for a in (cluster.stack.application_attempts(app) for app in apps if app.startswith("application_"))
                if a is not None]
    if attempts:
        found["appmaster_attempts"] = max(attempts)
    return found


class Watch:
    """The masters' worst during a run, above where they stood before its first fault (the
    ResourceManager's lost NodeManagers count every one since it started): sampled by the nemesis
    while its faults are in place."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.worst: dict[str, int] = {}
        self.baseline: dict[str, int] | None = None

    def _read(self) -> dict[str, int]:
        stack = self.cluster.stack
        found: dict[str, int] = {}
        for figures in (stack.namenode_health(),
                        stack.yarn_health() if self.cluster.choices.spark_manager == "yarn" else None):
            found.update(figures or {})
        return found

    def start(self) -> None:
        self.baseline = self._read()

    def sample(self) -> None:
        base = self.baseline or {}
        for key, value in self._read().items():
            self.worst[key] = max(self.worst.get(key, 0), value - base.get(key, 0))


def recover(cluster: Cluster, since: float, timeout_s: float = 300, say=lambda message: None) -> tuple[float | None, list[str]]:
    """Make the cluster whole (daemons that died started again) and wait until HDFS has every block's
    replicas; (seconds from `since`, a monotonic time, to whole — None if not within the wait —,
    what was done)."""
    done: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            _, repaired = liveness.ensure_whole(cluster.stack, timeout_s=max(1.0, deadline - time.monotonic()), say=say)
        except Exception as err:  # noqa: BLE001 - a cluster that stays short is the finding, said in the report
            done.append(f"not whole within {timeout_s:.0f} s: {err}")
            return None, done
        done += repaired
        health = cluster.stack.namenode_health() or {}
        if not health.get("under_replicated_blocks") and not health.get("missing_blocks"):
            return time.monotonic() - since, done
        time.sleep(1)
    done.append(f"HDFS still short of replicas after {timeout_s:.0f} s")
    return None, done


def effects(cluster: Cluster, engine: str, completed: bool, client_log: str, counters: dict, job_ids: list[str],
            watch: Watch, recovered_s: float | None, recovery: list[str]) -> FaultEffects:
    return FaultEffects(completed=completed, cause=None if completed else cause(client_log),
                        reactions=reactions(cluster, engine, counters, job_ids), hdfs=dict(watch.worst),
                        recovered_s=None if recovered_s is None else round(recovered_s, 1), recovery=recovery)
