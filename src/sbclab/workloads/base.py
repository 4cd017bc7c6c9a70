"""What every workload shares: the interface, the context a run happens in, and what a job yields.

A workload is one benchmark behind one interface, whatever runs it — Hadoop or Spark jobs, a tool
on the nodes (sysbench, fio, iperf3, stress-ng, nginx with httperf, NetPIPE) or an MPI program
(HPL, NetPIPE over MPI). The run path (experiments/orchestrator.py) calls, in order:

    prepare   the input, made (and stored as runs of their own) once per cluster and reused
    run_job   the job, inside the run's recording; its timed outcome, figures and cheap checks
    validate  the checks that read the output again (TeraValidate, GNU grep, SortCheck), after the
              recording, and the output's removal
"""

import json
import re
import secrets
import subprocess
import time
from abc import ABC
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Protocol

from ..cluster import nodeops
from ..cluster.spec import NodeSpec
from ..errors import SbclabError
from ..results.schema import BIG_DATA_ENGINES, Check, RunRecord
from ..stack import clients
from ..stack.clients import JobOutcome
from ..stack.counters import spark_event_metrics
from ..stack.lifecycle import Cluster

_SPARK_RESULT = re.compile(r"SBCLAB_RESULT (\{.*\})")
PYSPARK_JOBS = Path(__file__).parent / "pyspark_jobs"
# Up to this much data, a check that is itself a job (TeraValidate, SortCheck) runs in one JVM on the
# master (MapReduce's local runner, Spark's local mode), reading HDFS as on the cluster: a job on YARN
# would spend most of its time and CPU starting an ApplicationMaster and a JVM per task or executor.
CHECKED_ON_THE_MASTER_BYTES = 64 * 2**20


def checked_on_the_master(size_bytes: int) -> bool:
    return size_bytes <= CHECKED_ON_THE_MASTER_BYTES


def new_id(*parts: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return "-".join([stamp, *parts, secrets.token_hex(2)])


class Measure(Protocol):
    """Runs a workload through the whole run path (record, job, validate, store): how an input made
    on the way to another run (a TeraGen before a TeraSort) is stored as a run of its own."""

    def __call__(self, workload: "Workload", engine: str, params: dict[str, Any], repetition: int = 1) -> RunRecord: ...


@dataclass
class RunContext:
    """What a workload sees of the run it is part of."""

    cluster: Cluster
    results: Path
    measure: Measure
    progress: Callable[[str], None] = lambda message: None

    @property
    def stack(self):
        return self.cluster.stack

    @property
    def transport(self):
        return self.cluster.transport

    @property
    def spec(self):
        return self.cluster.spec

    def job_log(self, run_id: str, name: str) -> Path:
        return self.stack.client_logs() / "jobs" / run_id / f"{name}.log"

    def drop_caches(self) -> bool:
        """Drop the page cache of every node; False when this host does not allow it."""
        return nodeops.drop_caches(self.transport)

    def hdfs(self, args: list[str], log: Path, check: bool = True) -> JobOutcome:
        return clients.fs(self.stack, args, log, check=check)

    def reducers(self, params: dict[str, Any]) -> int:
        """The reduce-side parallelism both engines use: the parameter, else the cluster's setting."""
        if params.get("reducers"):
            return int(params["reducers"])
        return int(self.cluster.configuration.get("mapred-site", {}).get("mapreduce.job.reduces", 1))


@dataclass
class Attempt:
    """What one run of a workload yields, before it is stored."""

    outcome: JobOutcome
    checks: list[Check]
    result: dict[str, Any] = field(default_factory=dict)
    counters: dict[str, dict[str, float]] | None = None
    extra_logs: dict[str, Path] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)
    output: str | None = None  # where the job wrote in HDFS, for validate() to read and remove
    notes: list[str] = field(default_factory=list)
    parts: dict[str, "Attempt"] = field(default_factory=dict)  # a mix's jobs, each validated on its own

    @property
    def finished(self) -> bool:
        return self.outcome.exit_status == 0


