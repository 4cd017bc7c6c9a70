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
from ..suite import cluster_for, preflight_boards
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
    boards: dict | None = None  # how to reach real boards (lifecycle.boards_settings), when on an inventory

    @property
    def todo(self) -> list[Cell]:
        return [c for c in self.cells if c.key not in self.done]


def completed_keys(store: ResultsStore, on_boards: bool = False) -> set[str]:
    """Cells stored valid, on real boards or on emulated and local nodes as asked: the same cell
    measured on the other kind of cluster is not done."""
    if not store.runs_dir.exists():
        return set()
    return {run.cell["key"] for run in store.runs()
            if run.cell and run.valid and (run.cluster.backend == "ssh") == on_boards}


def prepare(experiment: Experiment, results: Path, say=lambda message: None, boards: dict | None = None) -> Plan:
    """Every cluster shape checked against this host (or the inventory's boards) before anything
    starts; an impossible cell is named."""
    matrix = cells(experiment)
    found = Plan(experiment, matrix, completed_keys(ResultsStore(results), on_boards=boards is not None), boards=boards)
    if boards is not None:
        _board_specs(found)
        return found
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


def _board_specs(found: Plan) -> None:
    """A cell with N workers runs on the inventory's master and first N workers, whose profiles
    must be the cell's."""
    from ..cluster import spec as cluster_spec
    from ..cluster.inventory import Inventory
    from ..profiles import resolve_storage
    inventory = Inventory.model_validate(found.boards["inventory"])
    found.experiment.monitor.check_nodes([h.name for h in inventory.hosts])
    for cell in found.cells:
        if cell.shape in found.specs:
            continue
        try:
            spec = cluster_spec.from_inventory(inventory.first_workers(cell.workers), name=found.experiment.cluster.name,
                                               preset=cell.preset)
        except SbclabError as err:
            raise SbclabError(f"The experiment cannot run cell {cell.label()}: {err.message}", err.hint) from err
        if (cell.board, resolve_storage(cell.storage)) != (spec.board, spec.storage):
            raise SbclabError(f"Cell {cell.label()} asks for {cell.board}/{cell.storage}; the inventory's workers are "
                              f"{spec.board}/{spec.storage}.",
                              "Leave board and storage out of the experiment (they come from the inventory), "
                              "or give the inventory's.")
        found.specs[cell.shape] = spec


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
        if found.boards is not None:
            need, _ = storage_needed(experiment, spec.workers, spec.preset)
            preflight_boards(spec, found.boards, None, None, display.say, need_bytes=need // spec.workers)
        # On boards each shape starts from an empty HDFS: a smaller one after a larger would wait in
        # safe mode for the blocks of the workers it no longer has.
        with cluster_for(spec, display.say, timeout_s=experiment.cluster.timeout_s, boards=found.boards,
                         purge=found.boards is not None) as cluster:
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
