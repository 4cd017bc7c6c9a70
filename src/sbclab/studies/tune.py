"""`sbclab tune`: a search over job settings for one or more workloads at one size on one cluster,
each step a measured comparison.

Optuna's TPE sampler proposes a combination of the levers' choices (levers.py); the combination is
measured against the best one so far (the incumbent, at first the cluster's configuration as it is)
in runs that alternate on the same running cluster (an experiment's variants), and it becomes the
incumbent only when the interval of its speedup over the incumbent lies wholly above 1: a change
is accepted on evidence of a gain, never on a lucky mean. Tuned for several workloads at once (a
board's preset serves every job), the speedup is the geometric mean of each workload's, and a change
that slows one of them (its own interval wholly below 1) is refused whatever it gives the others. What Optuna learns from is the candidate's
time relative to the starting configuration, on the log scale (its ratio to the incumbent times the
incumbent's to the start). A candidate whose job fails or whose output is invalid is a failed trial
and can never be accepted.

The search is resumable: Optuna's journal in the results directory keeps every trial with what it
measured, a trial interrupted mid-way is measured again (its stored runs kept), and the incumbent is
replayed from the journal. `--budget` bounds the minutes spent: a trial starts only while the
budget has room for one more of the length of those before it.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import yaml

from .. import __version__
from ..analysis import stats
from ..atomic import write_text
from ..errors import SbclabError
from ..experiments import orchestrator, plan
from ..results.store import ResultsStore
from ..stack.levers import Lever, Settings, for_engine, merged, trades

KEEP = "keep"
DUPLICATES_BEFORE_DONE = 25  # proposals in a row already measured: the space is exhausted


@dataclass(frozen=True)
class Measured:
    """One variant's runs in a trial: the times of its valid ones, its run ids, how many failed."""

    times: list[float]
    run_ids: list[str]
    failed: int = 0


Sides = dict[str, dict[str, Measured]]  # {"incumbent" | "candidate": {workload: Measured}}


def runs_to_add(found: Sides, runs_each: int) -> int:
    """The runs each side needs beyond those made for every side to have `runs_each` counted: a run
    flagged (a busy host, a cold start) counts for neither side, so it is made again rather than
    leaving that side's interval on one run fewer; a failed run is not, since it decides the trial."""
    every = [m for jobs in found.values() for m in jobs.values()]
    if any(m.failed for m in every):
        return 0
    return max([0, *(runs_each - len(m.times) for m in every)])


# (trial number, {variant: job settings}, runs per variant) -> {variant: {workload: Measured}}. Asked
# again for the same trial with more runs, it makes only those it has not stored (an experiment's
# stored cells).
Measure = Callable[[int, dict[str, Settings], int], Sides]


@dataclass
class Trial:
    number: int
    chosen: dict[str, str]
    settings: Settings
    speedup: stats.Derived | None  # the incumbent's time over the candidate's
    accepted: bool
    runs: dict[str, list[str]] = field(default_factory=dict)
    note: str = ""
    seconds: float = 0.0  # how long it took to measure
    # Each workload's own speedup, when a trial measured several (`speedup` is their geometric mean).
    by_workload: dict[str, stats.Derived] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"trial": self.number, "chosen": self.chosen, "settings": self.settings,
                "speedup": self.speedup.as_dict() if self.speedup else None, "accepted": self.accepted,
                "runs": self.runs, "note": self.note, "seconds": round(self.seconds, 1),
                **({"by_workload": {w: d.as_dict() for w, d in self.by_workload.items()}}
                   if len(self.by_workload) > 1 else {})}


def _derived(kept: dict | None) -> stats.Derived | None:
    return stats.Derived(kept["value"], kept["ci_low"], kept["ci_high"]) if kept else None


@dataclass
class Search:
    levers: list[Lever]
    incumbent: dict[str, str]
    gain: float = 1.0  # the incumbent's speedup over the starting configuration (point estimate)
    trials: list[Trial] = field(default_factory=list)
    stopped: str = ""

    @property
    def accepted(self) -> list[Trial]:
        return [t for t in self.trials if t.accepted]


def _study(journal: Path, name: str, seed: int):
    import optuna  # a tuner's import: the other commands start without it
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    journal.parent.mkdir(parents=True, exist_ok=True)
    storage = JournalStorage(JournalFileBackend(str(journal)))
    return optuna.create_study(study_name=name, storage=storage, load_if_exists=True, direction="minimize",
                               sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=4))


def _recorded_choices(study) -> dict[str, tuple[str, ...]]:
    """Each lever's choices as the journal's trials recorded them."""
    return {name: tuple(d.choices) for past in study.get_trials(deepcopy=False)
            for name, d in past.distributions.items()}


