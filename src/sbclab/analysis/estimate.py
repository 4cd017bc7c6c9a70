"""How long runs will take, before they start: from stored runs of similar cells where there are
some, else from the seeds' published times on their boards.

A run's time is modelled in board-seconds, the time it would take at scale 1: on a cluster emulated
at scale f everything (CPU, disk, network) runs f times slower, so a run of T seconds there is
T * f board-seconds. Per workload and engine the board time is a fixed part plus a part that
shrinks with the workers, B = F + W * work / workers, fitted (F, W >= 0) to what is known; `work`
is the input size, or the maps (tasks) for Pi. HPL is timed as it times itself: its operation count,
2/3 N^3 + 3/2 N^2, at the Gflops the nodes reach (stored runs, else the seeds' Rmax on the board).
An estimate is a guide to plan by (an hour or three days?), not a measurement: each says where it
comes from.
"""

import statistics
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

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
    parameters: dict[str, Any]  # HPL's holds its problem size n, worked out from the nodes' memory
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
    """What a run's time grows with: the input's bytes, or Pi's tasks (a map's or a slice's time is its
    JVM's start-up or its scheduling far more than its samples, so --work, which shrinks the samples and
    keeps the tasks, hardly shortens it)."""
    if workload == "pi":
        return float(parameters.get("maps", 1))
    return float(size_bytes or 1)


def hpl_operations(n: int) -> float:
    """The floating-point operations HPL counts for a problem of order n (its own Gflops = this / time)."""
    return 2 / 3 * n**3 + 3 / 2 * n**2


def _hpl_gflops(board: str, nodes: int, fraction: float | None, stored: list[RunRecord]) -> tuple[float, str] | None:
    """The Gflops `nodes` nodes of `board` reach at scale 1: from stored runs on as many nodes, else the
    seeds' Rmax on the board (as many nodes and the nearest memory share, else the nearest node count
    per node), else the seeds' efficiency (Rmax / Rpeak) at this board's Rpeak."""
    mine = [r.result["rmax_gflops"] / (r.scale.factor if r.cluster.emulated else 1.0) for r in stored
            if r.workload == "hpl" and r.headline and r.cluster.board == board and r.result.get("rmax_gflops")
            and int(r.parameters.get("nodes") or 0) == nodes]
    if mine:
        return statistics.median(mine), f"{len(mine)} stored HPL run(s) on {nodes} node(s) of {board}"
    rows = [p for p in reference.published() if p.metric == "hpl_rmax" and p.value and p.dimensions.get("workers")]
    share = 100 * (fraction or 0.8)

    def nearest(found):
        return min(found, key=lambda p: (abs(p.dimensions["workers"] - nodes),
                                         abs((p.dimensions.get("memory_utilised_pct") or share) - share)))
    same = [p for p in rows if p.dimensions.get("board") == board]
    if same:
        p = nearest(same)
        ran = p.dimensions["workers"]
        gflops = p.value * nodes / ran
        how = f"{p.value:g} Gflops on {ran} node(s)" + (f", {nodes / ran:g}x that for {nodes}" if ran != nodes else "")
        return gflops, f"{p.source}: {how} at {p.dimensions.get('memory_utilised_pct', '?')} % of memory"
    known = profiles.boards()
    ours = known.get(board)
    if ours is None or not ours.flops_per_cycle:
        return None
    for p in sorted(rows, key=lambda p: abs(p.dimensions["workers"] - nodes)):
        theirs = known.get(p.dimensions.get("board") or "")
        if theirs is None or not theirs.flops_per_cycle:
            continue
        ran = p.dimensions["workers"]
        efficiency = p.value / (theirs.clock_ghz * theirs.cores * theirs.flops_per_cycle * ran)
        peak = ours.clock_ghz * ours.cores * ours.flops_per_cycle * nodes
        return efficiency * peak, (f"{p.source}'s efficiency on {theirs.name} ({efficiency:.0%} of Rpeak) at {board}'s "
                                   f"Rpeak of {peak:g} Gflops on {nodes} node(s)")
    return None


