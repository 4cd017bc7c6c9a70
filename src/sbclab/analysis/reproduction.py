"""One seed table reproduced: the seed's own layout with the published value and ours side by side,
and the ratios the seed draws its conclusions from, each with a verdict.

Emulated runs are judged on shapes only (speedup, storage gain, intermediate data per input byte):
their seconds are those of a cluster scaled down by a factor and are shown with that factor, never
judged against a board's. Each shape is a test that can fail (judgement.py): holds, differs or
inconclusive by its kind's null value and equivalence margin; not measurable here where nothing of
ours stands beside it or it is a model's prediction.
"""

import csv
import dataclasses
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import atomic, profiles
from ..results.schema import RunRecord
from ..units import format_size
from . import breakdown, judgement, reference, scaling, stats, tasks
from .breakdown import Breakdown
from .cells import cold_start_warning

_UNIT_BYTES = {"GB": 1e9, "MB": 1e6, "KB": 1e3}


@dataclass(frozen=True)
class Layout:
    """Rows and columns as the seed printed them, by the reference data's dimensions."""

    rows: tuple[str, ...]
    columns: tuple[str, ...]
    metric: str
    shapes: tuple[str, ...] = ()
    # Further metrics the seed printed in the same table (TestDFSIO's average I/O rate and time beside
    # its throughput): their rows are set beside ours too, a row dimension `metric` telling them apart.
    also: tuple[str, ...] = ()

    @property
    def metrics(self) -> tuple[str, ...]:
        return (self.metric, *self.also)


@dataclass
class Entry:
    row: tuple
    column: tuple
    published: reference.Published
    ours: stats.Estimate | None
    runs: list[str] = field(default_factory=list)
    scale_factor: float | None = None
    values: list[float] = field(default_factory=list)  # ours, one per run
    breakdown: Breakdown | None = None  # where our runs' time went, on average
    tasks: int | None = None  # our runs' task count (None: unknown, or our runs do not agree)
    seed_tasks: int | None = None  # the seed's, by the same rule
    waves: float | None = None  # our runs' tasks over the slots their cluster offered

    @property
    def tasks_kept(self) -> bool:
        return self.tasks is None or self.seed_tasks is None or self.tasks == self.seed_tasks


@dataclass
class Shape:
    kind: str
    label: str
    published: float
    ours: stats.Derived | None
    verdict: str  # holds | differs | inconclusive | not measurable here (judgement.OUTCOMES)
    detail: str = ""
    row: tuple = ()  # speedup: the table row, and the worker count against the base
    workers: int | None = None
    base: int | None = None
    predicted: bool = False  # the model's value beyond the worker counts we ran, not judged
    runs_needed: int | None = None  # inconclusive: the runs per cell that would decide it
    run_ids: tuple[str, ...] = ()  # the runs it is computed from: the cells to repeat while it is undecided


def _shape(kind: str, label: str, published: float, ours: stats.Derived | None, *of: "Entry", **more) -> Shape:
    """A shape judged by its kind's test, from the runs of the entries `of`."""
    found = judgement.judge(kind, published, ours)
    return Shape(kind, label, published, ours, found.verdict, found.detail, runs_needed=found.runs_needed,
                 run_ids=tuple(r for e in of if e for r in e.runs), **more)


@dataclass
class Reproduction:
    seed: str
    table: str
    title: str
    layout: Layout
    entries: list[Entry]
    shapes: list[Shape]
    notes: list[str]
    circular: bool = False
    sizes: dict[int, int] = field(default_factory=dict)  # the seed's size -> the size we ran

    @property
    def rows(self) -> list[tuple]:
        return list(dict.fromkeys(e.row for e in self.entries))

    @property
    def columns(self) -> list[tuple]:
        return list(dict.fromkeys(e.column for e in self.entries))

    def at(self, row: tuple, column: tuple) -> Entry | None:
        return next((e for e in self.entries if e.row == row and e.column == column), None)


SYSBENCH_04_REQUESTS = 10_000


