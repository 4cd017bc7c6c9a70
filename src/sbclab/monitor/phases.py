"""Run phases on the samples' clock: sbclab's own commands, and the engines' view of their jobs.

- every engine command sbclab ran (job, validation, clean-up), from its start and end marks;
- Hadoop: job submitted, map phase (first map start to last map end), reduce phase (first reduce
  start, shuffle included, to last reduce end), job finished — from the JobHistory server;
- Spark: job submitted and finished, and each stage's start and end — from the event log;
- httperf: each step of a web-capacity ramp, which asks for its server's CPU over it;
- hpcc: each of its tests (PTRANS, STREAM, FFT, the message tests, HPL), from the times it prints
  as each ends, whole seconds of the clock of the node rank 0 ran on. HPL's phase asks for its own
  energy, so that Rmax per watt is HPL's and not the whole suite's.
Times are epoch seconds of the master's clock, which is the clock the samples are aligned to.
"""

import json
import re
import time
from pathlib import Path

import requests


def from_commands(commands: list[dict]) -> list[dict]:
    return [{"name": c["label"], "start": round(c["start"], 3), "end": round(c["end"], 3), "source": "sbclab"}
            for c in commands]


def hadoop_phases(job: dict, tasks: list[dict]) -> list[dict]:
    """The phases of one MapReduce job from its JobHistory record (times in ms)."""
    name = job.get("id", "job")
    phases = [{"name": f"{name} submitted", "start": job["submitTime"] / 1000, "end": job["submitTime"] / 1000,
               "source": "jobhistory"}]
    for kind, label in (("MAP", "map phase"), ("REDUCE", "reduce phase")):
        mine = [t for t in tasks if t.get("type") == kind and t.get("startTime", 0) > 0]
        if mine:
            phases.append({"name": f"{name} {label}", "start": min(t["startTime"] for t in mine) / 1000,
                           "end": max(t.get("finishTime") or t["startTime"] for t in mine) / 1000,
                           "source": "jobhistory", "tasks": len(mine)})
    phases.append({"name": f"{name} finished", "start": job["finishTime"] / 1000, "end": job["finishTime"] / 1000,
                   "source": "jobhistory"})
    return phases


def hadoop_from_history(stack, job_ids: list[str], wait_s: float = 15.0
                        ) -> tuple[list[dict], dict[str, int], dict[str, int], list[str]]:
    """Phases of each job, its local-disk writes per node (FILE_BYTES_WRITTEN of every task attempt
    that succeeded) and its tasks per node; the JobHistory server knows a job a few seconds after the
    client returns."""
    phases, by_node, tasks_by_node, notes = [], {}, {}, []
    for job_id in job_ids:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                job, tasks = stack.history_job(job_id)
                phases += hadoop_phases(job, tasks)
                written, ran = stack.history_work_by_node(job_id, tasks)
                for host, count in written.items():
                    by_node[host] = by_node.get(host, 0) + count
                for host, count in ran.items():
                    tasks_by_node[host] = tasks_by_node.get(host, 0) + count
                break
            except (requests.RequestException, KeyError, ValueError) as err:
                if time.monotonic() > deadline:
                    notes.append(f"map and reduce phases of {job_id} unknown: the JobHistory server did not "
                                 f"answer ({type(err).__name__})")
                    break
                time.sleep(1)
    return phases, by_node, tasks_by_node, notes


def spark_phases(event_log: Path) -> list[dict]:
    """Job and stage phases from a Spark event log (times in ms)."""
    jobs: dict[int, dict] = {}
    stages: dict[int, dict] = {}
    with open(event_log) as events:
        for line in events:
            event = json.loads(line)
            kind = event.get("Event")
            if kind == "SparkListenerJobStart":
                jobs[event["Job ID"]] = {"start": event["Submission Time"]}
            elif kind == "SparkListenerJobEnd" and event["Job ID"] in jobs:
                jobs[event["Job ID"]]["end"] = event["Completion Time"]
            elif kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                if "Submission Time" in info and "Completion Time" in info:
                    stages[info["Stage ID"]] = {"name": info.get("Stage Name", ""), "start": info["Submission Time"],
                                                "end": info["Completion Time"], "tasks": info.get("Number of Tasks")}
    phases = []
    for job_id, job in sorted(jobs.items()):
        phases.append({"name": f"spark job {job_id} submitted", "start": job["start"] / 1000,
                       "end": job["start"] / 1000, "source": "spark event log"})
        if "end" in job:
            phases.append({"name": f"spark job {job_id} finished", "start": job["end"] / 1000,
                           "end": job["end"] / 1000, "source": "spark event log"})
    for stage_id, stage in sorted(stages.items()):
        phases.append({"name": f"stage {stage_id} {stage['name'].split(' at ')[0]}", "start": stage["start"] / 1000,
                       "end": stage["end"] / 1000, "source": "spark event log", "tasks": stage["tasks"]})
    return sorted(phases, key=lambda p: (p["start"], p["end"]))


_SECTION = re.compile(r"^(Begin|End) of (\w+) section\.")
_NOW = re.compile(r"^Current time \((\d+)\)")


def hpcc_phases(output: Path) -> list[dict]:
    """hpcc's tests as phases. It prints the time as each test ends, so a test runs from the time
    printed before it began to the time printed before it ended."""
    found, last, began = [], None, {}
    for line in output.read_text(errors="replace").splitlines():
        line = line.strip()
        now = _NOW.match(line)
        if now:
            last = int(now.group(1))
            continue
        section = _SECTION.match(line)
        if section is None or last is None:
            continue
        edge, name = section.groups()
        if edge == "Begin":
            began[name] = last
        elif name in began and name not in ("Summary",):
            phase = {"name": f"hpcc {name}", "start": float(began.pop(name)), "end": float(last), "source": "hpcc"}
            if name == "HPL":
                phase["energy"] = True
            found.append(phase)
    return found


def web_steps(result: dict) -> list[dict]:
    """Each step of a web-capacity ramp (its result's steps, timed by sbclab), asking for the
    server's CPU over it: the CPU at the peak rate is that step's, not the whole ramp's."""
    server = result.get("server")
    return [{"name": f"web {step['rate']} req/s", "start": step["start"], "end": step["end"], "source": "httperf",
             "cpu_of": server} for step in result.get("steps") or [] if server and "start" in step]