def _distributions(levers: list[Lever], recorded: dict[str, tuple[str, ...]] | None = None,
                   first: dict[str, str] | None = None, say: Callable[[str], None] = lambda m: None):
    """What the sampler may propose. A search keeps the choices it began with (Optuna's space of a
    parameter cannot change within a study): a lever that gained a choice since is searched among its
    old ones, said so; one whose recorded choice is gone, or a --first the old space lacks, is refused."""
    from optuna.distributions import CategoricalDistribution
    recorded, first = recorded or {}, first or {}
    space = {}
    for lever in levers:
        then = recorded.get(lever.name, tuple(lever.choices))
        if gone := [c for c in then if c not in lever.choices]:
            raise SbclabError(f"This search began with {lever.name}={gone[0]}, a choice this sbclab no longer has.",
                              "Start a new search in another --results folder.")
        if then != tuple(lever.choices):
            new = [c for c in lever.choices if c not in then]
            if first.get(lever.name) in new:
                raise SbclabError(f"--first asks for {lever.name}={first[lever.name]}, a choice made after this "
                                  f"search began with {lever.name}={' or '.join(then)}.",
                                  "Leave it out of --first, or start a new search in another --results folder.")
            say(f"{lever.name}: this search began with the choices {', '.join(then)} and goes on with them "
                f"({', '.join(new)} came later: a new search in another --results folder proposes it)")
        space[lever.name] = CategoricalDistribution(list(then))
    return space


def check_resumable(journal: Path, name: str, levers: list[Lever], first: dict[str, str] | None) -> None:
    """A search that cannot go on from its journal, refused before a cluster is brought up for it."""
    if journal.exists():
        _distributions(levers, _recorded_choices(_study(journal, name, 0)), first)


def _judge(trial_number: int, chosen: dict[str, str], settings: Settings, found: Sides, seconds: float) -> Trial:
    incumbent, candidate = found["incumbent"], found["candidate"]
    workloads = list(candidate)
    runs = {side: [i for w in workloads for i in found[side][w].run_ids] for side in ("incumbent", "candidate")}
    failed = sum(candidate[w].failed for w in workloads)
    if failed:
        return Trial(trial_number, chosen, settings, None, False, runs,
                     f"{failed} run(s) failed or gave invalid output under these settings", seconds)
    if any(not incumbent[w].times or not candidate[w].times for w in workloads):
        return Trial(trial_number, chosen, settings, None, False, runs, "no valid run on one side", seconds)
    by_workload = {w: stats.ratio(stats.estimate(incumbent[w].times), stats.estimate(candidate[w].times))
                   for w in workloads}
    speedup = stats.geometric_mean(list(by_workload.values()))
    each = (" (" + ", ".join(f"{w} {d.text()}" for w, d in by_workload.items()) + ")") if len(workloads) > 1 else ""
    if speedup.ci_low is None:
        return Trial(trial_number, chosen, settings, speedup, False, runs,
                     "one run a side: no interval, so no evidence of a gain" + each, seconds, by_workload)
    slowed = [w for w, d in by_workload.items() if d.ci_high < 1.0]
    accepted = speedup.ci_low > 1.0 and not slowed
    note = ("accepted: its interval lies above 1" if accepted else
            f"kept the incumbent: it slows {' and '.join(slowed)}" if slowed and speedup.ci_high >= 1.0 else
            "kept the incumbent: the interval reaches 1 (no evidence of a gain)" if speedup.ci_high >= 1.0 else
            "kept the incumbent: slower")
    return Trial(trial_number, chosen, settings, speedup, accepted, runs, note + each, seconds, by_workload)


