"""The seeds' figures, drawn for the user's data with matplotlib and embedded as PNG data URIs, so the
HTML report opens anywhere without a network or side files."""

import base64
import io
from dataclasses import dataclass

from ..analysis.derived import CellFigures, Comparison
from ..units import format_size


def pyplot():
    """matplotlib's pyplot, loaded when a figure is first drawn: the commands that reach the report's
    modules without drawing (`results show`, `results summary`) would otherwise pay its second of start-up."""
    import matplotlib
    matplotlib.use("Agg")  # no display on servers and in CI
    import matplotlib.pyplot
    return matplotlib.pyplot


@dataclass
class Plot:
    title: str
    alt: str
    data_uri: str


def render_figure(fig, title: str, alt: str) -> Plot:
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=110)
    pyplot().close(fig)
    return Plot(title, alt, "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode())


def _error_bars(points: list, unit: float = 1.0) -> list[list[float]]:
    """Error bars below and above each point from (value, low, high); none where low is None or the
    point is None (a base drawn at 1). Asymmetric, as the log-scale intervals are."""
    low, high = [], []
    for point in points:
        if point is None or point[1] is None:
            low.append(0.0)
            high.append(0.0)
        else:
            value, lo, hi = point
            low.append((value - lo) / unit)
            high.append((hi - value) / unit)
    return [low, high]


def _of_estimate(e) -> tuple | None:
    return None if e is None else (e.mean, e.ci_low, e.ci_high)


def _of_shape(s) -> tuple | None:
    return None if s is None else (s.ours.value, s.ours.ci_low, s.ours.ci_high)


def execution_times(figures: list[CellFigures]) -> list[Plot]:
    """Execution time with its 95 % CI by worker count, one panel per workload and size, a line per
    storage medium and engine (the seeds' Figs. of time against nodes)."""
    panels: dict[tuple, list[CellFigures]] = {}
    for f in figures:
        if f.wall_time:
            panels.setdefault((f.cell.key.workload, f.cell.key.size_bytes, f.cell.key.cluster), []).append(f)
    plots = []
    several = len({cluster for _, _, cluster in panels}) > 1
    for (workload, size, cluster), members in sorted(panels.items()):
        fig, ax = pyplot().subplots(figsize=(6, 3.6))
        lines: dict[tuple, list[CellFigures]] = {}
        for f in members:
            lines.setdefault((f.cell.key.engine, f.cell.key.storage, f.cell.key.preset), []).append(f)
        for (engine, storage, preset), points in sorted(lines.items()):
            points.sort(key=lambda f: f.cell.key.workers)
            xs = [f.cell.key.workers for f in points]
            ax.errorbar(xs, [f.wall_time.mean for f in points], yerr=_error_bars([_of_estimate(f.wall_time) for f in points]),
                        marker="o", capsize=4, label=f"{engine} · {storage} · {preset}")
        size_text = f" {format_size(size)}" if size else ""
        ax.set_title(f"{workload}{size_text}: execution time (mean, 95 % CI)", fontsize=10)
        ax.set_xlabel("workers")
        ax.set_ylabel("seconds")
        ax.set_xticks(sorted({f.cell.key.workers for f in members}))
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        where = f" ({cluster})" if several else ""  # otherwise two clusters' panels have the same title
        plots.append(render_figure(fig, f"Execution time — {workload}{size_text}{where}",
                             f"Execution time of {workload}{size_text} by worker count, {cluster}"))
    return plots


@dataclass
class SpeedupLine:
    """One line of the speedup plot: a workload, engine, size, medium and preset on one cluster."""

    label: str
    base: int               # the fewest workers measured: the speedups' baseline (derived.speedups)
    workers: list[int]      # base first
    speedup: list[float]    # S(n) = T(base)/T(n); 1 at the base
    half_widths: list[float]
    efficiency: list[float]  # E(n) = S(n) / (n/base)

    @property
    def ideal(self) -> list[float]:
        """Linear speedup from the baseline, S(n) = n / base: y = x only when the base is one worker."""
        return [n / self.base for n in self.workers]


def speedup_lines(comparisons: list[Comparison]) -> list[SpeedupLine]:
    """The speedup comparisons as plot lines, each starting at its baseline worker count."""
    groups: dict[tuple, list[Comparison]] = {}
    for c in comparisons:
        if c.kind == "speedup":
            k = c.baseline
            groups.setdefault((k.workload, k.engine, k.size_bytes, k.storage, k.preset, k.cluster, k.workers), []).append(c)
    several = len({key[5] for key in groups}) > 1
    lines = []
    for (workload, engine, size, storage, preset, cluster, base), points in sorted(groups.items()):
        points.sort(key=lambda c: c.cell.workers)
        label = f"{workload}/{engine} {format_size(size) if size else ''} {storage}".replace("  ", " ").strip()
        lines.append(SpeedupLine(
            label=label + (f" [{cluster}]" if several else ""), base=base,
            workers=[base] + [c.cell.workers for c in points],
            speedup=[1.0] + [c.value.value for c in points],
            half_widths=[0.0] + [c.value.half_width or 0.0 for c in points],
            efficiency=[1.0] + [c.efficiency.value if c.efficiency else c.value.value / (c.cell.workers / base)
                                for c in points]))
    return lines


def speedup_curves(comparisons: list[Comparison]) -> list[Plot]:
    """S(n) with the ideal line and E(n), per workload, engine, size and medium. As derived.speedups
    defines them, both are relative to the fewest workers measured (b): S(n) = T(b)/T(n), whose
    ideal is n/b, and E(n) = S(n)/(n/b), whose ideal is 1."""
    lines = speedup_lines(comparisons)
    if not lines:
        return []
    fig, (left, right) = pyplot().subplots(1, 2, figsize=(9, 3.6))
    top = max(max(line.workers) for line in lines)
    for line in lines:
        left.errorbar(line.workers, line.speedup, yerr=line.half_widths, marker="o", capsize=3, label=line.label)
        right.plot(line.workers, line.efficiency, marker="o", label=line.label)
    bases = sorted({line.base for line in lines})
    for base in bases:
        name = "ideal" if bases == [1] else f"ideal from {base} workers (n/{base})"
        left.plot([base, top], [1.0, top / base], "k--", linewidth=1, label=name)
    if bases == [1]:
        left.set_title("speedup S(n) = T(1)/T(n)", fontsize=10)
        right.set_title("parallel efficiency E(n) = S(n)/n", fontsize=10)
    else:
        left.set_title("speedup S(n) = T(b)/T(n), b = fewest workers measured", fontsize=9)
        right.set_title("parallel efficiency E(n) = S(n)/(n/b)", fontsize=10)
    right.axhline(1.0, color="k", linestyle="--", linewidth=1)
    for ax in (left, right):
        ax.set_xlabel("workers")
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    left.legend(fontsize=7)
    return [render_figure(fig, "Speedup and efficiency", "Speedup and parallel efficiency by worker count with the ideal line")]


def intermediate_by_size(figures: list[CellFigures]) -> list[Plot]:
    """Intermediate data as a multiple of the input, by input size, for both engines (Tables 11-15)."""
    points = [f for f in figures if f.intermediate_device_ratio or f.intermediate_engine_ratio]
    if not points:
        return []
    fig, ax = pyplot().subplots(figsize=(6, 3.6))
    series: dict[tuple, list[CellFigures]] = {}
    for f in points:
        series.setdefault((f.cell.key.workload, f.cell.key.engine), []).append(f)
    for (workload, engine), members in sorted(series.items()):
        members.sort(key=lambda f: f.cell.key.size_bytes)
        xs = [f.cell.key.size_bytes / 1e6 for f in members]
        for attr, style, what in (("intermediate_engine_ratio", "-o", "engine"), ("intermediate_device_ratio", ":s", "device")):
            ys = [getattr(f, attr).mean if getattr(f, attr) else None for f in members]
            if any(y is not None for y in ys):
                ax.plot([x for x, y in zip(xs, ys) if y is not None], [y for y in ys if y is not None], style,
                        label=f"{workload}/{engine} ({what} counters)")
    ax.set_xscale("log")
    ax.set_xlabel("input (MB)")
    ax.set_ylabel("× input")
    ax.set_title("intermediate data written, as a multiple of the input", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return [render_figure(fig, "Intermediate data", "Intermediate data as a multiple of the input by input size, both engines")]


def energy_by_workload(figures: list[CellFigures]) -> list[Plot]:
    """Energy per run and performance per watt by cell (Lee & Park 2026, Table 21 and its discussion).
    Performance per watt is drawn only for cells that move bytes (Pi has no throughput); intervals are
    the cells' own, on the log scale, so they stay above zero."""
    rows = [f for f in figures if f.energy]
    if not rows:
        return []
    moving = [f for f in rows if f.perf_per_watt]
    fig, axes = pyplot().subplots(1, 2 if moving else 1, figsize=(10, 0.5 + 0.35 * len(rows) + 1.5))
    left = axes[0] if moving else axes
    several = len({f.cell.key.cluster for f in rows}) > 1
    left.barh([f.cell.key.label(several) for f in rows], [f.energy.mean / 1000 for f in rows],
              xerr=_error_bars([_of_estimate(f.energy) for f in rows], 1000), capsize=3)
    left.set_xlabel("energy per run (kJ, cluster)")
    shown = [left]
    if moving:
        right = axes[1]
        if len(moving) == len(rows):  # the same cells: the left panel's labels name them
            right.barh([f.cell.key.label(several) for f in moving], [f.perf_per_watt.mean / 1e6 for f in moving])
            right.set_yticklabels([])
        else:
            right.barh([f.cell.key.label() for f in moving], [f.perf_per_watt.mean / 1e6 for f in moving])
        right.set_xlabel("performance per watt (MB/s per W)")
        shown.append(right)
    for ax in shown:
        ax.grid(alpha=0.3, axis="x")
        ax.tick_params(axis="y", labelsize=7)
    emulated = any(f.cell.emulated for f in rows)
    estimated = any(f.power_estimated for f in rows)
    fig.suptitle("energy" + (" and performance per watt" if moving else "")
                 + (" (the boards' power model applied to emulated time)" if emulated
                    else " (power estimated from CPU load)" if estimated else ""), fontsize=10)
    return [render_figure(fig, "Energy and performance per watt" if moving else "Energy",
                          "Energy per run" + (" and performance per watt" if moving else "") + " by cell")]


def run_series(series: dict, title: str) -> list[Plot]:
    """One run's per-node time series with its phases marked: CPU user/iowait, network rx/tx, disk
    write; then CPU clock and temperature when the nodes report them (the seeds' Figs. 2-9, 15)."""
    nodes = {n: v for n, v in series.get("nodes", {}).items() if v.get("scope") == "node"} or series.get("nodes", {})
    if not nodes:
        return []
    start = series["window"]["start"]
    fig, axes = pyplot().subplots(3, 1, figsize=(8, 7), sharex=True)
    for name, node in sorted(nodes.items()):
        cols = node["columns"]
        t = [x - start for x in cols["t"]]
        axes[0].plot(t, cols["cpu_user_pct"], label=f"{name} user")
        axes[0].plot(t, cols["cpu_iowait_pct"], linestyle=":", label=f"{name} iowait")
        axes[1].plot(t, [v / 1e6 if v is not None else None for v in cols["net_rx_bps"]], label=f"{name} rx")
        axes[1].plot(t, [v / 1e6 if v is not None else None for v in cols["net_tx_bps"]], linestyle=":", label=f"{name} tx")
        axes[2].plot(t, [v / 1e6 if v is not None else None for v in cols["disk_write_bps"]], label=f"{name} write")
    axes[0].set_ylabel("CPU %")
    axes[1].set_ylabel("network MB/s")
    axes[2].set_ylabel("disk write MB/s")
    axes[2].set_xlabel("seconds since the run started")
    _mark_phases(axes, series, start)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, ncol=3)
    fig.suptitle(title, fontsize=10)
    plots = [render_figure(fig, f"Time series — {title}", f"CPU, network and disk of each node over {title}")]
    has_clock = any(any(v is not None for v in n["columns"].get("clock_mhz_mean", [])) for n in nodes.values())
    has_temp = any(any(v is not None for v in n["columns"].get("temp_max_c", [])) for n in nodes.values())
    if has_clock or has_temp:
        fig, ax = pyplot().subplots(figsize=(8, 3))
        other = ax.twinx() if has_clock and has_temp else ax
        for name, node in sorted(nodes.items()):
            cols = node["columns"]
            t = [x - start for x in cols["t"]]
            if has_clock:
                ax.plot(t, cols["clock_mhz_mean"], label=f"{name} clock")
            if has_temp:
                other.plot(t, cols["temp_max_c"], linestyle=":", label=f"{name} °C")
        ax.set_ylabel("MHz" if has_clock else "°C")
        if other is not ax:
            other.set_ylabel("°C")
        ax.set_xlabel("seconds since the run started")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="lower left")
        _mark_phases([ax], series, start)
        plots.append(render_figure(fig, f"CPU clock and temperature — {title}", f"CPU clock and temperature of each node over {title}"))
    return plots


