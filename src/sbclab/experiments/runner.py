"""Running an experiment: refuse impossible cells up front, then run the rest, resumably.

Every run is stored as it finishes (atomically), so Ctrl-C or SIGKILL loses at most the run in
flight. A re-run skips cells whose runs are stored and valid; failed and invalid cells run again.
A job that fails is stored as failed with its cause and logs, and the experiment goes on.
"""

import shutil
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .. import paths, workloads as registry
from ..cluster import hygiene, plan
from ..cluster.spec import ClusterSpec
from ..errors import SbclabError
from ..monitor import idle
from ..results.schema import Check, RunRecord
from ..results.store import ResultsStore
from ..stack.clients import JobOutcome
from ..suite import cluster_for
from ..units import format_size
from ..workloads.base import RunContext, new_id
from . import concurrent as mix
from .model import Cell, Experiment, cells, disk_per_node, storage_needed


@dataclass
class Plan:
    experiment: Experiment
    cells: list[Cell]
    done: set[str]
    specs: dict[tuple[str, str, int], ClusterSpec] = field(default_factory=dict)

    @property
    def todo(self) -> list[Cell]:
        return [c for c in self.cells if c.key not in self.done]


def completed_keys(store: ResultsStore) -> set[str]:
    if not store.runs_dir.exists():
        return set()
    return {run.cell["key"] for run in store.runs() if run.cell and run.valid}


def prepare(experiment: Experiment, results: Path, say=lambda message: None) -> Plan:
    """Every cluster shape checked against this host before anything starts; an impossible cell is named."""
    matrix = cells(experiment)
    found = Plan(experiment, matrix, completed_keys(ResultsStore(results)))
    settings = experiment.cluster
    for cell in matrix:
        if cell.shape in found.specs:
            continue
        where = f"cell {cell.label()}"
        try:
            spec = plan.spec_for(name=settings.name, workers=cell.workers, board=cell.board, storage=cell.storage,
                                 preset=cell.preset, backend=settings.backend, subnet=settings.subnet,
                                 disk_size=disk_per_node(experiment, cell.workers), scale_factor=settings.scale,
                                 say=say)
        except SbclabError as err:
            raise SbclabError(f"The experiment cannot run {where}: {err.message}", err.hint) from err
        need, which = storage_needed(experiment, cell.workers, cell.preset)
        have = sum(n.disk_bytes for n in spec.worker_nodes)
        if need > have * 0.9:
            raise SbclabError(
                f"The experiment cannot run {which} on {cell.workers} workers: it needs about {format_size(need)} "
                f"of node storage (input, intermediate data and output) and the workers have {format_size(have)}.",
                "Give a smaller size, more workers, or a larger cluster.disk_size.")
        _check_host_disk(spec)
        experiment.monitor.check_nodes([n.name for n in spec.nodes])
        found.specs[cell.shape] = spec
    return found


def _check_host_disk(spec: ClusterSpec) -> None:
    if spec.backend != "emulated":
        return
    paths.home().mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(paths.home()).free
    need = sum(n.disk_bytes for n in spec.nodes)
    if need > free:
        raise SbclabError(f"{spec.workers} workers need {format_size(need)} of node disks and {paths.home()} has "
                          f"{format_size(free)} free.", "Give a smaller cluster.disk_size or free space.")


def _failed_run(ctx: RunContext, cell: Cell, err: Exception, started: datetime, start: float) -> RunRecord:
    """A run that could not finish: stored with its cause and whatever logs it left."""
    run_id = new_id(cell.engine, cell.workload)
    message = err.message if isinstance(err, SbclabError) else f"{type(err).__name__}: {err}"
    hint = getattr(err, "hint", "")
    outcome = JobOutcome(command=[], exit_status=-1, started_at=started, finished_at=datetime.now(timezone.utc),
                         wall_time_s=time.monotonic() - start, log=Path("/nonexistent"), output="")
    params = {**cell.parameters, "size_bytes": cell.size_bytes} if cell.size_bytes else dict(cell.parameters)
    # The job logs of whatever the cell got to before it failed (input generation, the job itself).
    jobs = ctx.stack.client_logs() / "jobs"
    since = time.time() - (time.monotonic() - start) - 1
    extra = {f"jobs/{p.name}": p for p in jobs.glob("*") if p.is_dir() and p.stat().st_mtime >= since}
    return ctx.store_run(run_id=run_id, workload=cell.workload, engine=cell.engine, repetition=cell.repetition,
                         parameters=params, outcome=outcome,
                         checks=[Check(name="run finished", passed=False, detail=message)],
                         extra_logs=extra,
                         notes=[f"failed: {message}", *([hint] if hint else [])])


def run_cell(ctx: RunContext, cell: Cell, experiment: Experiment) -> RunRecord:
    workload = registry.get(cell.workload)
    reset = hygiene.between_runs(ctx.cluster, drop=experiment.between_runs.drop_caches,
                                 trim=experiment.between_runs.fstrim,
                                 idle_cpu_percent=experiment.between_runs.idle_cpu_percent,
                                 idle_timeout_s=experiment.between_runs.idle_timeout_s)
    ctx.cell = cell.as_record()
    base_notes = list(ctx.notes)
    ctx.notes = [*base_notes, *reset.notes, reset.summary()]
    started, start = datetime.now(timezone.utc), time.monotonic()
    try:
        return workload.run(ctx, cell.engine, workload.parameters(cell.size_bytes, cell.parameters), cell.repetition)
    except Exception as err:  # noqa: BLE001 - one cell's failure, whatever it is, must not end the experiment
        return _failed_run(ctx, cell, err, started, start)
    finally:
        ctx.notes = base_notes
        ctx.cell = None


def execute(found: Plan, results: Path, display, command: list[str] | None = None) -> list[RunRecord]:
    """Run the cells not yet done, one cluster per shape; return the runs stored now."""
    experiment = found.experiment
    store = ResultsStore(results)
    stored: list[RunRecord] = []
    todo = found.todo
    experiment_id = new_id("exp", experiment.name[:24].replace(" ", "-"))
    display.start(total=len(todo), skipped=len(found.cells) - len(todo))
    shapes = list(dict.fromkeys(c.shape for c in todo))
    for shape in shapes:
        spec = found.specs[shape]
        group = [c for c in todo if c.shape == shape]
        with cluster_for(spec, display.say, timeout_s=experiment.cluster.timeout_s) as cluster:
            ctx = RunContext(cluster=cluster, store=store, experiment_id=experiment_id, progress=display.say,
                             command=command or ["sbclab", *sys.argv[1:]], monitor=experiment.monitor)
            ctx.idle_baseline = idle.measure_idle(cluster, experiment.monitor, store, new_id("idle"), display.say)
            # Unsampled runs store no measurements: the offsets reach their documents only as notes.
            ctx.notes = [f"cluster '{spec.name}': master + {spec.workers} x {spec.board}/{spec.storage}, preset "
                         f"{spec.preset}; inputs are generated on this cluster and reused by its runs",
                         *idle.clock_notes(ctx.idle_baseline)]
            for cell in group:
                display.cell(cell)
                run = run_cell(ctx, cell, experiment)
                stored.append(run)
                display.finished(cell, run)
            if experiment.concurrent and shape == shapes[-1]:
                stored += mix.run(ctx, experiment.concurrent, display.say, found.done)
    display.stop()
    return stored
