"""Run time by waves: a fixed part plus a time per wave of tasks, T(n) = F + t · W(n), where
W(n) = tasks / slots(n) is the job's task count over the task slots its n workers really offer
(YARN's containers of a map's size, less the ApplicationMaster's, or Spark's executor cores).

The reproductions keep the seed's task counts (its maps, slices, files and HDFS blocks) and scale
the work inside each task, so our speedups are judged as measured, T(base) / T(n), without any
model. The model serves what was not run: fitted by least squares (scipy) to the mean of each
worker count, it predicts the seed's worker counts beyond ours (labelled as predictions, never
judged), and its residual says how well waves explain what we measured. It is fitted only where
it has fewer parameters (two) than measured worker counts, so with two counts, where a fit would
be exact and test nothing, there is none.
"""

import math
from dataclasses import dataclass

import numpy as np

from .stats import CONFIDENCE, Derived

DRAWS = 2000
PARAMETERS = 2


@dataclass(frozen=True)
class Fit:
    fixed: float
    per_wave: float
    residual: float  # root mean square of (mean time - model) over the worker counts, in seconds
    counts: int  # the worker counts it was fitted to

    def time(self, waves: float) -> float:
        return self.fixed + self.per_wave * waves

    @property
    def relative_residual(self) -> float:
        return self.residual / self.fixed if self.fixed > 0 else math.inf


def fit(points: list[tuple[float, float]]) -> Fit | None:
    """F and t (both >= 0) from (waves, seconds) pairs of more than PARAMETERS different wave counts;
    None otherwise (an exact fit tests nothing)."""
    if len({w for w, _ in points}) <= PARAMETERS:
        return None
    design = np.array([[1.0, w] for w, _ in points])
    times = np.array([t for _, t in points], dtype=float)
    # Imported here: scipy.optimize costs every command that reaches this module a third of a second.
    from scipy.optimize import nnls
    (fixed, per_wave), _ = nnls(design, times)
    predicted = design @ np.array([fixed, per_wave])
    residual = float(np.sqrt(np.mean(np.square(times - predicted))))
    return Fit(float(fixed), float(per_wave), residual, len({w for w, _ in points}))


def fit_means(times_by_waves: dict[float, list[float]]) -> Fit | None:
    return fit([(w, float(np.mean(ts))) for w, ts in times_by_waves.items() if ts])


def predicted_speedup(times_by_waves: dict[float, list[float]], base_waves: float, waves: float) -> Derived | None:
    """T(base) / T(waves) by the model, with an interval from drawing each worker count's mean again
    from its own runs' spread on the log scale (Student-t, each count's own degrees of freedom)
    and refitting; None where the model cannot be fitted."""
    point = fit_means(times_by_waves)
    if point is None or point.time(waves) <= 0:
        return None
    value = point.time(base_waves) / point.time(waves)
    counts = {w: ts for w, ts in times_by_waves.items() if ts}
    if any(len(ts) < 2 for ts in counts.values()):
        return Derived(value, runs=min(len(ts) for ts in counts.values()))
    rng = np.random.default_rng(0)
    drawn = {}
    for w, ts in counts.items():
        logs = np.log(ts)
        spread = float(np.std(logs, ddof=1)) / math.sqrt(len(ts))
        drawn[w] = np.exp(np.mean(logs) + spread * rng.standard_t(len(ts) - 1, size=DRAWS))
    found = []
    for i in range(DRAWS):
        again = fit([(w, float(drawn[w][i])) for w in counts])
        if again is not None and again.time(waves) > 0:
            found.append(again.time(base_waves) / again.time(waves))
    if len(found) < DRAWS // 2:
        return Derived(value, runs=min(len(ts) for ts in counts.values()))
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(found, [tail, 100 - tail])
    return Derived(value, float(min(low, value)), float(max(high, value)), min(len(ts) for ts in counts.values()))