class Workload(ABC):
    """One benchmark.

    `engines` are what it runs on: hadoop and spark for the big-data jobs, node for a tool on the
    nodes, mpi for an MPI program. `needs_stack` is False where bare nodes suffice (no HDFS or YARN).
    `programs` must be on the nodes, `host_programs` on this host (Debian package names in
    cluster/packages.py)."""

    name: str
    description: str
    engines: tuple[str, ...] = BIG_DATA_ENGINES
    sized = True  # whether the experiment's data sizes apply
    needs_stack = True
    programs: tuple[str, ...] = ()
    host_programs: tuple[str, ...] = ()
    # Bytes the cluster must hold per input byte, besides the input itself: the job's output plus its
    # intermediate data, after the seeds' measurements (Lee & Park 2026, Tables 11-14).
    footprint_per_input_byte = 1.0
    # The shortest a timed measurement (`seconds`, or a ramp's `step_seconds`) may be cut to by --work
    # and still measure the same quantity.
    shortest_timed_s = 1
    # Whether MapReduce jobs make its input or check its output whichever engine runs it: a cluster on
    # which no MapReduce job fits cannot run it on Spark either.
    mapreduce_around = False
    # A workload whose time nobody published is estimated from one that reads its input the same way
    # (the estimate says so); None where no other stands in.
    estimated_like: str | None = None

    def defaults(self) -> dict[str, Any]:
        return {}

    def parameters(self, size_bytes: int | None, given: dict[str, Any] | None = None) -> dict[str, Any]:
        params = {**self.defaults(), **(given or {})}
        if self.sized:
            params["size_bytes"] = size_bytes
        return params

    def check_parameters(self, params: dict[str, Any]) -> None:
        """Refuse parameters this workload cannot run with, before anything starts."""

    def expand(self, params: dict[str, Any], nodes: list[tuple[str, str]]) -> list[dict[str, Any]]:
        """One parameter set per run; a node benchmark given `node: all` runs once per node.
        nodes: (name, role) of the cluster's nodes, master first."""
        return [params]

    def prepare(self, ctx: RunContext, engine: str, params: dict[str, Any]) -> dict[str, Any]:
        """The input the job reads; generated once and reused unless params say `reuse_input: false`."""
        return {}

    def run_job(self, ctx: RunContext, engine: str, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        runner = getattr(self, engine, None)
        if engine not in self.engines or runner is None:
            raise SbclabError(f"{self.name} does not run on {engine}.", f"Its engines: {', '.join(self.engines)}.")
        return runner(ctx, run_id, params, data)

    def validate(self, ctx: RunContext, engine: str, run_id: str, params: dict[str, Any], data: dict[str, Any],
                 attempt: Attempt) -> None:
        """Checks that read the job's output again, added to attempt.checks, and the output removed."""


class NodeBenchmark(Workload):
    """A tool run on the nodes themselves (engine 'node'), on bare nodes, once per node unless a
    `node` is named, with no input data."""

    engines = ("node",)
    sized = False
    needs_stack = False
    footprint_per_input_byte = 0.0
    roles = ("master", "worker")  # the nodes `node: all` stands for

    def defaults(self) -> dict[str, Any]:
        return {"node": "all"}

    def expand(self, params: dict[str, Any], nodes: list[tuple[str, str]]) -> list[dict[str, Any]]:
        return on_nodes(params, nodes, self.roles)


def on_nodes(params: dict[str, Any], nodes: list[tuple[str, str]], roles=("master", "worker")) -> list[dict[str, Any]]:
    """`node: all` as one parameter set per node of those roles; a named node as it is."""
    if params.get("node", "all") != "all":
        return [params]
    return [{**params, "node": name} for name, role in nodes if role in roles]


def spark_result(outcome: JobOutcome) -> dict[str, Any]:
    """The SBCLAB_RESULT line an sbclab Spark job prints last, or {} when it printed none."""
    found = _SPARK_RESULT.findall(outcome.output)
    return json.loads(found[-1]) if found else {}


def spark_job(ctx: RunContext, run_id: str, label: str, main_class: str, args: list[str],
              needs_examples: bool = False, on_the_master: bool = False) -> tuple[JobOutcome, dict[str, Any], dict, dict[str, Path]]:
    """Submit one of sbclab's Spark jobs (on YARN or the standalone master; on_the_master: in Spark's
    local mode, in the driver's JVM); its outcome, result, event-log metrics and event log."""
    conf = {"spark.jars": f"local:{ctx.stack.dist.examples_jar}"} if needs_examples else {}
    if on_the_master:
        conf["spark.master"] = "local[2]"  # two task threads: the data is small, and a Pi has at least two cores
    return submitted(ctx, run_id, label, f"org.sbclab.jobs.{main_class}", ctx.stack.dist.jobs_jar, args, conf or None)


def pyspark_job(ctx: RunContext, run_id: str, label: str, script: str,
                args: list[str]) -> tuple[JobOutcome, dict[str, Any], dict, dict[str, Path]]:
    """Submit one of sbclab's PySpark jobs (pyspark_jobs/), put on the master first, as spark_job does."""
    ctx.stack.dist.stack.require_pyspark()
    master = ctx.spec.master
    folder = ctx.stack.layout(master).disk / "tmp" / "pyspark-jobs"
    ctx.transport.make_dirs(master, [folder])
    ctx.transport.put(master, folder, {script: (PYSPARK_JOBS / script).read_text()})
    return submitted(ctx, run_id, label, None, folder / script, args, None)


def submitted(ctx: RunContext, run_id: str, label: str, main_class: str | None, resource: Path, args: list[str],
              conf: dict[str, str] | None, timeout_s: float = 7200) -> tuple[JobOutcome, dict[str, Any], dict, dict[str, Path]]:
    """A Spark application submitted from the master: a jar and its main class, or a Python script."""
    log = ctx.job_log(run_id, label.replace(" ", "-"))
    outcome = clients.spark_submit(ctx.stack, main_class, resource, args, log, label, conf=conf, timeout_s=timeout_s)
    counters, logs = spark_counters(ctx, outcome, log)
    return outcome, spark_result(outcome), counters, logs


def spark_counters(ctx: RunContext, outcome: JobOutcome, log: Path) -> tuple[dict, dict[str, Path]]:
    """The event-log metrics of the applications a command submitted, and their event logs."""
    master = ctx.spec.master
    events_dir = ctx.stack.layout(master).spark_events
    counters: dict = {}
    logs: dict[str, Path] = {}
    for app in outcome.job_ids:
        event_log = ctx.transport.get(master, events_dir / app, log.parent / f"spark-events-{app}")
        if event_log is not None:
            counters = spark_event_metrics(event_log)
            logs[f"spark-events/{app}"] = event_log
    return counters, logs


def hadoop_example(ctx: RunContext, run_id: str, label: str, args: list[str]) -> JobOutcome:
    """One of Hadoop's example jobs (hadoop-mapreduce-examples), as `hadoop jar` runs it."""
    return clients.hadoop_jar(ctx.stack, ctx.stack.dist.examples_jar, args, ctx.job_log(run_id, label.replace(" ", "-")),
                              label)


def remove_output(ctx: RunContext, run_id: str, attempt: Attempt) -> None:
    if attempt.output:
        ctx.hdfs(["-rm", "-r", "-f", "-skipTrash", attempt.output], ctx.job_log(run_id, "cleanup"), check=False)


def timed(ctx: RunContext, run_id: str, label: str, node: NodeSpec, command: list[str],
          body: Callable[[], tuple[dict, list[Check]]]) -> Attempt:
    """A node benchmark's body, timed and marked like every command; a failure is a failed check.
    Its figures are also kept as the run's log."""
    log = ctx.job_log(run_id, label)
    log.parent.mkdir(parents=True, exist_ok=True)
    marks = ctx.stack.marks
    if marks is not None:
        marks.command_started(label)
    started, clock = datetime.now(timezone.utc), time.monotonic()
    status, result, checks = 0, {}, []
    try:
        result, checks = body()
    except (SbclabError, OSError, subprocess.SubprocessError) as err:
        status = 1
        checks = [Check(name=f"{label} finished", passed=False, detail=str(err)[:500])]
    finished = datetime.now(timezone.utc)
    wall = time.monotonic() - clock
    if marks is not None:
        marks.command_finished(label, started, finished, status)
    log.write_text(json.dumps({"node": node.name, "result": result}, indent=1) + "\n")
    outcome = JobOutcome(command, status, started, finished, wall, log, "")
    return Attempt(outcome, checks or [Check(name=f"{label} finished", passed=status == 0, detail="")], result)


def exited(outcome: JobOutcome, what: str) -> Check:
    return Check(name=f"{what} finished", passed=outcome.exit_status == 0, detail=f"exit status {outcome.exit_status}")


def equal(name: str, got: Any, want: Any) -> Check:
    return Check(name=name, passed=got == want, detail=f"{got} (expected {want})")
