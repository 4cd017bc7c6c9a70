"""The 2026 seed's multi-job experiment: WordCount, TeraSort, Grep and Pi submitted together (134 s
on its cluster) against the same jobs one after another (254 s).

Each mode is one workload (`mix-concurrent`, `mix-sequential`) whose run spans all its jobs; each
job's own time, exit status and checks are kept in the run, and the run is valid only when every
job's output is.
"""

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any

import requests

from ..errors import SbclabError
from ..results.schema import BIG_DATA_ENGINES, Check
from ..stack.clients import JobOutcome
from .base import Attempt, RunContext, Workload

PARTS = ("wordcount", "terasort", "grep", "pi")


def _together(ctx: RunContext, job_ids: list[list[str]]) -> float | None:
    """How long every job's ApplicationMaster was running at once, from the ResourceManager: YARN
    queues applications beyond its ApplicationMaster share, so clients that wait together do not
    prove that their jobs ran together. Negative when the last started after the first ended."""
    spans = []
    for ids in job_ids:
        apps = [j.replace("job_", "application_") for j in ids if j.startswith(("job_", "application_"))]
        try:
            found = [ctx.stack.application(a) for a in apps]
        except (requests.RequestException, KeyError, ValueError):
            return None
        if not found:
            return None
        spans.append((min(a["launchTime"] for a in found), max(a["finishedTime"] for a in found)))
    if len(spans) < 2:
        return None
    return round((min(end for _, end in spans) - max(start for start, _ in spans)) / 1000, 3)


class Mix(Workload):
    engines = BIG_DATA_ENGINES

    def __init__(self, mode: str, registry: dict[str, Workload]):
        self.mode = mode
        self.name = f"mix-{mode}"
        self.description = (f"{', '.join(PARTS)} submitted " +
                            ("together" if mode == "concurrent" else "one after another") + " (the 2026 seed's mix)")
        self.registry = registry

    @property
    def footprint_per_input_byte(self) -> float:
        return sum(self.registry[name].footprint_per_input_byte for name in PARTS)

    def defaults(self) -> dict[str, Any]:
        return {"workloads": list(PARTS)}

    def check_parameters(self, params: dict[str, Any]) -> None:
        unknown = [name for name in params["workloads"] if name not in self.registry or name.startswith("mix-")]
        if unknown or not params["workloads"]:
            raise SbclabError(f"A mix cannot hold {', '.join(map(str, unknown)) or 'no jobs'}.",
                              f"Mix jobs of: {', '.join(n for n in self.registry if not n.startswith('mix-'))}.")

    def _parts(self, params: dict[str, Any]) -> dict[str, tuple[Workload, dict]]:
        return {name: (self.registry[name], self.registry[name].parameters(params["size_bytes"]))
                for name in params["workloads"]}

    def prepare(self, ctx: RunContext, engine: str, params: dict[str, Any]) -> dict[str, Any]:
        data = {name: workload.prepare(ctx, engine, part) for name, (workload, part) in self._parts(params).items()}
        ctx.drop_caches()  # the inputs just made must not be read from memory
        return data

    def run_job(self, ctx: RunContext, engine: str, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        parts = self._parts(params)
        ctx.progress(f"{engine} {', '.join(parts)} {'together' if self.mode == 'concurrent' else 'one after another'}")

        def one(name: str) -> tuple[Attempt, float]:
            workload, part = parts[name]
            start = time.monotonic()
            attempt = workload.run_job(ctx, engine, f"{run_id}-{name}", part, data[name])
            return attempt, time.monotonic() - start

        started, start = datetime.now(timezone.utc), time.monotonic()
        if self.mode == "concurrent":
            with ThreadPoolExecutor(max_workers=len(parts)) as pool:
                futures = {name: pool.submit(one, name) for name in parts}
                done = {name: f.result() for name, f in futures.items()}
        else:
            done = {name: one(name) for name in parts}
        wall, finished = time.monotonic() - start, datetime.now(timezone.utc)
        status = max((a.outcome.exit_status for a, _ in done.values()), key=abs, default=0)
        first = next(iter(done.values()))[0].outcome
        outcome = JobOutcome(command=first.command, exit_status=status, started_at=started, finished_at=finished,
                             wall_time_s=wall, log=first.log, output="",
                             job_ids=[j for a, _ in done.values() for j in a.outcome.job_ids])
        result = {"jobs": {name: {"wall_time_s": round(seconds, 3), "exit_status": a.outcome.exit_status,
                                  "job_ids": a.outcome.job_ids, **a.result} for name, (a, seconds) in done.items()}}
        result["together_s"] = _together(ctx, [a.outcome.job_ids for a, _ in done.values()])
        return Attempt(outcome, [], result, counters={}, extra_logs={f"{name}.log": a.outcome.log
                                                                     for name, (a, _) in done.items()},
                       parts={name: a for name, (a, _) in done.items()})

    def validate(self, ctx: RunContext, engine: str, run_id: str, params: dict[str, Any], data: dict[str, Any],
                 attempt: Attempt) -> None:
        parts = self._parts(params)
        for name, part in attempt.parts.items():
            workload, part_params = parts[name]
            workload.validate(ctx, engine, f"{run_id}-{name}", part_params, data[name], part)
            attempt.checks += [Check(name=f"{name}: {c.name}", passed=c.passed, detail=c.detail) for c in part.checks]
            attempt.result["jobs"][name].update(part.result)
