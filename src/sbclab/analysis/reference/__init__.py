"""The seeds' published results as data, and the matching of a user's cells to them.

Each file in data/ holds one seed's main-text tables, one printed number per row, with the seed,
table and the literal text it was read from (`printed`), so every reference value in a report can
be traced to a page. Values stay in the table's own unit; wall times are converted to seconds only
when they are compared.
"""

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from ...units import parse_size

DIMENSIONS = ("workload", "engine", "size", "workers", "board", "storage")
# libyaml's parser where PyYAML was built with it: the seeds' files are read by every report and
# query, and the pure-Python parser takes seconds over them.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SECONDS = {"s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class Published:
    """One number of one seed's table."""

    seed: str
    citation: str
    table: str
    title: str
    metric: str
    unit: str
    value: float | None
    printed: str
    dimensions: dict[str, Any] = field(default_factory=dict)
    notes: str = ""
    # What defines the run besides the dimensions (Pi's maps and samples), where the seed says it.
    parameters: dict[str, Any] = field(default_factory=dict)
    inferred: str = ""  # what of the cell the seed implies rather than prints
    size_meaning: str = "total"  # TestDFSIO: "per-file" where the seed's size is each file's
    stack: dict[str, str] = field(default_factory=dict)  # the seed's Hadoop and Spark versions

    @property
    def size_bytes(self) -> int | None:
        size = self.dimensions.get("size")
        return parse_size(size) if size else None

    @property
    def seconds(self) -> float | None:
        """A wall time in seconds, whatever unit its table printed."""
        if self.metric != "wall_time" or self.value is None or self.unit not in _SECONDS:
            return None
        return self.value * _SECONDS[self.unit]

    @property
    def source(self) -> str:
        return f"{self.seed} {self.table}"


@lru_cache(maxsize=1)
def seeds() -> dict[str, dict]:
    """The raw data files, by seed id."""
    found = {}
    for entry in sorted(resources.files(__package__).joinpath("data").iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".yaml"):
            raw = yaml.load(entry.read_text(), Loader=_LOADER)  # noqa: S506 - a safe loader
            found[raw["seed"]] = raw
    return found


@lru_cache(maxsize=1)
def published() -> tuple[Published, ...]:
    rows = []
    for seed, raw in seeds().items():
        for table in raw["tables"]:
            for row in table["rows"]:
                row = dict(row)
                value = row.pop("value")
                printed = str(row.pop("printed"))
                metric = row.pop("metric", table.get("metric"))
                unit = row.pop("unit", table.get("unit", ""))
                notes = row.pop("notes", "")
                for extra in ("sd", "sd_printed"):
                    row.pop(extra, None)
                if raw.get("layout") and row.get("engine") in ("hadoop", "spark"):
                    row.setdefault("layout", raw["layout"])
                rows.append(Published(seed, raw["citation"], table["table"], table.get("title", ""), metric, unit,
                                      None if value is None else float(value), printed, row, notes,
                                      dict(table.get("parameters") or {}), table.get("inferred", ""),
                                      table.get("size_meaning", "total"), dict(raw.get("stack") or {})))
    return tuple(rows)


def wall_times() -> list[Published]:
    return [p for p in published() if p.seconds is not None]


def same_stack(p: Published, engine: str, versions: dict[str, str] | None) -> bool:
    """Whether a cell ran the engine version the seed ran (Hadoop 3.3.6 is not the 2021 seed's 3.1.3);
    a cell or seed that does not say matches."""
    theirs = p.stack.get(engine)
    ours = (versions or {}).get(engine)
    return theirs is None or ours is None or theirs == ours


def same_parameters(p: Published, workload: str, parameters: dict[str, Any] | None) -> bool:
    """Whether a cell's defining parameters are the published row's: Pi with 16 maps is not the
    seed's 100-map cell. A Pi row whose table does not say its maps and samples matches no cell."""
    if workload != "pi" or parameters is None:
        return True
    return bool(p.parameters) and all(parameters.get(k) == v for k, v in p.parameters.items())


