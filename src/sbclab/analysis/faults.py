"""Faulted runs beside their unfaulted cell: did the job complete and validate, how much slower was
it (with an interval), what did Hadoop or Spark do about the fault, and how long until the cluster was
whole again. A faulted run never enters a headline figure; this is where it is read."""

from dataclasses import dataclass

from ..results.schema import RunRecord
from .cells import Cell, CellKey
from .stats import Derived, estimate, ratio


WORST_OF_ONE_RUN = ("appmaster_attempts",)


@dataclass
class FaultCell:
    """The runs of one cell under one fault, and the cell's unfaulted runs."""

    key: CellKey
    fault: str
    runs: list[RunRecord]
    unfaulted: list[RunRecord]

    @property
    def completed(self) -> int:
        return sum(1 for r in self.runs if r.exit_status == 0)

    @property
    def validated(self) -> int:
        return sum(1 for r in self.runs if r.valid)

    @property
    def slowdown(self) -> Derived | None:
        """Faulted over unfaulted time, of the runs that completed and validated; the interval needs
        two of each."""
        done = [r.wall_time_s for r in self.runs if r.valid]
        base = [r.wall_time_s for r in self.unfaulted]
        if not done or not base:
            return None
        return ratio(estimate(done), estimate(base))

    def reactions(self) -> dict[str, int]:
        """What the engines did: task attempts summed over the faulted runs; the ApplicationMaster's
        attempts and the masters' counts (HDFS's short blocks, lost nodes) at their worst in one run."""
        total: dict[str, int] = {}
        for run in self.runs:
            effects = run.fault_effects
            for source in ((effects.reactions, effects.hdfs) if effects else ()):
                for key, value in source.items():
                    if not isinstance(value, (int, float)):
                        continue
                    if key in WORST_OF_ONE_RUN or source is effects.hdfs:
                        total[key] = max(total.get(key, 0), int(value))
                    else:
                        total[key] = total.get(key, 0) + int(value)
        return {k: v for k, v in total.items() if v}

    @property
    def recovered_s(self) -> list[float | None]:
        return [r.fault_effects.recovered_s if r.fault_effects else None for r in self.runs]

    @property
    def causes(self) -> list[str]:
        return sorted({r.fault_effects.cause for r in self.runs if r.fault_effects and r.fault_effects.cause})

    @property
    def problems(self) -> list[str]:
        return sorted({p for r in self.runs for f in r.faults for p in f.problems})


def fault_label(run: RunRecord) -> str:
    return "; ".join(f.spec.model_copy(update={"node": f.node}).label if f.spec.node == "random" else f.spec.label
                     for f in run.faults)


def fault_cells(cells: list[Cell]) -> list[FaultCell]:
    """Per cell with faulted runs, one FaultCell per fault (the node a random fault hit is part of it)."""
    found = []
    for cell in cells:
        by_fault: dict[str, list[RunRecord]] = {}
        for run in cell.excluded:
            if run.faulted:
                by_fault.setdefault(fault_label(run), []).append(run)
        for label, runs in sorted(by_fault.items()):
            found.append(FaultCell(cell.key, label, runs, list(cell.runs)))
    return found


def rows(cells: list[Cell], with_cluster: bool = False) -> list[dict]:
    out = []
    for fc in fault_cells(cells):
        slow = fc.slowdown
        out.append({
            "cell": fc.key.label(with_cluster), "fault": fc.fault, "runs": len(fc.runs),
            "completed": fc.completed, "validated": fc.validated, "unfaulted_runs": len(fc.unfaulted),
            "slowdown": slow.value if slow else None, "slowdown_ci95_low": slow.ci_low if slow else None,
            "slowdown_ci95_high": slow.ci_high if slow else None,
            "reactions": ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in fc.reactions().items()),
            "recovered_s": "; ".join("not within the wait" if s is None else f"{s:g}" for s in fc.recovered_s),
            "cause": "; ".join(fc.causes), "problems": "; ".join(fc.problems),
        })
    return out
