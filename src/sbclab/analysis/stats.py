"""Per-cell statistics: mean, spread, median and the 95 % Student-t confidence interval.

The seeds repeat every run five times and report means; the confidence interval is what tells a
reader whether two means differ. Of positive quantities (times,
energies, rates) the interval is taken on the log scale, mean * exp(+-t * SE / mean), so it cannot
leave the positive axis. Ratios of means (speedup, storage gain, engine ratio) carry the intervals
of both means, the half-widths of their logarithms added in quadrature:
    hw(log a/b) = sqrt(hw(log a)^2 + hw(log b)^2)
(the delta method on the log scale for independent samples, said to be an approximation in the
report's appendix).
"""

import math
import statistics
from dataclasses import dataclass

CONFIDENCE = 0.95
SPREAD_WARNING = 0.10  # relative standard deviation at which a cell is called noisy
MIN_REPETITIONS = 3


@dataclass(frozen=True)
class Estimate:
    """A mean with its sample statistics; the interval is absent when n < 2."""

    n: int
    mean: float
    sd: float | None
    median: float
    ci_low: float | None
    ci_high: float | None

    @property
    def half_width(self) -> float | None:
        return None if self.ci_high is None else (self.ci_high - self.ci_low) / 2

    @property
    def rel_spread(self) -> float | None:
        """Coefficient of variation, sd / mean."""
        if self.sd is None or not self.mean:
            return None
        return self.sd / abs(self.mean)

    @property
    def rel_half_width(self) -> float | None:
        hw = self.half_width
        return None if hw is None or not self.mean else hw / abs(self.mean)

    def as_dict(self) -> dict:
        return {"n": self.n, "mean": self.mean, "sd": self.sd, "median": self.median,
                "ci_low": self.ci_low, "ci_high": self.ci_high, "rel_spread": self.rel_spread}


def t_quantile(n: int, confidence: float = CONFIDENCE) -> float:
    """The two-sided Student-t critical value for a mean of n values."""
    # Imported here: scipy.stats takes half a second to import, which every command that reaches this
    # module would pay at start (`sbclab profiles list` among them) whether or not it sets an interval.
    from scipy import stats as scipy_stats
    return float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1))


def estimate(values: list[float], confidence: float = CONFIDENCE) -> Estimate:
    """Mean ± t(n-1) · sd / sqrt(n)."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("no values to summarise")
    n = len(values)
    mean = statistics.fmean(values)
    median = statistics.median(values)
    if n < 2:
        return Estimate(n, mean, None, median, None, None)
    sd = statistics.stdev(values)
    hw = t_quantile(n, confidence) * sd / math.sqrt(n)
    if all(v > 0 for v in values):
        # Times, energies and rates: the interval of the mean on the log scale (delta method, the
        # standard error of log(mean) is SE / mean), which never leaves the positive axis; two
        # runs far apart no longer give a time "between -5 and 80 s".
        spread = hw / mean
        return Estimate(n, mean, sd, median, mean * math.exp(-spread), mean * math.exp(spread))
    return Estimate(n, mean, sd, median, mean - hw, mean + hw)


@dataclass(frozen=True)
class Derived:
    """A figure computed from estimates, with its propagated interval when the inputs have one."""

    value: float
    ci_low: float | None = None
    ci_high: float | None = None
    runs: int | None = None  # the fewest runs behind any of its inputs: how many more would narrow it

    @classmethod
    def of(cls, e: "Estimate") -> "Derived":
        return cls(e.mean, e.ci_low, e.ci_high, e.n)

    @property
    def half_width(self) -> float | None:
        return None if self.ci_high is None else (self.ci_high - self.ci_low) / 2

    def scaled(self, factor: float) -> "Derived":
        lo, hi = ((self.ci_low * factor, self.ci_high * factor) if self.ci_low is not None else (None, None))
        return Derived(self.value * factor, *(sorted((lo, hi)) if lo is not None else (None, None)), self.runs)

    def as_dict(self) -> dict:
        return {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high}

    def text(self) -> str:
        """'1.82 [1.63-1.96]', or the value alone without an interval."""
        return f"{self.value:.3g}" + (f" [{self.ci_low:.3g}-{self.ci_high:.3g}]" if self.ci_low is not None else "")


def _rel(e: "Estimate | Derived") -> float | None:
    if isinstance(e, Estimate):
        return e.rel_half_width
    return None if e.half_width is None or not e.value else e.half_width / abs(e.value)


def _value(e: "Estimate | Derived") -> float:
    return e.mean if isinstance(e, Estimate) else e.value


def _runs(*found: "Estimate | Derived") -> int | None:
    counts = [e.n if isinstance(e, Estimate) else e.runs for e in found]
    return None if None in counts else min(counts)


def _log_half_width(e: "Estimate | Derived") -> float | None:
    if e.ci_low is None or e.ci_low <= 0:
        return None
    return math.log(e.ci_high / e.ci_low) / 2


def ratio(numerator: "Estimate | Derived", denominator: "Estimate | Derived") -> Derived:
    """numerator / denominator. Of positive quantities, on the log scale: the half-widths of the
    logarithms added in quadrature, so the interval stays positive (a speedup of two runs each is
    never "between -0.75 and 3.47"); otherwise the relative half-widths, to first order."""
    value = _value(numerator) / _value(denominator)
    runs = _runs(numerator, denominator)
    la, lb = _log_half_width(numerator), _log_half_width(denominator)
    if la is not None and lb is not None and value > 0:
        width = math.hypot(la, lb)
        return Derived(value, value * math.exp(-width), value * math.exp(width), runs)
    a, b = _rel(numerator), _rel(denominator)
    if a is None or b is None:
        return Derived(value, runs=runs)
    rel = math.hypot(a, b)
    return Derived(value, *sorted((value * (1 - rel), value * (1 + rel))), runs)


def geometric_mean(ratios: "list[Derived]") -> Derived:
    """The geometric mean of independent positive ratios (a tuning's speedups over several jobs): on
    the log scale the mean of the logarithms, whose half-width is theirs added in quadrature over the
    count; no interval if one of them has none."""
    if not ratios:
        raise ValueError("no ratios to average")
    value = math.exp(statistics.fmean(math.log(r.value) for r in ratios))
    runs = _runs(*ratios)
    widths = [_log_half_width(r) for r in ratios]
    if None in widths:
        return Derived(value, runs=runs)
    width = math.sqrt(sum(w * w for w in widths)) / len(ratios)
    return Derived(value, value * math.exp(-width), value * math.exp(width), runs)


def spread_warning(e: Estimate) -> str | None:
    """Advice when a cell's mean cannot be trusted as it is."""
    if e.n < MIN_REPETITIONS:
        return (f"only {e.n} valid run{'s' if e.n != 1 else ''}: no reliable interval; "
                f"run at least {MIN_REPETITIONS} repetitions (the seeds ran 5)")
    if e.rel_spread is not None and e.rel_spread >= SPREAD_WARNING:
        return (f"spread {e.rel_spread:.0%} of the mean: add repetitions, fstrim SSDs between runs, "
                "check cooling (throttling) and the power supply (under-voltage)")
    return None
