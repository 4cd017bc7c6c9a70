"""The summary table of stored runs, built from the documents on disk and nothing else."""

from rich.table import Table

from ..units import format_size
from .measurements import Measurements, NodeMemory
from .schema import SPARK_STAGE_GROUP, RunRecord


def _validity(run: RunRecord) -> str:
    if run.exit_status != 0:
        return f"[red]failed (exit {run.exit_status})[/red]"
    if run.validity.valid is None:
        return "not checked"
    return "[green]valid[/green]" if run.validity.valid else "[red]INVALID[/red]"


def _energy(run: RunRecord) -> str:
    power = run.measurements.cluster_power if run.measurements else None
    if not power or power.energy_j is None:
        return "-"
    return f"{power.energy_j:,.0f}" + (" est." if power.estimate else "")


def _intermediate(run: RunRecord) -> str:
    inter = run.measurements.intermediate if run.measurements else None
    if not inter or (inter.device_ratio is None and inter.engine_ratio is None):
        return "-"
    part = lambda r: "-" if r is None else f"{r:.2f}x"  # noqa: E731
    return f"{part(inter.device_ratio)} / {part(inter.engine_ratio)}"


def _health(run: RunRecord) -> str:
    lost = run.liveness.lost if run.liveness else []
    if not run.measurements and not lost:
        return "not sampled"
    kinds = sorted({f"{f.kind} ({f.node})" for f in (run.measurements.flags if run.measurements else [])})
    kinds += [f"lost {m.split(':')[0]}" for m in lost]
    if not kinds:
        return "[green]ok[/green]"
    return "[yellow]flagged: " + ", ".join(kinds) + "[/yellow]"


def _buffer_bytes(size: str) -> float:
    """'64m' as bytes, to find the largest buffer of a latency curve."""
    return float(size[:-1]) * {"k": 2**10, "m": 2**20, "g": 2**30}.get(size[-1:], 1)


def headline_result(run: RunRecord) -> str:
    """The one figure a run is about, short enough for a table cell."""
    r = run.result
    if "estimate" in r:
        return f"pi ~ {r['estimate']:.6f}"
    if isinstance(r.get("rows"), dict):  # TPC-H: each query's result rows
        return f"{len(r['rows'])} queries, {sum(r['rows'].values()):,} rows"
    if "rows" in r:
        return f"{r['rows']:,} rows"
    if "rmax_gflops" in r:
        return f"{r['rmax_gflops']:.3g} Gflops" + (f" ({r['efficiency']:.0%} of Rpeak)" if r.get("efficiency") else "")
    if "events_per_s" in r:
        return "events/s " + " ".join(f"{t}:{v:,.0f}" for t, v in r["events_per_s"].items())
    if "total_mips" in r:
        return "7-Zip MIPS " + " ".join(f"{t}:{v:,.0f}" for t, v in r["total_mips"].items())
    if "copy_mb_s" in r:
        latency = r.get("latency_ns") or {}
        largest = max(latency, key=_buffer_bytes) if latency else None
        at_largest = f", {latency[largest]:.0f} ns at {largest}" if largest else ""
        return "copy " + "/".join(f"{v:,.0f}" for v in r["copy_mb_s"].values()) + " MB/s" + at_largest
    if "mb_s" in r:
        return (f"seq {r['mb_s']['seq-read'].get('16m', 0):.0f}/{r['mb_s']['seq-write'].get('16m', 0):.0f} MB/s r/w, "
                f"4k {r['iops_4k']['rand-read']:.0f}/{r['iops_4k']['rand-write']:.0f} IOPS")
    if "to_master_mbit_s" in r:
        return f"{r['to_master_mbit_s']:.0f} / {r['from_master_mbit_s']:.0f} Mbit/s to / from master"
    if "peak_rate" in r:
        return f"{r['peak_rate']:.0f} req/s at {r.get('doc_size', '?')}"
    return ""


def table(runs: list[RunRecord], title: str = "Runs") -> Table:
    out = Table(title=title, title_justify="left")
    numeric = ("wall time (s)", "energy (J)")
    # Run ids are what users copy into 'results show': never cut them.
    out.add_column("run", no_wrap=True, min_width=max((len(r.run_id) for r in runs), default=3))
    for column in ("engine", "workload", "size", "cluster", "backend", "wall time (s)", "result", "validity",
                   "energy (J)", "intermediate device / engine", "health"):
        out.add_column(column, justify="right" if column in numeric else "left")
    for run in runs:
        size = run.parameters.get("size_bytes")
        backend = run.cluster.backend + (f" x{run.scale.factor:.3g}" if run.cluster.emulated else "")
        result = headline_result(run)
        cluster = f"{run.cluster.workers} x {run.cluster.board}/{run.cluster.storage}, {run.cluster.preset}"
        out.add_row(run.run_id, run.engine, run.workload, format_size(size) if size else "-", cluster, backend,
                    f"{run.wall_time_s:.1f}", result, _validity(run), _energy(run), _intermediate(run), _health(run))
    return out


