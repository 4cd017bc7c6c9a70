"""The one run path. Every command that runs something — `run`, `micro`, `hpl`, `bench` and the
concurrent mix — is an experiment run here, and every run goes down the same checklist:

    plan       every cell and the cluster each shape needs; impossible cells refused (plan.py)
    preflight  boards examined (doctor.py), the programs there, their power sources read
    cluster    the running cluster of that name and shape, or one made for these cells
    hygiene    caches dropped, filesystems trimmed, nodes idle (hygiene.py)
    liveness   the cluster's daemons counted; what ended is restarted, a cluster still short is
               refused for the cell (stack/liveness.py)
    record     samplers on every node, every command marked
    job        the workload's job
    liveness   counted again: a daemon lost during the job flags the run
    validate   its output checked again, then removed
    store      the run's document written atomically (document.py)

Every run is stored as it finishes, so Ctrl-C or SIGKILL loses at most the run in flight. A
re-run skips cells stored and valid; failed and invalid cells run again, and what the run in
flight left (series, logs, half-written files) is removed first. A job that fails is stored as
failed with its cause and logs, and the experiment goes on. One experiment writes to a results
directory at a time: a second is refused while the first lives.
"""

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from .. import workloads as registry
from ..cluster import faultrecords, nodeops, nodes, packages
from ..cluster.inventory import BoardAccess
from ..cluster.spec import ClusterSpec
from ..cluster.state import ClusterState
from ..errors import SbclabError
from ..units import format_size
from ..monitor import idle, phases
from ..monitor.recorder import RawRecording, Recorder
from ..monitor.settings import MonitorSettings, with_inventory_power
from ..faults import effects
from ..faults.schedule import Nemesis
from ..results.faults import FaultEffects, FaultSpec
from ..results.schema import Check, Liveness, RunRecord
from ..results.store import ResultsStore
from ..stack import lifecycle, liveness, scheduler
from ..stack.choices import StackChoices
from ..stack.clients import JobOutcome
from ..workloads.base import RunContext, Workload, new_id
from . import doctor, document, hygiene, plan
from .model import BetweenRuns, Cell, Experiment


class Display(Protocol):
    """Where an experiment's progress goes (the terminal's progress bar, or plain lines)."""

    def start(self, total: int, skipped: int) -> None: ...

    def say(self, message: str) -> None: ...

    def cell(self, cell: Cell) -> None: ...

    def finished(self, cell: Cell, run: RunRecord) -> None: ...

    def stop(self) -> None: ...


@dataclass
class Options:
    """How an experiment is run, besides what it runs."""

    results: Path
    display: Display
    boards: BoardAccess | None = None
    dist_dir: str | None = None
    # Boards: each shape starts from an empty HDFS (a smaller one after a larger would wait in safe
    # mode for the blocks of the workers it no longer has), so an experiment's clusters purge their data.
    purge_boards: bool = True
    command: list[str] = field(default_factory=lambda: ["sbclab", *sys.argv[1:]])


def run(experiment: Experiment, options: Options) -> list[RunRecord]:
    """Plan the experiment, then run every cell not yet stored; the runs stored now."""
    found = plan.prepare(experiment, options.results, options.display.say, options.boards)
    return execute(found, options)


def execute(found: plan.Plan, options: Options) -> list[RunRecord]:
    """Run the cells not yet done, one cluster per shape; return the runs stored now (inputs made on
    the way included)."""
    experiment, display = found.experiment, options.display
    store = ResultsStore(options.results)
    monitor = experiment.monitor
    if options.boards is not None:
        monitor = with_inventory_power(monitor, options.boards.inventory)
    programs, host_programs = _programs(found)
    packages.check_here(host_programs if options.boards is not None else [*host_programs, *programs])
    experiment_id = new_id("exp", experiment.name[:24].replace(" ", "-"))
    with store.writing(options.command):
        _remove_orphans(store, display.say)
        display.start(total=len(found.todo), skipped=len(found.cells) - len(found.todo))
        try:
            return _run_shapes(found, options, store, monitor, programs, experiment_id)
        finally:
            display.stop()


def _remove_orphans(store: ResultsStore, say) -> None:
    """What a killed experiment left beside the runs it stored: the series and logs of the run it
    was in (whose document was never written) and half-written files. No other experiment is
    writing here (this one holds the directory), so nothing of a live run is taken."""
    removed = store.remove_orphans()
    if removed:
        shown = ", ".join(map(str, removed[:5])) + (f" and {len(removed) - 5} more" if len(removed) > 5 else "")
        say(f"removed what an interrupted run left in {store.root} without storing its document: {shown}")


