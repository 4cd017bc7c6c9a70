"""`sbclab plan`: which board, which medium and how many nodes for a job by a deadline, at what
price and energy, from stored runs and the seeds' published times."""

import json
import math
import re
from pathlib import Path

import click

from .. import profiles
from ..errors import SbclabError
from ..studies import plan
from ..units import format_duration
from .output import console, say, table

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)?\s*$", re.IGNORECASE)
_SECONDS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}


def duration(ctx, param, value):
    """A click callback: `600`, `600s`, `10min`, `1.5h` as seconds."""
    if value is None:
        return None
    found = _DURATION.match(value)
    if not found or float(found.group(1)) <= 0:
        raise click.BadParameter(f"{value!r} is not a duration; give e.g. 600s, 10min or 1.5h.")
    return float(found.group(1)) * _SECONDS[(found.group(2) or "s").lower()]


def _pairs(ctx, param, values):
    """A click callback: `rpi5b=80` pairs as a dict of floats, each name a known board or medium."""
    found = {}
    known = set(profiles.boards()) | set(profiles.storages())
    for value in values:
        name, _, number = value.partition("=")
        try:
            figure = float(number)
        except ValueError:
            figure = math.nan
        if not name or not math.isfinite(figure) or figure < 0:
            raise click.BadParameter(f"{value!r}: give NAME=NUMBER, e.g. rpi5b=80.")
        if name not in known:
            raise click.BadParameter(f"{name!r} is no board or medium; 'sbclab profiles list' shows them.")
        found[name] = figure
    return found


def _names(kind: str, value: str | None, known: dict) -> list[str] | None:
    if not value:
        return None
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SbclabError(f"No {kind} named {', '.join(unknown)}.", "'sbclab profiles list' shows the ones there are.")
    return names


def _interval(p) -> str:
    if p is None:
        return ""
    if math.isnan(p.low):
        return format_duration(p.seconds)
    return f"{format_duration(p.seconds)} [{format_duration(p.low)}-{format_duration(p.high)}]"


def _show_validation(found) -> None:
    for v in found:
        rows = [[o.observation.workload, o.observation.engine, o.observation.board, o.observation.storage,
                 str(o.observation.workers), plan.describe_size(o.observation.workload, o.observation.size),
                 format_duration(o.observation.seconds), _interval(o.predicted), f"{o.error:+.0%}",
                 "yes" if o.covered else "no", o.observation.source]
                for o in v.checked]
        console.print(table(v.name, ["workload", "engine", "board", "medium", "workers", "size", "measured",
                                     "predicted [95 %]", "error", "in interval", "source"], rows))
        if v.checked:
            console.print(f"{len(v.checked)} cell(s) held out: median |error| {v.median_abs_error:.0%}, "
                          f"{v.coverage:.0%} inside their interval." if v.coverage is not None else "")
        else:
            console.print("no cell to hold out.")
        if v.unfitted:
            console.print(f"too few cells left to fit: {', '.join(v.unfitted)}")


@click.command("plan")
@click.argument("workload", type=click.Choice(["wordcount", "grep", "terasort", "teragen", "sort", "pi",
                                               "dfsio-write", "dfsio-read"]), required=False)
@click.option("--engine", type=click.Choice(["hadoop", "spark"]), default="hadoop", show_default=True)
@click.option("--size", "size_text", help="The job's input, e.g. 20GB (TestDFSIO: all files together).")
@click.option("--maps", type=click.IntRange(1), help="Pi's maps (default the seeds' 100).")
@click.option("--deadline", callback=duration, help="The time the job must finish in: 600s, 10min, 1.5h.")
@click.option("--boards", help="Only these boards (comma-separated; default every profile's).")
@click.option("--storage", "storages", help="Only these media (comma-separated).")
@click.option("--max-workers", type=click.IntRange(1, 256), default=16, show_default=True,
              help="The most workers to consider.")
@click.option("--results", "results_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Stored runs to fit beside the seeds' published times.")
@click.option("--price", "prices", multiple=True, callback=_pairs,
              help="A board's or medium's price in USD instead of its profile's, e.g. --price rpi5b=80 (repeat).")
@click.option("--watts", "watts", multiple=True, callback=_pairs,
              help="A board's loaded watts instead of its profile's, e.g. --watts rpi5b=9.5 (repeat).")
@click.option("--validate", is_flag=True, help="Show the model's error on held-out cells instead of a plan.")
@click.option("--save", type=click.Path(dir_okay=False, path_type=Path), help="Write the plan as JSON here too.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
def plan_command(workload, engine, size_text, maps, deadline, boards, storages, max_workers, results_dir, prices,
                 watts, validate, save, as_json):
    """Which board, medium and node count run WORKLOAD on --size within --deadline, ranked by price
    and energy, each prediction with its 95 % interval and the cells it rests on.

    \b
    Examples:
      sbclab plan wordcount --size 20GB --deadline 10min
      sbclab plan terasort --engine spark --size 8GB --deadline 1h --results results
      sbclab plan --validate --results results
    """
    if results_dir is not None and not results_dir.exists():
        raise SbclabError(f"There is no results directory {results_dir}.",
                          "Give the directory you passed to 'sbclab run --results', or leave --results out.")
    if validate:
        _show_validation(plan.validations(results_dir))
        return
    if workload is None or deadline is None:
        raise SbclabError("A plan needs a workload and a deadline.",
                          "e.g. 'sbclab plan wordcount --size 20GB --deadline 10min' (or --validate).")
    size = plan.parse_question(workload, size_text, maps)
    found = plan.answer(workload, engine, size, deadline, results=results_dir,
                        boards=_names("board", boards, profiles.boards()),
                        storages=_names("medium", storages, profiles.storages()),
                        max_workers=max_workers, prices=prices, watts=watts)
    if save:
        save.write_text(json.dumps(found.document(), indent=1) + "\n")
    if as_json:
        click.echo(json.dumps(found.document(), indent=1))
        return
    if not found.options:
        raise SbclabError(f"No board has a timed {workload}/{engine} cell to predict from.",
                          "Run it on one (sbclab run), then plan with --results.")
    rows = []
    for o in found.options:
        rows.append([o.board, o.storage, str(o.workers) if o.meets else f"> {found.max_workers}",
                     _interval(o.predicted), "yes" if o.sure else ("likely" if o.meets else "no"),
                     "" if o.price_usd is None else f"{o.price_usd:,.0f}" + ("" if o.price_complete else " + media"),
                     "" if o.energy_wh is None else f"{o.energy_wh:.1f}",
                     f"{o.model.note + '; ' if o.model.note else ''}{len(o.model.observations)} cells: "
                     + ", ".join(o.model.sources[:3]) + (" ..." if len(o.model.sources) > 3 else "")])
    console.print(table(f"{workload}/{engine} on {plan.describe_size(workload, size)} within "
                        f"{format_duration(deadline)}: the fewest workers that meet it",
                        ["board", "medium", "workers", "predicted [95 %]", "meets", "price USD", "energy Wh",
                         "rests on"], rows, fold=True))
    console.print("meets: yes where the interval's top is within the deadline, likely where only the prediction "
                  "is. Price: the workers and a master, each with its medium ('+ media' where the profile has no price for the medium: give --price NAME=USD). Energy: the workers loaded, the "
                  "master idle.")
    if found.unmodelled:
        say(f"too few cells to fit a model: {', '.join(found.unmodelled)}")
    if results_dir is not None:
        say(f"{found.stored_cells} stored run(s) of {results_dir} fitted beside the seeds' "
            f"({found.unusable_runs} not usable: failed, flagged, or no engine job)")
