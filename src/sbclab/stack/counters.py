"""Reading the engines' own figures: Hadoop job counters from the client's report, Spark task metrics from the event log."""

import json
import re
from pathlib import Path

from ..results.schema import SPARK_STAGE_GROUP

_COUNTERS_HEADER = re.compile(r"INFO mapreduce\.Job: Counters: \d+")
_JOB_ID = re.compile(r"Running job: (job_\d+_\d+)")
# A Spark application's id, which names its event log: YARN's, or the standalone master's.
_APP_ID = re.compile(r"(application_\d+_\d+|\bapp-\d{14}-\d{4,})")


def hadoop_job_counters(client_log: str) -> list[dict[str, dict[str, float]]]:
    """The counters block a MapReduce client prints when each of its jobs ends, in order, as
    {group: {name: value}} per job.

    The client prints groups at one tab and counters at two ('name=value')."""
    jobs = []
    for block in _COUNTERS_HEADER.finditer(client_log):
        counters: dict[str, dict[str, float]] = {}
        group = None
        for line in client_log[block.end():].splitlines()[1:]:
            if line.startswith("\t\t") and "=" in line and group is not None:
                name, _, value = line.strip().rpartition("=")
                try:
                    counters[group][name] = float(value) if "." in value else int(value)
                except ValueError:
                    break
            elif line.startswith("\t") and not line.startswith("\t\t"):
                group = line.strip()
                counters[group] = {}
            else:
                break
        jobs.append(counters)
    return jobs


def hadoop_counters(client_log: str) -> dict[str, dict[str, float]]:
    """The counters of every job the client ran, added up: Hadoop's Grep runs a search job and a
    sort job, and its intermediate data and records are those of both."""
    total: dict[str, dict[str, float]] = {}
    for job in hadoop_job_counters(client_log):
        for group, counters in job.items():
            into = total.setdefault(group, {})
            for name, value in counters.items():
                into[name] = into.get(name, 0) + value
    return total


def hadoop_job_ids(client_log: str) -> list[str]:
    return _JOB_ID.findall(client_log)


def spark_application_ids(client_log: str) -> list[str]:
    return sorted(set(_APP_ID.findall(client_log)))


# Spark task metrics summed over every task of the application, named like the Spark UI.
_SPARK_METRICS = {
    "executor_run_time_ms": ("Executor Run Time",),
    "executor_cpu_time_ns": ("Executor CPU Time",),
    "jvm_gc_time_ms": ("JVM GC Time",),
    "memory_bytes_spilled": ("Memory Bytes Spilled",),
    "disk_bytes_spilled": ("Disk Bytes Spilled",),
    "input_bytes_read": ("Input Metrics", "Bytes Read"),
    "input_records_read": ("Input Metrics", "Records Read"),
    "output_bytes_written": ("Output Metrics", "Bytes Written"),
    "output_records_written": ("Output Metrics", "Records Written"),
    "shuffle_bytes_written": ("Shuffle Write Metrics", "Shuffle Bytes Written"),
    "shuffle_records_written": ("Shuffle Write Metrics", "Shuffle Records Written"),
    "shuffle_remote_bytes_read": ("Shuffle Read Metrics", "Remote Bytes Read"),
    "shuffle_local_bytes_read": ("Shuffle Read Metrics", "Local Bytes Read"),
    "shuffle_remote_bytes_read_to_disk": ("Shuffle Read Metrics", "Remote Bytes Read To Disk"),
}


def spark_event_metrics(event_log: Path) -> dict[str, dict[str, float]]:
    """Task and stage totals from a Spark event log (one JSON event per line), and the same per stage
    (groups "stage ID: NAME", as sparkMeasure's stage metrics: tasks, the stage's duration and its
    tasks' summed metrics), so a job's time can be followed to the stage that spent it."""
    totals = {key: 0 for key in _SPARK_METRICS}
    tasks = {"tasks": 0, "failed_tasks": 0, "stages": 0, "executors_added": 0, "executors_removed": 0}
    stages: dict[tuple[int, int], dict[str, float]] = {}
    names: dict[tuple[int, int], str] = {}
    with open(event_log) as events:
        for line in events:
            event = json.loads(line)
            kind = event.get("Event")
            if kind == "SparkListenerTaskEnd":
                stage = stages.setdefault((event.get("Stage ID", -1), event.get("Stage Attempt ID", 0)),
                                          {"tasks": 0, "failed_tasks": 0, **{key: 0 for key in _SPARK_METRICS}})
                failed = (event.get("Task End Reason") or {}).get("Reason") != "Success"
                for counts in (tasks, stage):
                    counts["tasks"] += 1
                    counts["failed_tasks"] += failed
                metrics = event.get("Task Metrics") or {}
                for key, path in _SPARK_METRICS.items():
                    value = metrics
                    for part in path:
                        value = value.get(part, {}) if isinstance(value, dict) else {}
                    if isinstance(value, (int, float)):
                        totals[key] += value
                        stage[key] += value
            elif kind == "SparkListenerStageCompleted":
                tasks["stages"] += 1
                info = event.get("Stage Info") or {}
                key = (info.get("Stage ID", -1), info.get("Stage Attempt ID", 0))
                names[key] = info.get("Stage Name", "")
                stage = stages.setdefault(key, {"tasks": 0, "failed_tasks": 0, **{k: 0 for k in _SPARK_METRICS}})
                if info.get("Submission Time") and info.get("Completion Time"):
                    stage["duration_ms"] = info["Completion Time"] - info["Submission Time"]
            elif kind == "SparkListenerExecutorAdded":
                tasks["executors_added"] += 1
            elif kind == "SparkListenerExecutorRemoved":
                tasks["executors_removed"] += 1
    per_stage = {f"{SPARK_STAGE_GROUP}{sid}" + (f" (attempt {attempt})" if attempt else "") + f": {names.get((sid, attempt), '')}":
                 values for (sid, attempt), values in sorted(stages.items())}
    return {"tasks": tasks, "task_metrics": totals, **per_stage}


def _task_ends(event_log: Path):
    """Every SparkListenerTaskEnd event of an event log, with the executor host it ran on."""
    with open(event_log) as events:
        for line in events:
            event = json.loads(line)
            if event.get("Event") == "SparkListenerTaskEnd":
                yield (event.get("Task Info") or {}).get("Host", "?"), event


def spark_tasks_by_host(event_log: Path) -> dict[str, int]:
    """Tasks that succeeded, per executor host, from a Spark event log."""
    by_host: dict[str, int] = {}
    for host, event in _task_ends(event_log):
        if (event.get("Task End Reason") or {}).get("Reason", "Success") == "Success":
            by_host[host] = by_host.get(host, 0) + 1
    return by_host


def spark_intermediate_by_host(event_log: Path) -> dict[str, int]:
    """Shuffle bytes written plus disk bytes spilled, per executor host, from a Spark event log."""
    by_host: dict[str, int] = {}
    for host, event in _task_ends(event_log):
        metrics = event.get("Task Metrics") or {}
        written = (metrics.get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written", 0)
        by_host[host] = by_host.get(host, 0) + written + metrics.get("Disk Bytes Spilled", 0)
    return by_host
