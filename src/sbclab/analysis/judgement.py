"""A reproduced shape judged as a test that can fail: its null value, its equivalence margin and
what each outcome needs.

Every shape kind states the value of *no effect* (its null: 1.0 for a ratio, 0 for intermediate
data per input byte; a share of a node has none) and an equivalence margin m around the published
value, log-symmetric: the band published / (1 + m) .. published × (1 + m). With our 95 % interval
[lo, hi] of the shape:

    holds         [lo, hi] lies inside the band (two one-sided tests, each at 2.5 %: the 95 %
                  interval inside the band is the TOST at the 2.5 % level, stricter than the usual
                  90 % one) AND [lo, hi] excludes the null. Where the published value lies beyond
                  the margin of the null, the band excludes the null and so does an interval
                  inside it; where it lies within (the seed found no effect: its Pi rows on two
                  media), equivalence to it is the seed's claim.
    differs       [lo, hi] lies wholly outside the band: we measured a shape the margin cannot
                  reconcile with the seed's.
    inconclusive  anything else: the interval is too wide for either. The detail says how many
                  runs per cell would decide it, from our spread, at our point value.

A shape the seed states only as an order (which cell is higher, no value) has the null 1 and no
margin: it holds when the interval lies wholly on the claimed side of 1, differs when wholly on
the other.

The margins' sizes and their reasons are in TESTS (docs/reproduction.md repeats them, the report
prints them in its header).
"""

import math
from dataclasses import dataclass

from .stats import MIN_REPETITIONS, Derived, t_quantile

HOLDS, DIFFERS, INCONCLUSIVE, NOT_MEASURED = "holds", "differs", "inconclusive", "not measurable here"
OUTCOMES = (HOLDS, DIFFERS, INCONCLUSIVE, NOT_MEASURED)
MOST_RUNS = 1000  # beyond this a shape sits on its margin: no number of runs decides it in practice

_FIDELITY = ("15 %: the emulator's own fidelity, node figures within 0.85-1.15 of their targets "
             "(bench/fidelity.py); a shape nearer the seed's than that cannot be told from the emulator's error. The "
             "seed's own repeatability lies inside it: the 2026 seed's Pi rows on two media, which it calls equal, "
             "differ by up to 5 % (Tables 16-17)")


@dataclass(frozen=True)
class Test:
    null: float | None  # the value of no effect; None: the shape is a level, which has no null
    margin: float | None  # relative, log-symmetric around the published value; None: an order (no value)
    why: str


RATIO = Test(1.0, 0.15, _FIDELITY)
TESTS: dict[str, Test] = {
    "speedup": RATIO, "efficiency": Test(None, 0.15, "15 %, as the speedups it is made of; an efficiency is a share "
                                         "of the ideal, without a value of no effect"),
    "storage gain": RATIO, "board ratio": RATIO, "row ratio": RATIO, "thread scaling": RATIO,
    "container over native": RATIO, "stated ratio": RATIO,
    "rate gap": Test(1.0, 0.15, "15 %, as the other ratios; the gap is TestDFSIO's average I/O rate over its "
                     "throughput, 1.0 when every task ran at the same rate"),
    "intermediate per input byte": Test(0.0, 0.25, "25 %: fstrim counts whole filesystem blocks freed after the job, "
                                        "the job's logs and the filesystem's own metadata among them, a larger share "
                                        "of the small data sets run here than of the seed's; the seed printed its "
                                        "volumes to two or three figures"),
    "level": Test(None, 0.25, "25 %: the seed's levels are read off its figures (\"about 20 %\"), not printed"),
    "higher": Test(1.0, None, "an order: the seed printed which cell is higher, not by how much"),
}


@dataclass(frozen=True)
class Judgement:
    verdict: str
    detail: str
    runs_needed: int | None = None  # runs per cell that would decide an inconclusive shape


def band(kind: str, published: float) -> tuple[float, float] | None:
    test = TESTS[kind]
    if test.margin is None:
        return None
    return published / (1 + test.margin), published * (1 + test.margin)


