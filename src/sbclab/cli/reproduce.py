"""`sbclab reproduce SEED [TABLE ...]`: a seed's tables run as built-in experiments, then set beside
the published ones in the seed's own layout, with the seed's conclusions judged as shapes."""

import sys
from pathlib import Path

import click

from ..analysis import breakdown, reproduction
from ..analysis.reproduction import Reproduction
from ..cluster import inventory, knobs
from ..experiments import orchestrator, plan, reproduce
from ..experiments.display import ProgressDisplay
from ..experiments.model import ClusterSettings
from ..results.store import ResultsStore
from ..studies import reproduce as study
from ..errors import SbclabError
from ..units import format_duration, format_size
from .bench import show_estimate, show_shapes
from .options import HostKeys, Monitoring, host_key_options, monitor_options
from .values import FiniteRange, counts, names, sizes_list
from .output import console, err_console, runs_summary, say, table


def list_tables(seeds: list[reproduce.Seed]) -> None:
    for found in seeds:
        rows = []
        for t in found.tables.values():
            status, why = reproduce.on_this_host(t, found)
            rows.append([t.key, status + (" (circular)" if t.circular else ""), t.description,
                         "; ".join(w for w in (why, _what_it_runs(t) if t.runs == "here" else "") if w)])
        console.print(table(f"{found.names[0]}: {found.citation}", ["table", "status", "what", "runs / why not"], rows,
                            fold=True))


def _what_it_runs(t: reproduce.Table) -> str:
    e = t.experiment or {}
    parts = [",".join(e.get("workloads", [])), "/".join(e.get("engines", []) or []),
             f"workers {','.join(map(str, e.get('workers', [])))}" if e.get("workers") else "",
             f"sizes {','.join(map(str, e.get('sizes', [])))}" if e.get("sizes") not in (None, [1]) else "",
             f"storage {','.join(e.get('storage', []))}", f"boards {','.join(t.boards)}" if t.boards else ""]
    return " ".join(p for p in parts if p)


def render(found: Reproduction, where: Path) -> Path:
    """The table in the seed's layout on the terminal, its shapes and verdicts, and a CSV beside the runs."""
    columns = found.columns
    rows = []
    for row in found.rows:
        cells = []
        for column in columns:
            e = found.at(row, column)
            cells.append("" if e is None else f"{e.published.printed} | {_ours(e)}")
        rows.append([" ".join(str(v) for v in row if v is not None), *cells])
    header = [" / ".join(found.layout.rows)] + [" ".join(f"{d} {_shown(v)}" for d, v in zip(found.layout.columns, c)
                                                         if v is not None) for c in columns]
    unit = found.entries[0].published.unit if found.entries else ""
    console.print(table(f"{found.seed} {found.table}: {found.title} [published | ours, {unit}]", header, rows,
                        fold=True))
    if found.shapes:
        console.print(table("the seed's conclusions as shapes", ["shape", "published", "ours (95 % interval)", "verdict"],
                            [[s.label, f"{s.published:.3g}", s.ours.text() if s.ours else "-", f"{s.verdict}: {s.detail}"]
                             for s in found.shapes], fold=True))
    parts = [e for e in found.entries if e.breakdown]
    if parts:
        console.print(table("where our runs' time went (mean seconds; workers' CPU busy, of their quota)",
                            [" / ".join(found.layout.rows + found.layout.columns), *breakdown.PARTS, "workers busy"],
                            [[" ".join(str(v) for v in (*e.row, *e.column) if v is not None),
                              *(f"{e.breakdown.seconds[p]:.1f}" for p in breakdown.PARTS),
                              "-" if e.breakdown.worker_busy_pct is None else f"{e.breakdown.worker_busy_pct:.0f} %"]
                             for e in parts]))
    for note in found.notes:
        console.print(f"[dim]{note}[/dim]")
    return reproduction.save_csv(found, where)[0]


def _shown(value) -> str:
    return format_size(value) if isinstance(value, int) and value > 2**20 else str(value)