def caption(runs: list[RunRecord]) -> str:
    emulated = {r.scale.factor for r in runs if r.cluster.emulated}
    if emulated:
        estimated = any(r.measurements and r.measurements.cluster_power and r.measurements.cluster_power.estimate
                        for r in runs)
        return ("Emulated cluster: every resource scaled by " + ", ".join(f"{f:.3g}" for f in sorted(emulated))
                + " of the board profile; these are not measurements of real boards."
                + (" Energy marked est. is the power model's estimate from CPU use." if estimated else ""))
    if any(r.cluster.backend == "processes" for r in runs):
        return "Processes backend: unshaped daemons on one host; these are not measurements of real boards."
    return ""


def _bytes(value) -> str:
    return "-" if value is None else format_size(int(value))


def _num(value, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


def stage_table(run: RunRecord) -> Table | None:
    """A Spark run's stages (counter groups "stage ID: NAME"), or None for other runs."""
    stages = {g.removeprefix(SPARK_STAGE_GROUP): m for g, m in run.counters.items() if g.startswith(SPARK_STAGE_GROUP)}
    if not stages:
        return None
    shown = Table(title=f"{run.run_id}: Spark stages", title_justify="left")
    for column in ("stage", "tasks", "duration (s)", "run time (s)", "CPU (s)", "GC (s)", "shuffle read", "shuffle write",
                   "spill"):
        shown.add_column(column)
    for name, m in stages.items():
        read = m.get("shuffle_remote_bytes_read", 0) + m.get("shuffle_local_bytes_read", 0)
        spill = m.get("memory_bytes_spilled", 0) + m.get("disk_bytes_spilled", 0)
        shown.add_row(name, f"{m.get('tasks', 0):.0f}", f"{m['duration_ms'] / 1000:.1f}" if "duration_ms" in m else "—",
                      f"{m.get('executor_run_time_ms', 0) / 1000:.1f}", f"{m.get('executor_cpu_time_ns', 0) / 1e9:.1f}",
                      f"{m.get('jvm_gc_time_ms', 0) / 1000:.1f}", format_size(int(read)),
                      format_size(int(m.get("shuffle_bytes_written", 0))), format_size(int(spill)))
    return shown


def _peak_of_limit(memory: NodeMemory) -> str:
    share = memory.peak_share
    return f"{_bytes(memory.peak_bytes)} / {_bytes(memory.limit_bytes)}" + (f" ({share:.0%})" if share is not None else "")


def memory_line(m: Measurements) -> str:
    """Each node's peak memory against its limit and its OOM kills, in one line; empty for runs
    stored before memory was recorded."""
    parts = []
    for name, memory in m.memory.items():
        sampled = ", sampled" if memory.peak_source == "sampled" else ""
        kills = (", OOM kills unknown" if memory.oom_kills is None else "" if not memory.oom_kills else
                 f", {memory.oom_kills} OOM kill{'s' if memory.oom_kills != 1 else ''}")
        parts.append(f"{name} {_peak_of_limit(memory)}{sampled}{kills}")
    return "; ".join(parts)


def _memory_table(run: RunRecord, m: Measurements) -> Table:
    shown = Table(title=f"{run.run_id}: memory against each node's limit", title_justify="left")
    for column in ("node", "limit", "peak", "of limit", "peak from", "OOM kills"):
        shown.add_column(column)
    for name, memory in m.memory.items():
        share = memory.peak_share
        kills = "unknown" if memory.oom_kills is None else str(memory.oom_kills)
        shown.add_row(name, _bytes(memory.limit_bytes), _bytes(memory.peak_bytes),
                      "-" if share is None else f"{share:.0%}", memory.peak_source or "-",
                      f"[red]{kills}[/red]" if memory.oom_kills else kills)
    return shown


def measurement_tables(run: RunRecord) -> list[Table]:
    """One run's measurements: per node, intermediate data, phases; read from its document alone."""
    m = run.measurements
    if m is None:
        return []
    nodes = Table(title=f"{run.run_id}: per node over the job ({m.hz:g} Hz)", title_justify="left")
    for column in ("node", "CPU busy mean/max %", "iowait %", "cores used max / quota", "load max", "memory max",
                   "disk read", "disk write", "net rx", "net tx", "clock min MHz", "temp max °C", "power source",
                   "energy (J)", "W avg/peak", "W idle", "sampler CPU %"):
        nodes.add_column(column)
    for name, n in m.nodes.items():
        p = m.power.get(name)
        nodes.add_row(
            name + (" (host)" if n.scope == "host" else ""),
            f"{_num(n.cpu_busy_pct_mean)} / {_num(n.cpu_busy_pct_max)}", _num(n.cpu_iowait_pct_mean),
            f"{_num(n.cpu_cores_used_max, '{:.2f}')} / {_num(n.cpu_capacity_cores, '{:.2f}')}", _num(n.load_max),
            _bytes(n.mem_used_max_bytes), _bytes(n.disk_read_bytes), _bytes(n.disk_write_bytes),
            _bytes(n.net_rx_bytes), _bytes(n.net_tx_bytes), _num(n.clock_mhz_min, "{:.0f}"), _num(n.temp_max_c),
            (p.source + (" (estimate)" if p.estimate else "")) if p else "-",
            _num(p.energy_j, "{:,.0f}") if p else "-",
            f"{_num(p.avg_w, '{:.2f}')} / {_num(p.peak_w, '{:.2f}')}" if p else "-",
            _num(p.idle_w, "{:.2f}") if p else "-", _num(n.sampler_cpu_pct, "{:.2f}"))
    tables = [nodes]
    if m.memory:
        tables.append(_memory_table(run, m))
    inter = m.intermediate
    if inter:
        t = Table(title="Intermediate data (beyond input and output)", title_justify="left")
        for column in ("node", "device writes", "HDFS block writes", "intermediate (device)", "engine's count"):
            t.add_column(column)
        for name, figures in inter.nodes.items():
            t.add_row(name, _bytes(figures.get("device_write_bytes")), _bytes(figures.get("hdfs_write_bytes")),
                      _bytes(figures.get("intermediate_bytes")), _bytes(figures.get("engine_bytes")))
        t.add_row("all", "", "", f"{_bytes(inter.device_bytes)} = {_num(inter.device_ratio, '{:.2f}')}x input",
                  f"{_bytes(inter.engine_bytes)} = {_num(inter.engine_ratio, '{:.2f}')}x input")
        if inter.engine:
            t.caption = "engine: " + ", ".join(f"{k} {v:,.0f}" for k, v in inter.engine.items())
        tables.append(t)
    if m.phases:
        t = Table(title="Phases (seconds from the job's start)", title_justify="left")
        for column in ("phase", "from", "to", "source"):
            t.add_column(column)
        for phase in m.phases:
            t.add_row(phase["name"], f"{phase['start'] - m.window['start']:.1f}",
                      f"{phase['end'] - m.window['start']:.1f}", phase["source"])
        tables.append(t)
    return tables


def measurement_notes(run: RunRecord) -> list[str]:
    m = run.measurements
    alive = run.liveness
    daemons = ([f"flag: lost {x}" for x in alive.lost] + [f"before the run: {x}" for x in alive.repaired]) if alive else []
    if m is None:
        return [*daemons, "not sampled (run with sampling on to get series, power and health flags)"]
    notes = [f"flag: {f.node} {f.kind} at +{f.at - m.window['start']:.1f} s: {f.detail}" for f in m.flags] + daemons
    notes += [f"{name}: {note}" for name, p in m.power.items() for note in p.notes]
    notes += [f"{name} memory: {note}" for name, memory in m.memory.items() for note in memory.notes]
    notes += list(m.notes) + (m.intermediate.notes if m.intermediate else [])
    notes += [f"diagnostics: {line}" for line in (m.diagnostics.lines() if m.diagnostics else [])]
    if m.cluster_power and m.cluster_power.energy_j is not None:
        c = m.cluster_power
        notes.append(f"cluster: {c.energy_j:,.0f} J, {c.avg_w:.2f} W average, {c.peak_w:.2f} W peak"
                     + (f", {c.energy_above_idle_j:,.0f} J above idle ({c.idle_w:.2f} W)" if c.energy_above_idle_j is not None else "")
                     + (" (estimate)" if c.estimate else ""))
    if m.series:
        notes.append(f"time series: {m.series}")
    return notes
