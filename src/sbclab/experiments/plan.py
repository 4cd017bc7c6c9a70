"""Planning an experiment: its cells, the cluster each shape of cell needs, and every impossible
cell refused, named, before anything starts.

One rule sizes disks everywhere (here, and the boards' preflight in doctor.py): the input's
replicas plus the workload's intermediate and output volume per input byte.
"""

import functools
import math
import shutil
from dataclasses import dataclass, field

from .. import faults, paths, profiles
from .. import workloads as registry
from ..cluster import calibration, containers, spec as cluster_spec
from ..cluster.inventory import BoardAccess
from ..cluster.nodes import default_backend
from ..cluster.spec import ClusterSpec
from ..errors import SbclabError
from ..results.store import ResultsStore, set_aside_warning
from ..stack import lifecycle, presets, versions as stack_versions
from ..stack.choices import StackChoices
from ..units import format_size
from .model import Cell, Experiment, Shape, cells, default_node_names


def bytes_needed(workload_name: str, size: int, workers: int, preset: str) -> int:
    """Bytes the cluster's disks hold at the peak of one cell: the input's replicas and the workload's
    intermediate data and output."""
    return int(size * (presets.replication(preset, workers) + registry.get(workload_name).footprint_per_input_byte))


def storage_needed(experiment: Experiment, workers: int, preset: str) -> tuple[int, str]:
    """Bytes the cluster's disks must hold at the peak of the largest cell, and which cell that is."""
    worst, which = 0, ""
    for size in experiment.sizes:
        for name in experiment.workloads:
            if not registry.get(name).sized:
                continue
            need = bytes_needed(name, size, workers, preset)
            if need > worst:
                worst, which = need, f"{name} at {format_size(size)}"
    return worst, which


def disk_per_node(experiment: Experiment, workers: int) -> int:
    if experiment.cluster.disk_size:
        return experiment.cluster.disk_size
    biggest = max((storage_needed(experiment, workers, preset)[0] for preset in experiment.presets), default=0)
    return max(cluster_spec.DEFAULT_DISK_BYTES, int(biggest * 1.25 / workers) + 2**30)


def needs_stack(experiment: Experiment) -> bool:
    """Whether any cell needs HDFS and YARN; node benchmarks and MPI run on bare nodes."""
    names = [*experiment.workloads, *(("mix-concurrent",) if experiment.concurrent else ())]
    return any(registry.get(name).needs_stack for name in names)


def backend_for(given: str | None, say) -> str:
    if given is not None:
        return given
    chosen = default_backend()
    if chosen == "processes":
        say("this host cannot shape nodes (not root, or no cgroup controllers): using the processes backend; "
            "results are unshaped.")
    return chosen


def spec_for(*, name: str, workers: int, board: str, storage: str, backend: str,
             subnet: str, disk_size: int | None = None, scale_factor: float | None = None,
             memory_factor: float | None = None, knobs: tuple[str, ...] = (),
             layout: str = "separate-master", runtime: str = "native", master_board: str | None = None,
             master_storage: str | None = None, say=lambda message: None) -> ClusterSpec:
    """A cluster of `workers` workers of one board and medium, laid out and shaped to this host."""
    profiles.check_pair(board, profiles.resolve_storage(storage))  # a wrong name is refused before anything is measured
    # Shaping an emulated node to a board needs this host's figures: measured once, then cached.
    host = calibration.current(progress=say) if backend == "emulated" else None
    built = cluster_spec.build(name=name, backend=backend, board=board, storage=storage,
                               workers=workers, subnet=subnet, disk_bytes=disk_size or cluster_spec.DEFAULT_DISK_BYTES,
                               calibration=host, scale_factor=scale_factor, memory_factor=memory_factor,
                               layout=layout, master_board=master_board if layout != "master-is-worker" else None,
                               master_storage=master_storage if layout != "master-is-worker" else None)
    return built.model_copy(update={"knobs": tuple(knobs), "runtime": runtime})


