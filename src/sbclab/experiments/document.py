"""A run's document from what was measured: the one place a run becomes stored data.

Its logs are copied into the results directory (client log, job logs, YARN container logs, Spark
event logs, the samplers' files), its recording summarised into measurements with the engines'
phases, and the document written atomically with the cluster it ran on, as the results layer's
own types (never the live spec).
"""

import sys
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import redact
from ..cluster import cgroups, knobs
from ..errors import SbclabError
from ..monitor import measure, phases
from ..monitor.recorder import RawRecording
from ..results import provenance
from ..results.faults import FaultEffects, FaultRun
from ..results.schema import Check, ClusterShape, Liveness, NodeRecord, RunRecord, ScaleRecord, Validity
from ..results.store import ResultsStore
from ..stack import presets, sizing
from ..stack.clients import JobOutcome
from ..stack.counters import spark_intermediate_by_host, spark_tasks_by_host
from ..stack.lifecycle import Cluster


@dataclass
class Provenance:
    """What every run of one experiment on one cluster shares."""

    experiment_id: str
    command: list[str] = field(default_factory=lambda: ["sbclab", *sys.argv[1:]])
    notes: list[str] = field(default_factory=list)
    idle_baseline: dict[str, Any] | None = None


def shape(cluster: Cluster) -> ClusterShape:
    spec = cluster.spec
    nodes = []
    for node in spec.nodes:
        try:
            memory_mb, vcores = sizing.yarn_share(node)
        except SbclabError:  # bare nodes of a board too small for YARN's containers
            memory_mb, vcores = 0, 0
        nodes.append(NodeRecord(**node.model_dump(), yarn_memory_mb=memory_mb, yarn_vcores=vcores,
                                system=cluster.stack.record.systems.get(node.name, {})))
    return ClusterShape(name=spec.name, backend=spec.backend, emulated=spec.backend == "emulated",
                        shaped=cluster.transport.shaped, workers=spec.workers, board=spec.board, storage=spec.storage,
                        preset=cluster.choices.preset,
                        preset_source=presets.source(cluster.choices.preset, spec.board, spec.storage),
                        nodes=nodes, knobs=knobs.of_cluster(cluster.state),
                        spark_manager=cluster.choices.spark_manager, layout=spec.layout, runtime=spec.runtime,
                        stack=cluster.choices.stack,
                        container=cluster.stack.record.container.summary() if cluster.stack.record.container else {})


def _container_logs(cluster: Cluster, store: ResultsStore, run_id: str, app_ids: list[str]) -> dict[str, str]:
    """The YARN containers' logs of the run's applications, where this host can read them (the
    nodes' log folders are this host's; a board keeps its own)."""
    kept = {}
    if not cluster.transport.shares_host:
        return kept
    for worker in cluster.spec.worker_nodes:
        userlogs = cluster.stack.layout(worker).log_dir / "userlogs"
        for app in app_ids:
            name = f"containers/{worker.name}/{app}"
            path = store.keep_log(run_id, userlogs / app, name)
            if path:
                kept[name] = path
    return kept


def hadoop_jobs(outcome: JobOutcome) -> list[str]:
    return [j for j in outcome.job_ids if j.startswith("job_")]