def search(levers: list[Lever], measure: Measure, config: Settings, workers: int, *, journal: Path, name: str,
           budget_s: float, repetitions: int = 3, max_trials: int | None = None, seed: int = 0,
           first: dict[str, str] | None = None, clock: Callable[[], float] = time.monotonic,
           say: Callable[[str], None] = lambda m: None) -> Search:
    """Propose, measure and judge combinations until the budget or max_trials is spent; `first`, a
    combination the user expects to pay (unnamed levers kept), is measured before the sampler's own."""
    import optuna
    from optuna.trial import TrialState

    if repetitions < 2:
        raise SbclabError("A tuning needs at least 2 runs of each side of a comparison for an interval.",
                          "Give --repetitions 2 or more (3 is the default).")
    study = _study(journal, name, seed)
    distributions = _distributions(levers, _recorded_choices(study), first, say)
    start = {lever.name: KEEP for lever in levers}
    found = Search(levers, dict(start))
    measured: dict[tuple, float] = {}

    def objective_of(trial: Trial) -> float | None:
        return None if trial.speedup is None else -math.log(found.gain * trial.speedup.value)

    def record(asked, trial: Trial) -> None:
        value = objective_of(trial)
        asked.set_user_attr("sbclab", trial.as_dict())
        if value is None:
            study.tell(asked, state=TrialState.FAIL)
        else:
            study.tell(asked, value)
            measured[tuple(sorted(trial.chosen.items()))] = value
        found.trials.append(trial)
        if trial.accepted:
            found.incumbent, found.gain = dict(trial.chosen), found.gain * trial.speedup.value

    def run_trial(number: int, chosen: dict[str, str]) -> Trial:
        began = clock()
        settings = merged(levers, chosen, config, workers)
        variants = {"incumbent": merged(levers, found.incumbent, config, workers), "candidate": settings}
        say(f"trial {number}: {describe(chosen)} against {describe(found.incumbent)}, {repetitions} runs each")
        made = repetitions
        sides = measure(number, variants, made)
        # At most as many again: a host busy through every run is said by the runs' own flags.
        while (missing := runs_to_add(sides, repetitions)) and made < 2 * repetitions:
            made = min(made + missing, 2 * repetitions)
            say(f"trial {number}: flagged runs count for no side; {made} runs a side")
            sides = measure(number, variants, made)
        trial = _judge(number, chosen, settings, sides, clock() - began)
        say(f"trial {number}: speedup {trial.speedup.text() if trial.speedup else '-'}; {trial.note}")
        return trial

    # Replay what the journal holds: finished trials as they were judged, interrupted ones measured again.
    for past in study.get_trials(deepcopy=False):
        if past.state == TrialState.COMPLETE or past.state == TrialState.FAIL:
            kept = past.user_attrs.get("sbclab")
            if not kept:
                continue
            trial = Trial(kept["trial"], kept["chosen"], kept["settings"], _derived(kept.get("speedup")),
                          kept["accepted"], kept["runs"], kept["note"], kept.get("seconds", 0.0),
                          {w: _derived(d) for w, d in (kept.get("by_workload") or {}).items()})
            found.trials.append(trial)
            if past.state == TrialState.COMPLETE:
                measured[tuple(sorted(trial.chosen.items()))] = past.value
            if trial.accepted:
                found.incumbent, found.gain = dict(trial.chosen), found.gain * trial.speedup.value
        elif past.state == TrialState.RUNNING:
            chosen = {**start, **past.params}
            say(f"trial {past.number} was interrupted: measuring it again (its stored runs are kept)")
            record(optuna.trial.Trial(study, past._trial_id), run_trial(past.number, chosen))

    if first:
        # Optuna asks an enqueued combination before sampling; one the journal holds is not asked twice.
        study.enqueue_trial({**start, **first}, skip_if_exists=True)
    began, spent, duplicates = clock(), [], 0
    while True:
        if max_trials is not None and len(found.trials) >= max_trials:
            found.stopped = f"{max_trials} trial(s) done"
            break
        elapsed = clock() - began
        typical = sum(spent) / len(spent) if spent else 0.0
        if elapsed >= budget_s or (spent and elapsed + typical > budget_s):
            found.stopped = (f"the budget: {elapsed / 60:.1f} of {budget_s / 60:g} min spent, a trial takes about "
                             f"{typical / 60:.1f}")
            break
        asked = study.ask(distributions)
        chosen = {**start, **asked.params}
        key = tuple(sorted(chosen.items()))
        if chosen == found.incumbent or key in measured:
            # Measured before (or the incumbent itself): Optuna learns its known value; nothing runs.
            study.tell(asked, measured.get(key, -math.log(found.gain)))
            duplicates += 1
            if duplicates >= DUPLICATES_BEFORE_DONE:
                found.stopped = "every combination the sampler proposes was measured already"
                break
            continue
        duplicates = 0
        trial = run_trial(asked.number, chosen)
        spent.append(trial.seconds)
        record(asked, trial)
    return found


def describe(chosen: dict[str, str]) -> str:
    changed = [f"{k}={v}" for k, v in sorted(chosen.items()) if v != KEEP]
    return ", ".join(changed) or "the cluster's settings"


def result_document(found: Search, question: dict, config: Settings, workers: int, command: list[str]) -> dict:
    """The tuned settings with their evidence: a user's preset (`sbclab bench --variant NAME=FILE`)."""
    settings = merged(found.levers, found.incumbent, config, workers)
    return {"sbclab": __version__, "made": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": command, "question": question,
            "levers": {lever.name: {"choice": found.incumbent.get(lever.name, KEEP), "why": lever.why,
                                    **({"trades": lever.trades} if lever.trades else {})} for lever in found.levers},
            "settings": settings, "trades": trades(found.levers, found.incumbent),
            "speedup_over_start": found.gain,
            "trials": [t.as_dict() for t in found.trials], "stopped": found.stopped}


def write_result(path: Path, document: dict) -> None:
    write_text(path, json.dumps(document, indent=1) + "\n")