def judge(kind: str, published: float, ours: Derived | None) -> Judgement:
    """The shape's verdict from our interval, by the kind's test."""
    test = TESTS[kind]
    if ours is None:
        return Judgement(NOT_MEASURED, "no valid runs of ours on one side")
    if ours.ci_low is None:
        return Judgement(INCONCLUSIVE, f"ours {ours.value:.3g} from fewer than two valid runs on a side: no interval; "
                                       f"run at least {MIN_REPETITIONS} per cell", MIN_REPETITIONS)
    lo, hi = ours.ci_low, ours.ci_high
    shown = f"our 95 % interval {lo:.3g}-{hi:.3g}"
    if test.margin is None:
        if lo > test.null:
            return Judgement(HOLDS, f"{shown} lies above {test.null:g}")
        if hi < test.null:
            return Judgement(DIFFERS, f"{shown} lies below {test.null:g}")
        return Judgement(INCONCLUSIVE, f"{shown} holds {test.null:g}" + _needed_text(needed := _runs_to_exclude(
            ours, test.null)), needed)
    low, high = band(kind, published)
    margin = f"the published {published:.3g} ± {test.margin:.0%} ({low:.3g}-{high:.3g})"
    if hi < low or lo > high:
        return Judgement(DIFFERS, f"{shown} lies outside {margin}")
    if low <= lo and hi <= high:
        # Where the null lies outside the band, an interval inside the band excludes it: the test
        # against no effect is passed on the way. Where it lies inside, the seed's claim is no effect.
        if test.null is None:
            return Judgement(HOLDS, f"{shown} lies inside {margin}")
        if low <= test.null <= high:
            return Judgement(HOLDS, f"{shown} lies inside {margin}; the seed's value is itself within the margin of "
                                    f"no effect ({test.null:g}), so equivalence is its claim")
        return Judgement(HOLDS, f"{shown} lies inside {margin} and so excludes no effect ({test.null:g})")
    needed = runs_to_decide(ours, low, high)
    return Judgement(INCONCLUSIVE, f"{shown} is neither inside {margin} nor wholly outside it" + _needed_text(needed),
                     needed)


def _needed_text(needed: int | None) -> str:
    if needed is None:
        return f"; more than {MOST_RUNS} runs per cell would be needed: our value sits on a boundary"
    return f"; about {needed} runs per cell would decide it"


def _log_width(ours: Derived) -> float | None:
    """The half-width of our interval on the log scale, where the whole interval is positive."""
    if ours.ci_low is None or ours.ci_low <= 0 or ours.value <= 0:
        return None
    return math.log(ours.ci_high / ours.ci_low) / 2


def _runs_for(ours: Derived, room: float) -> int | None:
    """Runs per cell at which the log half-width, shrinking as t(n-1) / sqrt(n) from ours, fits in `room`."""
    width, runs = _log_width(ours), ours.runs or 2
    if width is None or room <= 0:
        return None
    spread = width * math.sqrt(runs) / t_quantile(runs)
    for n in range(max(runs, 2), MOST_RUNS + 1):
        if t_quantile(n) * spread / math.sqrt(n) <= room:
            return max(n, runs + 1)
    return None


def _runs_to_exclude(ours: Derived, null: float) -> int | None:
    if ours.value <= 0 or null <= 0:
        return None
    return _runs_for(ours, abs(math.log(ours.value / null)))


def runs_to_decide(ours: Derived, low: float, high: float) -> int | None:
    """At our point value: inside the band, the runs that bring the interval inside it; outside, the
    runs that bring it wholly outside."""
    if ours.value <= 0:
        return None
    v = math.log(ours.value)
    if low < ours.value < high:
        return _runs_for(ours, min(v - math.log(low), math.log(high) - v))
    return _runs_for(ours, max(math.log(low) - v, v - math.log(high)))


def tests_text() -> list[str]:
    """One line per test, naming the shape kinds it judges: their null, margin and the reason for the
    margin's size (the report's header)."""
    kinds: dict[Test, list[str]] = {}
    for kind, test in TESTS.items():
        kinds.setdefault(test, []).append(kind)
    lines = []
    for test, named in kinds.items():
        null = "none" if test.null is None else f"{test.null:g}"
        margin = "none (an order)" if test.margin is None else f"{test.margin:.0%}"
        lines.append(f"{', '.join(named)}: null {null}, margin {margin} — {test.why}")
    return lines
