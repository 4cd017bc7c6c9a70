"""A job's time in node count and data size, fitted per workload, engine, board and medium, with its
uncertainty: what `sbclab plan` predicts from.

The model, in board-seconds (a run on a cluster emulated at scale f took T * f of them, as in
estimate.py):

    B(n, s) = F + c * (s / tasks) * waves * (1 + sigma * (n - 1)),   waves = max(1, tasks / (n * slots))

F is the fixed part (JVM starts, job set-up, commit); s / tasks is one task's share of the input (Pi's
maps are its tasks and its work); waves is the task count over the slots n workers offer, never below
one, so a job of fewer tasks than slots stops gaining from more nodes (the wave structure); sigma is the
Universal Scalability Law's contention term, the share of each added node's work that queues on
something shared (the master, the switch). The USL's coherency term (kappa) is left out: the seeds'
clusters of up to eight and eleven nodes show no retrograde region it could be fitted to.

It is fitted by least squares on the logarithm of the times (scipy's bounded `least_squares`, every
parameter >= 0), so a 50-s and a 5,000-s cell weigh alike. sigma is fitted only where three worker
counts or more and five cells or more say something about it; with fewer it is 0 (Amdahl's law with
waves), and with no more cells than parameters there is no model: an exact fit tests nothing.

The uncertainty: the cells are drawn again with replacement and the model refitted (a case bootstrap),
and each refit's prediction is multiplied by a draw of the residual spread on the log scale, so an
interval holds both the parameters' uncertainty and how far a single run strays from the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
from scipy import optimize

from .stats import CONFIDENCE

DRAWS = 300
SEED = 0


@dataclass(frozen=True)
class Observation:
    """One timed cell: a stored run, or one of a seed's published times."""

    workload: str
    engine: str
    board: str
    storage: str
    workers: int
    size: float  # the board's bytes of input (Pi: its maps)
    tasks: int
    slots_per_node: int
    seconds: float  # board-seconds
    source: str  # a run id, or "seed Table N"

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.workload, self.engine, self.board, self.storage)


@dataclass(frozen=True)
class Prediction:
    seconds: float
    low: float
    high: float


def waves(workers: int, tasks: int, slots_per_node: int) -> float:
    return max(1.0, tasks / max(1, workers * slots_per_node))


def _shape(workers, size, tasks, slots_per_node) -> tuple[np.ndarray, np.ndarray]:
    """(the work term without c, the contention's node count) per cell, as arrays."""
    workers, size = np.asarray(workers, dtype=float), np.asarray(size, dtype=float)
    tasks, slots_per_node = np.asarray(tasks, dtype=float), np.asarray(slots_per_node, dtype=float)
    per_task = size / np.maximum(tasks, 1.0)
    rounds = np.maximum(1.0, tasks / np.maximum(1.0, workers * slots_per_node))
    return per_task * rounds, workers - 1.0


def _seconds(parameters: np.ndarray, work: np.ndarray, extra_nodes: np.ndarray) -> np.ndarray:
    fixed, per_unit, contention = parameters
    return fixed + per_unit * work * (1.0 + contention * extra_nodes)


def _fit(work: np.ndarray, extra_nodes: np.ndarray, seconds: np.ndarray, with_contention: bool,
         start: np.ndarray | None = None) -> np.ndarray | None:
    """The parameters that fit the cells best on the log scale, from `start` (a bootstrap draw starts
    from the whole fit's, which it lies near) or from a rough guess."""
    logs = np.log(seconds)
    if start is None:
        start_unit = float(np.median(seconds / np.maximum(work, 1e-12))) * 0.5
        start = np.array([float(seconds.min()) * 0.5, max(start_unit, 1e-12), 0.05 if with_contention else 0.0])
    else:
        start = np.maximum(start, 1e-12)  # least_squares starts strictly inside its bounds

    def residuals(free):
        parameters = free if with_contention else np.append(free, 0.0)
        predicted = _seconds(parameters, work, extra_nodes)
        return np.log(np.maximum(predicted, 1e-9)) - logs

    free_start = start if with_contention else start[:2]
    try:
        found = optimize.least_squares(residuals, free_start, bounds=(0.0, np.inf), x_scale="jac")
    except ValueError:
        return None
    parameters = found.x if with_contention else np.append(found.x, 0.0)
    return parameters if np.all(np.isfinite(parameters)) else None


