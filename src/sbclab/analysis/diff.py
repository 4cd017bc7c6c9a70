"""Two result sets side by side, cell by cell, the way benchstat sets two runs of a benchmark suite.

Cells are matched on what they ran (workload, engine, size, workers, board, medium, parameters). A
dimension that holds one value throughout each set but another between them — the preset when a
user diffs a `stock` run against a `paper` run, the stack, the cluster — is what the two sets
differ in: it is named once above the table and left out of the matching.

Each common cell gets both means with their intervals, the ratio B / A with its interval (on the log
scale, stats.ratio) and a significance test. The test is Welch's t on the logarithms of the times:
times are positive and skewed, so their logarithms are closer to normal and a ratio is a difference
there; Welch because the two sets need not share a spread (another cluster, another day). Mann-Whitney U,
benchstat's choice, cannot reach p < 0.05 with the three runs a cell usually has (its smallest two-sided
p for 3 against 3 is 0.1). A cell is called different only when the ratio's interval leaves 1 and the
test's p is under alpha; otherwise "no difference".
"""

import math
from collections import Counter
from dataclasses import dataclass, fields

from ..units import format_size
from .cells import CellKey
from .stats import Derived, Estimate, estimate, ratio

ALPHA = 0.05
# What may differ between the two sets as a whole; the rest is what a cell ran and must match.
SET_WIDE = ("preset", "cluster", "setup", "board", "storage")


@dataclass(frozen=True)
class Row:
    label: str
    a: Estimate
    b: Estimate
    ratio: Derived
    p_value: float | None

    @property
    def verdict(self) -> str:
        if self.a.n < 2 or self.b.n < 2:
            return "too few runs to tell"
        covers_one = self.ratio.ci_low is None or self.ratio.ci_low <= 1 <= self.ratio.ci_high
        if covers_one or self.p_value is None or self.p_value >= ALPHA:
            return "no difference"
        change = self.ratio.value - 1
        return f"{abs(change):.0%} {'slower' if change > 0 else 'faster'}"


@dataclass
class Diff:
    rows: list[Row]
    differing: dict[str, tuple[str, str]]  # set-wide dimension -> (value in A, value in B)
    only_a: list[str]
    only_b: list[str]

    @property
    def geomean(self) -> float | None:
        """The geometric mean of the ratios over the common cells, as benchstat gives."""
        values = [r.ratio.value for r in self.rows if r.ratio.value > 0]
        return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def welch_on_logs(a: list[float], b: list[float]) -> float | None:
    """Two-sided p of Welch's t-test on the logarithms; None when either side has fewer than two runs
    or a time is not positive, or both sides have no spread at all."""
    if len(a) < 2 or len(b) < 2 or min(a + b) <= 0:
        return None
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    if max(la) == min(la) and max(lb) == min(lb):
        return 1.0 if la[0] == lb[0] else 0.0
    # Imported here: scipy.stats costs every command that reaches this module half a second.
    from scipy import stats as scipy_stats
    return float(scipy_stats.ttest_ind(la, lb, equal_var=False).pvalue)


def _values(key: CellKey, dimension: str) -> str:
    value = getattr(key, dimension)
    return str(value) if value != "" else "(default)"


def _set_wide_differences(a: list[CellKey], b: list[CellKey]) -> dict[str, tuple[str, str]]:
    found = {}
    for dimension in SET_WIDE:
        in_a = {_values(k, dimension) for k in a}
        in_b = {_values(k, dimension) for k in b}
        if len(in_a) == 1 and len(in_b) == 1 and in_a != in_b:
            found[dimension] = (in_a.pop(), in_b.pop())
    return found


def _matching(key: CellKey, ignored: set[str]) -> tuple:
    return tuple(getattr(key, f.name) for f in fields(CellKey) if f.name not in ignored)


def _label(key: CellKey, ignored: set[str], with_parameters: bool = False) -> str:
    """The cell in one line without what the two sets differ in (named above the table); its
    parameters only where two cells would read the same without them."""
    parts = [f"{key.workload}/{key.engine}", format_size(key.size_bytes) if key.size_bytes else "", f"{key.workers}w",
             "/".join(getattr(key, d) for d in ("board", "storage") if d not in ignored),
             *(getattr(key, d) for d in ("preset", "setup") if d not in ignored),
             key.parameters if with_parameters else ""]
    return " ".join(part for part in parts if part)


def _labeller(a: list[CellKey], b: list[CellKey], ignored: set[str]):
    def plain(key: CellKey) -> tuple:
        return _matching(key, ignored | {"parameters"})
    alike = {k for side in (a, b) for k, n in Counter(plain(key) for key in side).items() if n > 1}
    return lambda key: _label(key, ignored, plain(key) in alike)


def counted_times(runs: list[dict]) -> dict[CellKey, list[float]]:
    """Each cell of a result set with the wall times of its runs fit for headline figures (a cell
    without one is left out, as it has no statistics)."""
    times: dict[CellKey, list[float]] = {}
    for run in runs:
        counted = times.setdefault(CellKey.of_row(run), [])
        if run["status"] == "headline":
            counted.append(run["wall_time_s"])
    return {key: times[key] for key in sorted(times) if times[key]}


def compare(runs_a: list[dict], runs_b: list[dict]) -> Diff:
    """The common cells of two result sets with B against A; the cells only one set has, by label.
    The runs are their summary rows (results/index.py), which the index holds for every stored run."""
    a, b = counted_times(runs_a), counted_times(runs_b)
    differing = _set_wide_differences(list(a), list(b))
    ignored = set(differing)
    label = _labeller(list(a), list(b), ignored)
    by_key_b = {_matching(key, ignored): key for key in b}
    rows, matched = [], set()
    for key_a, times_a in a.items():
        key = _matching(key_a, ignored)
        key_b = by_key_b.get(key)
        if key_b is None:
            continue
        matched.add(key)
        times_b = b[key_b]
        wall_a, wall_b = estimate(times_a), estimate(times_b)
        rows.append(Row(label(key_a), wall_a, wall_b, ratio(wall_b, wall_a), welch_on_logs(times_a, times_b)))
    only_a = [label(k) for k in a if _matching(k, ignored) not in by_key_b]
    only_b = [label(k) for k in b if _matching(k, ignored) not in matched]
    return Diff(rows, differing, only_a, only_b)