def board_spec_for(inventory, *, name: str, workers: int | None = None, layout: str = "separate-master",
                   knobs: tuple[str, ...] = (), runtime: str = "native") -> ClusterSpec:
    """A cluster of real boards, specified in this one place for `cluster up`, `run` and experiments:
    the inventory's master and its first `workers` boards (all of them when None; in the
    master-is-worker layout the master counts as one)."""
    if workers is not None:
        inventory = inventory.first_workers(workers - 1 if layout == "master-is-worker" else workers)
    spec = cluster_spec.from_inventory(inventory, name=name, layout=layout)
    return spec.model_copy(update={"knobs": tuple(knobs), "runtime": runtime})


def choices_for(*, preset: str, stack: str = stack_versions.DEFAULT, settings: dict[str, dict[str, str]] | None = None,
                spark_manager: str = "yarn", data_scale: float = 1.0, on_boards: bool = False,
                expose_web_uis: bool = False) -> StackChoices:
    """What a cluster runs, chosen in this one place for `cluster up`, `run` and experiments. Real
    boards keep their web UIs on loopback unless the user exposes them (a board's address is reached
    by whoever shares its network; this host's nodes are on a private bridge)."""
    return StackChoices(preset=preset, stack=stack, settings=StackChoices.settings_of(settings),
                        spark_manager=spark_manager, data_scale=data_scale,
                        web_uis="loopback" if on_boards and not expose_web_uis else "cluster")


def cell_choices(experiment: Experiment, cell: Cell, on_boards: bool = False) -> StackChoices:
    """What the cluster of a cell's shape runs: the cell's preset and stack, the experiment's settings."""
    settings = experiment.cluster
    return choices_for(preset=cell.preset, stack=cell.stack, settings=settings.settings,
                       spark_manager=settings.spark_manager, data_scale=settings.data_scale, on_boards=on_boards,
                       expose_web_uis=settings.expose_web_uis)


@dataclass(frozen=True)
class SharedScale:
    """The one emulation scale of an experiment: the largest every shape can be given. Times of
    different worker counts, media or boards are only comparable at one scale."""

    factor: float
    memory_factor: float
    set_by: str  # the shape that limits it, and by what

    @classmethod
    def of(cls, specs: list[ClusterSpec]) -> "SharedScale":
        tightest = min(specs, key=lambda s: s.scale.factor)
        memory = min(s.scale.memory_factor for s in specs)
        return cls(tightest.scale.factor, memory,
                   f"{tightest.workers} x {tightest.board}/{tightest.storage} ({tightest.scale.limited_by})")

    def applied(self, spec: ClusterSpec, rebuild) -> ClusterSpec:
        shared = spec
        if (spec.scale.factor, spec.scale.memory_factor) != (self.factor, self.memory_factor):
            shared = rebuild(scale_factor=self.factor, memory_factor=self.memory_factor)
        return shared.model_copy(update={"scale": shared.scale.model_copy(update={"limited_by": self.set_by})})


@dataclass
class Plan:
    experiment: Experiment
    cells: list[Cell]
    done: set[str]
    specs: dict[Shape, ClusterSpec] = field(default_factory=dict)
    choices: dict[Shape, StackChoices] = field(default_factory=dict)
    boards: BoardAccess | None = None
    # What each shape could have on its own, where one scale is shared by all of them.
    own_scales: dict[Shape, cluster_spec.Scale] = field(default_factory=dict)
    shared_scale: SharedScale | None = None

    @property
    def todo(self) -> list[Cell]:
        return [c for c in self.cells if c.key not in self.done]

    @property
    def bare(self) -> bool:
        """Nodes without Hadoop or Spark suffice."""
        return not needs_stack(self.experiment)


def completed_keys(store: ResultsStore, on_boards: bool = False) -> set[str]:
    """Cells stored valid, on real boards or on emulated and local nodes as asked: the same cell
    measured on the other kind of cluster is not done."""
    return set(completed_scales(store, on_boards))


def completed_scales(store: ResultsStore, on_boards: bool = False) -> dict[str, set[float | None]]:
    """Each cell stored valid, with the scale factors it was emulated at (None: not emulated)."""
    found: dict[str, set[float | None]] = {}
    if not store.runs_dir.exists():
        return found
    for run in store.runs():
        if run.cell and run.valid and (run.cluster.backend == "ssh") == on_boards:
            found.setdefault(run.cell["key"], set()).add(run.scale.factor if run.cluster.emulated else None)
    return found