def _run_shapes(found: plan.Plan, options: Options, store: ResultsStore, monitor: MonitorSettings,
                programs: list[str], experiment_id: str) -> list[RunRecord]:
    """Each shape's cluster and the cells to run on it, in turn."""
    experiment, display = found.experiment, options.display
    stored: list[RunRecord] = []
    for shape in dict.fromkeys(c.shape for c in found.todo):
        spec, choices = found.specs[shape], found.choices[shape]
        if options.boards is not None:
            _preflight_boards(found, spec, choices, options.boards, display.say)
        with cluster_for(spec, choices, display.say, timeout_s=experiment.cluster.timeout_s, boards=options.boards,
                         dist_dir=options.dist_dir, purge=options.boards is not None and options.purge_boards,
                         bare=found.bare) as cluster:
            if options.boards is not None and found.bare:
                display.say(f"checking {', '.join(programs)} on the boards")
                packages.ensure(cluster.transport, programs)
            runner = Runner(cluster, store, monitor, document.Provenance(experiment_id, options.command), display.say)
            runner.start_suite()
            for cell in (c for c in found.todo if c.shape == shape):
                display.cell(cell)
                run = runner.run_cell(cell, experiment.between_runs)
                display.finished(cell, run)
            stored += runner.stored
    return stored


def _programs(found: plan.Plan) -> tuple[list[str], list[str]]:
    """The programs the experiment's workloads run on the nodes, and on this host."""
    names = dict.fromkeys(c.workload for c in found.cells)
    on_nodes = [p for name in names for p in registry.get(name).programs]
    here = [p for name in names for p in registry.get(name).host_programs]
    return list(dict.fromkeys(on_nodes)), list(dict.fromkeys(here))


