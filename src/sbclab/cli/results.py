"""Reading stored runs: `sbclab results summary|show|export|import`, `report` and `compare`."""

import tempfile
from pathlib import Path

import click
from rich.table import Table

from ..analysis import reference
from ..analysis.derived import Costs
from ..errors import SbclabError
from ..report import build, html
from ..results import bundle, summary
from ..results.store import ResultsStore, read_runs
from .options import CostOptions, cost_options
from .output import console, runs_summary, say, table, warn_set_aside

RESULTS_DIR = click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))


@click.group("results")
def results_group():
    """Read stored runs."""


@results_group.command("summary")
@RESULTS_DIR
def results_summary(results_dir):
    """The summary table of every run stored in RESULTS_DIR."""
    runs_summary(ResultsStore(results_dir))


@results_group.command("show")
@RESULTS_DIR
@click.argument("run_id")
def results_show(results_dir, run_id):
    """One run's measurements: per-node figures, memory against its limit, intermediate data, phases, power, health flags."""
    found = ResultsStore(results_dir).runs_matching({run_id})
    if not found:
        raise SbclabError(f"No run {run_id} in {results_dir}.", f"See 'sbclab results summary {results_dir}' for run ids.")
    run = found[0]
    console.print(summary.table([run], title=f"{run.workload} on {run.engine}"))
    for shown in [*summary.measurement_tables(run), summary.stage_table(run)]:
        if shown is not None:
            console.print(shown)
    for note in summary.measurement_notes(run):
        console.print(note)
    caption = summary.caption([run])
    if caption:
        console.print(f"[yellow]{caption}[/yellow]")


@results_group.command("export")
@RESULTS_DIR
@click.option("--bundle", "bundle_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The archive to write (.tar.gz): runs, logs, series and the report, with their checksums.")
@click.option("--no-report", is_flag=True, help="Leave the report out (it is rebuilt by 'sbclab report' after import).")
def results_export(results_dir, bundle_file, no_report):
    """One archive of RESULTS_DIR to share; 'sbclab results import' adds it to another results directory.
    A damaged run document is left out, with its logs and series, and named."""
    _, set_aside = read_runs(results_dir)  # refuses a directory that is none, in its own words
    warn_set_aside(results_dir, set_aside)
    with tempfile.TemporaryDirectory(prefix="sbclab-report.") as report_dir:
        report = None
        if not no_report:
            html.write(build.build(results_dir), Path(report_dir))
            report = Path(report_dir)
        runs = bundle.export(results_dir, bundle_file, report, set_aside)
    say(f"{runs} runs of {results_dir}{'' if no_report else ' and their report'} in {bundle_file}")


@results_group.command("import")
@click.argument("bundle_file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--results", "results_dir", default="results", show_default=True,
              type=click.Path(file_okay=False, path_type=Path), help="The results directory to add the runs to.")
def results_import(bundle_file, results_dir):
    """Add the runs, logs and series of a bundle to a results directory (checksums checked first)."""
    done = bundle.import_bundle(bundle_file, results_dir)
    made = done.manifest.get("created_at", "?")
    say(f"{len(done.added)} runs added to {results_dir} from {bundle_file} (made {made} by sbclab "
        f"{done.manifest.get('sbclab', '?')})" + (f"; {len(done.skipped)} already there" if done.skipped else ""))
    say(f"Report them with 'sbclab report {results_dir}'.")