def _done_at_scale(found: Plan, stored: dict[str, set[float | None]]) -> set[str]:
    """Cells stored at the scale this plan runs their shape at: the same cell emulated at another scale
    (another experiment's, with other shapes beside it) is not done, or one table would mix scales."""
    done = set()
    for cell in found.cells:
        spec = found.specs.get(cell.shape)
        factors = stored.get(cell.key, set())
        if spec is None or spec.backend != "emulated":
            if factors:
                done.add(cell.key)
        elif any(f is not None and math.isclose(f, spec.scale.factor, rel_tol=1e-3) for f in factors):
            done.add(cell.key)
    return done


def _warn_set_aside(store: ResultsStore, say) -> None:
    """A damaged document's cell is not done: said, as the cell runs again."""
    if store.set_aside:
        say(f"warning: {set_aside_warning(store.root, store.set_aside)} Their cells count as not run.")


def prepare(experiment: Experiment, results, say=lambda message: None, boards: BoardAccess | None = None) -> Plan:
    """Every cluster shape checked against this host (or the inventory's boards) before anything
    starts; an impossible cell is named."""
    store = ResultsStore(results)
    if boards is not None:
        def node_names(workers: int, layout: str) -> list[tuple[str, str]]:
            boards_beside = workers - 1 if layout == "master-is-worker" else workers
            return [(h.name, h.role) for h in boards.inventory.first_workers(boards_beside).hosts]
        found = Plan(experiment, cells(experiment, node_names), completed_keys(store, on_boards=True), boards=boards)
        _check_faults(experiment, "ssh", node_names)
        _warn_set_aside(store, say)
        _native_only_where_no_containers(found, "ssh", say)
        _board_specs(found)
        return found
    stored = completed_scales(store)
    _warn_set_aside(store, say)
    found = Plan(experiment, cells(experiment), set(stored))
    settings = experiment.cluster
    backend = backend_for(settings.backend, say)
    _check_faults(experiment, backend, default_node_names)
    _native_only_where_no_containers(found, backend, say)
    shapes = {}
    for cell in found.cells:
        if cell.shape in shapes:
            continue
        rebuild = functools.partial(spec_for, name=settings.name, workers=cell.workers, board=cell.board,
                                    storage=cell.storage, backend=backend, subnet=settings.subnet,
                                    disk_size=disk_per_node(experiment, cell.workers), knobs=tuple(settings.knobs),
                                    layout=cell.layout, runtime=cell.runtime, master_board=settings.master_board,
                                    master_storage=settings.master_storage, say=say)
        try:
            shapes[cell.shape] = (cell, rebuild, rebuild(scale_factor=settings.scale))
        except SbclabError as err:
            raise SbclabError(f"The experiment cannot run cell {cell.label()}: {err.message}", err.hint) from err
    if backend == "emulated" and settings.scale is None and len(shapes) > 1:
        found.own_scales = {shape: spec.scale for shape, (_, _, spec) in shapes.items()}
        found.shared_scale = SharedScale.of([spec for _, _, spec in shapes.values()])
    for shape, (cell, rebuild, spec) in shapes.items():
        where = f"cell {cell.label()}"
        try:
            if found.shared_scale is not None:
                spec = found.shared_scale.applied(spec, rebuild)
            choices = cell_choices(experiment, cell)
            if not found.bare:
                lifecycle.check(spec, choices, _engines(found, shape))
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
        found.choices[cell.shape] = choices
    found.done = _done_at_scale(found, stored)
    return found


def _check_faults(experiment: Experiment, backend: str, node_names) -> None:
    """Faults only where they can be applied: on a cluster's workers, during a Hadoop or Spark job."""
    for spec in experiment.faults:
        why = faults.get(spec.kind).unsupported(backend)
        if why:
            raise SbclabError(f"The experiment's fault '{spec.label}' cannot be applied here: {why}.",
                              "Run it on the emulated backend (as root) or on boards.")
        for name in experiment.workloads:
            if not registry.get(name).needs_stack:
                raise SbclabError(f"The experiment's faults apply during Hadoop and Spark jobs; {name} runs none.",
                                  "Put the node benchmarks in an experiment of their own, without faults.")
        for workers in experiment.workers:
            for layout in experiment.layouts:
                named = [n for n, role in node_names(workers, layout) if role == "worker"]
                if spec.node != "random" and spec.node not in named:
                    raise SbclabError(f"The experiment's fault '{spec.label}' names {spec.node}, not a worker of its "
                                      f"{workers}-worker cluster ({', '.join(named)}).",
                                      "Name one of those workers, or node: random.")


