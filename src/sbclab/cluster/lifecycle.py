"""A cluster's life: up (nodes, configs, daemons, health), status, down. Nothing half-made survives a failure."""

import shutil
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import paths
from ..errors import SbclabError
from ..stack import config, distribution
from ..stack.daemons import Stack
from ..stack.java import java_home
from . import reaper, system
from .backends import for_state
from .spec import ClusterSpec
from .state import ClusterState


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


@dataclass
class Cluster:
    state: ClusterState
    stack: Stack

    @property
    def spec(self) -> ClusterSpec:
        return self.state.spec

    @property
    def backend(self):
        return self.stack.backend

    @property
    def configuration(self) -> dict:
        return self.state.extra.get("configuration", {})


def boards_settings(inventory, known_hosts: Path | None, accept_new: bool, dist_dir: str | None) -> dict:
    """What a cluster of real boards keeps in its state besides its spec: how to reach the boards."""
    from .remote import DEFAULT_KNOWN_HOSTS
    local = distribution.installed()
    return {"inventory": inventory.model_dump(mode="json"), "known_hosts": str(known_hosts or DEFAULT_KNOWN_HOSTS),
            "accept_new_host_keys": accept_new,
            "dist_dir": dist_dir or f"{inventory.master.data_dir}/sbclab/dist",
            "local_distribution": {"hadoop_home": str(local.hadoop_home), "spark_home": str(local.spark_home),
                                   "jobs_jar": str(local.jobs_jar)}}


def up(spec: ClusterSpec, timeout_s: float = 180, progress=lambda message: None, temporary: bool = False,
       boards: dict | None = None) -> Cluster:
    """Bring a cluster up and wait until it serves; on any failure or interrupt, remove all of it.

    A temporary cluster lives only as long as the sbclab that made it (a suite's own cluster).
    boards: how to reach real boards (boards_settings), for a spec made from an inventory.
    """
    local = distribution.installed()
    if boards is None:
        java_home()  # a missing Java is refused before anything is created
    with interrupts_as_exceptions():
        state = ClusterState.create(spec)
        state.extra["temporary"] = temporary
        state.extra.update(boards or {})
        state.save()  # a board cluster cannot be reached, nor removed, without these
        backend = for_state(state)
        try:
            started = time.monotonic()
            progress(f"creating {len(spec.nodes)} {spec.backend} nodes" if boards is None
                     else f"deploying to {len(spec.nodes)} boards (Java, distribution, folders)")
            backend.create_nodes()
            stack = Stack(backend, backend.distribution(local))
            state.extra["configuration"] = stack.render()
            state.extra["versions"] = local.versions(java=backend.java_version())
            progress("starting daemons")
            stack.start_all(timeout_s)
            state.extra["bring_up_s"] = round(time.monotonic() - started, 3)
            state.set_phase("up")
        except BaseException:
            progress("start-up failed; removing everything it created")
            leftovers = backend.destroy()
            _forget(state, leftovers)
            raise
    return Cluster(state, stack)


def still_up(name: str, spec: ClusterSpec, boards: dict, progress=lambda message: None) -> None:
    """A second `up` of real boards: check that everything is as deployed, change nothing, and say
    what differs (as an error, with the way to apply it) when something does."""
    state = ClusterState.load(name)
    if state.spec.backend != "ssh" or state.spec != spec or state.phase != "up":
        raise SbclabError(f"Cluster '{name}' is up with another shape or inventory (or is '{state.phase}').",
                          f"Take it down with 'sbclab cluster down --name {name}' (the boards keep their data), "
                          "then bring it up again.")
    state.extra.update({k: v for k, v in boards.items() if k != "accept_new_host_keys"})
    backend = for_state(state)
    local = distribution.installed()
    stack = Stack(backend, backend.distribution(local))
    differs = []
    for node in spec.nodes:
        layout = stack.layout(node)
        _, files = config.render(spec, node, layout, stack.dist)
        for file_name, text in files.items():
            if backend.read_text(node, layout.conf_dir / file_name) != text:
                differs.append(f"{file_name} on {node.name}")
    differs += backend.verify_deployment()
    if not stack.hdfs_ready(spec.workers) or len(stack.yarn_nodes()) < spec.workers:
        differs.append("not every DataNode and NodeManager is live")
    if differs:
        raise SbclabError(f"Cluster '{name}' differs from what 'up' would make: {', '.join(differs[:5])}.",
                          f"Apply it with 'sbclab cluster down --name {name}' and 'up' again; the boards keep their data.")
    progress("every board is as deployed and every daemon is live; nothing changed")