def _mark_phases(axes, series: dict, start: float) -> None:
    for phase in series.get("phases", []):
        if phase.get("source") == "sbclab":
            continue
        begin, end = phase["start"] - start, phase["end"] - start
        for ax in axes:
            if end - begin > 0.5:
                ax.axvspan(begin, end, alpha=0.07, color="tab:gray")
            else:
                ax.axvline(begin, color="tab:gray", linewidth=0.8, linestyle="--")
        axes[0].annotate(phase["name"].split(" ", 1)[-1], (begin, 1.0), xycoords=("data", "axes fraction"),
                         fontsize=6, rotation=90, va="top")


def reproduction_speedups(found) -> Plot | None:
    """A reproduced table's speedup by worker count: the seed's published points and ours (fitted at
    the seed's work where we ran less of it), with our 95 % intervals and the ideal line."""
    return _reproduction_curves(found, "speedup")


def reproduction_efficiencies(found) -> Plot | None:
    """A reproduced table's parallel efficiency, speedup / workers, by worker count, drawn as the speedup
    (Baun's Figure 6) is."""
    return _reproduction_curves(found, "efficiency")


def _reproduction_curves(found, kind: str) -> Plot | None:
    rows: dict[tuple, list] = {}
    for shape in found.shapes:
        if shape.kind == kind and shape.workers:
            rows.setdefault(shape.row, []).append(shape)
    if not any(s.ours and not s.predicted for shapes in rows.values() for s in shapes):
        return None
    fig, ax = pyplot().subplots(figsize=(6, 3.6))
    top = 1
    for row, shapes in sorted(rows.items(), key=lambda item: str(item[0])):
        shapes.sort(key=lambda s: s.workers)
        base = shapes[0].base
        name = " ".join(str(v) for v in row if v is not None)
        measured = [s for s in shapes if s.ours and not s.predicted]
        predicted = [s for s in shapes if s.ours and s.predicted]
        if not measured:
            continue  # a row we did not run: its published line alone says nothing here
        xs = [base] + [s.workers for s in shapes]
        top = max(top, *xs)
        ax.plot(xs, [1.0] + [s.published for s in shapes], "s--", label=f"{name}: published")
        fitted = any("fitted" in s.label for s in measured)
        line = ax.errorbar([base] + [s.workers for s in measured], [1.0] + [s.ours.value for s in measured],
                           yerr=_error_bars([None] + [_of_shape(x) for x in measured]), marker="o", capsize=4,
                           label=f"{name}: ours" + (" (fitted at the seed's work)" if fitted else ""))
        if predicted:
            last = measured[-1]
            ax.errorbar([last.workers] + [s.workers for s in predicted],
                        [last.ours.value] + [s.ours.value for s in predicted],
                        yerr=_error_bars([None] + [_of_shape(x) for x in predicted]), marker="o", markerfacecolor="white",
                        linestyle=":", capsize=4, color=line.lines[0].get_color(), label=f"{name}: the model's prediction")
    if kind == "speedup":
        ax.plot([1, top], [1, top], "k:", linewidth=1, label="ideal")
    else:
        ax.axhline(1.0, color="k", linestyle=":", linewidth=1, label="ideal")
    ax.set_xlabel("workers")
    ax.set_ylabel(kind)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"{found.table}: {kind}, published and ours (95 % interval)", fontsize=10)
    return render_figure(fig, f"{found.seed} {found.table} {kind}",
                         f"{kind.capitalize()} by worker count of {found.table}: the seed's published points and ours")
