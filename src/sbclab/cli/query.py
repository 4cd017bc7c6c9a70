"""SQL and diffs over stored runs: `sbclab query` and `sbclab diff`. Both read the runs' summaries
from the index (results/index.py), and this module leaves out the report's plotting libraries, so
that they answer in a few seconds over thousands of runs."""

import csv
import json
import sys
from pathlib import Path

import click
from rich.table import Table

from ..analysis import diff, query
from ..errors import SbclabError
from ..results.index import read_summaries
from .output import console, say, table, warn_set_aside


@click.command("query")
@click.argument("sql")
@click.option("--results", "results_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="The results directory to query.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
def query_command(sql, results_dir, fmt):
    """SQL (DuckDB) over the stored runs: tables runs, nodes and published.

    \b
    Examples:
      sbclab query "SELECT workload, engine, count(*) AS n, avg(wall_time_s) FROM runs GROUP BY ALL"
      sbclab query "SELECT run_id, node, cpu_busy_pct_mean FROM nodes WHERE node <> 'master'"
      sbclab query "SELECT * FROM published WHERE workload = 'terasort' AND workers = 4"
      sbclab query "DESCRIBE runs"
    """
    runs, set_aside = read_summaries(results_dir)
    warn_set_aside(results_dir, set_aside)
    columns, rows = query.run_sql(runs, sql)
    if fmt == "json":
        click.echo(json.dumps([dict(zip(columns, r)) for r in rows], indent=1, default=str))
    elif fmt == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
    else:
        shown = Table()
        for column in columns:
            shown.add_column(column)
        for row in rows:
            shown.add_row(*("" if v is None else str(v) for v in row))
        console.print(shown)


@click.command("diff")
@click.argument("results_a", type=click.Path(file_okay=False, path_type=Path))
@click.argument("results_b", type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON instead of a table.")
def diff_command(results_a, results_b, as_json):
    """Each cell RESULTS_A and RESULTS_B share: both mean times, B / A with its 95 % interval and
    Welch's t-test on the log times; 'no difference' where the interval covers 1 or p >= 0.05."""
    (runs_a, set_aside_a), (runs_b, set_aside_b) = read_summaries(results_a), read_summaries(results_b)
    warn_set_aside(results_a, set_aside_a)
    warn_set_aside(results_b, set_aside_b)
    found = diff.compare([r.run for r in runs_a], [r.run for r in runs_b])
    if as_json:
        click.echo(json.dumps({
            "a": str(results_a), "b": str(results_b), "differing": found.differing, "geomean_ratio": found.geomean,
            "cells": [{"cell": r.label, "a": r.a.as_dict(), "b": r.b.as_dict(), "ratio": r.ratio.as_dict(),
                       "p_value": r.p_value, "verdict": r.verdict} for r in found.rows],
            "only_a": found.only_a, "only_b": found.only_b}, indent=1))
        return
    if found.differing:
        say("The two sets differ in " + "; ".join(f"{d}: {a} (A) and {b} (B)" for d, (a, b) in found.differing.items()))
    if not found.rows:
        raise SbclabError(f"{results_a} and {results_b} have no cell in common.",
                          "Diff result sets of the same workloads, engines, sizes and worker counts.")

    def mean(e) -> str:
        return f"{e.mean:.1f}" + (f" ±{e.rel_half_width:.0%}" if e.rel_half_width is not None else "") + f" (n={e.n})"
    rows = [[r.label, mean(r.a), mean(r.b), r.ratio.text(), "—" if r.p_value is None else f"{r.p_value:.3f}", r.verdict]
            for r in found.rows]
    console.print(table(f"B = {results_b} against A = {results_a} (wall time, s; ratio = B / A)",
                        ["cell", "A", "B", "B / A [95 % CI]", "p (Welch, log)", "verdict"], rows))
    if found.geomean is not None:
        say(f"geometric mean of B / A over {len(found.rows)} cells: {found.geomean:.3f}")
    for side, labels in (("A", found.only_a), ("B", found.only_b)):
        if labels:
            say(f"only in {side}: " + ", ".join(labels))
