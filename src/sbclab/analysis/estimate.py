"""How long runs will take, before they start: from stored runs of similar cells where there are
some, else from the seeds' published times on their boards.

A run's time is modelled in board-seconds, the time it would take at scale 1: on a cluster emulated
at scale f everything (CPU, disk, network) runs f times slower, so a run of T seconds there is
T * f board-seconds. Per workload and engine the board time is a fixed part plus a part that
shrinks with the workers, B = F + W * work / workers, fitted (F, W >= 0) to what is known; `work`
is the input size, or maps x samples for Pi. An estimate is a guide to plan by (an hour or three
days?), not a measurement: each says where it comes from.
"""

import statistics
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
from scipy.optimize import nnls

from .. import profiles
from ..results.schema import RunRecord
from . import reference


@dataclass(frozen=True)
class Planned:
    """A run still to do, as the estimate needs it."""

    workload: str
    engine: str
    size_bytes: int | None
    workers: int
    board: str
    parameters: dict[str, Any]
    scale_factor: float  # 1 on real boards
    label: str = ""


@dataclass(frozen=True)
class Estimated:
    run: Planned
    seconds: float | None
    source: str


@dataclass(frozen=True)
class Overhead:
    """The time between one run and the next (hygiene, validation, storing, inputs made on the way)."""

    seconds: float
    source: str


def work(workload: str, size_bytes: int | None, parameters: dict[str, Any]) -> float:
    if workload == "pi":
        return float(parameters.get("maps", 1)) * float(parameters.get("samples_per_map", 1))
    return float(size_bytes or 1)


def _observed(runs: Iterable[RunRecord]) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(work per worker, board-seconds) of every stored run fit for headline figures, by workload and engine."""
    found: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for run in runs:
        if not run.headline or run.wall_time_s <= 0:
            continue
        workers = int(run.parameters.get("nodes") or run.cluster.workers)
        size = run.parameters.get("size_bytes")
        x = work(run.workload, int(size) if size else None, run.parameters) / workers
        factor = run.scale.factor if run.cluster.emulated else 1.0
        found.setdefault((run.workload, run.engine), []).append((x, run.wall_time_s * factor))
    return found


def board_speed_ratio(published_on: str | None, board: str) -> float | None:
    """How much faster one core of `board` is than one of `published_on` (sysbench, one thread, at
    the same --cpu-max-prime); None when the profiles cannot tell."""
    known = profiles.boards()
    theirs, ours = known.get(published_on or ""), known.get(board)
    if theirs is None or ours is None:
        return None
    if theirs.sysbench is None or ours.sysbench is None or theirs.sysbench.max_prime != ours.sysbench.max_prime:
        return None
    a, b = theirs.sysbench_events(1), ours.sysbench_events(1)
    return b / a if a and b else None


def _published(workload: str, engine: str, board: str, defaults: dict[str, Any]) -> tuple[list[tuple[float, float]], str]:
    """(work per worker, seconds) of the seeds' wall times on the same board, else on the boards
    whose CPU speed relative to this one the profiles give (times divided by that ratio). Pi's rows
    do not print their maps and samples: they are taken as the workload's defaults, the 2026 seed's."""
    rows = [p for p in reference.wall_times()
            if p.dimensions.get("workload") == workload and p.dimensions.get("engine") == engine
            and p.dimensions.get("workers") and (workload == "pi" or p.size_bytes)]
    same_board = [p for p in rows if p.dimensions.get("board") == board]
    if same_board:
        chosen, how = [(p, 1.0) for p in same_board], f"on {board}"
    else:
        chosen = [(p, ratio) for p in rows if (ratio := board_speed_ratio(p.dimensions.get("board"), board))]
        how = f"on {', '.join(sorted({p.dimensions['board'] for p, _ in chosen}))}, scaled to {board} by sysbench"
    points = [(work(workload, p.size_bytes if workload != "pi" else None, defaults) / p.dimensions["workers"],
               p.seconds / ratio) for p, ratio in chosen]
    return points, how


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """F and W of B = F + W * x, both non-negative; with one distinct x, all of B is taken as W * x."""
    xs = {x for x, _ in points}
    if len(xs) < 2:
        x = next(iter(xs))
        return 0.0, statistics.mean(b for _, b in points) / x
    design = np.array([[1.0, x] for x, _ in points])
    (fixed, per_unit), _ = nnls(design, np.array([b for _, b in points]))
    return float(fixed), float(per_unit)


def estimate(planned: list[Planned], stored: Iterable[RunRecord], defaults: dict[str, dict[str, Any]]
             ) -> list[Estimated]:
    observed = _observed(stored)
    models: dict[tuple[str, str, str], tuple[tuple[float, float], str] | None] = {}
    out = []
    for run in planned:
        key = (run.workload, run.engine, run.board)
        if key not in models:
            mine = observed.get((run.workload, run.engine))
            if mine:
                models[key] = fit(mine), f"{len(mine)} stored run(s) of {run.workload}/{run.engine}"
            else:
                theirs, how = _published(run.workload, run.engine, run.board, defaults.get(run.workload, {}))
                models[key] = ((fit(theirs), f"the seeds' {len(theirs)} published {run.workload}/{run.engine} "
                                             f"time(s) {how}") if theirs else None)
        model = models[key]
        if model is None:
            out.append(Estimated(run, None, f"no stored or published run of {run.workload}/{run.engine}"))
            continue
        (fixed, per_unit), source = model
        board_seconds = fixed + per_unit * work(run.workload, run.size_bytes, run.parameters) / run.workers
        out.append(Estimated(run, board_seconds / run.scale_factor, source))
    return out


def between_runs(stored: Iterable[RunRecord]) -> Overhead | None:
    """The median time from one stored run's end to the next one's start within an experiment."""
    by_experiment: dict[str, list[RunRecord]] = {}
    for run in stored:
        by_experiment.setdefault(run.experiment_id, []).append(run)
    gaps = []
    for runs in by_experiment.values():
        runs.sort(key=lambda r: r.started_at)
        for before, after in zip(runs, runs[1:]):
            gap = (after.started_at - before.finished_at).total_seconds()
            if 0 <= gap < 1800:  # a longer pause is a new session, not the work between two runs
                gaps.append(gap)
    if not gaps:
        return None
    return Overhead(statistics.median(gaps), f"median of {len(gaps)} gap(s) between stored runs")