def once(found: list[Published]) -> list[tuple[Published, list[str]]]:
    """Published cells that several tables repeat (the 2021 seed's Table 20 repeats Table 14's RPi 4B
    column), each once with all its sources."""
    kept: dict[tuple, tuple[Published, list[str]]] = {}
    for p in found:
        key = (p.seed, p.metric, p.unit, p.value, tuple(sorted((k, str(v)) for k, v in p.dimensions.items())))
        if key in kept:
            kept[key][1].append(p.source)
        else:
            kept[key] = (p, [p.source])
    return list(kept.values())


def same_size(p: Published, size_bytes: int | None, parameters: dict[str, Any] | None) -> bool:
    """A cell's size (sbclab's is the total a run processes) against the seed's, in the seed's meaning:
    the 2026 seed printed TestDFSIO's size per file, the 2021 seed the total."""
    if p.size_meaning == "per-file":
        files = (parameters or {}).get("files")
        return bool(files and size_bytes) and p.size_bytes == size_bytes // int(files)
    return p.size_bytes == size_bytes


def matches(workload: str, engine: str, size_bytes: int | None, workers: int, board: str, storage: str,
            parameters: dict[str, Any] | None = None, versions: dict[str, str] | None = None) -> list[Published]:
    """Published wall times of the same workload, engine, size, worker count and defining parameters,
    on the same board and medium where the table names them (a table that does not name one matches any)."""
    found = []
    for p in wall_times():
        d = p.dimensions
        if d.get("workload") != workload or d.get("engine") != engine or d.get("workers") != workers:
            continue
        if workload != "pi" and not same_size(p, size_bytes, parameters):
            continue
        if d.get("board") not in (None, board) or d.get("storage") not in (None, storage):
            continue
        if not same_parameters(p, workload, parameters) or not same_stack(p, engine, versions):
            continue
        found.append(p)
    return found


def nearest(workload: str, engine: str, size_bytes: int | None, workers: int, board: str, storage: str,
            limit: int = 3) -> list[Published]:
    """Published wall times of the same workload and engine closest to a cell that has no exact match:
    same board first, then the nearest size (by ratio), the same medium, the nearest worker count."""
    import math

    def distance(p: Published):
        d = p.dimensions
        size_gap = abs(math.log(p.size_bytes / size_bytes)) if p.size_bytes and size_bytes else 0.0
        # A table that does not name the board or medium says less about this cell than one that names it.
        return (d.get("board") != board, round(size_gap, 3), d.get("storage") != storage,
                abs((d.get("workers") or 0) - workers))
    same = [p for p in wall_times() if p.dimensions.get("workload") == workload and p.dimensions.get("engine") == engine]
    return sorted(same, key=distance)[:limit]


def for_cell(workload: str, engine: str, size_bytes: int | None, workers: int, board: str,
             storage: str, parameters: dict[str, Any] | None = None,
             versions: dict[str, str] | None = None) -> tuple[list[Published], bool]:
    """The published cells to set beside one of ours: the same cell when a seed has it (True), else
    the nearest ones (False)."""
    exact = matches(workload, engine, size_bytes, workers, board, storage, parameters, versions)
    if exact:
        return exact, True
    return nearest(workload, engine, size_bytes, workers, board, storage), False


# What a node benchmark's published cells measure, and which of our parameters define them.
NODE_METRICS = {"sysbench-cpu": "sysbench_events_per_s", "hpl": "hpl_rmax"}
# Node tables whose published values are the board profiles' own inputs (sysbench events/s): matching
# them on an emulated cluster is circular. HPL's Rmax is not an input of any profile.
CIRCULAR_METRICS = {"sysbench_events_per_s", "sysbench_total_time", "power", "network_bandwidth", "disk_throughput", "iops"}


def node_matches(workload: str, board: str, dimensions: dict[str, Any]) -> list[Published]:
    """Published cells of a node benchmark or HPL on the same board whose printed dimensions all agree
    with ours (threads for sysbench; nodes and memory share for HPL)."""
    metric = NODE_METRICS.get(workload)
    found = []
    for p in published():
        d = p.dimensions
        if p.metric != metric or d.get("workload") != workload or d.get("board") != board:
            continue
        if all(d[k] == v for k, v in dimensions.items() if k in d):
            found.append(p)
    return found


def node_nearest(workload: str, limit: int = 3) -> list[Published]:
    """The published cells of a node benchmark on any board, for a board no seed measured."""
    metric = NODE_METRICS.get(workload)
    return [p for p in published() if p.metric == metric and p.dimensions.get("workload") == workload][:limit]