def _preflight_boards(found: plan.Plan, spec: ClusterSpec, choices: StackChoices, boards: BoardAccess, say) -> None:
    """doctor before every shape on real boards: an hour-long experiment must not fail on a full disk."""
    say("preflight of the boards (sbclab doctor)")
    # Only the boards this cluster uses (a cell may run on the first workers of the inventory).
    inventory = boards.inventory.model_copy(update={"hosts": tuple(boards.inventory.host(n.name) for n in spec.nodes)})
    need, _ = plan.storage_needed(found.experiment, spec.workers, choices.preset)
    doctor.preflight(inventory, None, None, choices.preset, Path(boards.known_hosts), boards.accept_new_host_keys,
                     deploying=spec.name not in ClusterState.names(), say=say, hadoop=not found.bare,
                     tunnels=choices.web_uis == "loopback", need_bytes=need // spec.workers)


# How long a run waits for HDFS to remove what it was asked to before the trim that opens the job
# (a DataNode hears of a deletion on its next heartbeat, seconds apart).
DELETIONS_TIMEOUT_S = 120
FULL = 0.90  # a data disk fuller than this before a run is refused: HDFS and YARN stop using it about there


def check_disks(transport, cell: Cell) -> None:
    """Refuse a run whose workers' disks are nearly full, or too small for what it will write (its
    input's replicas, intermediate data and output, spread over the workers); on every backend."""
    workers = transport.spec.worker_nodes
    need = plan.bytes_needed(cell.workload, cell.size_bytes, len(workers), cell.preset) if cell.size_bytes else 0
    # Nodes that share this host's filesystem (the processes backend) share its free space too.
    per_node = need // len(workers) if transport.own_filesystems or not transport.shares_host else need
    for name, space in nodeops.disk_space(transport, workers).items():
        if space is None:
            continue
        size, free = space
        if size and 1 - free / size > FULL:
            raise SbclabError(f"{name}'s data disk is {100 * (1 - free / size):.0f} % full ({format_size(free)} free of "
                              f"{format_size(size)}): the run would fill it.",
                              f"Free space on {name} ('sbclab cluster shell'), or bring the cluster up with a larger "
                              "--disk-size.")
        if per_node > free:
            raise SbclabError(f"{cell.label()} needs about {format_size(per_node)} on {name}, which has "
                              f"{format_size(free)} free.", "Give a smaller size, more workers, or more disk.")


def _same_shape(running: lifecycle.Cluster, spec: ClusterSpec, choices: StackChoices) -> bool:
    keep = ("backend", "board", "storage", "workers")
    return (all(getattr(running.spec, k) == getattr(spec, k) for k in keep)
            and (running.choices.preset, running.choices.settings) == (choices.preset, choices.settings))


def describe(spec: ClusterSpec) -> str:
    """The cluster's nodes in a few words: which master, how many workers of which board."""
    workers = f"{spec.workers} x {spec.board}/{spec.storage}"
    if spec.layout == "master-is-worker":
        return f"{workers}, the first also the master"
    master = spec.master
    return f"master{f' ({master.board}/{master.storage})' if master.board != spec.board else ''} + {workers}"


@contextmanager
def cluster_for(spec: ClusterSpec, choices: StackChoices | None = None, progress=lambda message: None,
                timeout_s: float = 180, boards: BoardAccess | None = None, dist_dir: str | None = None,
                purge: bool = False, bare: bool = False):
    """The running cluster if it matches the spec and choices, else a new one that is removed on exit
    (on real boards: its daemons stopped, its data kept unless purge). bare: nodes without Hadoop or
    Spark are enough (node benchmarks, MPI)."""
    choices = choices or StackChoices()
    if spec.name in ClusterState.names():
        cluster = lifecycle.attach(spec.name)
        if not _same_shape(cluster, spec, choices):
            raise SbclabError(
                f"Cluster '{spec.name}' is up with another shape ({cluster.spec.workers} x {cluster.spec.board}/"
                f"{cluster.spec.storage}, {cluster.spec.backend}, preset {cluster.choices.preset}).",
                f"Take it down with 'sbclab cluster down --name {spec.name}', or run with --name another.")
        progress(f"using running cluster '{spec.name}'")
        undone, problems = faultrecords.heal_all(cluster.transport, orphans_only=True)
        if undone:
            progress(f"undid the faults an interrupted sbclab left in place: {', '.join(undone)}"
                     + (f" ({'; '.join(problems)})" if problems else ""))
        orphans = cluster.transport.stop_orphans()
        if orphans:
            killed = cluster.stack.kill_applications()
            progress(f"stopped what an interrupted sbclab left running: {', '.join(orphans)}"
                     + (f"; killed YARN applications {', '.join(killed)}" if killed else ""))
        yield cluster
        return
    if bare:
        progress(f"creating '{spec.name}': master + {spec.workers} x {spec.board}/{spec.storage} nodes "
                 f"({spec.backend}), no daemons")
        with nodes.bare(spec, boards) as transport:
            yield lifecycle.bare_cluster(transport, choices)
        return
    progress(f"bringing up '{spec.name}': {describe(spec)} ({spec.backend})")
    cluster = lifecycle.up(spec, choices, timeout_s=timeout_s, progress=progress, temporary=True, boards=boards,
                           dist_dir=dist_dir)
    try:
        with nodes.interrupts_as_exceptions():
            yield cluster
    finally:
        progress(f"tearing down '{spec.name}'")
        leftovers = nodes.down(spec.name, force=True, purge=purge)
        if leftovers:
            raise SbclabError(f"Could not remove: {', '.join(leftovers)}.",
                              f"Run 'sbclab cluster down --force --name {spec.name}' and check 'ip netns', 'losetup -a'.")


@dataclass
class _Recorded:
    raw: RawRecording | None = None
    active: bool = False  # this block's own recording, not one it runs inside


class Runner:
    """The run path on one cluster: every run of its cells, and of the inputs they need."""

    def __init__(self, cluster: lifecycle.Cluster, store: ResultsStore, monitor: MonitorSettings,
                 provenance: document.Provenance, say=lambda message: None):
        self.cluster, self.store, self.monitor, self.provenance, self.say = cluster, store, monitor, provenance, say
        self.stored: list[RunRecord] = []
        self._history = ThreadPoolExecutor(max_workers=1, thread_name_prefix="history")

    def context(self) -> RunContext:
        return RunContext(cluster=self.cluster, results=self.store.root, measure=self.measure, progress=self.say)

    def start_suite(self) -> None:
        """The idle baseline every run's energy above idle is taken from, and the clocks checked."""
        baseline = idle.measure_idle(self.cluster.transport, self.monitor, self.store, new_id("idle"), self.say)
        spec, preset = self.cluster.spec, self.cluster.choices.preset
        # Unsampled runs store no measurements: the offsets reach their documents only as notes.
        self.provenance.idle_baseline = baseline
        self.provenance.notes = [f"cluster '{spec.name}': master + {spec.workers} x {spec.board}/{spec.storage}, "
                                 f"preset {preset}; inputs are generated on this cluster and reused by its runs",
                                 *idle.clock_notes(baseline)]

    def _trim_before_job(self) -> list[str]:
        """Trim the nodes again right before the job, once HDFS has removed what it was asked to: the
        last run's output, deleted by its validation, leaves the DataNodes' disks seconds later, and
        freed during this job it would be counted by the trim after it as this job's."""
        deadline = time.monotonic() + DELETIONS_TIMEOUT_S
        left = self.cluster.stack.replicas_awaiting_deletion()
        while left and time.monotonic() < deadline:
            time.sleep(1)
            left = self.cluster.stack.replicas_awaiting_deletion()
        nodeops.fstrim(self.cluster.transport)
        if left:
            return [f"HDFS still had {left} replica(s) to delete when the job began: the trim after it may count them"]
        return [] if left == 0 else ["HDFS did not say what it had left to delete before the job"]

    def run_cell(self, cell: Cell, between: BetweenRuns) -> RunRecord:
        """One cell: hygiene, then the run; whatever fails is stored as a failed run."""
        workload = registry.get(cell.workload)
        reset = hygiene.between_runs(self.cluster.transport, between)
        notes = [*reset.notes, reset.summary()]
        started, start = datetime.now(timezone.utc), time.monotonic()
        faults = [FaultSpec(**cell.fault)] if cell.fault else []
        try:
            if workload.needs_stack:
                check_disks(self.cluster.transport, cell)
            return self.measure(workload, cell.engine, workload.parameters(cell.size_bytes, cell.parameters),
                                cell.repetition, cell=cell.as_record(), notes=notes, trim_after=bool(reset.trimmed),
                                faults=faults, variant=cell.variant, job_settings=cell.job_settings)
        except Exception as err:  # noqa: BLE001 - one cell's failure, whatever it is, must not end the experiment
            return self._failed(cell, err, started, start, notes)

    def measure(self, workload: Workload, engine: str, params: dict[str, Any], repetition: int = 1,
                cell: dict[str, Any] | None = None, notes: list[str] = (), trim_after: bool = False,
                faults: list[FaultSpec] = (), variant: str | None = None,
                job_settings: dict[str, dict[str, str]] | None = None) -> RunRecord:
        """One run down the checklist. Inputs made on the way (a TeraGen before a TeraSort) come
        through here too, stored as runs of their own without the cell. `trim_after`: the nodes'
        filesystems were trimmed before the run, so trimming them after it measures what the job
        wrote and deleted. `faults` are applied while the job runs (never while its input is made), and
        so are `job_settings` (the input is made as every variant's is)."""
        ctx = self.context()
        counted = workload.needs_stack and self.cluster.state.phase == "up"
        repaired = self._whole(counted)[1]
        data = workload.prepare(ctx, engine, params)
        # Again after the input was made: what making it lost is that run's, not this one's.
        before, repaired_now = self._whole(counted)
        if trim_after and workload.needs_stack:
            notes = [*notes, *self._trim_before_job()]
        run_id = new_id(engine, workload.name)
        history = None
        jobs_before = self.cluster.stack.applications_submitted() if workload.needs_stack else None
        nemesis = Nemesis(self.cluster, list(faults), run_id, self.say)
        # The scheduler's settings are the ResourceManager's: set before the recording starts and put back
        # after it ends, so that neither refresh counts in the run.
        with scheduler.for_run(self.cluster.stack, job_settings, self.cluster.stack.client_logs() / "scheduler.log"), \
                self.recording(run_id) as recorded:
            with nemesis, self.cluster.stack.job_settings(job_settings) as configuration:
                attempt = workload.run_job(ctx, engine, run_id, params, data)
                # What the faults left is counted before they are undone.
                after = liveness.census(self.cluster.stack) if before is not None else None
            if recorded.active and document.hadoop_jobs(attempt.outcome):
                # The JobHistory server knows a job seconds after its client returns: asked now, its
                # answer comes while the samplers take their last samples and the output is validated.
                history = self._history.submit(phases.hadoop_from_history, self.cluster.stack,
                                               document.hadoop_jobs(attempt.outcome))
        alive = None
        if after is not None:
            # A Spark job's executors live only as long as the job: those its event log saw removed were lost.
            removed = int(((attempt.counters or {}).get("tasks") or {}).get("executors_removed") or 0)
            lost_executors = [f"Spark executors: {removed} removed during the job"] if removed else []
            alive = Liveness(expected=before.expected, before=before.missing, after=[*after.missing, *lost_executors],
                             repaired=[*repaired, *repaired_now])
            if alive.lost and not faults:
                self.say(f"the cluster lost {'; '.join(alive.lost)} during this run: it is flagged")
        fault_effects = self._recovered(nemesis, engine, attempt) if faults else None
        # Before validation, which reads and removes the output: what is discarded now is the job's own.
        trimmed = nodeops.fstrim_bytes(self.cluster.transport) if trim_after and workload.needs_stack else None
        workload.validate(ctx, engine, run_id, params, data, attempt)
        parameters = {**params, **attempt.parameters}
        if variant:
            parameters["variant"] = variant
        if job_settings:
            # In the parameters, so that runs under other job settings are other cells.
            parameters["job_settings"] = ";".join(f"{file}:{name}={value}" for file, props in sorted(job_settings.items())
                                                  for name, value in sorted(props.items()))
        if data.get("run_id"):
            parameters["input_run_id"] = data["run_id"]
        run = document.store_run(
            self.cluster, self.store, self.provenance, run_id=run_id, workload=workload.name, engine=engine,
            parameters=parameters, outcome=attempt.outcome, checks=attempt.checks, result=attempt.result,
            counters=attempt.counters, extra_logs=attempt.extra_logs, repetition=repetition,
            notes=[*notes, *attempt.notes], recording=recorded.raw, input_bytes=data.get("bytes"), cell=cell,
            history=history, trimmed=trimmed, jobs_before=jobs_before, liveness=alive, faults=nemesis.runs,
            fault_effects=fault_effects, configuration=configuration)
        for flag in run.measurements.flags if run.measurements else []:
            if flag.kind == "too_busy":
                self.say(f"{flag.detail}: the run is flagged")
        self.stored.append(run)
        return run

    def _recovered(self, nemesis: Nemesis, engine: str, attempt) -> FaultEffects:
        """The cluster made whole again after a faulted job, timed from the first fault; what the
        engines did about the faults."""
        since = nemesis.first_applied
        recovered_s, recovery = (None, []) if since is None else effects.recover(self.cluster, since, say=self.say)
        if since is None:
            recovery = ["no fault was applied: " + "; ".join(p for f in nemesis.runs for p in f.problems)]
        client_log = attempt.outcome.log.read_text(errors="replace") if attempt.outcome.log.exists() else ""
        return effects.effects(self.cluster, engine, attempt.outcome.exit_status == 0, client_log,
                               attempt.counters or attempt.outcome.counters, attempt.outcome.job_ids, nemesis.watch,
                               recovered_s, recovery)

    def _whole(self, counted: bool) -> tuple[liveness.Census | None, list[str]]:
        """The census of the cluster's daemons, the cluster repaired first where it is short."""
        if not counted:
            return None, []
        return liveness.ensure_whole(self.cluster.stack, say=self.say)

    @contextmanager
    def recording(self, run_id: str):
        """Samplers on every node around the block, every command of the stack marked; the holder's
        .raw is set when the block ends. Inside a recording (an input made on the way to a run),
        nothing new is started."""
        recorded = _Recorded()
        stack = self.cluster.stack
        if not self.monitor.enabled or stack.marks is not None:
            yield recorded
            return
        # Bare nodes (node benchmarks) have no DataNodes to ask.
        counters = stack.datanode_counters if self.cluster.state.phase == "up" else None
        recorder = Recorder(self.cluster.transport, run_id, self.monitor, datanode_counters=counters, diagnose=True)
        recorder.start()
        recorded.active = True
        try:
            with stack.marking(recorder):
                yield recorded
        except BaseException:
            recorder.abandon()
            raise
        recorded.raw = recorder.stop()

    def _failed(self, cell: Cell, err: Exception, started: datetime, start: float, notes: list[str]) -> RunRecord:
        """A run that could not finish: stored with its cause and whatever logs it left."""
        run_id = new_id(cell.engine, cell.workload)
        message = err.message if isinstance(err, SbclabError) else f"{type(err).__name__}: {err}"
        hint = getattr(err, "hint", "")
        outcome = JobOutcome(command=[], exit_status=-1, started_at=started, finished_at=datetime.now(timezone.utc),
                             wall_time_s=time.monotonic() - start, log=Path("/nonexistent"), output="")
        params = {**cell.parameters, "size_bytes": cell.size_bytes} if cell.size_bytes else dict(cell.parameters)
        # The job logs of whatever the cell got to before it failed (input generation, the job itself).
        jobs = self.cluster.stack.client_logs() / "jobs"
        since = time.time() - (time.monotonic() - start) - 1
        extra = {f"jobs/{p.name}": p for p in jobs.glob("*") if p.is_dir() and p.stat().st_mtime >= since}
        run = document.store_run(self.cluster, self.store, self.provenance, run_id=run_id, workload=cell.workload,
                                 engine=cell.engine, repetition=cell.repetition, parameters=params, outcome=outcome,
                                 checks=[Check(name="run finished", passed=False, detail=message)], extra_logs=extra,
                                 notes=[*notes, f"failed: {message}", *([hint] if hint else [])],
                                 cell=cell.as_record())
        self.stored.append(run)
        return run
