"""Figures derived from cells: throughput, speedup and efficiency, storage gain, engine ratio,
performance per watt and per dollar, energy per run and per GB, records per joule, energy cost.

The seeds' definitions (DESIGN.md §6), cited where they are used:
- throughput = bytes processed / s (the input size over the wall time);
- performance per watt = throughput ÷ average power over the run (Lee & Park 2026, Sec. power);
- speedup S(n) = T(1) / T(n), parallel efficiency E(n) = S(n) / n (Baun 2016, HPL speedup);
- storage gain = T(slower medium) / T(faster medium) on the same cell (Lee & Park 2026, Tables S24-S31);
- energy cost per year C_Y = P(kW) × 24 h × 365.25 d × price per kWh (Baun 2016, Eq. 1).
"""

from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from .. import profiles
from ..errors import SbclabError
from ..earlier import FIRST_STACK
from ..results.schema import RunRecord
from .cells import Cell, CellKey
from .stats import Derived, Estimate, estimate, ratio

HOURS_PER_YEAR = 24 * 365.25
TERASORT_RECORD_BYTES = 100


class Costs(BaseModel):
    """What a cluster costs beyond its boards and media (their prices come from the profiles)."""

    kwh_price: float = Field(0.25, ge=0, description="price of one kWh; Baun's Eq. 1 assumes 0.25 EUR")
    currency: str = Field("EUR", description="currency of kwh_price")
    switch_usd: float = Field(20.0, ge=0, description="an unmanaged gigabit switch; list price, not from a seed")
    psu_usd: float = Field(12.0, ge=0, description="one power supply per board; the Pi 5's 27 W supply at list price")


def energy_cost_per_year(watts: float, costs: Costs) -> float:
    """Baun Eq. 1: C_Y = E(kW) × 24 × 365.25 × price per kWh."""
    return watts / 1000 * HOURS_PER_YEAR * costs.kwh_price


@dataclass
class ClusterPrice:
    usd: float
    parts: dict[str, float]
    notes: list[str] = field(default_factory=list)


def cluster_price(run: RunRecord, costs: Costs) -> ClusterPrice:
    """Boards, media, power supplies and a switch, from the profiles' list prices."""
    parts: dict[str, float] = {"boards": 0.0, "storage": 0.0, "power supplies": 0.0, "switch": costs.switch_usd}
    notes = []
    for node in run.cluster.nodes:
        try:
            board = profiles.board(node.board)
            parts["boards"] += board.price_usd
        except SbclabError:
            notes.append(f"board profile {node.board} unknown here: its price is left out")
        try:
            medium = profiles.storage(node.storage)
            if medium.price_usd is None:
                notes.append(f"{node.storage} has no price in its profile: left out")
            else:
                parts["storage"] += medium.price_usd
        except SbclabError:
            notes.append(f"storage profile {node.storage} unknown here: its price is left out")
        parts["power supplies"] += costs.psu_usd
    return ClusterPrice(sum(parts.values()), parts, sorted(set(notes)))


def _throughput(run: RunRecord) -> float | None:
    size = run.parameters.get("size_bytes")
    return size / run.wall_time_s if size and run.wall_time_s > 0 else None


def _power(run: RunRecord):
    m = run.measurements
    return m.cluster_power if m and m.cluster_power and m.cluster_power.avg_w else None


def _maybe(values: list[float]) -> Estimate | None:
    return estimate(values) if values else None


@dataclass
class CellFigures:
    """Everything a report says about one cell, each figure an estimate over its counted runs."""

    cell: Cell
    wall_time: Estimate | None
    throughput: Estimate | None           # bytes/s
    avg_power: Estimate | None            # W, cluster
    power_estimated: bool                 # True when any node's power is the model's estimate
    energy: Estimate | None               # J, cluster
    energy_above_idle: Estimate | None
    energy_per_gb: Estimate | None        # J per GB of input
    perf_per_watt: Estimate | None        # bytes/s per W = bytes per J
    records_per_joule: Estimate | None    # TeraSort only
    perf_per_dollar: Estimate | None      # bytes/s per USD of hardware
    price: ClusterPrice | None
    energy_cost_per_year: float | None    # at the cell's average power, 24/7
    intermediate_device_ratio: Estimate | None
    intermediate_engine_ratio: Estimate | None

    def as_dict(self) -> dict:
        out = {"cell": self.cell.key.label(), **{k: v for k, v in self.cell.key.__dict__.items()},
               "runs": [r.run_id for r in self.cell.runs], "excluded": [r.run_id for r in self.cell.excluded],
               "emulated": self.cell.emulated, "scale_factor": self.cell.scale_factor,
               "power_estimated": self.power_estimated, "energy_cost_per_year": self.energy_cost_per_year,
               "price_usd": self.price.usd if self.price else None}
        for name in ("wall_time", "throughput", "avg_power", "energy", "energy_above_idle", "energy_per_gb",
                     "perf_per_watt", "records_per_joule", "perf_per_dollar", "intermediate_device_ratio",
                     "intermediate_engine_ratio"):
            value = getattr(self, name)
            out[name] = value.as_dict() if value else None
        return out


