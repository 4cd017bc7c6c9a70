"""What every command prints with: the consoles, one line of progress, the tables of stored runs."""

import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..results import summary
from ..results.store import ResultsStore, SetAside, set_aside_warning
from ..units import format_size

# Piped output (CI logs, `| tee`) keeps whole tables rather than Rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def say(message: str) -> None:
    err_console.print(f"[dim]sbclab:[/dim] {message}")


def warn_set_aside(results: Path, set_aside: list[SetAside]) -> None:
    """The one warning naming the damaged documents a reading left out, if it left any out."""
    if set_aside:
        say(f"[yellow]warning: {escape(set_aside_warning(results, set_aside))}[/yellow]")


def runs_summary(store: ResultsStore, only: set[str] | None = None) -> None:
    runs = [r for r in store.runs() if only is None or r.run_id in only]
    if only is None:
        warn_set_aside(store.root, store.set_aside)
    console.print(summary.table(runs, title=f"Runs stored in {store.root}"))
    note = summary.caption(runs)
    if note:
        console.print(f"[yellow]{note}[/yellow]")


def table(title: str, columns: list[str], rows: list[list[str]], fold: bool = False) -> Table:
    shown = Table(title=title, title_justify="left")
    for column in columns:
        shown.add_column(column, overflow="fold" if fold else "ellipsis")
    for row in rows:
        shown.add_row(*row)
    return shown


def cluster_status(report: dict) -> None:
    scale = report["scale"]
    console.print(f"[bold]cluster {report['name']}[/bold]  backend {report['backend']}  preset {report['preset']}  "
                  f"HDFS safe mode {report.get('safemode', '?')}")
    if report["backend"] == "emulated":
        console.print(f"emulated: CPU, disk and network scaled by {scale['factor']:.3g}, "
                      f"memory by {scale['memory_factor']:.3g}")
    console.print(table("HDFS DataNodes (live)", ["datanode", "capacity", "used", "remaining"],
                        [[r["address"], format_size(r["capacity"]), format_size(r["used"]), format_size(r["remaining"])]
                         for r in report["datanodes"]]))
    if report.get("spark_manager") == "standalone":
        console.print(table("Spark workers (alive, standalone manager)", ["worker", "state", "memory (MB)", "cores"],
                            [[r["id"], r["state"], str(r["memory_mb"]), str(r["cores"])] for r in report["spark_workers"]]))
    else:
        console.print(table("YARN NodeManagers (running)", ["node", "state", "memory (MB)", "vcores"],
                            [[r["id"], r["state"], str(r["memory_mb"]), str(r["vcores"])] for r in report["yarn_nodes"]]))
    console.print(table("Daemon addresses", ["daemon", "node", "address"],
                        [[r["daemon"], r["node"], r["address"]] for r in report["addresses"]]))
    if report["backend"] != "ssh":
        console.print(table("Web UIs (from this host; 'sbclab cluster ui' adds Spark's History Server)", ["UI", "URL"],
                            [[r["ui"], r["url"]] for r in report.get("web_uis", [])], fold=True))
    else:
        console.print("Web UIs listen on the boards' loopback: 'sbclab cluster ui' forwards them here and prints their URLs.")
    for problem in report["problems"]:
        err_console.print(f"[red]problem:[/red] {problem}")