@dataclass(frozen=True)
class Model:
    key: tuple[str, str, str, str]
    fixed: float
    per_unit: float
    contention: float
    contention_fitted: bool
    log_spread: float  # residual standard deviation on the log scale
    observations: tuple[Observation, ...]
    draws: np.ndarray = field(repr=False, compare=False)  # refitted parameters, one row per bootstrap draw
    note: str = ""  # how the model was carried over from another board, where it was

    @property
    def parameters(self) -> int:
        return 3 if self.contention_fitted else 2

    @property
    def sources(self) -> list[str]:
        return sorted({o.source for o in self.observations})

    def seconds(self, workers: int, size: float, tasks: int, slots_per_node: int) -> float:
        work, extra = _shape([workers], [size], [tasks], [slots_per_node])
        return float(_seconds(np.array([self.fixed, self.per_unit, self.contention]), work, extra)[0])

    def predict(self, workers: int, size: float, tasks: int, slots_per_node: int) -> Prediction:
        point = self.seconds(workers, size, tasks, slots_per_node)
        if not len(self.draws):
            return Prediction(point, math.nan, math.nan)
        work, extra = _shape([workers], [size], [tasks], [slots_per_node])
        rng = np.random.default_rng(SEED)
        drawn = np.array([_seconds(row, work, extra)[0] for row in self.draws])
        drawn = drawn * np.exp(rng.normal(0.0, self.log_spread, size=len(drawn)))
        tail = (1 - CONFIDENCE) / 2 * 100
        low, high = np.percentile(drawn, [tail, 100 - tail])
        return Prediction(point, float(min(low, point)), float(max(high, point)))

    def carried(self, speed_ratio: float, key: tuple[str, str, str, str], note: str) -> Model:
        """This model for a board whose cores are `speed_ratio` times as fast: every term's time divided
        by it (CPU-bound by assumption; the note says so)."""
        scaled = self.draws.copy()
        if len(scaled):
            scaled[:, :2] /= speed_ratio
        return Model(key, self.fixed / speed_ratio, self.per_unit / speed_ratio, self.contention,
                     self.contention_fitted, self.log_spread, self.observations, scaled, note)


def fit(observations: Iterable[Observation], draws: int = DRAWS) -> Model | None:
    """The model of one group of cells (one workload, engine, board and medium); None where the cells
    cannot tell its parameters apart."""
    cells = [o for o in observations if o.seconds > 0 and o.size > 0]
    if not cells:
        return None
    keys = {o.key for o in cells}
    if len(keys) != 1:
        raise ValueError(f"one model per workload, engine, board and medium, not {sorted(keys)}")
    worker_counts = {o.workers for o in cells}
    with_contention = len(worker_counts) >= 3 and len(cells) >= 5
    free = 3 if with_contention else 2
    if len({(o.workers, o.size, o.tasks) for o in cells}) <= free:
        return None
    work, extra = _shape([o.workers for o in cells], [o.size for o in cells], [o.tasks for o in cells],
                         [o.slots_per_node for o in cells])
    seconds = np.array([o.seconds for o in cells], dtype=float)
    parameters = _fit(work, extra, seconds, with_contention)
    if parameters is None:
        return None
    residuals = np.log(_seconds(parameters, work, extra)) - np.log(seconds)
    spread = float(np.sqrt(np.sum(residuals ** 2) / max(1, len(cells) - free)))
    rng = np.random.default_rng(SEED)
    rows = []
    for _ in range(draws):
        picked = rng.integers(0, len(cells), size=len(cells))
        if len({(cells[i].workers, cells[i].size, cells[i].tasks) for i in picked}) <= free:
            continue  # this draw cannot tell the parameters apart
        again = _fit(work[picked], extra[picked], seconds[picked], with_contention, start=parameters)
        if again is not None:
            rows.append(again)
    return Model(cells[0].key, float(parameters[0]), float(parameters[1]), float(parameters[2]), with_contention,
                 spread, tuple(cells), np.array(rows).reshape(-1, 3))


def fit_all(observations: Iterable[Observation]) -> dict[tuple[str, str, str, str], Model]:
    groups: dict[tuple[str, str, str, str], list[Observation]] = {}
    for o in observations:
        groups.setdefault(o.key, []).append(o)
    models = {}
    for key, cells in groups.items():
        model = fit(cells)
        if model is not None:
            models[key] = model
    return models


@dataclass(frozen=True)
class Checked:
    """A held-out cell against the model fitted without it."""

    observation: Observation
    predicted: Prediction

    @property
    def error(self) -> float:
        """(predicted - measured) / measured."""
        return self.predicted.seconds / self.observation.seconds - 1.0

    @property
    def covered(self) -> bool:
        p = self.predicted
        return not math.isnan(p.low) and p.low <= self.observation.seconds <= p.high


@dataclass(frozen=True)
class Validation:
    name: str
    checked: list[Checked]
    unfitted: list[str] = field(default_factory=list)  # groups whose remaining cells gave no model

    @property
    def median_abs_error(self) -> float | None:
        return float(np.median([abs(c.error) for c in self.checked])) if self.checked else None

    @property
    def coverage(self) -> float | None:
        with_interval = [c for c in self.checked if not math.isnan(c.predicted.low)]
        return sum(c.covered for c in with_interval) / len(with_interval) if with_interval else None


def held_out(name: str, observations: Iterable[Observation], held: Callable[[Observation], bool]) -> Validation:
    """Per group: fit on the cells `held` leaves in, predict the ones it holds out."""
    groups: dict[tuple, list[Observation]] = {}
    for o in observations:
        groups.setdefault(o.key, []).append(o)
    checked, unfitted = [], []
    for key, cells in sorted(groups.items()):
        out = [o for o in cells if held(o)]
        kept = [o for o in cells if not held(o)]
        if not out:
            continue
        model = fit(kept)
        if model is None:
            unfitted.append("/".join(key))
            continue
        checked.extend(Checked(o, model.predict(o.workers, o.size, o.tasks, o.slots_per_node)) for o in out)
    return Validation(name, checked, unfitted)