def figures(cell: Cell, costs: Costs) -> CellFigures:
    runs = cell.runs
    powered = [r for r in runs if _power(r)]
    price = cluster_price(runs[0], costs) if runs else None
    throughput = _maybe(cell.values(_throughput))
    avg_power = _maybe([_power(r).avg_w for r in powered])
    size = cell.key.size_bytes
    energies = [_power(r).energy_j for r in powered if _power(r).energy_j]
    return CellFigures(
        cell=cell,
        wall_time=cell.wall_time,
        throughput=throughput,
        avg_power=avg_power,
        power_estimated=any(_power(r).estimate for r in powered),
        energy=_maybe(energies),
        energy_above_idle=_maybe([_power(r).energy_above_idle_j for r in powered if _power(r).energy_above_idle_j is not None]),
        energy_per_gb=_maybe([e / (size / 1e9) for e in energies]) if size else None,
        perf_per_watt=_maybe([_throughput(r) / _power(r).avg_w for r in powered if _throughput(r)]),
        records_per_joule=(_maybe([size / TERASORT_RECORD_BYTES / _power(r).energy_j for r in powered if _power(r).energy_j])
                           if cell.key.workload == "terasort" and size else None),
        perf_per_dollar=_maybe([t / price.usd for t in cell.values(_throughput)]) if price and price.usd else None,
        price=price,
        energy_cost_per_year=energy_cost_per_year(avg_power.mean, costs) if avg_power else None,
        intermediate_device_ratio=_maybe(cell.values(
            lambda r: r.measurements.intermediate.device_ratio if r.measurements and r.measurements.intermediate else None)),
        intermediate_engine_ratio=_maybe(cell.values(
            lambda r: r.measurements.intermediate.engine_ratio if r.measurements and r.measurements.intermediate else None)),
    )


@dataclass
class Comparison:
    """One cell against another that differs in one dimension: speedup, storage gain, engine ratio."""

    kind: str            # speedup | storage gain | engine ratio
    cell: CellKey
    baseline: CellKey
    value: Derived
    efficiency: Derived | None = None
    note: str = ""

    def as_dict(self) -> dict:
        return {"kind": self.kind, "cell": self.cell.label(), "baseline": self.baseline.label(),
                **self.value.as_dict(), "efficiency": self.efficiency.as_dict() if self.efficiency else None,
                "note": self.note}


def _timed(cells: list[Cell]) -> dict[CellKey, Estimate]:
    return {c.key: c.wall_time for c in cells if c.wall_time}


def _rmax(cell: Cell) -> Estimate | None:
    values = cell.values(lambda r: r.result.get("rmax_gflops"))
    return estimate(values) if values else None


def speedups(cells: list[Cell]) -> list[Comparison]:
    """S(n) = T(1)/T(n) and E(n) = S(n)/n; without a 1-worker cell, relative to the fewest workers.
    HPL solves a larger problem on more nodes (Eq. 2), so its speedup is Rmax(n)/Rmax(1), as Baun's Table 7."""
    times = _timed(cells)
    rates = {c.key: _rmax(c) for c in cells if c.key.workload == "hpl" and _rmax(c)}
    groups: dict[CellKey, list[CellKey]] = {}
    for key in times:
        groups.setdefault(key.but(workers=0), []).append(key)
    out = []
    for members in groups.values():
        members.sort(key=lambda k: k.workers)
        base = members[0]
        for key in members[1:]:
            if base in rates and key in rates:
                s = ratio(rates[key], rates[base])
            else:
                s = ratio(times[base], times[key])
            share = key.workers / base.workers
            efficiency = Derived(s.value / share, *(sorted((s.ci_low / share, s.ci_high / share))
                                                    if s.ci_low is not None else (None, None)))
            note = "" if base.workers == 1 else f"relative to {base.workers} workers: S = T({base.workers})/T(n), E = S/(n/{base.workers})"
            out.append(Comparison("speedup", key, base, s, efficiency, note))
    return out


