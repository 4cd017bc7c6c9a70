"""Whether the emulator's calibration holds beyond sysbench: what emulated nodes measured with 7-Zip's
benchmark and with mbw and the pointer chase, beside their board's published figures scaled by the
run's factor.

An emulated node gets its board's share of a host core from sysbench alone (one board core is worth
board events/s / host events/s of a host core). If the host were a faster board of the same kind,
every other figure would follow: a node would run 7-Zip at the board's MIPS × the factor, copy memory
at its MB/s × the factor and wait its latency / the factor. Where the host's cores differ from the
board's in kind (wider vectors that sysbench's loop gains from, another memory system), they do not,
and a job like 7-Zip or a memory-bound shuffle runs faster or slower emulated than the scaled board.

Each figure is compared as the emulated node's speed over the scaled board's, per run
(rates: measured / (published × factor); latency: (published / factor) / measured), and judged as
judgement.py judges shapes: the runs' 95 % interval of that ratio against the band 1/(1 + m) .. 1 + m:

    holds         the interval lies inside the band
    differs       the interval lies wholly outside: the node is too fast or too slow by the ratio
    inconclusive  anything else, or fewer than two runs: the detail says how many runs would decide it

The margin m is 25 % (MARGIN_WHY). sysbench's own figure on the same nodes, when measured, is judged
the same way: it is the figure the calibration was made to hold.
"""

from dataclasses import dataclass
from typing import Callable

from .. import profiles
from ..profiles.model import Board
from ..results.schema import NodeRecord, RunRecord
from .judgement import DIFFERS, HOLDS, INCONCLUSIVE, runs_to_decide
from .stats import MIN_REPETITIONS, Derived, estimate

MARGIN = 0.25
MARGIN_WHY = ("25 %: the emulator's own error, 15 % (sysbench at 0.85-1.15 of its target, bench/fidelity.py), and "
              "the published figures' own spread, about 6 % for 7-Zip and up to 20 % for memory between boards, "
              "kernels and firmware of one model (boards.yaml's sources), with 7-Zip 16.02 there against the "
              "7zz run here")
WORKLOADS = ("7zip", "memory", "sysbench-cpu")


@dataclass(frozen=True)
class Figure:
    """One published figure set beside what a node measured: `measured` reads a run, `published` the
    board, `rate` says whether more is faster (a latency is not)."""

    label: str
    workload: str
    measured: Callable[[RunRecord, Board], float | None]
    published: Callable[[Board], tuple[float, str] | None]  # (value, unit)
    rate: bool = True


def _mips(threads: Callable[[Board], int]) -> Callable[[RunRecord, Board], float | None]:
    return lambda run, board: (run.result.get("total_mips") or {}).get(str(threads(board)))


def _published_latency(board: Board) -> tuple[float, str] | None:
    found = board.memory.dram_latency if board.memory else None
    return (found[1], f"ns at {found[0]}") if found else None


def _measured_latency(run: RunRecord, board: Board) -> float | None:
    found = board.memory.dram_latency if board.memory else None
    return (run.result.get("latency_ns") or {}).get(found[0]) if found else None


FIGURES = (
    Figure("sysbench events/s, 1 thread (the calibration's own)", "sysbench-cpu",
           lambda run, board: (run.result.get("events_per_s") or {}).get("1"),
           lambda board: (board.sysbench_events(1), "events/s") if board.sysbench_events(1) else None),
    Figure("7-Zip MIPS, 1 thread", "7zip", _mips(lambda board: 1),
           lambda board: (board.seven_zip.single_mips, "MIPS") if board.seven_zip else None),
    Figure("7-Zip MIPS, all cores", "7zip", _mips(lambda board: board.cores),
           lambda board: (board.seven_zip.multi_mips, "MIPS") if board.seven_zip else None),
    Figure("memcpy MB/s, 1 thread", "memory",
           lambda run, board: (run.result.get("copy_mb_s") or {}).get("memcpy"),
           lambda board: (board.memory.copy_mb_s, "MB/s") if board.memory and board.memory.copy_mb_s else None),
    Figure("load latency, largest buffer", "memory", _measured_latency, _published_latency, rate=False),
)


