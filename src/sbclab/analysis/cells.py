"""Runs grouped into cells: the same workload, engine, size, cluster shape and configuration, repeated.

Only runs fit for headline figures (valid, not flagged) enter a cell's statistics; the others are
kept beside it with the reason, so a report can list them and nothing silently disappears. Runs from
different clusters (another host, backend or emulation scale) never share a cell: their times are
not comparable, and a table that holds several says so.
"""

import json
from dataclasses import dataclass, field

from ..earlier import FIRST_STACK
from ..results.index import run_row
from ..results.schema import RunRecord
from ..units import format_size
from .stats import Estimate, estimate, spread_warning

# Parameters that say where data lives or how it was prepared, not what was measured.
_NOT_DEFINING = {"output", "input", "input_run_id", "reuse_input", "rows", "seed", "nodes", "hosts", "p", "q",
                 "cpu_period_us"}  # follows from the cluster, which the cell already names


def exclusion_reason(run: RunRecord) -> str:
    kind = run.status
    if kind == "failed":
        return f"exit status {run.exit_status}"
    if kind == "invalid":
        failed = [c for c in run.validity.checks if not c.passed]
        return "validation failed: " + "; ".join(f"{c.name} ({c.detail})" for c in failed[:3])
    if kind == "unchecked":
        return "output not validated"
    if kind == "faulted":
        return "faulted: " + "; ".join(f.spec.label.replace(f.spec.node, f.node) for f in run.faults)
    if kind == "flagged":
        return "health flag: " + "; ".join(run.flag_reasons[:3])
    return ""


def _identity(backend: str, hostname: str | None, factor: float, name: str) -> str:
    host = "?" if hostname is None else hostname
    if backend == "emulated":
        return f"emulated on {host} at scale {factor:.3g}"
    if backend == "processes":
        return f"processes on {host} (unshaped)"
    return f"{backend} cluster {name}"


def cluster_identity(run: RunRecord) -> str:
    """What makes two runs' times comparable: the machine(s), the backend and the emulation scale."""
    return _identity(run.cluster.backend, run.host.get("hostname"), run.scale.factor, run.cluster.name)


def setup_of(spark_manager: str, layout: str, runtime: str, stack: str) -> str:
    """The cluster's choices that differ from the first clusters sbclab made, in a few words."""
    return " ".join(value for value in (spark_manager, layout, runtime, stack)
                    if value not in ("yarn", "separate-master", "native", FIRST_STACK))


@dataclass(frozen=True, order=True)
class CellKey:
    workload: str
    engine: str
    size_bytes: int
    workers: int
    board: str
    storage: str
    preset: str
    cluster: str
    parameters: str = ""
    # How the cluster was set up, where not as every cluster before these choices: Spark's
    # standalone manager, the master's layout, containers ("" for YARN, a master of its own, native).
    setup: str = ""

    @classmethod
    def of(cls, run: RunRecord) -> "CellKey":
        return cls.of_row(run_row(run))

    @classmethod
    def of_row(cls, row: dict) -> "CellKey":
        """The cell of a run's summary row (results/index.py), as `diff` reads it from the index."""
        parameters = json.loads(row["parameters"])
        extra = {k: v for k, v in sorted(parameters.items()) if k not in _NOT_DEFINING and k != "size_bytes"}
        if parameters.get("n_from") == "Eq. 2":
            extra.pop("n", None)  # N follows the node count by Baun's Eq. 2: the memory fraction defines the cell
        if row["workload"] != "pi":
            extra.pop("maps", None)  # derived from the input size for data workloads
        # An MPI run may use fewer workers than the cluster has (HPL at 1, 2, 4 ... nodes).
        workers = int(parameters.get("nodes") or row["workers"])
        size = parameters.get("size_bytes")
        return cls(row["workload"], row["engine"], int(size) if size else 0, workers, row["board"], row["storage"],
                   row["preset"], _identity(row["backend"], row["host"], row["scale_factor"], row["cluster"]),
                   json.dumps(extra, sort_keys=True) if extra else "",
                   setup_of(row["spark_manager"], row["layout"], row["runtime"], row["stack"]))

    def label(self, with_cluster: bool = False) -> str:
        """The cell in one line; with_cluster names the cluster too, which a table holding runs of
        several clusters needs (their cells otherwise read the same) and a table of one does not."""
        size = f" {format_size(self.size_bytes)}" if self.size_bytes else ""
        text = f"{self.workload}/{self.engine}{size} {self.workers}w {self.board}/{self.storage} {self.preset}"
        text += f" {self.setup}" if self.setup else ""
        return f"{text} [{self.cluster}]" if with_cluster else text

    @property
    def defining_parameters(self) -> dict:
        """The parameters that define the cell besides its dimensions (Pi's maps and samples)."""
        return json.loads(self.parameters) if self.parameters else {}

    def but(self, **changes) -> "CellKey":
        return CellKey(**{**self.__dict__, **changes})


@dataclass
class Cell:
    key: CellKey
    runs: list[RunRecord] = field(default_factory=list)       # counted
    excluded: list[RunRecord] = field(default_factory=list)   # kept for the record, with a reason

    @property
    def wall_time(self) -> Estimate | None:
        return estimate([r.wall_time_s for r in self.runs]) if self.runs else None

    @property
    def emulated(self) -> bool:
        return any(r.cluster.emulated for r in self.runs + self.excluded)

    @property
    def scale_factor(self) -> float | None:
        runs = self.runs + self.excluded
        return runs[0].scale.factor if runs and runs[0].cluster.emulated else None

    def values(self, pick) -> list[float]:
        """A per-run figure over the counted runs that have it."""
        out = []
        for run in self.runs:
            value = pick(run)
            if value is not None:
                out.append(float(value))
        return out

    def warnings(self, with_cluster: bool = False) -> list[str]:
        found = []
        e = self.wall_time
        label = self.key.label(with_cluster)
        if e is None:
            found.append(f"{label}: no valid run to count ({len(self.excluded)} excluded)")
        else:
            advice = spread_warning(e)
            if advice:
                found.append(f"{label}: {advice}")
            cold = cold_start_warning(self.runs)
            if cold:
                found.append(f"{label}: {cold}")
        return found


COLD_GAP = 0.10  # how much slower than the warm runs a cold one must be to be remarked


def cold_start_warning(runs: list[RunRecord]) -> str | None:
    """A run that was the first job of freshly started daemons, when it is markedly slower than the
    cell's other runs: the daemons load and compile their code on first use (under an emulated node's
    small CPU quota that takes a while), so the mean then carries a start-up the others did not pay."""
    cold = [r for r in runs if r.jobs_before == 0]
    warm = [r.wall_time_s for r in runs if r.jobs_before != 0]
    if not cold or not warm:
        return None
    typical = sum(warm) / len(warm)
    slowest = max(cold, key=lambda r: r.wall_time_s)
    gap = slowest.wall_time_s / typical - 1
    if gap <= COLD_GAP:
        return None
    return (f"run {slowest.run_id} was the first job of freshly started daemons and took {gap:.0%} longer than the "
            "others (cold: code loaded and compiled on first use); it is counted — run the cell again to outnumber it")


def group(runs: list[RunRecord]) -> list[Cell]:
    cells: dict[CellKey, Cell] = {}
    for run in runs:
        key = CellKey.of(run)
        cell = cells.setdefault(key, Cell(key))
        (cell.runs if run.status == "headline" else cell.excluded).append(run)
    return [cells[k] for k in sorted(cells)]


def clusters_in(runs: list[RunRecord]) -> list[str]:
    return sorted({cluster_identity(r) for r in runs})
