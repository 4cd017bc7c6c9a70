"""Run time as a fixed part plus a parallel part shared by the workers, T(n) = F + P / n, and the
speedup it predicts for a job whose parallel work is r times the one measured.

A seed's job scaled down to fit this host (fewer Pi maps, a data set scaled with the emulation)
keeps its fixed cost — client and ApplicationMaster start-up — while its parallel work shrinks, so
the raw speedup of the smaller job is flatter than the seed's. Fitting F and P to our runs and
growing P by r = the seed's work / ours gives the speedup at the seed's work, which is what the seed's
shape is judged against. F and P are fitted by non-negative least squares; the interval is a
percentile bootstrap over the runs of each worker count (scipy.stats.bootstrap), so it stays positive.
"""

from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy import stats as scipy_stats

from .stats import CONFIDENCE, Derived

RESAMPLES = 2000


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


def _bootstrap(times_by_workers: dict[int, list[float]], statistic) -> Derived | None:
    counts = sorted(times_by_workers)
    point = fit([(n, t) for n in counts for t in times_by_workers[n]])
    if point is None:
        return None
    value = statistic(point)
    if any(len(times_by_workers[n]) < 2 for n in counts):
        return Derived(value)

    def resampled(*samples):
        again = fit([(n, t) for n, sample in zip(counts, samples) for t in sample])
        return statistic(again) if again is not None and again.time(max(counts)) > 0 else np.nan

    found = scipy_stats.bootstrap(tuple(np.array(times_by_workers[n]) for n in counts), resampled,
                                  n_resamples=RESAMPLES, vectorized=False, paired=False, method="percentile",
                                  confidence_level=CONFIDENCE, random_state=np.random.default_rng(0))
    low, high = found.confidence_interval
    if np.isnan(low) or np.isnan(high):
        return Derived(value)
    return Derived(value, float(min(low, value)), float(max(high, value)))


def speedup(times_by_workers: dict[int, list[float]], workers: int, work_ratio: float) -> Derived | None:
    """The speedup of `workers` over the fewest measured, predicted at `work_ratio` times the work measured."""
    base = min(times_by_workers)
    return _bootstrap(times_by_workers, lambda f: f.speedup(workers, work_ratio, base))


def parallel_share(times_by_workers: dict[int, list[float]], work_ratio: float) -> Derived | None:
    base = min(times_by_workers)
    return _bootstrap(times_by_workers, lambda f: f.parallel_share(work_ratio, base))