@dataclass(frozen=True)
class Comparison:
    board: str
    node: str
    figure: str
    factor: float
    published: float
    unit: str
    target: float  # the published figure as the scaled node should show it
    measured: Derived  # the node's figure over its runs
    ratio: Derived  # the node's speed over the scaled board's (1: the calibration holds exactly)
    verdict: str
    detail: str


def band() -> tuple[float, float]:
    return 1 / (1 + MARGIN), 1 + MARGIN


def judge(ratio: Derived) -> tuple[str, str]:
    """(verdict, detail) of a speed ratio by the test in this module's docstring."""
    low, high = band()
    margin = f"1 ± {MARGIN * 100:.0f} % ({low:.2f}-{high:.2f})"
    if ratio.ci_low is None:
        return INCONCLUSIVE, (f"{_speed(ratio.value)} from one run: no interval; run at least {MIN_REPETITIONS} "
                              f"(--repetitions {MIN_REPETITIONS}) for a verdict")
    shown = f"95 % interval {ratio.ci_low:.2f}-{ratio.ci_high:.2f}"
    if low <= ratio.ci_low and ratio.ci_high <= high:
        return HOLDS, f"{shown} lies inside {margin}"
    if ratio.ci_high < low or ratio.ci_low > high:
        return DIFFERS, f"{_speed(ratio.value)}: {shown} lies outside {margin}"
    needed = runs_to_decide(ratio, low, high)
    more = f"about {needed} runs would decide it" if needed else "it sits on the margin; more runs will not decide it"
    return INCONCLUSIVE, f"{shown} is neither inside {margin} nor wholly outside it; {more}"


def _speed(ratio: float) -> str:
    if ratio >= 1:
        return f"the emulated node is {ratio:.2f}x as fast as the scaled board"
    return f"the emulated node runs at {ratio:.2f} of the scaled board's speed"


def _node(run: RunRecord) -> NodeRecord | None:
    name = run.parameters.get("node")
    return next((n for n in run.cluster.nodes if n.name == name), None)


def compare(runs: list[RunRecord], boards: dict[str, Board] | None = None) -> list[Comparison]:
    """Every figure of FIGURES that both a published board and valid emulated runs hold, one row per
    board, node, scale factor and figure."""
    boards = profiles.boards() if boards is None else boards
    groups: dict[tuple[str, str, float, str], list[RunRecord]] = {}
    for run in runs:
        node = _node(run)
        if run.workload in WORKLOADS and run.valid and run.cluster.emulated and node and node.board in boards:
            groups.setdefault((node.board, node.name, run.scale.factor, run.workload), []).append(run)
    found = []
    for (board_name, node_name, factor, workload), members in sorted(groups.items()):
        board = boards[board_name]
        for figure in (f for f in FIGURES if f.workload == workload):
            published = figure.published(board)
            values = [v for v in (figure.measured(run, board) for run in members) if isinstance(v, (int, float))]
            if not published or not values or not all(v > 0 for v in values):
                continue
            value, unit = published
            target = value * factor if figure.rate else value / factor
            ratios = [v / target if figure.rate else target / v for v in values]
            ratio = Derived.of(estimate(ratios))
            verdict, detail = judge(ratio)
            found.append(Comparison(board_name, node_name, figure.label, factor, value, unit, target,
                                    Derived.of(estimate(values)), ratio, verdict, detail))
    return found


def missing(runs: list[RunRecord], boards: dict[str, Board] | None = None) -> list[str]:
    """Why emulated 7-Zip or memory runs gave no comparison: a board with no published figure."""
    boards = profiles.boards() if boards is None else boards
    said = []
    for run in runs:
        node = _node(run)
        if run.workload not in ("7zip", "memory") or not run.cluster.emulated or node is None:
            continue
        board = boards.get(node.board)
        figures = [f for f in FIGURES if f.workload == run.workload]
        if board is None or not any(f.published(board) for f in figures):
            said.append(f"{node.board} has no published {'7-Zip' if run.workload == '7zip' else 'memory'} figure "
                        f"('sbclab profiles show {node.board}' says why)")
    return sorted(set(said))


def figure_text(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
