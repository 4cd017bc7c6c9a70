"""The 2026 seed's multi-job experiment: WordCount, TeraSort, Grep and Pi submitted together
(134 s on its cluster) against the same jobs one after another (254 s).

Each mode is stored as one run (`mix-concurrent`, `mix-sequential`) whose wall time spans all its
jobs; each job's own time, exit status and checks are kept in the run, and the run is valid only
when every job's output is.
"""

import hashlib
import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

from .. import workloads as registry
from ..results.schema import Check, RunRecord
from ..stack.clients import JobOutcome
from ..workloads.base import Attempt, RunContext, new_id
from .model import Concurrent

MODES = ("sequential", "concurrent")


def cell_of(conc: Concurrent, mode: str, repetition: int, spec) -> dict:
    described = {"workload": f"mix-{mode}", "engine": conc.engine, "workloads": conc.workloads,
                 "size_bytes": conc.size, "workers": spec.workers, "board": spec.board, "storage": spec.storage,
                 "preset": spec.preset, "repetition": repetition}
    key = hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:20]
    return {"key": key, **described}


def _one(ctx: RunContext, name: str, engine: str, run_id: str, params: dict, data: dict) -> tuple[Attempt, float]:
    start = time.monotonic()
    attempt = getattr(registry.get(name), engine)(ctx, f"{run_id}-{name}", params, data)
    return attempt, time.monotonic() - start


def run(ctx: RunContext, conc: Concurrent, say, done: set[str] = frozenset()) -> list[RunRecord]:
    stored = []
    for repetition in range(1, conc.repetitions + 1):
        for mode in MODES:
            cell = cell_of(conc, mode, repetition, ctx.cluster.spec)
            if cell["key"] in done:
                continue
            jobs = {}
            for name in conc.workloads:
                workload = registry.get(name)
                params = workload.parameters(conc.size)
                jobs[name] = (params, workload.prepare(ctx, params))
            ctx.drop_caches()
            run_id = new_id(conc.engine, f"mix-{mode}")
            say(f"{conc.engine} {', '.join(conc.workloads)} {'together' if mode == 'concurrent' else 'one after another'}")
            with ctx.recording(run_id) as recorded:
                started = datetime.now(timezone.utc)
                start = time.monotonic()
                if mode == "concurrent":
                    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
                        futures = {name: pool.submit(_one, ctx, name, conc.engine, run_id, *jobs[name]) for name in jobs}
                        results = {name: f.result() for name, f in futures.items()}
                else:
                    results = {name: _one(ctx, name, conc.engine, run_id, *jobs[name]) for name in jobs}
                wall = time.monotonic() - start
                finished = datetime.now(timezone.utc)
            checks = [Check(name=f"{name}: {c.name}", passed=c.passed, detail=c.detail)
                      for name, (attempt, _) in results.items() for c in attempt.checks]
            status = max((a.outcome.exit_status for a, _ in results.values()), key=abs, default=0)
            first = next(iter(results.values()))[0].outcome
            outcome = JobOutcome(command=first.command, exit_status=status, started_at=started,
                                 finished_at=finished, wall_time_s=wall, log=first.log, output="",
                                 job_ids=[j for a, _ in results.values() for j in a.outcome.job_ids])
            logs = {f"{name}.log": a.outcome.log for name, (a, _) in results.items()}
            ctx.cell = cell
            try:
                stored.append(ctx.store_run(
                    run_id=run_id, workload=f"mix-{mode}", engine=conc.engine, repetition=repetition,
                    parameters={"workloads": conc.workloads, "size_bytes": conc.size}, outcome=outcome, checks=checks,
                    result={"jobs": {name: {"wall_time_s": round(seconds, 3), "exit_status": a.outcome.exit_status,
                                            "job_ids": a.outcome.job_ids, **a.result}
                                     for name, (a, seconds) in results.items()}},
                    counters={}, extra_logs=logs, recording=recorded.raw))
            finally:
                ctx.cell = None
    return stored