def _hpl(run: Planned, stored: list[RunRecord]) -> Estimated:
    n = run.parameters.get("n")
    if not n:
        return Estimated(run, None, "HPL's problem size N is not known before the nodes' memory is")
    nodes = int(run.parameters.get("nodes") or run.workers)
    found = _hpl_gflops(run.board, nodes, run.parameters.get("memory_fraction"), stored)
    if found is None:
        return Estimated(run, None, f"no stored HPL run on {run.board} and no seed's Rmax to scale to it")
    gflops, source = found
    board_seconds = hpl_operations(int(n)) / (gflops * 1e9)
    return Estimated(run, board_seconds / run.scale_factor,
                     f"HPL's 2/3 N^3 operations at N = {int(n):,} over {source}")


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
    whose CPU speed relative to this one the profiles give (times divided by that ratio). A Pi row
    is taken at the maps and samples its table states, else at the workload's defaults."""
    rows = [p for p in reference.wall_times()
            if p.dimensions.get("workload") == workload and p.dimensions.get("engine") == engine
            and p.dimensions.get("workers") and (workload == "pi" or p.size_bytes)]
    same_board = [p for p in rows if p.dimensions.get("board") == board]
    if same_board:
        chosen, how = [(p, 1.0) for p in same_board], f"on {board}"
    else:
        chosen = [(p, ratio) for p in rows if (ratio := board_speed_ratio(p.dimensions.get("board"), board))]
        how = f"on {', '.join(sorted({p.dimensions['board'] for p, _ in chosen}))}, scaled to {board} by sysbench"
    points = [(work(workload, p.size_bytes if workload != "pi" else None, p.parameters or defaults)
               / p.dimensions["workers"], p.seconds / ratio) for p, ratio in chosen]
    return points, how


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """F and W of B = F + W * x, both non-negative; with one distinct x, all of B is taken as W * x."""
    xs = {x for x, _ in points}
    if len(xs) < 2:
        x = next(iter(xs))
        return 0.0, statistics.mean(b for _, b in points) / x
    # Imported here: scipy.optimize costs every command that reaches this module a third of a second.
    from scipy.optimize import nnls
    design = np.array([[1.0, x] for x, _ in points])
    (fixed, per_unit), _ = nnls(design, np.array([b for _, b in points]))
    return float(fixed), float(per_unit)


def _model(workload: str, engine: str, board: str, observed, defaults) -> tuple[tuple[float, float], str] | None:
    """The fitted board time of a workload on an engine and where it comes from: stored runs, else the seeds'."""
    mine = observed.get((workload, engine))
    if mine:
        return fit(mine), f"{len(mine)} stored run(s) of {workload}/{engine}"
    theirs, how = _published(workload, engine, board, defaults.get(workload, {}))
    return (fit(theirs), f"the seeds' {len(theirs)} published {workload}/{engine} time(s) {how}") if theirs else None


def estimate(planned: list[Planned], stored: Iterable[RunRecord], defaults: dict[str, dict[str, Any]],
             like: dict[str, str] | None = None) -> list[Estimated]:
    """`like` names, for a workload with no stored or published time, the one estimated in its place."""
    stored = list(stored)
    observed = _observed(stored)
    models: dict[tuple[str, str, str], tuple[tuple[float, float], str] | None] = {}
    out = []
    for run in planned:
        if run.workload == "hpl":
            # Its time grows with N^3 and the sweep's N with the nodes' memory: a fit over wall times would not.
            out.append(_hpl(run, stored))
            continue
        key = (run.workload, run.engine, run.board)
        if key not in models:
            models[key] = _model(run.workload, run.engine, run.board, observed, defaults)
            stand_in = (like or {}).get(run.workload)
            if models[key] is None and stand_in:
                found = _model(stand_in, run.engine, run.board, observed, defaults)
                models[key] = found and (found[0], f"as {stand_in}'s (none of {run.workload}): {found[1]}")
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