def _pairs(cells: list[Cell], dimension: str, kind: str, order) -> list[Comparison]:
    times = _timed(cells)
    groups: dict[CellKey, list[CellKey]] = {}
    for key in times:
        groups.setdefault(key.but(**{dimension: ""}), []).append(key)
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        for a, b in order(members, times):
            out.append(Comparison(kind, a, b, ratio(times[a], times[b])))
    return out


def storage_gains(cells: list[Cell]) -> list[Comparison]:
    """T(slower medium) / T(faster medium), each slower medium against the fastest one."""
    def order(members, times):
        fastest = min(members, key=lambda k: times[k].mean)
        return [(k, fastest) for k in members if k != fastest]
    return _pairs(cells, "storage", "storage gain", order)


def engine_ratios(cells: list[Cell]) -> list[Comparison]:
    """T(Hadoop) / T(Spark): above 1, Spark was faster."""
    def order(members, times):
        by_engine = {k.engine: k for k in members}
        return [(by_engine["hadoop"], by_engine["spark"])] if {"hadoop", "spark"} <= set(by_engine) else []
    return _pairs(cells, "engine", "engine ratio", order)


# The words a setup holds besides a stack's name (cells.setup_of).
SETUP_WORDS = {"standalone", "master-is-worker", "desktop-master", "container"}


def _setup_kind(a: str, b: str) -> str:
    """What two setups of one cell differ in, as the comparison's kind."""
    differ = set(a.split()) ^ set(b.split())
    if differ <= {"container"}:
        return "container overhead"
    if differ & {"master-is-worker", "desktop-master"}:
        return "layout ratio"
    if differ and not differ & SETUP_WORDS:
        return "stack ratio"  # what is left of a setup is the name of its stack (cells.setup_of)
    return "setup ratio"


def _setup_pairs(members: list[CellKey]) -> list[tuple[CellKey, CellKey]]:
    """Each setup against the cell set up as sbclab first did (YARN, a master of its own, native),
    or against the first of them where none is."""
    base = next((k for k in members if not k.setup), sorted(members, key=lambda k: k.setup)[0])
    return [(k, base) for k in members if k != base]


def setup_ratios(cells: list[Cell]) -> list[Comparison]:
    """T(setup) / T(first setup) of one cell: the container overhead (Hajji & Tso: Docker over native),
    a master on a worker or a desktop against one of its own, Spark standalone against YARN, one stack
    against the 2026 seed's."""
    return [Comparison(_setup_kind(c.cell.setup, c.baseline.setup), c.cell, c.baseline, c.value,
                       note=f"{_named(c.cell.setup)} over {_named(c.baseline.setup)}")
            for c in _pairs(cells, "setup", "setup", lambda members, times: _setup_pairs(members))]


def _named(setup: str) -> str:
    return setup or f"YARN, separate master, native, {FIRST_STACK}"


# What the 2021 seed compared on a datanode between a master of its own ("Separate") and a master on
# a datanode ("Combined", its Fig. 11): the node's disk traffic, its memory and its CPU over the run.
DATANODE_RESOURCES = {
    "datanode writes": lambda n: n.disk_write_bytes,
    "datanode reads": lambda n: n.disk_read_bytes,
    "datanode memory": lambda n: n.mem_used_mean_bytes,
    "datanode CPU": lambda n: n.cpu_busy_pct_mean,
}


def measured_datanode(run: RunRecord) -> str | None:
    """The datanode a layout is judged on: the master where it stores blocks too, else the first worker."""
    nodes = run.cluster.task_nodes
    return next((n.name for n in nodes if n.role == "master"), nodes[0].name if nodes else None)


def datanode_resources(cells: list[Cell]) -> list[Comparison]:
    """For cells that differ only in their layout: each resource of the measured datanode, one layout
    over the other (the 2021 seed: 28.5 % less write traffic and 42.2 % less memory with the master
    apart)."""
    out = []
    by_key = {c.key: c for c in cells}
    for comparison in setup_ratios(cells):
        if comparison.kind != "layout ratio":
            continue
        pair = by_key[comparison.cell], by_key[comparison.baseline]
        for name, pick in DATANODE_RESOURCES.items():
            def value(run: RunRecord, pick=pick) -> float | None:
                node = measured_datanode(run)
                figures = run.measurements.nodes.get(node) if run.measurements and node else None
                return pick(figures) if figures else None
            sides = [cell.values(value) for cell in pair]
            if not all(sides) or not all(v > 0 for side in sides for v in side):
                continue
            out.append(Comparison(name, comparison.cell, comparison.baseline,
                                  ratio(estimate(sides[0]), estimate(sides[1])),
                                  note=f"on {measured_datanode(pair[0].runs[0])} against "
                                       f"{measured_datanode(pair[1].runs[0])}"))
    return out