def _ours(e: reproduction.Entry) -> str:
    o = e.ours
    if o is None:
        return "-"
    text = f"{o.mean:.4g}"
    if o.ci_low is not None:
        text += f" [{o.ci_low:.4g}-{o.ci_high:.4g}]"
    text += f" n={o.n}"
    return text + (f" @{e.scale_factor:.3g}" if e.scale_factor else "")


@click.command("reproduce")
@click.argument("seed", required=False)
@click.argument("tables", nargs=-1)
@click.option("--list", "list_only", is_flag=True, help="List every seed's tables and figures (or SEED's), what each "
              "runs and whether this host can run it; nothing is measured.")
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Results directory (default results/SEED); tables already stored there are only rendered.")
@click.option("--repetitions", type=click.IntRange(1, 100), default=None,
              help="Runs per cell, fixed (the seeds ran 5). Without it, each cell runs the count --estimate expects and the cells "
                   "of a shape still inconclusive run again, round by round, until it is decided or --max-repetitions.")
@click.option("--max-repetitions", type=click.IntRange(2, 100), default=study.CAP, show_default=True,
              help="The most runs per cell while repeating until the verdicts are decided.")
@click.option("--sizes", callback=sizes_list, help="Some of the seed's sizes, e.g. 500MB,1GB (scaled down to this host as "
              "the whole table would be), or other sizes to run instead of the seed's, as given.")
@click.option("--workers", callback=counts, help="Worker counts to run instead of the seed's, e.g. 1,2.")
@click.option("--engines", callback=lambda ctx, param, value: names(value),
              help="Engines to run, of the table's, e.g. spark (default: every engine the table has).")
@click.option("--storage", "media", callback=lambda ctx, param, value: names(value),
              help="Storage media to run, of the table's, e.g. nvme (default: every medium the table has).")
@click.option("--runtimes", callback=lambda ctx, param, value: names(value),
              help="Runtimes to run, of the table's: native or container (default: every runtime the table has).")
@click.option("--work", type=FiniteRange(0.001, 1.0), default=1.0, show_default=True,
              help="Share of the seed's work to run inside each task (Pi's samples per map, data sizes with the HDFS "
                   "block size), keeping the seed's maps, slices and blocks, so its waves and speedups keep their shape.")
@click.option("--dry-run", is_flag=True, help="Show the cells and cluster shapes without running anything.")
@click.option("--estimate", is_flag=True, help="Show how long the tables will take, without running anything.")
@click.option("--backend", type=click.Choice(["emulated", "processes"]), default=None)
@click.option("--name", "cluster_name", default=reproduce.CLUSTER_NAME, show_default=True,
              help="Name of the clusters the tables run on; two reproductions side by side need two names.")
@click.option("--subnet", default=ClusterSettings().subnet, show_default=True,
              help="Private network of the emulated nodes; two reproductions side by side need two subnets.")
@click.option("--inventory", "inventory_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Run on the boards of this YAML inventory over SSH.")
@click.option("--knob", "knob_names", multiple=True, metavar="NAME",
              help="A cluster knob for the tables' clusters (repeatable; see 'sbclab knobs'), recorded in every run "
                   "and said beside the tables: quick-start, say, where a table's point is not its JVMs' start-up.")
