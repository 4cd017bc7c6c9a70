"""A cluster's nodes come and go here: made from a spec, reached again by name, removed with
everything they made. Nothing half-made survives a failure or an interrupt."""

import os
import shutil
import signal
from contextlib import contextmanager
from pathlib import Path

from .. import paths
from ..errors import SbclabError
from . import cgroups, containers, dirty, faultrecords, reaper, system
from .emulated import EmulatedTransport
from .inventory import BoardAccess
from .processes import ProcessesTransport
from .spec import ClusterSpec
from .ssh import SshTransport
from .state import ClusterInfo, ClusterState
from .transport import Transport

TRANSPORTS: dict[str, type[Transport]] = {t.name: t for t in (EmulatedTransport, ProcessesTransport, SshTransport)}


def default_backend() -> str:
    """emulated when this host can shape nodes (root and cgroups), else processes."""
    if os.geteuid() != 0:
        return "processes"
    try:
        cgroups.version()
    except SbclabError:
        return "processes"
    return "emulated"


def transport_for(state: ClusterState) -> Transport:
    return TRANSPORTS[state.spec.backend](state)


@contextmanager
def interrupts_as_exceptions():
    """Turn SIGTERM and SIGHUP into KeyboardInterrupt so cleanup runs as it does for Ctrl-C."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def create(spec: ClusterSpec, temporary: bool = False, boards: BoardAccess | None = None,
           nodes_only: bool = False) -> Transport:
    """The cluster's nodes, made; on any failure everything made so far is removed and the error raised.

    Call inside interrupts_as_exceptions(), and remove the nodes (remove()) if what follows fails."""
    state = ClusterState.create(spec, ClusterInfo(temporary=temporary, boards=boards, nodes_only=nodes_only))
    transport = transport_for(state)
    try:
        transport.create_nodes()
    except BaseException:
        remove(transport)
        raise
    return transport


def remove(transport: Transport, forget: bool = False) -> list[str]:
    """Everything the nodes run and hold, removed; with forget, the record goes even if some could
    not be (boards that cannot be reached). What could not be removed."""
    # Faults first: a paused process takes no polite stop, and a board keeps its packet filters.
    _, unhealed = faultrecords.heal_all(transport)
    leftovers = [*unhealed, *transport.destroy()]
    state = transport.state
    if leftovers and not forget:
        state.set_phase("leftovers")
        return leftovers
    state.remove_file()
    shutil.rmtree(state.root, ignore_errors=True)
    return leftovers


@contextmanager
def bare(spec: ClusterSpec, boards: BoardAccess | None = None):
    """The cluster's nodes without Hadoop or Spark (node benchmarks); removed on exit, whatever
    happens (boards: their folders made, their processes stopped on exit)."""
    with interrupts_as_exceptions():
        transport = create(spec, temporary=True, boards=boards, nodes_only=True)
        try:
            transport.finish_shaping()
            transport.state.set_phase("nodes")
            yield transport
        finally:
            remove(transport)


def down(name: str, force: bool = False, purge: bool = False, forget: bool = False) -> list[str]:
    """Stop everything and remove every resource the cluster created; what could not be removed.

    Real boards keep their HDFS and YARN data unless purge is given. With forget, this host's record
    of a cluster on boards goes even when some of them cannot be reached (a board that died or was
    reinstalled would otherwise keep the cluster's name taken for ever)."""
    try:
        state = ClusterState.load(name)
    except SbclabError:
        if force:
            return []
        raise
    if forget and state.spec.backend != "ssh":
        raise SbclabError(f"--forget is for clusters on real boards; '{name}' runs on this host.",
                          f"Run 'sbclab cluster down --force --name {name}' as root: what is on this host can be removed.")
    if state.phase not in ("up", "nodes") and not force:
        raise SbclabError(f"Cluster '{name}' did not finish coming up (it is '{state.phase}').",
                          f"Remove its leftovers with 'sbclab cluster down --force --name {name}'.")
    with interrupts_as_exceptions():
        state.info.purge = purge
        state.set_phase("removing")
        return remove(transport_for(state), forget=forget)


def abandoned() -> list[str]:
    """Clusters nobody uses: the sbclab that made them has gone, and they were its own (a run's, or
    one that never finished coming up) or none of their processes runs.

    What a killed `sbclab run` leaves behind; a cluster brought up by `sbclab cluster up` keeps its
    daemons running and is not counted, even though the command that made it has exited.
    """
    names = []
    for name in ClusterState.names():
        try:
            state = ClusterState.load(name)
        except SbclabError:
            continue
        owner = state.info.owner
        if owner and reaper.recorded([owner.model_dump()]):
            continue
        if state.info.temporary or state.phase != "up" or not transport_for(state).live_processes():
            names.append(name)
    return names


def resources_on_host(home: Path | None = None) -> dict[str, frozenset[str]]:
    """Everything of sbclab's on this host that a cluster could leave behind, by kind: namespaces,
    cgroups and links of any sbclab on the host, mounts, loop devices and processes under this home
    (or the one given), containers in sbclab's own podman store."""
    home = home or paths.home()
    clusters = str(home / paths.clusters_dir().name)
    netns = list(Path("/var/run/netns").glob("sbclab-*")) if Path("/var/run/netns").exists() else []
    mounts = [line for line in Path("/proc/mounts").read_text().splitlines() if clusters in line]
    loops = []
    if shutil.which("losetup"):
        out = system.run("losetup", "-a", check=False).stdout
        loops = [line for line in out.splitlines() if clusters in line]
    cgroup_dirs = [p for p in Path("/sys/fs/cgroup").glob("*/sbclab/*")] + list(Path("/sys/fs/cgroup").glob("sbclab/*"))
    links = [p for p in Path("/sys/class/net").glob("sb-*")]
    procs = [str(proc.pid) for proc in reaper.mentioning(str(home) + "/")]
    return {"namespaces": frozenset(map(str, netns)), "mounts": frozenset(mounts), "loop_devices": frozenset(loops),
            "cgroups": frozenset(map(str, cgroup_dirs)), "links": frozenset(map(str, links)), "processes": frozenset(procs),
            "dirty_limits": dirty.limited_loop_devices(), "containers": frozenset(containers.leftover_names())}


def leftovers_on_host(besides: dict[str, frozenset[str]] | None = None) -> dict[str, int]:
    """Counts of what sbclab could leave behind, for tests and the teardown benchmark; besides: what
    was there before (another sbclab's cluster on the same host), not counted."""
    before = besides or {}
    return {kind: len(found - before.get(kind, frozenset())) for kind, found in resources_on_host().items()}
