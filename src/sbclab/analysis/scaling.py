"""Run time as a fixed part plus a parallel part shared by the workers, T(n) = F + P / n, and the
speedup it predicts for a job whose parallel work is r times the one measured.

A seed's job scaled down to fit this host (fewer Pi maps, a data set scaled with the emulation)
keeps its fixed cost — client and ApplicationMaster start-up — while its parallel work shrinks, so
the raw speedup of the smaller job is flatter than the seed's. Fitting F and P to our runs and
growing P by r = the seed's work / ours gives the speedup at the seed's work, which is what the seed's
shape is judged against. F and P are fitted by non-negative least squares (scipy) to the mean of each
worker count; the interval comes from drawing those means again on the log scale, from the runs'
spread pooled over the worker counts, and refitting (Monte Carlo propagation, 4000 draws), so it
stays positive.
"""

from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy import stats as scipy_stats

from .stats import CONFIDENCE, Derived

DRAWS = 4000


@dataclass(frozen=True)
class Fit:
    fixed: float
    parallel: float

    def time(self, workers: float, work_ratio: float = 1.0) -> float:
        return self.fixed + self.parallel * work_ratio / workers

    def speedup(self, workers: float, work_ratio: float = 1.0, base: float = 1) -> float:
        return self.time(base, work_ratio) / self.time(workers, work_ratio)

    def parallel_share(self, work_ratio: float = 1.0, base: float = 1) -> float:
        """The share of the time on `base` workers that the workers divide among themselves."""
        return self.parallel * work_ratio / base / self.time(base, work_ratio)


def fit(points: list[tuple[float, float]]) -> Fit | None:
    """F and P (both >= 0) from (workers, seconds) pairs; None without two different worker counts."""
    if len({n for n, _ in points}) < 2:
        return None
    design = np.array([[1.0, 1.0 / n] for n, _ in points])
    times = np.array([t for _, t in points], dtype=float)
    (fixed, parallel), _ = optimize.nnls(design, times)
    return Fit(float(fixed), float(parallel))


def _propagate(times_by_workers: dict[int, list[float]], statistic) -> Derived | None:
    """The statistic of the model fitted to each worker count's mean, with an interval from drawing the
    means again and refitting. Each mean is drawn on the log scale from the runs' spread pooled over
    all worker counts, itself drawn from its chi-square distribution, so the interval is as wide as a
    Student-t one with every count's degrees of freedom; resampling two or three runs per count
    instead would give too narrow an interval."""
    counts = sorted(times_by_workers)
    means = {n: float(np.mean(times_by_workers[n])) for n in counts}
    point = fit([(n, means[n]) for n in counts])
    if point is None:
        return None
    value = statistic(point)
    if any(len(times_by_workers[n]) < 2 for n in counts):
        return Derived(value)
    # One relative spread pooled over every worker count (the runs' noise is the host's, not the
    # count's), with the degrees of freedom of all of them: two runs per count then still say something.
    residuals = [np.log(t / means[n]) for n in counts for t in times_by_workers[n]]
    freedom = sum(len(times_by_workers[n]) - 1 for n in counts)
    pooled = float(np.sqrt(np.sum(np.square(residuals)) / freedom))
    rng = np.random.default_rng(0)
    spread = pooled * np.sqrt(freedom / rng.chisquare(freedom, size=DRAWS))
    drawn = {n: means[n] * np.exp(rng.standard_normal(DRAWS) * spread / np.sqrt(len(times_by_workers[n])))
             for n in counts}
    found = []
    for i in range(DRAWS):
        again = fit([(n, drawn[n][i]) for n in counts])
        if again is not None and again.time(max(counts)) > 0:
            found.append(statistic(again))
    if len(found) < DRAWS // 2:
        return Derived(value)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(found, [tail, 100 - tail])
    return Derived(value, float(min(low, value)), float(max(high, value)))


def speedup(times_by_workers: dict[int, list[float]], workers: int, work_ratio: float) -> Derived | None:
    """The speedup of `workers` over the fewest measured, predicted at `work_ratio` times the work measured."""
    base = min(times_by_workers)
    return _propagate(times_by_workers, lambda f: f.speedup(workers, work_ratio, base))


def parallel_share(times_by_workers: dict[int, list[float]], work_ratio: float) -> Derived | None:
    base = min(times_by_workers)
    return _propagate(times_by_workers, lambda f: f.parallel_share(work_ratio, base))