def tuning_name(workloads: list[str], engine: str, size_bytes: int | None, spec, preset: str) -> str:
    """One search per set of workloads, engine, size, cluster shape and preset: the journal's and the
    result's name."""
    size = f"-{size_bytes}" if size_bytes else ""
    return f"{'+'.join(workloads)}-{engine}{size}-{spec.workers}x{spec.board}-{spec.storage}-{preset}"


def first_choices(levers: list[Lever], given: str | None) -> dict[str, str]:
    """'lever=choice,...' as a combination of the searched levers, or a refusal that says what exists."""
    chosen: dict[str, str] = {}
    by_name = {lever.name: lever for lever in levers}
    for part in [p.strip() for p in (given or "").split(",") if p.strip()]:
        name, _, choice = part.partition("=")
        lever = by_name.get(name.strip())
        if lever is None:
            raise SbclabError(f"'{name.strip()}' in --first is not among the levers searched.",
                              f"Choose from {', '.join(by_name)} (or add it to --levers).")
        if choice.strip() not in lever.choices:
            raise SbclabError(f"'{part}' in --first is not one of {lever.name}'s choices.",
                              f"Give {lever.name}={' or '.join(lever.choices)}.")
        chosen[lever.name] = choice.strip()
    return chosen


def run_study(experiment, options, *, lever_names: list[str] | None, budget_s: float, repetitions: int,
              max_trials: int | None, out: Path | None, say: Callable[[str], None],
              first: str | None = None) -> tuple[Search, dict, Path]:
    """The search on the experiment's one cluster, held up for all its trials; the result written to
    `out` (default beside the runs) and to the results directory's tuning/ for the report."""
    workloads, engine = list(experiment.workloads), (experiment.engines or ["hadoop"])[0]
    levers = for_engine(engine, lever_names)
    if not levers:
        raise SbclabError(f"No lever of those asked for applies to {engine}.", "See 'sbclab tune --list'.")
    hunch = first_choices(levers, first)
    first = plan.prepare(experiment.model_copy(update={"repetitions": 1}), options.results, say, options.boards)
    if len(first.specs) != 1:
        raise SbclabError("A tuning runs on one cluster shape.", "Give one worker count, medium and preset.")
    (shape, spec), = first.specs.items()
    choices = first.choices[shape]
    name = tuning_name(workloads, engine, experiment.sizes[0] if first.cells[0].size_bytes else None, spec,
                       choices.preset)
    journal = options.results / "tuning" / f"{name}.journal"
    check_resumable(journal, name, levers, hunch)
    with orchestrator.cluster_for(spec, choices, say, timeout_s=experiment.cluster.timeout_s, boards=options.boards,
                                  dist_dir=options.dist_dir) as cluster:
        config, workers = cluster.configuration, spec.workers

        def measure(number: int, variants: dict[str, Settings], runs_each: int) -> dict[str, Measured]:
            named = {f"t{number}-{side}": settings for side, settings in variants.items()}
            trial = experiment.model_copy(update={"name": f"tune-t{number}", "variants": named,
                                                  "repetitions": runs_each})
            planned = plan.prepare(trial, options.results, say, options.boards)
            orchestrator.execute(planned, options)
            cell_of = {c.key: (c.variant, c.workload) for c in planned.cells}
            latest: dict[str, object] = {}
            for run in ResultsStore(options.results).runs():  # oldest first: the last of a key is its latest
                key = (run.cell or {}).get("key")
                if key in cell_of:
                    latest[key] = run
            found: Sides = {}
            for side in variants:
                for workload in workloads:
                    mine = [r for k, r in latest.items() if cell_of[k] == (f"t{number}-{side}", workload)]
                    found.setdefault(side, {})[workload] = Measured(
                        [r.wall_time_s for r in mine if r.headline], [r.run_id for r in mine],
                        sum(1 for r in mine if not r.valid))
            return found

        searched = search(levers, measure, config, workers, journal=journal, name=name, budget_s=budget_s,
                          repetitions=repetitions, max_trials=max_trials, first=hunch, say=say)
    question = {"workload": ",".join(workloads), "engine": engine, "size_bytes": first.cells[0].size_bytes,
                "cluster": {"workers": spec.workers, "board": spec.board, "storage": spec.storage,
                            "preset": choices.preset, "backend": spec.backend, "scale": spec.scale.factor},
                "levers": [lever.name for lever in levers], "repetitions": repetitions, "results": str(options.results)}
    document = result_document(searched, question, config, workers, options.command)
    write_result(options.results / "tuning" / f"{name}.json", document)
    target = out or options.results / f"tuned-{name}.yaml"
    write_text(target, yaml.safe_dump(document, sort_keys=False, width=110))
    return searched, document, target
