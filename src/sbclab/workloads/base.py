"""What every workload shares: the context a run happens in and turning a finished job into a stored run."""

import secrets
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..cluster.lifecycle import Cluster
from ..results import provenance
from ..results.schema import Check, ClusterShape, RunRecord, Validity
from ..results.store import ResultsStore
from ..stack.clients import JobOutcome


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

    @property
    def stack(self):
        return self.cluster.stack

    def job_log(self, run_id: str, name: str) -> Path:
        return self.stack.layout(self.cluster.spec.master).log_dir / "jobs" / run_id / f"{name}.log"

    def shape(self) -> ClusterShape:
        spec = self.cluster.spec
        return ClusterShape(name=spec.name, backend=spec.backend, emulated=spec.backend == "emulated",
                            shaped=self.cluster.backend.shaped, workers=spec.workers, board=spec.board,
                            storage=spec.storage, preset=spec.preset, nodes=list(spec.nodes))

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
                  repetition: int = 1, notes: list[str] | None = None) -> RunRecord:
        """Keep the run's logs, then write its document atomically."""
        logs = {"client": self.store.keep_log(run_id, outcome.log, "client.log")}
        for name, path in (extra_logs or {}).items():
            kept = self.store.keep_log(run_id, path, name)
            if kept:
                logs[name] = kept
        app_ids = [j.replace("job_", "application_") for j in outcome.job_ids if j.startswith("job_")]
        app_ids += [j for j in outcome.job_ids if j.startswith("application_")]
        logs.update(self.keep_container_logs(run_id, app_ids))
        spec = self.cluster.spec
        run = RunRecord(
            run_id=run_id, experiment_id=self.experiment_id, repetition=repetition, workload=workload, engine=engine,
            parameters=parameters, cluster=self.shape(), scale=spec.scale,
            versions=self.cluster.state.extra.get("versions", {}),
            configuration=self.cluster.configuration, host=provenance.host_facts(), command=self.command,
            job_command=outcome.command, started_at=outcome.started_at, finished_at=outcome.finished_at,
            wall_time_s=round(outcome.wall_time_s, 3), exit_status=outcome.exit_status,
            validity=Validity.of(checks), counters=counters if counters is not None else outcome.counters,
            job_ids=outcome.job_ids, result=result or {}, logs={k: v for k, v in logs.items() if v},
            notes=notes or [])
        self.store.write(run)
        return run