def why_no_containers(backend: str) -> str | None:
    """Why nodes of this backend cannot run containers here, in a few words; None when they can (the
    nodes themselves are asked again when their cluster comes up, containers.runtime_on)."""
    if backend == "ssh":
        # The image is built here and shipped; each board's own runtime is asked when its cluster comes up.
        found = containers.runtime_here()
        return f"the node image is built on this host for the boards, and {found}" if isinstance(found, str) else None
    if backend != "emulated":
        return "containers need emulated nodes (root and cgroups); these nodes are plain processes of this host"
    found = containers.runtime_here()
    return found if isinstance(found, str) else None


def _native_only_where_no_containers(found: Plan, backend: str, say) -> None:
    """The container cells dropped, said once, where no container can run: the native cells go ahead."""
    if not any(c.runtime == "container" for c in found.cells):
        return
    reason = why_no_containers(backend)
    if reason:
        say(f"no container cells: {reason}; the native cells go ahead")
        found.cells = [c for c in found.cells if c.runtime != "container"]


def _engines(found: Plan, shape) -> tuple[str, ...]:
    """The engines whose jobs the cells of one cluster shape run."""
    cells = [c for c in found.cells if c.shape == shape]
    return needed_engines([(c.workload, c.engine) for c in cells],
                          standalone=any(c.spark_manager == "standalone" for c in cells))


def needed_engines(cells: list[tuple[str, str]], standalone: bool = False) -> tuple[str, ...]:
    """The engines whose jobs these (workload, engine) cells run, with MapReduce for a workload whose
    input is made or whose output is checked by MapReduce jobs whichever engine it runs on (on YARN:
    Spark's standalone manager has Spark make them)."""
    engines = {engine for _, engine in cells}
    if not standalone and any(registry.get(w).mapreduce_around for w, engine in cells if engine == "spark"):
        engines.add("hadoop")
    return tuple(sorted(engines & {"hadoop", "spark"}))


def _board_specs(found: Plan) -> None:
    """A cell with N workers runs on the inventory's master and first N workers, whose profiles
    must be the cell's."""
    inventory = found.boards.inventory
    found.experiment.monitor.check_nodes([h.name for h in inventory.hosts])
    for cell in found.cells:
        if cell.shape in found.specs:
            continue
        settings = found.experiment.cluster
        try:
            spec = board_spec_for(inventory, name=settings.name, workers=cell.workers, layout=cell.layout,
                                  knobs=tuple(settings.knobs), runtime=cell.runtime)
            choices = cell_choices(found.experiment, cell, on_boards=True)
            if not found.bare:
                lifecycle.check(spec, choices, _engines(found, cell.shape))
        except SbclabError as err:
            raise SbclabError(f"The experiment cannot run cell {cell.label()}: {err.message}", err.hint) from err
        if (cell.board, profiles.resolve_storage(cell.storage)) != (spec.board, spec.storage):
            raise SbclabError(f"Cell {cell.label()} asks for {cell.board}/{cell.storage}; the inventory's workers are "
                              f"{spec.board}/{spec.storage}.",
                              "Leave board and storage out of the experiment (they come from the inventory), "
                              "or give the inventory's.")
        found.specs[cell.shape] = spec
        found.choices[cell.shape] = choices


def _check_host_disk(spec: ClusterSpec) -> None:
    """Emulated nodes' disks are images on this host and a processes node's disk is a folder of it:
    either way this host's free space holds them, as their cluster would find out only once up."""
    if spec.backend == "ssh":
        return
    paths.home().mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(paths.home()).free
    need = sum(n.disk_bytes for n in spec.nodes)
    if need > free:
        raise SbclabError(f"{spec.workers} workers need {format_size(need)} of node disks and {paths.home()} has "
                          f"{format_size(free)} free.",
                          "Give smaller sizes or a smaller cluster.disk_size, free space, or set SBCLAB_HOME to a "
                          "larger disk.")