def value_of(run: RunRecord, metric: str, unit: str, dimensions: dict[str, Any]) -> float | None:
    """Our figure of a run in the table's metric and unit; None where sbclab does not measure it."""
    if metric == "wall_time":
        # TestDFSIO's execution time is the one it prints (the seeds' column), not the client's whole run.
        seconds = run.result.get("exec_time_s") if run.workload.startswith("dfsio") else None
        return (seconds or run.wall_time_s) / {"s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}.get(unit, 1.0)
    if metric == "hdfs_throughput":
        return run.result.get("throughput_mb_s")
    if metric == "hdfs_avg_io_rate":
        return run.result.get("average_io_rate_mb_s")
    if metric == "intermediate_data":
        # The seed's method only (what fstrim discarded after the job): mixing it with the engine's
        # counters in one mean would average two different quantities.
        measured = run.measurements.intermediate if run.measurements else None
        found = measured.trimmed_bytes if measured else None
        return None if found is None else found / _UNIT_BYTES.get(unit, 1.0)
    if metric == "sysbench_events_per_s":
        by_threads = run.result.get("events_per_s") or {}
        return by_threads.get(str(dimensions.get("threads"))) or by_threads.get(dimensions.get("threads"))
    if metric == "sysbench_total_time":
        # sysbench 0.4 (Baun's) ran 10,000 requests and printed how long they took.
        events = value_of(run, "sysbench_events_per_s", unit, dimensions)
        return SYSBENCH_04_REQUESTS / events if events else None
    if metric == "hpl_rmax":
        return run.result.get("rmax_gflops")
    if metric == "web_peak_rate":
        return run.result.get("peak_rate") or None
    if metric == "netpipe_peak":
        return run.result.get("peak_mbit_s") or None
    if metric in WORKER_METRICS:
        return _per_worker(run, WORKER_METRICS[metric], unit)
    return None


def _cpu_level(figures, node, power) -> float | None:
    return figures.cpu_busy_pct_p90


def _cpu_mean(figures, node, power) -> float | None:
    return figures.cpu_busy_pct_mean


def _memory_share(figures, node, power) -> float | None:
    if figures.mem_used_max_bytes is None or not node.memory_bytes:
        return None
    return 100 * figures.mem_used_max_bytes / node.memory_bytes


def _network_peak(figures, node, power) -> float | None:
    """The higher of the reception and transmission peaks, in bits per second (the seed's Mbps)."""
    peaks = [p for p in (figures.net_rx_peak_bps, figures.net_tx_peak_bps) if p is not None]
    return 8 * max(peaks) if peaks else None


def _energy(figures, node, power) -> float | None:
    return power.energy_j if power else None


# What Hajji & Tso read off one worker's series during a job (their Figures 5-14): each of our
# workers' figure, averaged over the workers that ran tasks. Units: % of the node, bit/s, J.
WORKER_METRICS = {"worker_cpu_busy_pct": _cpu_level, "worker_cpu_busy_mean_pct": _cpu_mean,
                  "worker_memory_pct": _memory_share, "worker_net_peak": _network_peak, "worker_energy": _energy}
_WORKER_UNITS = {"Mbps": 1e6, "kbps": 1e3}


def _per_worker(run: RunRecord, figure, unit: str) -> float | None:
    measured = run.measurements
    if not measured or not measured.nodes:
        return None
    values = []
    for node in run.cluster.task_nodes:
        figures = measured.nodes.get(node.name)
        value = figure(figures, node, measured.power.get(node.name)) if figures else None
        if value is not None:
            values.append(value / _WORKER_UNITS.get(unit, 1.0))
    return sum(values) / len(values) if values else None


def estimated_energy(runs: list[RunRecord]) -> bool:
    """Whether any run's workers' energy is a power model's estimate (every emulated node's is) rather than
    a meter's."""
    return any(power.estimate for r in runs if r.measurements for n in r.cluster.task_nodes
               if (power := r.measurements.power.get(n.name)))


# Parameters an experiment spreads over cells of their own, each run holding one of them (doc_size).
SPREAD_OVER_CELLS = {"doc_sizes_kb"}


def _matches(run: RunRecord, p: reference.Published, sizes: dict[int, int], parameters: dict[str, Any],
             scale: float | None = None) -> bool:
    d = p.dimensions
    if scale is not None and run.cluster.emulated and not math.isclose(run.scale.factor, scale, rel_tol=1e-3):
        return False  # another experiment's run of the same cell, at another scale
    if d.get("workload") != run.workload or (d.get("engine") and d["engine"] != run.engine):
        return False
    if d.get("workers") and int(run.parameters.get("nodes") or run.cluster.workers) != int(d["workers"]):
        return False
    if d.get("board") and d["board"] != run.cluster.board:
        return False
    if d.get("clock_ghz") and (ran_at := profiles.boards().get(run.cluster.board)) and \
            not math.isclose(ran_at.clock_ghz, float(d["clock_ghz"]), rel_tol=1e-3):
        return False  # the same board at another clock (Baun's RPi B at 700 and at 800 MHz)
    if d.get("memory_utilised_pct") is not None and \
            round(100 * float(run.parameters.get("memory_fraction") or 0)) != int(d["memory_utilised_pct"]):
        return False  # HPL on another share of the memory solves another problem
    if d.get("storage") and d["storage"] != run.cluster.storage:
        return False
    if d.get("doc_size") and d["doc_size"] != run.parameters.get("doc_size"):
        return False
    if d.get("transport") and d["transport"] != run.parameters.get("transport"):
        return False  # NetPIPE over TCP is not its run over MPI
    # A row names the layout or runtime it was measured in where it is not a master of its own, native.
    if (d.get("layout", "separate-master"), d.get("runtime", "native")) != (run.cluster.layout, run.cluster.runtime):
        return False
    if d.get("spark_manager") and d["spark_manager"] != run.cluster.spark_manager:
        return False
    if not reference.same_stack(p, run.engine, run.versions):
        return False
    if p.size_bytes:
        want = sizes.get(p.size_bytes, p.size_bytes)
        if int(run.parameters.get("size_bytes") or 0) != want:
            return False
    asked = parameters.get(run.workload)
    if asked:
        # The request names what stands for the seed's cell here (fewer Pi maps under --work); a list the
        # experiment spreads over cells of their own (web's document sizes) is matched per cell above.
        return all(run.parameters.get(k) == v for k, v in asked.items() if k not in SPREAD_OVER_CELLS)
    return reference.same_parameters(p, run.workload, run.parameters)


STATED = "stated_ratio"
_CLAIM_KEYS = ("claim", "numerator", "denominator", "sizes", "workers_list", "high")


def stated_pairs(p: reference.Published) -> list[tuple[reference.Published, reference.Published]]:
    """The cells a stated ratio is formed from, (numerator, denominator) at each size (and worker count)
    it spans, each an unvalued published cell of the time they compare."""
    d = p.dimensions
    base = {k: v for k, v in d.items() if k not in _CLAIM_KEYS}
    pairs = []
    for size, count in itertools.product(d.get("sizes") or [d.get("size")], d.get("workers_list") or [d.get("workers")]):
        at = {**base, **({"size": size} if size else {}), **({"workers": count} if count else {})}
        pairs.append(tuple(dataclasses.replace(p, metric="wall_time", unit="s", value=None, printed="",
                                               dimensions={**at, **side})
                           for side in (d["numerator"], d["denominator"])))
    return pairs


def stated_cells(p: reference.Published) -> list[reference.Published]:
    return [cell for pair in stated_pairs(p) for cell in pair]


def _dimensions(p: reference.Published, names: tuple[str, ...]) -> tuple:
    return tuple(p.metric if d == "metric" else p.dimensions.get(d) for d in names)


def _seed_total(p: reference.Published, parameters: dict[str, Any]) -> int:
    """The seed's size as a total (TestDFSIO in the 2026 seed printed each file's)."""
    files = parameters.get(p.dimensions.get("workload"), {}).get("files", 1) if p.size_meaning == "per-file" else 1
    return p.size_bytes * files


def reproduce(seed: str, table: str, layout: Layout, runs: list[RunRecord], *, sizes: dict[int, int] | None = None,
              parameters: dict[str, Any] | None = None, circular: bool = False, notes: list[str] = (),
              scale: float | None = None) -> Reproduction:
    """The table's published rows beside our valid runs of the same cells. `sizes` maps a seed's size
    to the size we ran it at (scaled down on an emulated cluster)."""
    sizes, parameters = sizes or {}, parameters or {}
    rows = [p for p in reference.published()
            if p.seed == seed and p.table == table and p.metric in layout.metrics]
    rows += list({_key(c.dimensions): c for p in rows if p.metric == STATED for c in stated_cells(p)}.values())
    title = rows[0].title if rows else ""
    counted = [r for r in runs if r.status == "headline"]
    entries = []
    for p in rows:
        # A stated ratio is formed from its cells' runs (stated_cells), none of its own.
        mine = [] if p.metric == STATED else [r for r in counted if _matches(r, p, sizes, parameters, scale)]
        values = [v for r in mine if (v := value_of(r, p.metric, p.unit, p.dimensions)) is not None]
        factors = {round(r.scale.factor, 6) for r in mine if r.cluster.emulated}
        counts = {tasks.of_run(r) for r in mine}
        waves = [w for r in mine if (w := tasks.waves(r)) is not None]
        seed_parameters = {**p.parameters, **parameters.get(p.dimensions.get("workload"), {})}
        if "maps" in p.parameters:
            seed_parameters["maps"] = p.parameters["maps"]
        entries.append(Entry(_dimensions(p, layout.rows), _dimensions(p, layout.columns), p,
                             stats.estimate(values) if values else None, [r.run_id for r in mine],
                             next(iter(factors)) if len(factors) == 1 else None, values, breakdown.mean_of(mine),
                             counts.pop() if len(counts) == 1 else None,
                             tasks.of_seed(p.dimensions.get("workload", ""), p.size_bytes and _seed_total(p, parameters),
                                           seed_parameters, p.size_meaning),
                             sum(waves) / len(waves) if waves else None))
    found = Reproduction(seed, table, title, layout, entries, [], list(notes), circular, sizes)
    by_id = {r.run_id: r for r in counted}
    for e in entries:
        cold = cold_start_warning([by_id[i] for i in e.runs])
        if cold:
            found.notes.append(f"{_label(e.row)} {_label(e.column)}: {cold}")
    for kind in layout.shapes:
        found.shapes += SHAPES[kind](found)
    _energy_of_a_model(found, [by_id[i] for e in entries for i in e.runs])
    _trim_granularity(found, by_id)
    if any(e.scale_factor for e in entries):
        found.notes.append("emulated: our values are those of a cluster scaled down by the factor shown; seconds and "
                           "rates are not comparable with the boards', only the shapes are judged")
    if layout.metric == "intermediate_data":
        found.notes.append("intermediate data: ours is what fstrim discarded after each job on filesystems trimmed "
                           "before it (the seed's method); runs without it (no filesystem of their own) are left "
                           "out here and keep the engine's and the device's figures in their documents")
    if circular:
        found.notes.append("circular: the published values are the inputs of the emulator's board and medium profiles; "
                           "matching them shows the shaping works, it reproduces nothing")
    return found


def _speedups(found: Reproduction) -> list[Shape]:
    """Speedup by worker count within each row, against the fewest workers the row has runs of (the
    seed's fewest where this host runs them), judged as measured: our cells keep the seed's task
    counts, so their waves are the seed's. A cell whose task count is not the seed's is shown and
    not judged. Where more worker counts ran than the wave model has parameters, the model's fit and
    residual are noted and it predicts the seed's counts beyond ours, labelled and not judged."""
    shapes = []
    if "workers" not in found.layout.columns:
        return shapes
    at = found.layout.columns.index("workers")
    rate = found.layout.metric != "wall_time"  # HPL's Gflops: the speedup is Rmax(n) / Rmax(base)
    for row in found.rows:
        cells = sorted((e for e in found.entries if e.row == row and e.published.value),
                       key=lambda e: int(e.column[at]))
        if len(cells) < 2:
            continue
        measured = [e for e in cells if e.ours]
        base = measured[0] if measured else cells[0]
        seeds_base = int(cells[0].column[at])
        b = int(base.column[at])
        for other in cells:
            n = int(other.column[at])
            if n <= b:
                continue
            faster, slower = (other, base) if rate else (base, other)
            published = faster.published.value / slower.published.value
            label = f"{_label(row)}: {n} workers vs {b}"
            ours = stats.ratio(faster.ours, slower.ours) if base.ours and other.ours else None
            where = "" if b == seeds_base else (f"; against {b} workers, the fewest this host runs (the seed's "
                                                 f"{seeds_base} not run here)")
            if ours is not None and not (base.tasks_kept and other.tasks_kept):
                shapes.append(Shape("speedup", label, published, ours, judgement.NOT_MEASURED,
                                    f"our cells ran {_tasks_text(base, other)}: another wave structure, so another "
                                    f"shape{where}", row=row, workers=n, base=b))
                continue
            shape = _shape("speedup", label, published, ours, base, other, row=row, workers=n, base=b)
            shape.detail += where
            shapes.append(shape)
        shapes += _wave_model(found, row, cells, base, at, rate)
    return shapes


def _tasks_text(*cells: Entry) -> str:
    return ", ".join(f"{e.tasks} tasks at {e.column[-1]} where the seed ran {e.seed_tasks}" for e in cells
                     if not e.tasks_kept)


def _wave_model(found: Reproduction, row: tuple, cells: list[Entry], base: Entry, at: int, rate: bool) -> list[Shape]:
    """The wave model fitted to our cells of a row (time only), noted with its residual, and its
    predictions for the seed's worker counts beyond ours."""
    if rate:
        return []
    by_waves = {e.waves: e.values for e in cells if e.values and e.waves}
    model = scaling.fit_means(by_waves)
    if model is None:
        return []
    ran = [int(e.column[at]) for e in cells if e.values]
    found.notes.append(
        f"{_label(row)}: time by waves fitted to our {model.counts} worker counts ({', '.join(map(str, ran))}): "
        f"{model.fixed:.1f} s fixed + {model.per_wave:.1f} s a wave (tasks over the slots the workers offer), "
        f"residual {model.residual:.1f} s")
    shapes = []
    for other in cells:
        n = int(other.column[at])
        if n <= max(ran) or base.waves is None or not base.tasks_kept:
            continue
        waves = _waves_at(found, base, n, at)
        if waves is None:
            continue
        ours = scaling.predicted_speedup(by_waves, base.waves, waves)
        if ours is None:
            continue
        published = base.published.value / other.published.value
        shapes.append(Shape("speedup", f"{_label(row)}: {n} workers vs {base.column[at]} (predicted by waves)", published,
                            ours, judgement.NOT_MEASURED,
                            f"predicted {ours.text()} by the wave model beyond the {max(ran)} workers we ran "
                            f"(residual {model.residual:.1f} s): a prediction, not a measurement", row=row, workers=n,
                            base=int(base.column[at]), predicted=True))
    return shapes


def _waves_at(found: Reproduction, base: Entry, workers: int, at: int) -> float | None:
    """The waves the base's tasks would make on `workers` workers: the slots grow with the workers
    by what each added worker offered in our runs (a worker's containers; the ApplicationMaster's
    share stays on one)."""
    measured = sorted((int(e.column[at]), base.tasks / e.waves) for e in found.entries
                      if e.row == base.row and e.waves and e.tasks == base.tasks)
    if len(measured) < 2 or not base.tasks:
        return None
    (n0, slots0), (n1, slots1) = measured[0], measured[-1]
    slots = slots0 + (slots1 - slots0) / (n1 - n0) * (workers - n0)
    return base.tasks / slots if slots > 0 else None


def _efficiencies(found: Reproduction) -> list[Shape]:
    """Parallel efficiency, the speedup per added share of workers: E(n) = S(n) × base / n (from Baun's
    Table 7). Predictions beyond the workers we ran are not judged, as their speedups are not."""
    speedups = [s for s in found.shapes if s.kind == "speedup"] or _speedups(found)  # Figure 6 alone: not yet made
    shapes = []
    for s in speedups:
        if s.kind != "speedup" or not s.workers or not s.base:
            continue
        share = s.base / s.workers
        ours = s.ours.scaled(share) if s.ours else None
        published = s.published * share
        label = s.label.replace(" vs ", " efficiency vs ", 1)
        if s.predicted or s.verdict == judgement.NOT_MEASURED and s.ours is not None:
            shapes.append(Shape("efficiency", label, published, ours, judgement.NOT_MEASURED, s.detail, row=s.row,
                                workers=s.workers, base=s.base, predicted=s.predicted))
        else:
            shape = _shape("efficiency", label, published, ours, row=s.row, workers=s.workers, base=s.base)
            shape.run_ids = s.run_ids
            shapes.append(shape)
    return shapes


def _higher_is_better(metric: str) -> bool:
    return metric != "wall_time"


def _storage_gains(found: Reproduction) -> list[Shape]:
    """The faster medium's gain over the slower one for every pair of media a column holds (three
    media, three gains), by the cell's metric; the faster is the one the seed found faster."""
    if "storage" not in found.layout.rows:
        return []
    at = found.layout.rows.index("storage")
    shapes = []
    groups: dict[tuple, list[Entry]] = {}
    for e in found.entries:
        groups.setdefault((e.row[:at] + e.row[at + 1:], e.column), []).append(e)
    for (rest, column), cells in groups.items():
        media = [e for e in cells if e.published.value]
        for i, one in enumerate(media):
            for other in media[i + 1:]:
                higher = _higher_is_better(one.published.metric)
                slow, fast = sorted((one, other), key=lambda e: e.published.value if higher else -e.published.value)
                top, bottom = (fast, slow) if higher else (slow, fast)
                published = top.published.value / bottom.published.value
                ours = stats.ratio(top.ours, bottom.ours) if fast.ours and slow.ours else None
                label = f"{_label(rest)} {_label(column)}: {fast.row[at]} over {slow.row[at]}".strip()
                shapes.append(_shape("storage gain", label, published, ours, fast, slow))
    return shapes


def _intermediate_per_byte(found: Reproduction) -> list[Shape]:
    """Intermediate data per input byte, by engine and size."""
    shapes = []
    for e in found.entries:
        size = e.published.size_bytes
        if not size or not e.published.value:
            continue
        unit = _UNIT_BYTES.get(e.published.unit, 1.0)
        published = e.published.value * unit / size
        ours = None
        if e.ours is not None:
            ran_at = found.sizes.get(size, size)
            ours = stats.Derived.of(e.ours).scaled(unit / ran_at)
        label = f"{_label(e.row)} {format_size(size)}"
        if published > 0:
            shapes.append(_shape("intermediate per input byte", label, published, ours, e))
        else:
            shapes.append(Shape("intermediate per input byte", label, published, ours, judgement.NOT_MEASURED,
                                "published 0: no share of the input to compare with"))
    return shapes


def _stated_ratios(found: Reproduction) -> list[Shape]:
    """A ratio the seed's text states (its figures' values are not printed): our times of the numerator's
    cells over the denominator's, at one size, as the mean over sizes, or each cell of a span against
    the span's ends."""
    shapes = []
    cells = {_key(e.published.dimensions): e for e in found.entries if e.published.metric == "wall_time"}
    for e in found.entries:
        p = e.published
        if p.metric != STATED:
            continue
        d = p.dimensions
        pairs = [(top.dimensions, cells.get(_key(top.dimensions)), cells.get(_key(bottom.dimensions)))
                 for top, bottom in stated_pairs(p)]
        ratios = [stats.ratio(top.ours, bottom.ours) if top and bottom and top.ours and bottom.ours else None
                  for _, top, bottom in pairs]
        label = f"{_label(e.row)} {_label(e.column)}: {_side(d['numerator'])} over {_side(d['denominator'])}".strip()
        claim = d.get("claim", "at")
        if claim == "range":
            shapes += _span(label, p, [(dims, r) for (dims, _, _), r in zip(pairs, ratios)],
                            tuple(r for _, top, bottom in pairs for e in (top, bottom) if e for r in e.runs))
            continue
        if None in ratios:
            missing = [f"{dims.get('size') or ''} {dims.get('workers') or ''}".strip() for (dims, _, _), r
                       in zip(pairs, ratios) if r is None]
            shapes.append(Shape("stated ratio", label, p.value, None, judgement.NOT_MEASURED,
                                f"no valid runs of ours on both sides at {', '.join(missing)}"))
            continue
        ours = ratios[0] if claim == "at" else _mean(ratios)
        shape = _shape("stated ratio", label + (f" (mean over {len(ratios)} sizes)" if claim == "average" else ""),
                       p.value, ours, *(e for _, top, bottom in pairs for e in (top, bottom)))
        if p.inferred:
            shape.detail += f"; read as: {p.inferred}"
        shapes.append(shape)
    return shapes


def _key(dimensions: dict) -> str:
    return json.dumps({k: v for k, v in dimensions.items() if k not in _CLAIM_KEYS}, sort_keys=True, default=str)


def _side(dimensions: dict) -> str:
    return " ".join(str(v) for v in dimensions.values())


def _mean(ratios: list[stats.Derived]) -> stats.Derived:
    """The mean of ratios, its half-width theirs added in quadrature over their count (independent cells)."""
    value = sum(r.value for r in ratios) / len(ratios)
    runs = min((r.runs for r in ratios if r.runs), default=None)
    if any(r.ci_low is None for r in ratios):
        return stats.Derived(value, runs=runs)
    half = math.sqrt(sum(((r.ci_high - r.ci_low) / 2) ** 2 for r in ratios)) / len(ratios)
    return stats.Derived(value, max(value - half, 1e-9), value + half, runs)


def _span(label: str, p: reference.Published, ratios: list[tuple[dict, stats.Derived | None]],
          run_ids: tuple[str, ...]) -> list[Shape]:
    """A span the seed states (2.2x to 3.86x) against each of our cells: a cell holds inside the span
    widened by the margin, differs wholly outside it; the span holds when every cell we ran holds."""
    low, high = p.value, float(p.dimensions["high"])
    measured = [(dims, r) for dims, r in ratios if r is not None]
    published = math.sqrt(low * high)
    if not measured:
        return [Shape("stated ratio", f"{label} (span {low:g}-{high:g})", published, None, judgement.NOT_MEASURED,
                      "no valid runs of ours on both sides of any of its cells")]
    margin = judgement.TESTS["stated ratio"].margin
    lo_band, hi_band = low / (1 + margin), high * (1 + margin)
    outside = [dims for dims, r in measured if r.ci_low is not None and (r.ci_high < lo_band or r.ci_low > hi_band)]
    inside = [dims for dims, r in measured if r.ci_low is not None and lo_band <= r.ci_low and r.ci_high <= hi_band]
    named = lambda dims: f"{dims.get('size', '')} at {dims.get('workers', '')} workers".strip()  # noqa: E731
    values = [r.value for _, r in measured]
    # Ours: the cells' geometric mean, shown with the lowest and the highest cell as its ends.
    spread = stats.Derived(math.exp(sum(math.log(v) for v in values) / len(values)), min(values), max(values),
                           min((r.runs for _, r in measured if r.runs), default=None))
    of = f"{len(measured)} of the span's {len(ratios)} cells ran here"
    if outside:
        verdict, detail = judgement.DIFFERS, f"ours lies wholly outside {lo_band:.3g}-{hi_band:.3g} at " + \
            ", ".join(named(d) for d in outside)
    elif len(inside) == len(measured):
        verdict, detail = judgement.HOLDS, f"every interval of ours lies within {lo_band:.3g}-{hi_band:.3g}"
    else:
        verdict, detail = judgement.INCONCLUSIVE, f"{len(measured) - len(inside)} of our cells' intervals reach out " \
            f"of {lo_band:.3g}-{hi_band:.3g} without lying outside it"
    needs = [judgement.runs_to_decide(r, lo_band, hi_band) for _, r in measured if r.ci_low is not None
             and not lo_band <= r.ci_low <= r.ci_high <= hi_band] if verdict == judgement.INCONCLUSIVE else []
    return [Shape("stated ratio", f"{label} (span {low:g}-{high:g}, ours: lowest-highest cell)", published, spread,
                  verdict, f"{detail}; {of}; the seed's span widened by the margin of {margin:.0%}",
                  runs_needed=max(needs) if needs and None not in needs else None, run_ids=run_ids)]


def _rate_gaps(found: Reproduction) -> list[Shape]:
    """TestDFSIO's average I/O rate over its throughput, per cell: the mean of the files' rates over
    all bytes over all task time. They part when tasks run at different rates (a slow card among
    fast ones, tasks that wait for each other), the gap the 2026 seed discusses. Ours from each run's
    own pair of figures."""
    shapes = []
    for e in found.entries:
        if e.published.metric != "hdfs_avg_io_rate" or not e.published.value:
            continue
        twin = next((t for t in found.entries if t.published.metric == "hdfs_throughput" and t.column == e.column
                     and _without_metric(found, t.row) == _without_metric(found, e.row)), None)
        if twin is None or not twin.published.value:
            continue
        published = e.published.value / twin.published.value
        rates = dict(zip(e.runs, e.values)) if len(e.runs) == len(e.values) else {}
        paired = [rates[r] / v for r, v in zip(twin.runs, twin.values) if r in rates and v] \
            if len(twin.runs) == len(twin.values) else []
        ours = stats.Derived.of(stats.estimate(paired)) if paired else None
        label = f"{_label(_without_metric(found, e.row))} {_label(e.column)}: average I/O rate over throughput"
        shapes.append(_shape("rate gap", label.strip(), published, ours, e, twin, row=e.row))
    return shapes


def _without_metric(found: Reproduction, row: tuple) -> tuple:
    return tuple(v for d, v in zip(found.layout.rows, row) if d != "metric")


def _board_ratios(found: Reproduction) -> list[Shape]:
    """Each board against the table's first, column by column, among cells alike in every other row
    dimension (the RPi 4B over the 3B at the same size; a higher-is-better metric: the Pi 5 over the
    Pi 4, the overclocked Pi 5 over the stock one)."""
    if "board" not in found.layout.rows:
        return []
    at = found.layout.rows.index("board")
    shapes = []
    for column in found.columns:
        alike: dict[tuple, list[Entry]] = {}
        for e in found.entries:
            if e.column == column and e.published.value:
                alike.setdefault(e.row[:at] + e.row[at + 1:], []).append(e)
        named = " ".join(f"{d} {v}" for d, v in zip(found.layout.columns, column) if v is not None)
        for rest, cells in alike.items():
            where = " ".join(w for w in (named, _label(rest)) if w)
            shapes += [_over_first("board ratio", f"{where}: {other.row[at]} over {cells[0].row[at]}".strip(), other,
                                   cells[0]) for other in cells[1:]]
    return shapes


def _row_ratios(found: Reproduction) -> list[Shape]:
    """Each row against the table's first, column by column: the 2021 seed's Pi clusters of one and five
    workers against its desktop (seconds: above 1, the desktop was faster)."""
    shapes = []
    for column in found.columns:
        cells = [e for e in found.entries if e.column == column and e.published.value]
        named = " ".join(f"{d} {v}" for d, v in zip(found.layout.columns, column) if v is not None)
        shapes += [_over_first("row ratio", (f"{named}: " if named else "") + f"{_label(other.row)} over {_label(cells[0].row)}",
                               other, cells[0]) for other in cells[1:]]
    return shapes


def _over_first(kind: str, label: str, other: Entry, base: Entry, row: tuple = ()) -> Shape:
    """One cell's figure over its group's first, published and ours, judged."""
    published = other.published.value / base.published.value
    ours = stats.ratio(other.ours, base.ours) if other.ours and base.ours else None
    return _shape(kind, label, published, ours, other, base, row=row)


def _thread_scaling(found: Reproduction) -> list[Shape]:
    """Each thread count against one thread, row by row: flat on a single core (Baun's RPi B: the extra
    threads only switch), falling with the cores on a multi-core board."""
    if "threads" not in found.layout.columns:
        return []
    at = found.layout.columns.index("threads")
    shapes = []
    for row in found.rows:
        cells = sorted((e for e in found.entries if e.row == row and e.published.value), key=lambda e: e.column[at])
        if len(cells) < 2 or not any(e.ours for e in cells):
            continue
        shapes += [_over_first("thread scaling", f"{_label(row)}: {other.column[at]} threads over {cells[0].column[at]}",
                               other, cells[0], row) for other in cells[1:]]
    return shapes


def _runtime_ratios(found: Reproduction) -> list[Shape]:
    """In a container over natively, row by row (Hajji & Tso: Docker served 65.9 % fewer 1 KB requests)."""
    if "runtime" not in found.layout.columns:
        return []
    at = found.layout.columns.index("runtime")
    shapes = []
    for row in found.rows:
        cells = {e.column[at] or "native": e for e in found.entries if e.row == row and e.published.value}
        if {"native", "container"} <= set(cells):
            shapes.append(_over_first("container over native", f"{_label(row)}: container over native",
                                      cells["container"], cells["native"], row))
    return shapes


def _levels(found: Reproduction) -> list[Shape]:
    """A share of the node (CPU busy, memory used, %) published and ours, cell by cell: a share has no
    unit a scaled-down node changes, so the level itself is the shape (Hajji & Tso's worker at 20 %
    CPU with 1 GB to count, 100 % with 6 GB: fewer tasks than cores, then more)."""
    shapes = []
    for e in found.entries:
        if not e.published.value:
            continue
        ours = stats.Derived.of(e.ours) if e.ours else None
        shape = _shape("level", f"{_label(e.row)} {_label(e.column)}".strip(), e.published.value, ours, e, row=e.row)
        if e.published.inferred:
            shape.detail += f"; the seed's value is inferred: {e.published.inferred}"
        shapes.append(shape)
    return shapes


def _orders(found: Reproduction) -> list[Shape]:
    """Where the seed says only which cell is higher (Hajji & Tso: a worker's energy is higher at 6 GB,
    its CPU higher in Docker at 6 GB; no values printed), the cell it names over each unvalued cell that
    differs from it only in the dimension the claim is `over`. Holds when our whole interval is above 1,
    differs when it is below."""
    shapes = []
    dimensions = (*found.layout.rows, *found.layout.columns)
    named = {id(e): dict(zip(dimensions, (*e.row, *e.column))) for e in found.entries}
    claimed = [e for e in found.entries if e.published.dimensions.get("claim") == "higher"]
    for top in claimed:
        alike = [d for d in dimensions if d != top.published.dimensions.get("over")]
        others = [e for e in found.entries if e is not top and e.published.value is None
                  and not e.published.dimensions.get("claim")
                  and all(named[id(e)][d] == named[id(top)][d] for d in alike)]
        for other in others:
            ours = stats.ratio(top.ours, other.ours) if top.ours and other.ours else None
            shape = _shape("higher", f"{_cell_name(found, top)} over {_cell_name(found, other)}", 1.0, ours, top, other,
                           row=top.row)
            shape.detail += f"; the seed printed no values, only which is higher (\"{top.published.printed}\")"
            shapes.append(shape)
    return shapes


def _cell_name(found: Reproduction, e: Entry) -> str:
    """A cell by its layout's values, a cell of no runtime named native (the seeds' rows say only 'Docker')."""
    named = [*zip(found.layout.rows, e.row), *zip(found.layout.columns, e.column)]
    return " ".join(str(v if v is not None or d != "runtime" else "native") for d, v in named
                    if v is not None or d == "runtime")


def _energy_of_a_model(found: Reproduction, runs: list[RunRecord]) -> None:
    """Energy our power model gave for emulated time is not set against a seed's meter: its verdicts
    become not measurable, saying why (the ratios stay shown)."""
    if found.layout.metric != "worker_energy" or not estimated_energy(runs):
        return
    for shape in found.shapes:
        shape.verdict = "not measurable here"
        shape.detail = ("ours is the board's power model at the node's CPU use over our runs' time, not a meter's "
                        "reading; " + shape.detail)
    found.notes.append("energy: ours is the power model applied to the runs' time (estimate), the seed's was metered; "
                       "shown, not judged")


def trimmed_past_written(run: RunRecord) -> tuple[int, int] | None:
    """(bytes fstrim discarded, bytes the nodes' devices took during the job) where the first is the
    larger, else None. A job frees no more than it wrote; past that, fstrim counted free space the job
    never used: ext4 trims the whole free space of every group a free touched since the last trim."""
    measured = run.measurements.intermediate if run.measurements else None
    if measured is None or measured.trimmed_bytes is None:
        return None
    written = [n.get("device_write_bytes") for n in measured.nodes.values() if n.get("trimmed_bytes") is not None]
    if not written or None in written:
        return None
    return (measured.trimmed_bytes, sum(written)) if measured.trimmed_bytes > sum(written) else None


def _trim_granularity(found: Reproduction, by_id: dict[str, RunRecord]) -> None:
    """A shape whose runs' fstrim figure exceeds what their nodes wrote is not judged: the figure is then the
    filesystem's trim granularity (its emptiest groups' free space), not the job's data, and a verdict on it
    would judge the filesystem. Its ratio stays shown, and the detail says by how much."""
    if found.layout.metric != "intermediate_data":
        return
    for shape in found.shapes:
        past = [(i, over) for i in shape.run_ids if i in by_id and (over := trimmed_past_written(by_id[i]))]
        if not past:
            continue
        run_id, (trimmed, written) = max(past, key=lambda p: p[1][0] / max(1, p[1][1]))
        shape.verdict = judgement.NOT_MEASURED
        shape.detail = (f"fstrim discarded more than the nodes wrote in {len(past)} of its "
                        f"{len(shape.run_ids)} run(s) ({trimmed / 1e6:.1f} MB against {written / 1e6:.1f} MB in "
                        f"{run_id}): that is the trim's granularity, the free space of every ext4 group a free "
                        "touched, not the job's data; " + shape.detail)


def _label(values: tuple) -> str:
    return " ".join(str(v) for v in values if v is not None)


SHAPES = {"speedup": _speedups, "storage_gain": _storage_gains, "intermediate_per_input_byte": _intermediate_per_byte,
          "board_ratio": _board_ratios, "thread_scaling": _thread_scaling, "efficiency": _efficiencies,
          "runtime_ratio": _runtime_ratios, "row_ratio": _row_ratios, "level": _levels,
          "order": _orders, "rate_gap": _rate_gaps, "stated_ratio": _stated_ratios}
# The test (judgement.TESTS) each of a layout's shapes is judged by.
KINDS = {"speedup": "speedup", "storage_gain": "storage gain", "intermediate_per_input_byte": "intermediate per input byte",
         "board_ratio": "board ratio", "thread_scaling": "thread scaling", "efficiency": "efficiency",
         "runtime_ratio": "container over native", "row_ratio": "row ratio", "level": "level", "order": "higher",
         "rate_gap": "rate gap", "stated_ratio": "stated ratio"}



def request_path(results: Path, seed: str, table: str, suffix: str = ".json") -> Path:
    return Path(results) / "reproduction" / f"{seed}-{table.replace(' ', '').lower()}{suffix}"


def save_request(results: Path, seed: str, table: str, layout: Layout, *, sizes: dict[int, int],
                 parameters: dict[str, Any], circular: bool, notes: list[str], scale: float | None = None) -> Path:
    """What a reproduction compares, kept beside the runs, so a report recomputes it from them."""
    path = request_path(results, seed, table)
    request = {"seed": seed, "table": table, "rows": layout.rows, "columns": layout.columns, "metric": layout.metric,
               "also": layout.also, "shapes": layout.shapes, "sizes": {str(k): v for k, v in sizes.items()}, "parameters": parameters,
               "circular": circular, "notes": notes, "scale": scale}
    atomic.write_text(path, json.dumps(request, indent=1))
    return path


def save_csv(found: Reproduction, results: Path) -> tuple[Path, Path]:
    """The table (one line per cell, in the seed's dimensions) and its shapes, as two CSV files beside the request."""
    cells = request_path(results, found.seed, found.table, ".csv")
    with atomic.open_for_write(cells, "w") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([*found.layout.rows, *found.layout.columns, "published", "printed", "unit", "ours_mean",
                         "ours_ci_low", "ours_ci_high", "n", "scale_factor", "runs"])
        for e in found.entries:
            o = e.ours
            writer.writerow([*e.row, *e.column, e.published.value, e.published.printed, e.published.unit,
                             _blank(o and o.mean), _blank(o and o.ci_low), _blank(o and o.ci_high), o.n if o else 0,
                             _blank(e.scale_factor), " ".join(e.runs)])
    shapes = request_path(results, found.seed, found.table, "-shapes.csv")
    with atomic.open_for_write(shapes, "w") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["kind", "shape", "published", "ours", "ours_ci_low", "ours_ci_high", "verdict", "runs_needed",
                         "null", "margin", "detail"])
        for sh in found.shapes:
            d, test = sh.ours, judgement.TESTS.get(sh.kind)
            writer.writerow([sh.kind, sh.label, sh.published, _blank(d and d.value), _blank(d and d.ci_low),
                             _blank(d and d.ci_high), sh.verdict, _blank(sh.runs_needed), _blank(test and test.null),
                             _blank(test and test.margin), sh.detail])
    return cells, shapes


def _blank(value: float | None) -> Any:
    return "" if value is None else value


def from_results(results: Path, runs: list[RunRecord]) -> list[Reproduction]:
    """Every reproduction requested in a results directory, recomputed from its stored runs."""
    found = []
    for path in sorted((Path(results) / "reproduction").glob("*.json")):
        r = json.loads(path.read_text())
        layout = Layout(tuple(r["rows"]), tuple(r["columns"]), r["metric"], tuple(r["shapes"]), tuple(r.get("also", ())))
        found.append(reproduce(r["seed"], r["table"], layout, runs, sizes={int(k): v for k, v in r["sizes"].items()},
                               parameters=r["parameters"], circular=r["circular"], notes=r["notes"],
                               scale=r.get("scale")))
    return found
