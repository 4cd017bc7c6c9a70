"""What every workload shares: the context a run happens in, the workload interface, and turning a
finished job into a stored run."""

import json
import re
import secrets
import sys
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..cluster.lifecycle import Cluster
from ..monitor import measure, phases
from ..monitor.recorder import RawRecording, Recorder
from ..monitor.settings import MonitorSettings
from ..results import provenance
from ..results.schema import Check, ClusterShape, RunRecord, Validity
from ..results.store import ResultsStore
from ..stack import clients
from ..stack.clients import JobOutcome
from ..stack.counters import spark_event_metrics, spark_intermediate_by_host

ENGINES = ("hadoop", "spark")
_SPARK_RESULT = re.compile(r"SBCLAB_RESULT (\{.*\})")


def new_id(*parts: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return "-".join([stamp, *parts, secrets.token_hex(2)])


@dataclass
class RunContext:
    cluster: Cluster
    store: ResultsStore
    experiment_id: str = field(default_factory=lambda: new_id("exp"))
    command: list[str] = field(default_factory=lambda: ["sbclab", *sys.argv[1:]])
    progress: Any = lambda message: None
    cell: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    monitor: MonitorSettings = field(default_factory=MonitorSettings)
    idle_baseline: dict[str, Any] | None = None

    @contextmanager
    def recording(self, run_id: str):
        """Samplers on every node around the block; yields a holder whose .raw is set when the block ends.

        Inside an active recording (a job made on the way to another) nothing new is started."""
        holder = _Holder()
        if not self.monitor.enabled or self.stack.recording is not None:
            yield holder
            return
        # Bare nodes (node benchmarks) have no DataNodes to ask.
        counters = self.stack.datanode_counters if self.cluster.state.phase == "up" else None
        recorder = Recorder(self.cluster, run_id, self.monitor, datanode_counters=counters)
        try:
            recorder.start()
            self.stack.recording = recorder
            yield holder
        except BaseException:
            self.stack.recording = None
            recorder.abandon()
            raise
        self.stack.recording = None
        holder.raw = recorder.stop()

    @property
    def stack(self):
        return self.cluster.stack

    def job_log(self, run_id: str, name: str) -> Path:
        return self.stack.client_logs() / "jobs" / run_id / f"{name}.log"

    def shape(self) -> ClusterShape:
        spec = self.cluster.spec
        return ClusterShape(name=spec.name, backend=spec.backend, emulated=spec.backend == "emulated",
                            shaped=self.cluster.backend.shaped, workers=spec.workers, board=spec.board,
                            storage=spec.storage, preset=spec.preset, nodes=list(spec.nodes),
                            knobs=self.cluster.backend.knobs())

    def keep_container_logs(self, run_id: str, app_ids: list[str]) -> dict[str, str]:
        kept = {}
        for worker in self.cluster.spec.worker_nodes:
            userlogs = self.stack.layout(worker).log_dir / "userlogs"
            for app in app_ids:
                path = self.store.keep_log(run_id, userlogs / app, f"containers/{worker.name}/{app}")
                if path:
                    kept[f"containers/{worker.name}/{app}"] = path
        return kept

    def store_run(self, *, run_id: str, workload: str, engine: str, parameters: dict[str, Any], outcome: JobOutcome,
                  checks: list[Check], result: dict[str, Any] | None = None,
                  counters: dict[str, dict[str, float]] | None = None, extra_logs: dict[str, Path] | None = None,
                  repetition: int = 1, notes: list[str] | None = None,
                  recording: RawRecording | None = None, input_bytes: int | None = None) -> RunRecord:
        """Keep the run's logs and measurements, then write its document atomically."""
        counters = counters if counters is not None else outcome.counters
        logs = {"client": self.store.keep_log(run_id, outcome.log, "client.log")}
        extra_logs = {**(extra_logs or {}), **(recording.files() if recording else {})}
        for name, path in extra_logs.items():
            kept = self.store.keep_log(run_id, path, name)
            if kept:
                logs[name] = kept
        app_ids = [j.replace("job_", "application_") for j in outcome.job_ids if j.startswith("job_")]
        app_ids += [j for j in outcome.job_ids if j.startswith("application_")]
        logs.update(self.keep_container_logs(run_id, app_ids))
        measured = None
        if recording is not None:
            measured = self._measurements(run_id, engine, outcome, counters, input_bytes, extra_logs, recording)
            logs["series"] = str(self.store.write_series(run_id, measured[1]).relative_to(self.store.root))
            measured = measured[0].model_copy(update={"series": logs["series"]})
        spec = self.cluster.spec
        run = RunRecord(
            run_id=run_id, experiment_id=self.experiment_id, repetition=repetition, workload=workload, engine=engine,
            parameters=parameters, cluster=self.shape(), scale=spec.scale,
            versions=self.cluster.state.extra.get("versions", {}),
            configuration=self.cluster.configuration, host=provenance.host_facts(), command=self.command,
            job_command=outcome.command, started_at=outcome.started_at, finished_at=outcome.finished_at,
            wall_time_s=round(outcome.wall_time_s, 3), exit_status=outcome.exit_status,
            validity=Validity.of(checks), counters=counters,
            job_ids=outcome.job_ids, result=result or {}, logs={k: v for k, v in logs.items() if v},
            notes=[*self.notes, *(notes or [])], cell=self._cell_of(workload, engine), measurements=measured)
        self.store.write(run)
        return run

    def _measurements(self, run_id, engine, outcome, counters, input_bytes, logs, recording):
        engine_phases = phases.from_commands(recording.commands)
        notes, engine_by_host = [], {}
        hadoop_jobs = [j for j in outcome.job_ids if j.startswith("job_")]
        if hadoop_jobs:
            found, engine_by_host, notes = phases.hadoop_from_history(self.stack, hadoop_jobs)
            engine_phases += found
        for name, path in logs.items():
            if name.startswith("spark-events/") and Path(path).exists():
                engine_phases += phases.spark_phases(Path(path))
                for host, written in spark_intermediate_by_host(Path(path)).items():
                    engine_by_host[host] = engine_by_host.get(host, 0) + written
        idle = (self.idle_baseline or {}).get("watts")
        measured, document = measure.summarise(
            recording, start=outcome.started_at.timestamp(), end=outcome.finished_at.timestamp(),
            spec=self.cluster.spec, engine=engine, counters=counters,
            input_bytes=input_bytes, engine_phases=engine_phases, idle_watts=idle, notes=notes,
            engine_by_host=engine_by_host)
        if self.idle_baseline:
            measured = measured.model_copy(update={"idle_baseline": self.idle_baseline})
        return measured, document

    def _cell_of(self, workload: str, engine: str) -> dict[str, Any] | None:
        """The experiment cell, for the run it asked for; inputs made on the way (a TeraGen before
        a TeraSort) are stored without it, so they never stand in for the cell on resume."""
        if self.cell and self.cell.get("workload") == workload and self.cell.get("engine") == engine:
            return self.cell
        return None

    def drop_caches(self) -> bool:
        """Drop the page cache of every node; False when this host does not allow it."""
        return self.cluster.backend.drop_caches()

    def hdfs(self, args: list[str], log: Path, check: bool = True) -> JobOutcome:
        return clients.fs(self.stack, args, log, check=check)

    def reducers(self, params: dict[str, Any]) -> int:
        """The reduce-side parallelism both engines use: the parameter, else the cluster's setting."""
        if params.get("reducers"):
            return int(params["reducers"])
        return int(self.cluster.configuration.get("mapred-site", {}).get("mapreduce.job.reduces", 1))


@dataclass
class _Holder:
    raw: RawRecording | None = None


@dataclass
class Attempt:
    """What one engine run of a workload yields, before it is stored."""

    outcome: JobOutcome
    checks: list[Check]
    result: dict[str, Any] = field(default_factory=dict)
    counters: dict[str, dict[str, float]] | None = None
    extra_logs: dict[str, Path] = field(default_factory=dict)
    parameters: dict[str, Any] = field(default_factory=dict)


class Workload(ABC):
    """One benchmark of the seeds, on Hadoop MapReduce and on Spark.

    prepare() makes (or finds) the input, once per cluster and parameters; hadoop() and spark() run
    the job and validate its output; run() stores the outcome as a run document.
    """

    name: str
    description: str
    engines: tuple[str, ...] = ENGINES
    sized = True  # whether the experiment's data sizes apply
    # Bytes the cluster must hold per input byte, besides the input itself: the job's output plus its
    # intermediate data, after the seeds' measurements (Lee & Park 2026, Tables 11-14).
    footprint_per_input_byte = 1.0

    def defaults(self) -> dict[str, Any]:
        return {}

    def parameters(self, size_bytes: int | None, given: dict[str, Any] | None = None) -> dict[str, Any]:
        params = {**self.defaults(), **(given or {})}
        if self.sized:
            params["size_bytes"] = size_bytes
        return params

    def prepare(self, ctx: RunContext, params: dict[str, Any]) -> dict[str, Any]:
        """The input the job reads; generated once and reused unless params say `reuse_input: false`."""
        return {}

    @abstractmethod
    def hadoop(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt: ...

    @abstractmethod
    def spark(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt: ...

    def run(self, ctx: RunContext, engine: str, params: dict[str, Any], repetition: int = 1) -> RunRecord:
        data = self.prepare(ctx, params)
        run_id = new_id(engine, self.name)
        with ctx.recording(run_id) as recorded:
            attempt = getattr(self, engine)(ctx, run_id, params, data)
        parameters = {**params, **attempt.parameters}
        if data.get("run_id"):
            parameters["input_run_id"] = data["run_id"]
        return ctx.store_run(run_id=run_id, workload=self.name, engine=engine, repetition=repetition,
                             parameters=parameters, outcome=attempt.outcome, checks=attempt.checks,
                             result=attempt.result, counters=attempt.counters, extra_logs=attempt.extra_logs,
                             recording=recorded.raw, input_bytes=data.get("bytes"))


def spark_result(outcome: JobOutcome) -> dict[str, Any]:
    """The SBCLAB_RESULT line an sbclab Spark job prints last, or {} when it printed none."""
    found = _SPARK_RESULT.findall(outcome.output)
    return json.loads(found[-1]) if found else {}


def spark_job(ctx: RunContext, run_id: str, label: str, main_class: str, args: list[str],
              needs_examples: bool = False) -> tuple[JobOutcome, dict[str, Any], dict, dict[str, Path]]:
    """Submit one of sbclab's Spark jobs on YARN; its outcome, result, event-log metrics and event log."""
    log = ctx.job_log(run_id, label.replace(" ", "-"))
    conf = {"spark.jars": f"local:{ctx.stack.dist.examples_jar}"} if needs_examples else None
    outcome = clients.spark_submit(ctx.stack, f"org.sbclab.jobs.{main_class}", ctx.stack.dist.jobs_jar, args, log,
                                   label, conf=conf)
    master = ctx.cluster.spec.master
    events_dir = ctx.stack.layout(master).spark_events
    counters: dict = {}
    logs: dict[str, Path] = {}
    for app in outcome.job_ids:
        event_log = ctx.cluster.backend.fetch(master, events_dir / app, log.parent / f"spark-events-{app}")
        if event_log is not None:
            counters = spark_event_metrics(event_log)
            logs[f"spark-events/{app}"] = event_log
    return outcome, spark_result(outcome), counters, logs


def hadoop_example(ctx: RunContext, run_id: str, label: str, args: list[str]) -> JobOutcome:
    """One of Hadoop's example jobs (hadoop-mapreduce-examples), as `hadoop jar` runs it."""
    return clients.hadoop_jar(ctx.stack, ctx.stack.dist.examples_jar, args, ctx.job_log(run_id, label.replace(" ", "-")),
                              label)


def exited(outcome: JobOutcome, what: str) -> Check:
    return Check(name=f"{what} finished", passed=outcome.exit_status == 0, detail=f"exit status {outcome.exit_status}")


def equal(name: str, got: Any, want: Any) -> Check:
    return Check(name=name, passed=got == want, detail=f"{got} (expected {want})")