@click.command("report")
@RESULTS_DIR
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Where to write report.html, report.json, summary.md and tables/*.csv (default RESULTS_DIR/report).")
@click.option("--baseline", type=click.Path(file_okay=False, path_type=Path),
              help="Another results directory: a section sets each common cell against it (as 'sbclab diff').")
@cost_options
def report_command(results_dir, out, baseline, costs: CostOptions):
    """The report of every run in RESULTS_DIR: statistics, verdicts, plots, the seeds side by side."""
    report = build.build(results_dir, Costs(**costs.given()), baseline)
    written = html.write(report, out or Path(results_dir) / "report")
    for warning in report.warnings[:5]:
        say(f"[yellow]{warning}[/yellow]")
    if len(report.warnings) > 5:
        say(f"... and {len(report.warnings) - 5} more warnings in the report")
    for kind, path in written.items():
        console.print(f"{kind:12} {path}")


def _fmt(value, fmt="{:.1f}"):
    return "—" if value is None else fmt.format(value)


@click.command("compare")
@RESULTS_DIR
def compare_command(results_dir):
    """Each cell of RESULTS_DIR beside the seeds' published cell with the same workload, engine, size,
    workers, board and medium; cells without one get the nearest published cells, said to be nearest."""
    report = build.build(results_dir, verdicts=False)
    warn_set_aside(results_dir, report.set_aside)
    shown = Table(title="Your cells next to the published results (ratio = yours / published; above 1: slower)",
                  title_justify="left")
    for column in ("cell", "yours (s)", "published", "source", "ratio", "match"):
        shown.add_column(column)
    for f in report.figures:
        k = f.cell.key
        ours = f.wall_time.mean if f.wall_time else None
        factor = f.cell.scale_factor
        label = k.label() + (f" [emulated, scale {factor:.3g}]" if factor else " [emulated]" if f.cell.emulated else "")
        versions = f.cell.runs[0].versions if f.cell.runs else None
        found, exact = reference.for_cell(k.workload, k.engine, k.size_bytes or None, k.workers, k.board, k.storage,
                                          k.defining_parameters, versions)
        if not found:
            shown.add_row(label, _fmt(ours), "—", "no published result for this workload and engine", "", "")
        for p, sources in reference.once(found):
            where = ", ".join(f"{d} {p.dimensions[d]}" for d in ("size", "workers", "board", "storage")
                              if d in p.dimensions)
            match = ("same cell" + (f" (inferred: {p.inferred})" if p.inferred else "") if exact
                     else f"nearest: {_differs(k, p, versions)}")
            shown.add_row(label, _fmt(ours), f"{p.printed} {p.unit}", f"{', '.join(sources)} ({where})",
                          _fmt(ours / p.seconds if ours and p.seconds else None, "{:.2f}"), match)
    console.print(shown)
    nodes = _node_rows(report.runs)
    if nodes:
        console.print(table("Node benchmarks and HPL next to the published cells (ours: mean over runs)",
                            ["cell", "ours", "published", "source", "match"], nodes, fold=True))
    if report.emulated:
        console.print("[yellow]Your results are emulated: their seconds are a cluster's scaled down by the factor shown, "
                      "so a ratio says how the emulation at that scale compares with real boards, not whether a "
                      "board would match; the seeds' shapes are judged by 'sbclab reproduce'. Emulated energy and "
                      "performance per watt are the boards' power model applied to emulated time and are not set "
                      "beside metered figures.[/yellow]")


def _node_rows(runs) -> list[list[str]]:
    """sysbench events/s by threads and HPL's Rmax by node count and memory share, each beside the
    seeds' cells of the same board; an emulated figure is shown with its scale factor (its rates are the
    board's times the factor) and a cell whose published value is a profile input is marked circular."""
    groups: dict[tuple, list] = {}
    for run in runs:
        if run.valid and run.workload in reference.NODE_METRICS:
            groups.setdefault((run.workload, run.cluster.board, run.scale.factor if run.cluster.emulated else None,
                               run.parameters.get("nodes"), run.parameters.get("memory_fraction")), []).append(run)
    rows = []
    for (workload, board, factor, nodes, fraction), members in sorted(groups.items(), key=str):
        scale = f" @{factor:.3g}" if factor else ""
        if workload == "sysbench-cpu":
            by_threads: dict[str, list[float]] = {}
            for run in members:
                for threads, rate in (run.result.get("events_per_s") or {}).items():
                    by_threads.setdefault(str(threads), []).append(rate)
            for threads, rates in sorted(by_threads.items(), key=lambda kv: int(kv[0])):
                cells = reference.node_matches(workload, board, {"threads": int(threads)})
                rows += _node_row(f"sysbench-cpu {board} {threads} threads", sum(rates) / len(rates), scale, cells,
                                  workload)
        else:
            rmax = [r.result["rmax_gflops"] for r in members if r.result.get("rmax_gflops")]
            if rmax:
                share = round(100 * fraction) if fraction else None
                cells = reference.node_matches(workload, board, {"workers": nodes, "memory_utilised_pct": share})
                rows += _node_row(f"hpl {board} {nodes} node(s), {share} % of memory", sum(rmax) / len(rmax), scale,
                                  cells, workload)
    return rows


def _figure(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _node_row(label: str, ours: float, scale: str, cells: list, workload: str) -> list[list[str]]:
    if not cells:
        return [[label, f"{_figure(ours)}{scale}", "—", ", ".join(sorted({p.seed for p in reference.node_nearest(workload)}))
                 or "no seed measured it", "nearest: another board (no seed measured this one)"]]
    out = []
    for p, sources in reference.once(cells):
        circular = " (circular: a profile input)" if p.metric in reference.CIRCULAR_METRICS else ""
        out.append([label, f"{_figure(ours)}{scale}", f"{p.printed} {p.unit}", ", ".join(sources), "same cell" + circular])
    return out


def _differs(k, p, versions: dict[str, str] | None = None) -> str:
    """What a nearest published cell has that ours has not: never presented as the same cell."""
    d, differs = p.dimensions, []
    if d.get("board") not in (None, k.board):
        differs.append(f"board {d['board']}")
    if d.get("storage") not in (None, k.storage):
        differs.append(f"medium {d['storage']}")
    if k.workload != "pi" and p.size_bytes != (k.size_bytes or None):
        differs.append(f"size {d.get('size', '?')}")
    if d.get("workers") != k.workers:
        differs.append(f"{d.get('workers', '?')} workers")
    if not reference.same_parameters(p, k.workload, k.defining_parameters):
        given = ", ".join(f"{a} {b}" for a, b in p.parameters.items()) or "parameters not printed"
        differs.append(given)
    if not reference.same_stack(p, k.engine, versions):
        differs.append(f"{k.engine.capitalize()} {p.stack[k.engine]}")
    return ", ".join(differs) + f" ({p.seed})" if differs else f"({p.seed})"
