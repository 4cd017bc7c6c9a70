"""The self-contained HTML report: one file, plots embedded, readable on a laptop and a phone."""

from pathlib import Path

import jinja2

from .. import atomic
from ..analysis import breakdown, explanations, judgement, reference
from ..analysis.cells import cluster_identity
from ..errors import SbclabError
from ..units import format_size
from . import nodes, plots, tables
from .build import Report

SERIES_PLOTS_MAX = 6  # one run per workload and engine, the newest, so the file stays small


def _num(value, digits: int = 2) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def _clusters(report: Report) -> list[dict]:
    seen = {}
    for run in report.runs:
        identity = cluster_identity(run)
        if identity in seen:
            continue
        seen[identity] = {
            "identity": identity, "nodes": run.cluster.nodes, "versions": run.versions, "scale": run.scale,
            "emulated": run.cluster.emulated,
            "shape": f"master + {run.cluster.workers} × {run.cluster.board} / {run.cluster.storage}, preset {run.cluster.preset}"
                     f"{f' ({run.cluster.preset_source})' if run.cluster.preset_source else ''}, "
                     f"{run.cluster.backend} backend",
            "host": f"{run.host.get('hostname', '?')}, {run.host.get('cpu_model', '?')}, {run.host.get('cpus', '?')} CPUs",
        }
    return list(seen.values())


def _series_plots(report: Report) -> list[plots.Plot]:
    newest = {}
    for run in report.runs:
        if run.measurements and run.measurements.series:
            newest[(run.workload, run.engine)] = run
    out = []
    for (workload, engine), run in sorted(newest.items())[:SERIES_PLOTS_MAX]:
        series = report.series(run)
        if series:
            out += plots.run_series(series, f"{workload}/{engine} run {run.run_id}")
    return out


def render(report: Report) -> str:
    env = jinja2.Environment(loader=jinja2.PackageLoader("sbclab.report", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined)
    cell_rows = tables.cell_rows(report)
    figures_plots = (plots.execution_times(report.figures) + plots.speedup_curves(report.comparisons)
                     + plots.intermediate_by_size(report.figures) + plots.energy_by_workload(report.figures))
    return env.get_template("report.html.j2").render(
        report=report, clusters=_clusters(report), cell_rows=cell_rows,
        comparison_rows=tables.comparison_rows(report), run_rows=tables.run_rows(report),
        diagnostic_rows=tables.diagnostic_rows(report),
        baseline_rows=tables.baseline_rows(report), stage_rows=tables.stage_rows(report),
        fault_rows=tables.fault_rows(report), tuning_rows=tables.tuning_rows(report),
        reference_rows=tables.reference_rows(report), plots=figures_plots, series_plots=_series_plots(report),
        excluded=report.excluded,
        node_tables=[(title, rows) for title, rows in ((t, make(report)) for t, make in nodes.TABLES.values()) if rows],
        node_plots=nodes.plots(report), any_estimate=any(f.power_estimated for f in report.figures),
        cost_column=f"energy_cost_per_year_{report.costs.currency.lower()}",
        commands=sorted({" ".join(r.command) for r in report.runs}),
        seeds=sorted({raw["citation"] for raw in reference.seeds().values()}),
        verdict_tests=judgement.tests_text(), num=_num, size=format_size, slower=explanations.SLOWER,
        reproduction_plots=[[p for p in (plots.reproduction_speedups(r), plots.reproduction_efficiencies(r)) if p]
                            for r in report.reproductions],
        breakdown_parts=breakdown.PARTS)


def write(report: Report, out: Path) -> dict[str, Path]:
    """report.html plus the tables (CSV, JSON, Markdown) into `out`."""
    out = Path(out)
    try:
        written = tables.write_all(report, out)
        written["html"] = out / "report.html"
        atomic.write_text(written["html"], render(report))
    except OSError as err:
        raise SbclabError(f"Cannot write the report into {out}: {err.strerror or err}.",
                          "Give --out a folder you can write to.") from err
    return written
