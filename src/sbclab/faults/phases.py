"""Whether a job has reached a phase, for a fault aimed at it: a MapReduce job's map, shuffle or
reduce phase as its ApplicationMaster reports it (maps running; reduces running; reduces past the
shuffle's first third of their progress), a Spark job's stage N from its event log, which the
driver writes on the master as it goes (so no web UI is needed)."""

import re

from ..stack.lifecycle import Cluster

_STAGE = re.compile(r"stage (\d+)")


def reached(cluster: Cluster, phase: str, since_ms: int) -> bool:
    """Whether a job started at or after since_ms (epoch milliseconds) is in this phase, or past it."""
    stage = _STAGE.fullmatch(phase)
    if stage:
        return _spark_stage_submitted(cluster, int(stage.group(1)), since_ms)
    for app in cluster.stack.running_applications(since_ms):
        if app.get("applicationType") != "MAPREDUCE":
            continue
        job = cluster.stack.mapreduce_job(app["id"])
        if job and _mapreduce_in(job, phase):
            return True
    return False


def _mapreduce_in(job: dict, phase: str) -> bool:
    maps = job.get("mapsRunning", 0) + job.get("mapsCompleted", 0)
    reduces = job.get("reducesRunning", 0) + job.get("reducesCompleted", 0)
    if phase == "map":
        return maps > 0
    if phase == "shuffle":
        return reduces > 0
    return reduces > 0 and float(job.get("reduceProgress", 0)) > 100 / 3  # MapReduce counts the shuffle as a third


def _spark_stage_submitted(cluster: Cluster, stage: int, since_ms: int) -> bool:
    master = cluster.spec.master
    events = cluster.stack.layout(master).spark_events
    for app in cluster.stack.running_applications(since_ms):
        if app.get("applicationType") != "SPARK":
            continue
        text = cluster.transport.read_text(master, events / f"{app['id']}.inprogress") or ""
        wanted = re.compile(r'"Stage ID":%d[,}]' % stage)
        if any('"SparkListenerStageSubmitted"' in line and wanted.search(line) for line in text.splitlines()):
            return True
    return False
