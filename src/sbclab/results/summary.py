"""The summary table of stored runs, built from the documents on disk and nothing else."""

from rich.table import Table

from ..units import format_size
from .schema import RunRecord


def _validity(run: RunRecord) -> str:
    if run.exit_status != 0:
        return f"[red]failed (exit {run.exit_status})[/red]"
    if run.validity.valid is None:
        return "not checked"
    return "[green]valid[/green]" if run.validity.valid else "[red]INVALID[/red]"


def table(runs: list[RunRecord], title: str = "Runs") -> Table:
    out = Table(title=title, title_justify="left")
    for column in ("run", "engine", "workload", "size", "cluster", "backend", "wall time (s)", "result", "validity"):
        out.add_column(column, justify="right" if column == "wall time (s)" else "left")
    for run in runs:
        size = run.parameters.get("size_bytes")
        backend = run.cluster.backend + (f" x{run.scale.factor:.3g}" if run.cluster.emulated else "")
        result = ""
        if "estimate" in run.result:
            result = f"pi ~ {run.result['estimate']:.6f}"
        elif "rows" in run.result:
            result = f"{run.result['rows']:,} rows"
        cluster = f"{run.cluster.workers} x {run.cluster.board}/{run.cluster.storage}, {run.cluster.preset}"
        out.add_row(run.run_id, run.engine, run.workload, format_size(size) if size else "-", cluster, backend,
                    f"{run.wall_time_s:.1f}", result, _validity(run))
    return out


def caption(runs: list[RunRecord]) -> str:
    emulated = {r.scale.factor for r in runs if r.cluster.emulated}
    if emulated:
        return ("Emulated cluster: every resource scaled by " + ", ".join(f"{f:.3g}" for f in sorted(emulated))
                + " of the board profile; these are not measurements of real boards.")
    if any(r.cluster.backend == "processes" for r in runs):
        return "Processes backend: unshaped daemons on one host; these are not measurements of real boards."
    return ""
