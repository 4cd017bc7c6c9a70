"""From a raw recording to what a run document holds: per-node figures over the job's window,
phases, intermediate data, power and energy, memory against its limit, health flags — and the time
series stored beside it."""

import math
from typing import Any

import numpy

from ..cluster.spec import ClusterSpec
from ..results.measurements import ClusterPower, Flag, Intermediate, Measurements, NodeFigures, PowerFigures
from . import diagnostics, health, intermediate, memory, power, series
from .recorder import RawRecording
from .settings import CLUSTER_METER

SERIES_COLUMNS = (*series.COLUMNS, "power_w")


def _mean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return round(sum(values) / len(values), 3) if values else None


def _max(values: list) -> Any:
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _min(values: list) -> Any:
    values = [v for v in values if v is not None]
    return min(values) if values else None


def _p90(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(float(numpy.percentile(values, 90, method="inverted_cdf")), 2) if values else None


def _busy(r: dict) -> float | None:
    if r.get("cpu_idle_pct") is None:
        return None
    return round(100 - r["cpu_idle_pct"] - (r.get("cpu_iowait_pct") or 0), 2)


def _has_cgroup(recorded: dict) -> bool:
    return bool(recorded["target"].get("cgroup")) or any("cgroup_cpu" in s for s in recorded["samples"])


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value)


def node_figures(recorded: dict, rows: list[dict], gaps: list[dict], start: float, end: float) -> NodeFigures:
    inside = [r for r in rows if r["t"] - r["dt"] < end and r["t"] > start]
    target = recorded["target"]
    bounds = series.edges(recorded["samples"], start, end)

    def total(*path):
        value = series.counter(*bounds, *path) if bounds else None
        return None if value is None else int(value)

    swap = None
    if bounds and series.has_node_swap(recorded["samples"]):
        swap = series.node_swapped_out(recorded["samples"], bounds[0]["t"], bounds[1]["t"])
    elif bounds and not _has_cgroup(recorded):
        pages = [series.counter(*bounds, "swap", k) for k in ("in_pages", "out_pages")]
        swap = None if None in pages else sum(pages) * series.PAGE_BYTES
    # A node whose cgroup accounts no swap has no swap figure of its own: the host's paging is not
    # its use (health.py still flags it, as the host's).
    throttled = [r["throttled"] for r in inside if r.get("throttled") is not None]
    bits = 0
    for b in throttled:
        bits |= b
    errors = {}
    for s in recorded["samples"]:
        errors.update(s.get("errors") or {})
    return NodeFigures(
        scope=target.get("scope", "node"), samples=len(inside),
        cpu_busy_pct_mean=_mean([_busy(r) for r in inside]), cpu_busy_pct_max=_max([_busy(r) for r in inside]),
        cpu_busy_pct_p90=_p90([_busy(r) for r in inside]),
        cpu_iowait_pct_mean=_mean([r.get("cpu_iowait_pct") for r in inside]),
        cpu_cores_used_max=_max([r.get("cpu_cores_used") for r in inside]),
        cpu_capacity_cores=target.get("cpu_capacity"), load_max=_max([r.get("load") for r in inside]),
        mem_used_max_bytes=_max([r.get("mem_used_bytes") for r in inside]),
        mem_used_mean_bytes=_whole(_mean([r.get("mem_used_bytes") for r in inside])), swap_bytes=swap,
        disk_read_bytes=total("disk", "read_bytes"), disk_write_bytes=total("disk", "write_bytes"),
        disk_busy_pct_mean=_mean([r.get("disk_busy_pct") for r in inside]),
        net_rx_bytes=total("net", "rx_bytes"), net_tx_bytes=total("net", "tx_bytes"),
        net_rx_peak_bps=_max([r.get("net_rx_bps") for r in inside]),
        net_tx_peak_bps=_max([r.get("net_tx_bps") for r in inside]),
        clock_mhz_min=_min([r.get("clock_mhz_min") for r in inside]),
        temp_max_c=_max([r.get("temp_max_c") for r in inside]), throttled_bits=bits if throttled else None,
        gaps=[g for g in gaps if g["from"] < end and g["to"] > start], sampler_errors=errors,
        sampler_cpu_pct=recorded.get("sampler_cpu_pct"))


HOST_SENSORS = ("clock_mhz_min", "clock_mhz_mean", "temp_max_c")


def _without_host_sensors(rows: list[dict]) -> None:
    """An emulated node's clock and temperature are the host's: kept out of its figures, series,
    plots and verdicts rather than shown as the board's."""
    for r in rows:
        for column in HOST_SENSORS:
            r[column] = None


