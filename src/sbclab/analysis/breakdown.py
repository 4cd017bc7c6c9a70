"""Where a run's time goes, from its phases: the client starting and submitting, the job waiting for
its first task (ApplicationMaster and containers starting), the tasks themselves, and the wind-down
after the last task; with the workers' CPU use over the run. On an emulated cluster at a small
scale factor the first two are JVM start-ups under small CPU quotas, which is what makes a short job
mostly fixed cost."""

from dataclasses import dataclass
from statistics import fmean

from ..results.schema import RunRecord

PARTS = ("client start", "to first task", "tasks", "wind-down")


@dataclass(frozen=True)
class Breakdown:
    seconds: dict[str, float]  # by PARTS
    worker_busy_pct: float | None  # mean over the workers of their CPU busy share (of their quota)


def of_run(run: RunRecord) -> Breakdown | None:
    """The run's parts; None when its phases do not say when the job was submitted and ran tasks."""
    m = run.measurements
    if m is None or not m.phases:
        return None
    command = next((p for p in m.phases if p.get("source") == "sbclab"), None)
    submitted = [p["start"] for p in m.phases if p["name"].endswith(" submitted")]
    work = [p for p in m.phases if p["name"].endswith(" phase") or p["name"].startswith("stage ")]
    if command is None or not submitted or not work:
        return None
    first, last = min(p["start"] for p in work), max(p["end"] for p in work)
    parts = {"client start": min(submitted) - command["start"], "to first task": first - min(submitted),
             "tasks": last - first, "wind-down": command["end"] - last}
    task_nodes = {n.name for n in run.cluster.task_nodes}
    busy = [n.cpu_busy_pct_mean for name, n in m.nodes.items()
            if name in task_nodes and n.cpu_busy_pct_mean is not None]
    return Breakdown({k: max(0.0, v) for k, v in parts.items()}, fmean(busy) if busy else None)


def mean_of(runs: list[RunRecord]) -> Breakdown | None:
    """The mean parts over the runs that have them."""
    found = [b for b in map(of_run, runs) if b is not None]
    if not found:
        return None
    busy = [b.worker_busy_pct for b in found if b.worker_busy_pct is not None]
    return Breakdown({part: fmean(b.seconds[part] for b in found) for part in PARTS}, fmean(busy) if busy else None)
