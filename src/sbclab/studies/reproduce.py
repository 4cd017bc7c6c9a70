"""A seed's table run until its verdicts are decided, as the Phoronix Test Suite runs a test again
while its deviation is large: the number of runs follows the noise, not a fixed count.

Every cell first runs the count --estimate expects (expected_repetitions: what the spread of this
host's stored runs, else an assumed one, needs to decide a ratio; MIN_REPETITIONS at least). Then, while a shape is inconclusive and says how many
runs per cell would decide it, the cells it is computed from run again, round by round, up to that
many or the cap. Each round takes the table's cluster shapes in the opposite order from the last, so
a drift of the host over time (another tenant, a warming disk) does not fall on one side of a ratio.
A fixed `--repetitions N` runs N and judges what it gets.
"""

import json
import math
from dataclasses import dataclass, field
from typing import Callable

from ..analysis import judgement, reproduction
from ..analysis.reproduction import Layout, Reproduction
from ..analysis.stats import MIN_REPETITIONS, t_quantile
from ..experiments import orchestrator, plan
from ..experiments.reproduce import Planned, Table
from ..results.schema import RunRecord
from ..results.store import ResultsStore

CAP = 10  # runs per cell at most, unless asked: twice the seeds' five
ASSUMED_SPREAD = 0.05  # a cell's relative spread where no stored run says it (this host's runs: 1-10 %)


@dataclass
class Outcome:
    found: Reproduction | None
    stored: list[RunRecord] = field(default_factory=list)
    repetitions: int = 0  # the most runs per cell asked for
    undecided: int = 0  # shapes still inconclusive at the cap


def layout_of(table: Table) -> Layout:
    raw = table.layout or {}
    return Layout(tuple(raw["rows"]), tuple(raw["columns"]), raw["metric"], table.shapes, tuple(raw.get("also", ())))


def judged(planned: Planned, seed_key: str, runs: list[RunRecord]) -> Reproduction:
    t = planned.table
    parameters = planned.parameters or (t.experiment or {}).get("parameters", {})
    return reproduction.reproduce(seed_key, t.reference, layout_of(t), runs, sizes=planned.sizes, parameters=parameters,
                                  circular=t.circular, notes=planned.notes, scale=planned.scale)


def identity(cell: dict) -> str:
    """A cell without its repetition: the runs of one cell across rounds."""
    return json.dumps({k: v for k, v in cell.items() if k not in ("key", "repetition")}, sort_keys=True, default=str)


def run_table(planned: Planned, seed_key: str, options: orchestrator.Options, *, repetitions: int | None = None,
              cap: int = CAP, say: Callable[[str], None] = lambda message: None) -> Outcome:
    """Run the table's experiments, then, with no fixed count, again for the cells of its undecided shapes."""
    # Held over every round, so no other experiment writes here between them.
    with ResultsStore(options.results).writing(options.command):
        return _run_rounds(planned, seed_key, options, repetitions, cap, say)


def _run_rounds(planned: Planned, seed_key: str, options: orchestrator.Options, repetitions: int | None, cap: int,
                say: Callable[[str], None]) -> Outcome:
    t = planned.table
    if repetitions is None:
        store = ResultsStore(options.results)
        target = expected_repetitions(t, list(store.runs()) if store.runs_dir.exists() else [], cap)[0]
    else:
        target = repetitions
    outcome = Outcome(None, repetitions=target)
    wanted: set[str] | None = None  # None: every cell of the table
    turn = 0
    while True:
        for experiment in planned.experiments[::-1] if turn % 2 else planned.experiments:
            found = plan.prepare(experiment.model_copy(update={"repetitions": target}), options.results, say,
                                 options.boards)
            if wanted is not None:
                found.done |= {c.key for c in found.cells if identity(c.as_record()) not in wanted}
            if turn % 2:
                shapes = list(dict.fromkeys(c.shape for c in found.cells))[::-1]
                found.cells = [c for shape in shapes for c in found.cells if c.shape == shape]
            outcome.stored += orchestrator.execute(found, options)
        if not t.layout or not t.reference:
            return outcome
        store = ResultsStore(options.results)
        runs = list(store.runs()) if store.runs_dir.exists() else []
        outcome.found = judged(planned, seed_key, runs)
        undecided = [s for s in outcome.found.shapes if s.verdict == judgement.INCONCLUSIVE and s.runs_needed]
        outcome.undecided = len([s for s in outcome.found.shapes if s.verdict == judgement.INCONCLUSIVE])
        if repetitions is not None or not undecided or target >= cap:
            if repetitions is None and outcome.undecided:
                outcome.found.notes.append(
                    f"{outcome.undecided} shape(s) still inconclusive at {target} runs per cell (the cap; --max-repetitions "
                    "raises it)")
            return outcome
        by_id = {r.run_id: r for r in runs}
        wanted = {identity(by_id[i].cell) for s in undecided for i in s.run_ids if i in by_id and by_id[i].cell}
        nearest = min(s.runs_needed for s in undecided)
        target = min(cap, max(target + 1, nearest))
        outcome.repetitions = target
        say(f"{len(undecided)} shape(s) inconclusive: their {len(wanted)} cell(s) run again, up to {target} runs each")
        turn += 1


def expected_repetitions(table: Table, runs: list[RunRecord], cap: int = CAP) -> tuple[int, float, str]:
    """Runs per cell a table's shapes would need if ours came out at the published values: the count at
    which a ratio of two cells at the spread of this host's stored runs of the same workloads (else
    ASSUMED_SPREAD) fits its margin. (count, spread, where the spread comes from)."""
    workloads = set((table.experiment or {}).get("workloads", []))
    spreads = _stored_spreads([r for r in runs if r.workload in workloads and r.valid])
    spread = sorted(spreads)[len(spreads) // 2] if spreads else ASSUMED_SPREAD
    source = (f"the median spread of {len(spreads)} stored cell(s) of its workloads" if spreads
              else f"an assumed {ASSUMED_SPREAD:.0%} (no stored runs of its workloads)")
    margins = [judgement.TESTS[k].margin for k in (reproduction.KINDS[s] for s in table.shapes) if judgement.TESTS[k].margin]
    if not margins:
        return min(MIN_REPETITIONS, cap), spread, source
    room = math.log(1 + min(margins))
    for n in range(2, cap + 1):
        if t_quantile(n) * spread * math.sqrt(2) / math.sqrt(n) <= room:
            return max(n, min(MIN_REPETITIONS, cap)), spread, source
    return cap, spread, source


def _stored_spreads(runs: list[RunRecord]) -> list[float]:
    """The relative spread (sd / mean, of the log) of each stored cell with two runs or more."""
    times: dict[str, list[float]] = {}
    for r in runs:
        if r.cell and r.wall_time_s > 0:
            times.setdefault(identity(r.cell), []).append(math.log(r.wall_time_s))
    found = []
    for logs in times.values():
        if len(logs) >= 2:
            mean = sum(logs) / len(logs)
            found.append(math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1)))
    return found
