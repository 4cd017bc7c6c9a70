"""The main job: a cluster, Hadoop TeraGen → TeraSort → TeraValidate and Spark Pi, every run stored.

If a cluster of the same name and shape is already up it is used and left up; otherwise one is
brought up for the job and always torn down afterwards, also on error or Ctrl-C.
"""

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .cluster import hygiene, lifecycle
from .cluster.spec import ClusterSpec
from .cluster.state import ClusterState
from .errors import SbclabError
from .monitor import idle
from .monitor.settings import MonitorSettings
from .results.schema import RunRecord
from .results.store import ResultsStore
from .stack import distribution
from .stack.daemons import Stack
from .workloads import pi, terasort
from .workloads.base import RunContext, new_id


@dataclass
class SuiteOptions:
    size_bytes: int
    results: Path
    repetitions: int = 1
    pi_maps: int = pi.DEFAULT_MAPS
    pi_samples: int = pi.DEFAULT_SAMPLES
    monitor: MonitorSettings = field(default_factory=MonitorSettings)
    # How to reach real boards (lifecycle.boards_settings) when the spec comes from an inventory.
    boards: dict | None = None


def _same_shape(a: ClusterSpec, b: ClusterSpec) -> bool:
    keep = ("backend", "preset", "board", "storage", "workers")
    return all(getattr(a, k) == getattr(b, k) for k in keep)


@contextmanager
def cluster_for(spec: ClusterSpec, progress=lambda message: None, timeout_s: float = 180, boards: dict | None = None,
                purge: bool = False):
    """The running cluster if it matches the spec, else a new one that is removed on exit (on real
    boards: its daemons stopped, its data kept unless purge)."""
    if spec.name in ClusterState.names():
        cluster = lifecycle.attach(spec.name)
        if not _same_shape(cluster.spec, spec):
            raise SbclabError(
                f"Cluster '{spec.name}' is up with another shape ({cluster.spec.workers} x {cluster.spec.board}/"
                f"{cluster.spec.storage}, {cluster.spec.backend}, preset {cluster.spec.preset}).",
                f"Take it down with 'sbclab cluster down --name {spec.name}', or run with --name another.")
        progress(f"using running cluster '{spec.name}'")
        orphans = cluster.backend.stop_orphans()
        if orphans:
            killed = cluster.stack.kill_applications()
            progress(f"stopped what an interrupted sbclab left running: {', '.join(orphans)}"
                     + (f"; killed YARN applications {', '.join(killed)}" if killed else ""))
        yield cluster
        return
    progress(f"bringing up '{spec.name}': master + {spec.workers} x {spec.board}/{spec.storage} ({spec.backend})")
    cluster = lifecycle.up(spec, timeout_s=timeout_s, progress=progress, temporary=True, boards=boards)
    try:
        with lifecycle.interrupts_as_exceptions():
            yield cluster
    finally:
        progress(f"tearing down '{spec.name}'")
        leftovers = lifecycle.down(spec.name, force=True, purge=purge)
        if leftovers:
            raise SbclabError(f"Could not remove: {', '.join(leftovers)}.",
                              f"Run 'sbclab cluster down --force --name {spec.name}' and check 'ip netns', 'losetup -a'.")


@contextmanager
def nodes_for(spec: ClusterSpec, progress=lambda message: None, boards: dict | None = None):
    """The running cluster if it matches the spec, else bare nodes (no Hadoop or Spark, as the seeds
    measured their boards) removed on exit."""
    if spec.name in ClusterState.names():
        with cluster_for(spec, progress, boards=boards) as cluster:
            yield cluster
        return
    progress(f"creating '{spec.name}': master + {spec.workers} x {spec.board}/{spec.storage} nodes ({spec.backend}), no daemons")
    with lifecycle.nodes_only(spec, boards) as backend:
        yield lifecycle.Cluster(backend.state, Stack(backend, distribution.installed(check=False)))


def preflight_boards(spec: ClusterSpec, boards: dict, workload: str | None, size_bytes: int | None, progress,
                     hadoop: bool = True, need_bytes: int | None = None) -> None:
    """doctor before every suite on real boards: an hour-long suite must not fail on a full disk."""
    from .cluster import doctor
    from .cluster.inventory import Inventory
    progress("preflight of the boards (sbclab doctor)")
    inventory = Inventory.model_validate(boards["inventory"])
    # Only the boards this cluster uses (a cell may run on the first workers of the inventory).
    inventory = inventory.model_copy(update={"hosts": tuple(inventory.host(n.name) for n in spec.nodes)})
    doctor.preflight(inventory, workload, size_bytes, spec.preset,
                     Path(boards["known_hosts"]), boards.get("accept_new_host_keys", False),
                     deploying=spec.name not in ClusterState.names(), say=progress, hadoop=hadoop,
                     tunnels=spec.web_uis == "loopback", need_bytes=need_bytes)


def _before_each_run(ctx: RunContext) -> None:
    """What the seeds did before every run: the page cache dropped and the nodes idle; with the
    fstrim knob, each node's filesystem trimmed too. Said in the run's notes."""
    reset = hygiene.between_runs(ctx.cluster, drop=True, trim="fstrim" in ctx.cluster.spec.knobs)
    ctx.notes = [*reset.notes, reset.summary()]


def with_inventory_power(monitor: MonitorSettings, boards: dict) -> MonitorSettings:
    """The boards' power sources from the inventory, where the monitor settings name none for that
    board: a power file's entry for a board wins, then the inventory's, then the file's default."""
    from .cluster.inventory import Inventory
    power = dict(monitor.power)
    for host in Inventory.model_validate(boards["inventory"]).hosts:
        if host.name not in power and (host.power.source != "model" or "default" not in power):
            power[host.name] = host.power
    return monitor.model_copy(update={"power": power})


def run(spec: ClusterSpec, options: SuiteOptions, progress=lambda message: None) -> list[RunRecord]:
    store = ResultsStore(options.results)
    options.monitor.check_nodes([n.name for n in spec.nodes])
    if options.boards is not None:
        preflight_boards(spec, options.boards, "terasort", options.size_bytes, progress)
        options.monitor = with_inventory_power(options.monitor, options.boards)
    runs: list[RunRecord] = []
    with cluster_for(spec, progress, boards=options.boards) as cluster:
        ctx = RunContext(cluster=cluster, store=store, progress=progress, monitor=options.monitor)
        ctx.idle_baseline = idle.measure_idle(cluster, options.monitor, store, new_id("idle"), progress)
        sort, estimate = terasort.TeraSort(), pi.Pi()
        for repetition in range(1, options.repetitions + 1):
            _before_each_run(ctx)
            runs.append(sort.run(ctx, "hadoop", sort.parameters(options.size_bytes), repetition))
            _before_each_run(ctx)
            runs.append(estimate.run(ctx, "spark", estimate.parameters(None, {
                "maps": options.pi_maps, "samples_per_map": options.pi_samples}), repetition))
    input_runs = {r.parameters.get("input_run_id") for r in runs}
    return [*ctx.store.runs_matching(input_runs), *runs]