def _measurements(cluster: Cluster, engine: str, outcome: JobOutcome, counters: dict, input_bytes: int | None,
                  logs: dict[str, Path], recording: RawRecording, idle_baseline: dict | None,
                  history: Future | None, trimmed: dict[str, int] | None = None, result: dict | None = None):
    engine_phases = phases.from_commands(recording.commands) + phases.web_steps(result or {})
    notes, engine_by_host, tasks_by_host = [], {}, {}
    if hadoop_jobs(outcome):
        found, engine_by_host, tasks_by_host, notes = (
            history.result() if history is not None else phases.hadoop_from_history(cluster.stack, hadoop_jobs(outcome)))
        engine_phases += found
    for name, path in logs.items():
        if name == "hpccoutf.txt" and Path(path).exists():
            engine_phases += phases.hpcc_phases(Path(path))
        if name.startswith("spark-events/") and Path(path).exists():
            engine_phases += phases.spark_phases(Path(path))
            for host, written in spark_intermediate_by_host(Path(path)).items():
                engine_by_host[host] = engine_by_host.get(host, 0) + written
            for host, ran in spark_tasks_by_host(Path(path)).items():
                tasks_by_host[host] = tasks_by_host.get(host, 0) + ran
    idle = (idle_baseline or {}).get("watts")
    measured, document = measure.summarise(
        recording, start=outcome.started_at.timestamp(), end=outcome.finished_at.timestamp(),
        spec=cluster.spec, engine=engine, counters=counters, input_bytes=input_bytes, engine_phases=engine_phases,
        idle_watts=idle, notes=notes, engine_by_host=engine_by_host, trimmed=trimmed, tasks_by_host=tasks_by_host)
    if idle_baseline:
        measured = measured.model_copy(update={"idle_baseline": idle_baseline})
    return measured, document


def store_run(cluster: Cluster, store: ResultsStore, provenance_: Provenance, *, run_id: str, workload: str,
              engine: str, parameters: dict[str, Any], outcome: JobOutcome, checks: list[Check],
              result: dict[str, Any] | None = None, counters: dict[str, dict[str, float]] | None = None,
              extra_logs: dict[str, Path] | None = None, repetition: int = 1, notes: list[str] | None = None,
              recording: RawRecording | None = None, input_bytes: int | None = None,
              cell: dict[str, Any] | None = None, history: Future | None = None,
              trimmed: dict[str, int] | None = None, jobs_before: int | None = None,
              liveness: Liveness | None = None, faults: list[FaultRun] = (),
              fault_effects: FaultEffects | None = None, configuration: dict | None = None) -> RunRecord:
    """Keep the run's logs and measurements, then write its document atomically. `history` is the
    JobHistory server's answer for the run's Hadoop jobs when it was asked for already."""
    counters = counters if counters is not None else outcome.counters
    logs = {"client": store.keep_log(run_id, outcome.log, "client.log")}
    extra_logs = {**(extra_logs or {}), **(recording.files() if recording else {})}
    for name, path in extra_logs.items():
        kept = store.keep_log(run_id, path, name)
        if kept:
            logs[name] = kept
    app_ids = [j.replace("job_", "application_") for j in outcome.job_ids if j.startswith("job_")]
    app_ids += [j for j in outcome.job_ids if j.startswith("application_")]
    logs.update(_container_logs(cluster, store, run_id, app_ids))
    measured = None
    if recording is not None:
        measured, series = _measurements(cluster, engine, outcome, counters, input_bytes, extra_logs, recording,
                                         provenance_.idle_baseline, history, trimmed, result)
        logs["series"] = str(store.write_series(run_id, series).relative_to(store.root))
        measured = measured.model_copy(update={"series": logs["series"]})
    run = RunRecord(
        run_id=run_id, experiment_id=provenance_.experiment_id, repetition=repetition, workload=workload, engine=engine,
        parameters=parameters, cluster=shape(cluster), scale=ScaleRecord(**cluster.spec.scale.model_dump()),
        versions=cluster.stack.record.versions, configuration=configuration or cluster.configuration,
        host={**provenance.host_facts(), "cgroup_version": cgroups.found_version()},
        command=provenance_.command, job_command=outcome.command, started_at=outcome.started_at,
        finished_at=outcome.finished_at, wall_time_s=round(outcome.wall_time_s, 3), exit_status=outcome.exit_status,
        validity=Validity.of(checks), counters=counters, job_ids=outcome.job_ids, result=result or {},
        logs={k: v for k, v in logs.items() if v},
        # Whatever a note quotes (an error naming a plug's URL) keeps no credential.
        notes=[redact.text(n) for n in [*provenance_.notes, *(notes or [])]], cell=cell, jobs_before=jobs_before,
        measurements=measured, liveness=liveness, faults=list(faults), fault_effects=fault_effects)
    store.write(run)
    return run