@host_key_options
@monitor_options
def reproduce_command(seed, tables, list_only, results, repetitions, max_repetitions, sizes, workers, engines, media,
                      runtimes, work,
                      dry_run,
                      estimate, backend, cluster_name, subnet, inventory_file, knob_names, keys: HostKeys,
                      monitoring: Monitoring):
    """Reproduce a seed's tables: run them, then show ours beside the published values, with verdicts."""
    if list_only or not seed:
        list_tables([reproduce.seed(seed)] if seed else list(reproduce.seeds().values()))
        return
    found_seed = reproduce.seed(seed)
    chosen = reproduce.tables(found_seed, tables)
    results = results or Path("results") / found_seed.names[0]
    access = keys.access(inventory.load(inventory_file)) if inventory_file else None
    given = monitoring.settings().model_dump(exclude_defaults=True)
    clusters = {"name": cluster_name, "subnet": subnet}
    if knob_names:
        clusters["knobs"] = list(knobs.check_cluster_knobs(knob_names))
    bad = 0
    planned_totals: dict[str, float | None] = {}

    def planned_of(t) -> reproduce.Planned:
        """The table's experiments on this host, its refusals and notes said."""
        planned = reproduce.plan_table(t, found_seed, repetitions=repetitions or 1, sizes=sizes, backend=backend,
                                       on_boards=access is not None, workers=workers, storage=media, work=work,
                                       monitor=given, cluster=clusters, engines=engines, runtimes=runtimes)
        console.rule(f"{found_seed.names[0]} {t.key}: {t.description}")
        for refusal in planned.refused:
            say(f"not run here: {refusal}")
        for note in planned.notes:
            say(note)
        return planned

    for t in chosen:
        if dry_run or estimate:
            try:
                planned_totals[t.key] = _show_plan(planned_of(t), results, access, repetitions, max_repetitions,
                                                   estimate)
            except SbclabError as err:
                if len(chosen) == 1:
                    raise
                # One table a whole seed's plan cannot hold leaves the others' plans worth showing.
                say(f"{t.key} cannot run here: {err.message} {err.hint or ''}".strip())
                planned_totals[t.key] = None
            continue
        planned = planned_of(t)
        options = orchestrator.Options(results=results, display=ProgressDisplay(err_console), boards=access,
                                       purge_boards=True)
        outcome = study.run_table(planned, found_seed.key, options, repetitions=repetitions, cap=max_repetitions, say=say)
        if outcome.stored:
            runs_summary(ResultsStore(results), {r.run_id for r in outcome.stored})
        bad += sum(1 for r in outcome.stored if not r.valid)
        if outcome.found is None:
            continue
        layout = study.layout_of(t)
        reproduction.save_request(results, found_seed.key, t.reference, layout, sizes=planned.sizes,
                                  parameters=planned.parameters or (t.experiment or {}).get("parameters", {}),
                                  circular=t.circular, notes=planned.notes, scale=planned.scale)
        say(f"CSV: {render(outcome.found, results)}")
    if estimate and len(chosen) > 1:
        _show_seed_total(found_seed, planned_totals)
    if bad:
        err_console.print(f"[yellow]{bad} run(s) failed or invalid; they are stored, left out of the tables, and run "
                          "again when the reproduction is re-run.[/yellow]")
        sys.exit(1)


def _show_seed_total(found_seed, totals: dict[str, float | None]) -> None:
    """The estimate of every table asked for together, and the tables this host cannot plan."""
    planned = {key: seconds for key, seconds in totals.items() if seconds is not None}
    refused = [key for key, seconds in totals.items() if seconds is None]
    console.rule(f"{found_seed.names[0]}: every table asked for")
    console.print(f"about {format_duration(sum(planned.values()))} for the {len(planned)} table(s) planned here, "
                  "not counting bringing up their clusters"
                  + (f"; not planned: {', '.join(refused)} (why above)" if refused else "") + ".")


def _show_plan(planned: reproduce.Planned, results: Path, access, repetitions: int | None, cap: int,
               estimate: bool) -> float:
    """The cells and cluster shapes, and with --estimate the runs per cell expected and the time they take
    (returned, in seconds; 0 without --estimate)."""
    count, spread, source = repetitions, None, "fixed"
    if repetitions is None:
        store = ResultsStore(results)
        count, spread, source = study.expected_repetitions(planned.table, list(store.runs()) if store.runs_dir.exists()
                                                           else [], cap)
    if estimate:
        say(f"runs per cell: {count}" + (f" expected, at {spread:.1%} relative spread ({source}), if ours comes out at "
                                         f"the published values; up to {cap} where it does not" if spread is not None
                                         else " (--repetitions)"))
    total = 0.0
    for experiment in planned.experiments:
        shown = plan.prepare(experiment.model_copy(update={"repetitions": count}), results, say=say, boards=access)
        show_shapes(shown)
        if estimate:
            total += show_estimate(shown, results)
    return total