def _cluster_meter(raw: RawRecording, spec: ClusterSpec, start: float, end: float,
                   idle_w: float | None) -> PowerFigures | None:
    """The whole-cluster meter's figures over the run, where the recording has one."""
    recorded = raw.power.get(CLUSTER_METER)
    if recorded is None:
        return None
    result = power.for_node(recorded, {}, [], [], spec.board, raw.interval_s)
    got = power.energy(result.intervals, start, end)
    above = None
    if idle_w is not None and got["energy_j"] is not None:
        above = round(got["energy_j"] - idle_w * (end - start) * got["coverage"], 3)
    return PowerFigures(source=result.source, estimate=result.estimate, idle_w=idle_w, energy_above_idle_j=above,
                        notes=result.notes, **got)


def _metered(meter: PowerFigures) -> ClusterPower:
    return ClusterPower(energy_j=meter.energy_j, avg_w=meter.avg_w, peak_w=meter.peak_w, idle_w=meter.idle_w,
                        energy_above_idle_j=meter.energy_above_idle_j, sources={CLUSTER_METER: meter.source},
                        estimate=meter.estimate)


def _power_column(rows: list[dict], intervals: list[power.Interval]) -> None:
    for r in rows:
        got = power.energy(intervals, r["t"] - r["dt"], r["t"])
        r["power_w"] = got["avg_w"]


def _cluster_power(per_node: dict[str, PowerFigures], intervals: dict[str, list], start: float, end: float,
                   step: float) -> ClusterPower:
    sources = {n: p.source for n, p in per_node.items()}
    if not per_node or any(p.energy_j is None for p in per_node.values()):
        return ClusterPower(sources=sources)
    bins = max(1, math.ceil((end - start) / step))
    peak = 0.0
    for i in range(bins):
        a, b = start + i * step, min(end, start + (i + 1) * step)
        peak = max(peak, sum(power.energy(iv, a, b)["avg_w"] or 0 for iv in intervals.values()))
    energy = sum(p.energy_j for p in per_node.values())
    idle = [p.idle_w for p in per_node.values()]
    above = [p.energy_above_idle_j for p in per_node.values()]
    return ClusterPower(energy_j=round(energy, 3), avg_w=round(energy / max(end - start, 1e-9), 4),
                        peak_w=round(peak, 4), idle_w=round(sum(idle), 4) if None not in idle else None,
                        energy_above_idle_j=round(sum(above), 3) if None not in above else None,
                        sources=sources, estimate=any(p.estimate for p in per_node.values()))


def _phase_energy(phase: dict, intervals: dict[str, list]) -> list[str]:
    """The whole cluster's energy and mean power over one phase (HPL's within the hpcc suite), set
    on the phase; a note where it cannot be had."""
    seconds = phase["end"] - phase["start"]
    if seconds < 1:
        return [f"{phase['name']} lasted less than a second of the clock that timed it: no power of its own"]
    got = [power.energy(iv, phase["start"], phase["end"]) for iv in intervals.values()]
    if not got or any(g["energy_j"] is None for g in got):
        return [f"{phase['name']}: not every node's power covers it"]
    energy = sum(g["energy_j"] for g in got)
    phase.update(energy_j=round(energy, 3), avg_w=round(energy / seconds, 4))
    return []


