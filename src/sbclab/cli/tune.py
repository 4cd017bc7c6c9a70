"""`sbclab tune`: search the job settings of a workload (or of several at once) on one cluster, each
change accepted only on evidence of a gain, and write the result as a preset file with its evidence."""

from pathlib import Path

import click

from ..experiments import model
from ..experiments.display import LineDisplay
from ..experiments import orchestrator
from ..stack import levers as lever_registry
from ..studies import tune
from ..units import parse_size
from .options import Shape, shape_options
from .values import names
from .output import console, say, table


TUNABLE = ("wordcount", "grep", "terasort", "sort", "pi")


def workloads_of(given: str) -> list[str]:
    """'terasort,wordcount' as the workloads to tune for together, or a refusal that lists them."""
    found = list(dict.fromkeys(w for w in names(given) or []))
    unknown = [w for w in found if w not in TUNABLE]
    if not found or unknown:
        raise click.BadParameter(f"{', '.join(unknown) or 'nothing'} is not a workload the tuner runs; give one "
                                 f"or more of {', '.join(TUNABLE)}, comma-separated.", param_hint="WORKLOAD")
    return found


def list_levers() -> None:
    rows = [[lever.name, ", ".join(lever.engines), " | ".join(lever.choices), lever.why
             + (f" (trades {lever.trades})" if lever.trades else "")] for lever in lever_registry.LEVERS.values()]
    console.print(table("levers", ["lever", "engines", "choices", "why it might pay"], rows, fold=True))


@click.command("tune")
@click.argument("workload", required=False, metavar="WORKLOAD[,WORKLOAD...]")
@click.option("--engine", type=click.Choice(["hadoop", "spark"]), default="hadoop", show_default=True)
@click.option("--size", default="64MB", show_default=True, help="The job's input, e.g. 64MB (Pi ignores it).")
@shape_options
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="Where the trials' runs and the search's journal are kept (resumable).")
@click.option("--budget", type=click.FloatRange(0, 100000, min_open=True), default=30, show_default=True,
              help="Minutes to spend: a trial starts only while one more of the usual length fits.")
@click.option("--repetitions", type=click.IntRange(2, 50), default=3, show_default=True,
              help="Runs of each side of a comparison (alternating).")
@click.option("--max-trials", type=click.IntRange(1, 1000), default=None, help="Stop after this many trials.")
@click.option("--levers", "lever_names", help="Only these levers, comma-separated (see --list).")
@click.option("--first", "first", metavar="LEVER=CHOICE,...",
              help="A combination to measure before the sampler's own proposals (levers not named are kept).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The preset file to write (default RESULTS/tuned-NAME.yaml).")
@click.option("--list", "list_only", is_flag=True, help="List the levers and their choices.")
def tune_command(workload, engine, size, shape: Shape, results, budget, repetitions, max_trials, lever_names, first,
                 out, list_only):
    """Search WORKLOAD's job settings on one cluster (Optuna's TPE sampler proposes, interleaved runs
    decide): a change is kept only when the interval of its speedup lies above 1. Several workloads,
    comma-separated, are tuned together: a trial's speedup is the geometric mean of theirs, and a
    change that slows any one of them is refused.

    \b
    Examples:
      sbclab tune terasort --size 64MB --workers 2 --profile rpi4b-4gb --storage microsd --budget 30
      sbclab tune wordcount --engine spark --levers kryo,reduces,quick-jvm --max-trials 6
      sbclab tune terasort --size 128MB --first reduce-in-memory=on,reduces=per-worker
      sbclab tune terasort,wordcount --size 128MB --levers quick-jvm,reduces
      sbclab tune --list
    """
    if list_only:
        list_levers()
        return
    if workload is None:
        raise click.UsageError("Give the workload to tune, e.g. 'sbclab tune terasort' (or --list).")
    workloads = workloads_of(workload)
    chosen = names(lever_names)
    unknown = [n for n in chosen or [] if n not in lever_registry.LEVERS]
    if unknown:
        raise click.BadParameter(f"no lever named {', '.join(unknown)}; 'sbclab tune --list' shows them.",
                                 param_hint="--levers")
    experiment = model.Experiment(
        name="tune", cluster=shape.settings(), workloads=workloads, engines=[engine], workers=[shape.workers],
        sizes=[parse_size(size)], storage=[shape.storage], presets=[shape.preset], layouts=[shape.layout],
        stacks=[shape.stack], repetitions=repetitions)
    options = orchestrator.Options(results=results, display=LineDisplay(say))
    searched, document, target = tune.run_study(experiment, options, lever_names=chosen, budget_s=budget * 60,
                                                repetitions=repetitions, max_trials=max_trials, out=out, say=say,
                                                first=first)
    rows = [[str(t.number), tune.describe(t.chosen), t.speedup.text() if t.speedup else "-",
             "yes" if t.accepted else "no", t.note] for t in searched.trials]
    console.print(table(f"tuning {'+'.join(workloads)}/{engine}: {len(searched.trials)} trial(s)",
                        ["trial", "against the incumbent", "speedup [95 %]", "accepted", "why"], rows, fold=True))
    console.print(f"best: {tune.describe(searched.incumbent)}, {searched.gain:.3g}x the cluster's settings "
                  f"(the product of the accepted speedups); stopped by {searched.stopped or 'an interruption'}.")
    for trade in document["trades"]:
        console.print(f"[yellow]gives up {trade}[/yellow]")
    console.print(f"written to {target} (use it with 'sbclab bench ... --variant tuned={target}')")