@contextmanager
def nodes_only(spec: ClusterSpec, boards: dict | None = None):
    """The cluster's nodes without Hadoop or Spark (for micro-benchmarks); removed on exit, whatever
    happens (boards: their folders made, their processes stopped on exit)."""
    with interrupts_as_exceptions():
        state = ClusterState.create(spec)
        state.extra["temporary"] = True
        state.extra.update(boards or {})
        state.extra["nodes_only"] = True
        backend = for_state(state)
        try:
            backend.create_nodes()
            state.set_phase("nodes")
            yield backend
        finally:
            _forget(state, backend.destroy())


def attach(name: str) -> Cluster:
    """The running cluster of that name."""
    state = ClusterState.load(name)
    if state.phase != "up":
        raise SbclabError(f"Cluster '{name}' is not up (it is '{state.phase}').",
                          f"Remove it with 'sbclab cluster down --force --name {name}', then bring it up again.")
    backend = for_state(state)
    return Cluster(state, Stack(backend, backend.distribution(distribution.installed(check=False))))


def down(name: str, force: bool = False, purge: bool = False, forget: bool = False) -> list[str]:
    """Stop daemons and remove every resource the cluster created; return what could not be removed.

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
    if state.phase != "up" and not force:
        raise SbclabError(f"Cluster '{name}' did not finish coming up (it is '{state.phase}').",
                          f"Remove its leftovers with 'sbclab cluster down --force --name {name}'.")
    with interrupts_as_exceptions():
        state.extra["purge"] = purge
        state.set_phase("removing")
        leftovers = for_state(state).destroy()
        _forget(state, [] if forget else leftovers)
    return leftovers


def abandoned() -> list[str]:
    """Clusters nobody uses: the sbclab that made them has gone, and they were its own (a suite's, or
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
        owner = state.extra.get("owner")
        if owner and reaper.recorded([owner]):
            continue
        if state.extra.get("temporary") or state.phase != "up" or not for_state(state).live_processes():
            names.append(name)
    return names


def _forget(state: ClusterState, leftovers: list[str]) -> None:
    if leftovers:
        state.set_phase("leftovers")
        return
    state.remove_file()
    shutil.rmtree(state.root, ignore_errors=True)


def status(cluster: Cluster) -> dict:
    """What the daemons say about themselves: live DataNodes, YARN nodes, addresses."""
    stack = cluster.stack
    report = {"name": cluster.spec.name, "backend": cluster.spec.backend, "preset": cluster.spec.preset,
              "scale": cluster.spec.scale.model_dump(), "datanodes": [], "yarn_nodes": [], "problems": []}
    try:
        info = stack.namenode_info()
        report["safemode"] = info.get("Safemode") or "off"
        for name, dn in sorted(stack.live_datanodes().items()):
            report["datanodes"].append({"name": name, "address": dn.get("xferaddr"), "capacity": dn.get("capacity"),
                                        "used": dn.get("used"), "remaining": dn.get("remaining")})
    except Exception as err:  # noqa: BLE001 - report what is unreachable rather than fail the whole status
        report["problems"].append(f"NameNode did not answer: {err}")
    try:
        for n in stack.yarn_nodes():
            total = n.get("totalResource") or {}
            report["yarn_nodes"].append({"id": n["id"], "state": n["state"],
                                         "memory_mb": total.get("memory", n.get("availMemoryMB", 0) + n.get("usedMemoryMB", 0)),
                                         "vcores": total.get("vCores", n.get("availableVirtualCores", 0) + n.get("usedVirtualCores", 0))})
    except Exception as err:  # noqa: BLE001
        report["problems"].append(f"ResourceManager did not answer: {err}")
    report["addresses"] = [{"daemon": d, "node": n, "address": a} for d, n, a in stack.addresses()]
    return report


def leftovers_on_host() -> dict[str, int]:
    """Counts of everything sbclab could leave behind, for tests and the teardown benchmark."""
    netns = list(Path("/var/run/netns").glob("sbclab-*")) if Path("/var/run/netns").exists() else []
    mounts = [line for line in Path("/proc/mounts").read_text().splitlines() if str(paths.clusters_dir()) in line]
    loops = []
    if shutil.which("losetup"):
        out = system.run("losetup", "-a", check=False).stdout
        loops = [line for line in out.splitlines() if str(paths.clusters_dir()) in line]
    cgroup_dirs = [p for p in Path("/sys/fs/cgroup").glob("*/sbclab/*")] + list(Path("/sys/fs/cgroup").glob("sbclab/*"))
    links = [p for p in Path("/sys/class/net").glob("sb-*")]
    procs = reaper.mentioning(str(paths.home()) + "/")
    return {"namespaces": len(netns), "mounts": len(mounts), "loop_devices": len(loops),
            "cgroups": len(cgroup_dirs), "links": len(links), "processes": len(procs)}