def summarise(raw: RawRecording, *, start: float, end: float, spec: ClusterSpec, engine: str | None,
              counters: dict, input_bytes: int | None, engine_phases: list[dict],
              idle_watts: dict[str, float] | None = None, notes: list[str] | None = None,
              engine_by_host: dict[str, int] | None = None,
              trimmed: dict[str, int] | None = None,
              tasks_by_host: dict[str, int] | None = None) -> tuple[Measurements, dict]:
    """The run's measurements over its window [start, end], and the series document to store."""
    notes = list(notes or [])
    idle_watts = idle_watts or {}
    nodes, per_power, intervals, flags, stored, rows_of, per_memory = {}, {}, {}, [], {}, {}, {}
    for name, recorded in raw.nodes.items():
        target = recorded["target"]
        rows, gaps = series.build(recorded["samples"], target, raw.interval_s)
        rows_of[name] = rows
        if raw.emulated:
            _without_host_sensors(rows)
        nodes[name] = node_figures(recorded, rows, gaps, start, end)
        node_spec = spec.node(name) if name != "host" else spec.master
        if target.get("scope") == "host" and spec.backend == "processes":
            notes.append("processes backend: one sampler for the host all nodes share; no per-node power")
            result = power.PowerResult("none", True, [], [])
        else:
            offset = (raw.clock_offsets.get(name) or {}).get("offset_s", 0.0)
            result = power.for_node(raw.power.get(name) or {}, recorded["header"], recorded["samples"], rows,
                                    node_spec.board, raw.interval_s, offset)
        if raw.emulated and result.source not in ("model", "none"):
            result.notes.append(f"{name} is emulated: {result.source} measures a device outside it")
        _power_column(rows, result.intervals)
        if result.source != "none":
            got = power.energy(result.intervals, start, end)
            idle = idle_watts.get(name)
            above = None
            if idle is not None and got["energy_j"] is not None:
                above = round(got["energy_j"] - idle * (end - start) * got["coverage"], 3)
            if 0 < got["coverage"] < 0.9:
                result.notes.append(f"power readings cover {100 * got['coverage']:.0f} % of the run")
            per_power[name] = PowerFigures(source=result.source, estimate=result.estimate, idle_w=idle,
                                           energy_above_idle_j=above, notes=result.notes, **got)
            intervals[name] = result.intervals
        elif result.notes:
            notes += [f"{name}: {n}" for n in result.notes]
        hosted = raw.emulated or target.get("scope") == "host"  # clock and sensors are not a board's
        flags += health.node_flags(name, rows, gaps, recorded["samples"], node_spec.board, hosted, start, end)
        per_memory[name], first_kill = memory.node_memory(raw.memory.get(name), recorded, nodes[name])
        if per_memory[name].oom_kills:
            flags.append(health.oom_killed(name, per_memory[name].oom_kills, first_kill or end,
                                           per_memory[name].limit_bytes, host=target.get("scope") == "host"))
        stored[name] = {"scope": target.get("scope"), "columns": {c: [r.get(c) for r in rows] for c in SERIES_COLUMNS},
                        "gaps": gaps, "restarts": recorded["restarts"],
                        "power_source": per_power[name].source if name in per_power else None,
                        "sampler": {k: v for k, v in (recorded["header"] or {}).items() if k != "target"},
                        "device": target.get("device"), "interface": (target.get("interface") or {}).get("name"),
                        "cpu_capacity_cores": target.get("cpu_capacity"), "cores": target.get("cores")}
    metered = _cluster_meter(raw, spec, start, end, idle_watts.get(CLUSTER_METER))
    if metered is not None:
        per_power[CLUSTER_METER] = metered
        notes.append("one meter measured the whole cluster: the cluster's power is that meter's, counted once; "
                     "the nodes' own figures are beside it, not added to it")
    workers = [n.name for n in spec.worker_nodes]
    inter = None
    if engine in ("hadoop", "spark"):  # node tools and MPI programs have no input beside their own files
        inter = intermediate.measure(raw.nodes, raw.datanodes, workers, start, end, engine, counters, input_bytes)
        intermediate.attach_engine_by_node(inter, engine_by_host or {}, spec)
        intermediate.attach_trimmed(inter, trimmed or {}, input_bytes)
    ran = {}
    if tasks_by_host:
        ran = health.tasks_by_worker(tasks_by_host, spec)
        flags += health.idle_workers(ran, start)
    if raw.emulated:
        notes.append("emulated: the nodes' clock and temperature are this host's, so they are left out per node")
    flags += diagnostics.too_busy_flags(raw.diagnostics, start)
    phases = sorted(engine_phases, key=lambda p: p["start"])
    for phase in phases:
        if phase.get("energy"):
            notes += _phase_energy(phase, intervals)
        if phase.get("cpu_of") in rows_of:
            inside = [r for r in rows_of[phase["cpu_of"]] if r["t"] - r["dt"] < phase["end"] and r["t"] > phase["start"]]
            busy = _mean([_busy(r) for r in inside])
            phase["cpu_busy_pct"] = None if busy is None else round(busy, 2)
    for offset_node, offset in raw.clock_offsets.items():
        if abs(offset["offset_s"]) > 1.0:
            notes.append(f"{offset_node}'s clock is {offset['offset_s']:+.2f} s from this host's")
    measurements = Measurements(
        hz=round(1 / raw.interval_s, 4), window={"start": round(start, 3), "end": round(end, 3)},
        clock_offsets=raw.clock_offsets, phases=phases, nodes=nodes,
        intermediate=Intermediate(**inter) if inter else None, power=per_power,
        cluster_power=(_metered(metered) if metered is not None else
                       _cluster_power(per_power, intervals, start, end, raw.interval_s) if per_power else None),
        flags=[Flag(**f) for f in flags], notes=notes, tasks_by_worker=ran, memory=per_memory,
        diagnostics=raw.diagnostics)
    document = {"run_id": raw.run_id, "interval_s": raw.interval_s, "emulated": raw.emulated,
                "window": measurements.window, "columns": list(SERIES_COLUMNS), "nodes": stored,
                "marks": raw.marks, "phases": phases, "clock_offsets": raw.clock_offsets,
                "datanodes": raw.datanodes}
    return measurements, document
