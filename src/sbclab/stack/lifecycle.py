"""A Hadoop and Spark cluster's life: up (nodes, stack, configs, daemons, health), reached again by
name, asked how it is. Nothing half-made survives a failure: the nodes go with it."""

import time
from dataclasses import dataclass
from pathlib import Path

from ..cluster import containers, nodes, systems
from ..cluster.inventory import BoardAccess
from ..cluster.spec import ClusterSpec
from ..cluster.state import ClusterState
from ..cluster.transport import Transport
from ..errors import SbclabError
from . import config, deploy, distribution, firewall, heaps, presets, sizing
from .choices import StackChoices
from .daemons import Stack, logs_dir
from .distribution import Distribution
from .java import java_home
from .record import ContainerRecord, StackRecord


@dataclass
class Cluster:
    state: ClusterState
    transport: Transport
    stack: Stack

    @property
    def spec(self) -> ClusterSpec:
        return self.state.spec

    @property
    def choices(self) -> StackChoices:
        return self.stack.choices

    @property
    def configuration(self) -> dict:
        """The master's configuration, with the running job's own settings over it while it runs."""
        return self.stack.job_values or self.stack.record.configuration


def _as_seen_by_nodes(transport: Transport, local: Distribution, record: StackRecord) -> Distribution:
    """The distribution where the nodes find it: this host's cache, or the boards' copy."""
    return local.relocated(Path(record.dist_dir)) if record.dist_dir else local


def check(spec: ClusterSpec, choices: StackChoices, engines=("hadoop", "spark")) -> None:
    """What the stack needs of a cluster's shape to run jobs of these engines, before anything is made
    (a stack not yet fetched is fetched by the cluster that first needs it)."""
    presets.check(choices.preset)
    presets.overrides(spec, choices.preset)  # 'tuned' on a board and medium no tuning measured is refused here
    sizing.check(spec)
    config.check_memory(spec, choices, engines)


def _fetched(stack: str, progress) -> Distribution:
    """The stack's distribution, fetched now where the cache lacks it: a command fetches the stacks it
    needs when it needs them, not every stack sbclab knows."""
    try:
        distribution.require_fetched(distribution.installed(stack, check=False))
    except SbclabError:
        progress(f"stack {stack}: fetching what the cache lacks (its first use here)")
        distribution.fetch(stack)
    return distribution.installed(stack)


def up(spec: ClusterSpec, choices: StackChoices | None = None, timeout_s: float = 180, progress=lambda message: None,
       temporary: bool = False, boards: BoardAccess | None = None, dist_dir: str | None = None) -> Cluster:
    """Bring a cluster up with what was chosen to run on it (upstream's settings and the default
    stack when nothing was) and wait until it serves; on any failure or interrupt, remove all of it.

    A temporary cluster lives only as long as the sbclab that made it (a run's own cluster).
    boards: how to reach real boards, for a spec made from an inventory; dist_dir where the
    distribution goes on them."""
    # What runs on the cluster is checked by the run's plan: a cluster up serves both engines or one.
    # Its daemons, though, must fit its nodes whatever runs.
    choices = choices or StackChoices()
    presets.check(choices.preset)
    presets.overrides(spec, choices.preset)
    sizing.check(spec)
    heaps.check(spec, standalone=choices.spark_manager == "standalone")
    local = _fetched(choices.stack, progress)
    if boards is None:
        java_home(local.stack.java)  # a missing Java is refused before anything is created
    with nodes.interrupts_as_exceptions():
        started = time.monotonic()
        progress(f"creating {len(spec.nodes)} {spec.backend} nodes" if boards is None
                 else f"deploying to {len(spec.nodes)} boards (Java, distribution, folders)")
        transport = nodes.create(spec, temporary=temporary, boards=boards)
        state = transport.state
        try:
            record = StackRecord(choices=choices, dist_dir=(dist_dir or deploy.dist_dir_default(boards.inventory.master.data_dir))
                                 if boards else None)
            if boards is not None:
                deploy.to_boards(transport, record, local, logs_dir(spec.name),
                                 Path(boards.jdk) if boards.jdk else None)
                firewall.close_ports(transport, spec, progress)
            if spec.runtime == "container":
                record.container = _container_record(transport, progress)
            stack = Stack(transport, _as_seen_by_nodes(transport, local, record), record)
            record.configuration = stack.render()
            master_java = record.java.get(spec.master.name)
            record.versions = local.versions(java=master_java.version if master_java else None)
            record.systems = {name: {**facts, "java": record.java[name].version if name in record.java
                                     else record.versions["java"]}
                              for name, facts in systems.of_cluster(transport).items()}
            record.save(state.root)
            if stack.in_container():
                progress(f"starting a {record.container.runtime} container on every node ({record.container.image})")
                stack.start_containers(timeout_s)
            progress("starting daemons")
            stack.start_all(timeout_s)
            transport.finish_shaping()
            record.bring_up_s = round(time.monotonic() - started, 3)
            record.save(state.root)
            state.set_phase("up")
        except BaseException:
            progress("start-up failed; removing everything it created")
            nodes.remove(transport)
            raise
    return Cluster(state, transport, stack)


def _container_record(transport, progress) -> ContainerRecord:
    """The runtime the nodes run their containers with and the node image, built here if need be;
    refused with the reason where no runtime can run a node's containers."""
    runtime = containers.runtime_on(transport, transport.spec.master)
    if isinstance(runtime, str):
        raise SbclabError(f"The cluster's runtime is container, but {runtime}.",
                          "Run its cells with runtime native, or install podman (make setup).")
    image = containers.image_for(transport, runtime, transport.spec.nodes, progress)
    return ContainerRecord(runtime=runtime.name, version=runtime.version, options=list(runtime.options),
                           run_options=list(runtime.run_options), image=image.tag, image_digest=image.digest)


def attach(name: str) -> Cluster:
    """The running cluster of that name."""
    state = ClusterState.load(name)
    if state.phase != "up":
        raise SbclabError(f"Cluster '{name}' is not up (it is '{state.phase}').",
                          f"Remove it with 'sbclab cluster down --force --name {name}', then bring it up again.")
    transport = nodes.transport_for(state)
    record = StackRecord.load(state.root)
    local = distribution.installed(record.choices.stack, check=False)
    return Cluster(state, transport, Stack(transport, _as_seen_by_nodes(transport, local, record), record))


def bare_cluster(transport: Transport, choices: StackChoices | None = None) -> Cluster:
    """Nodes without Hadoop or Spark (node benchmarks): the stack only keeps their commands' logs."""
    record = StackRecord(choices=choices or StackChoices(), systems=systems.of_cluster(transport))
    return Cluster(transport.state, transport,
                   Stack(transport, distribution.installed(record.choices.stack, check=False), record))


def still_up(name: str, spec: ClusterSpec, choices: StackChoices, boards: BoardAccess,
             progress=lambda message: None) -> None:
    """A second `up` of real boards: check that everything is as deployed, change nothing, and say
    what differs (as an error, with the way to apply it) when something does."""
    state = ClusterState.load(name)
    record = StackRecord.load(state.root) if state.spec.backend == "ssh" else None
    if record is None or state.spec != spec or record.choices != choices or state.phase != "up":
        raise SbclabError(f"Cluster '{name}' is up with another shape or inventory (or is '{state.phase}').",
                          f"Take it down with 'sbclab cluster down --name {name}' (the boards keep their data), "
                          "then bring it up again.")
    # The host keys may be read from another file this time; the boards are the same.
    state.info.boards = state.info.boards.model_copy(update={"known_hosts": boards.known_hosts})
    transport = nodes.transport_for(state)
    stack = Stack(transport, _as_seen_by_nodes(transport, distribution.installed(choices.stack, check=False), record),
                  record)
    differs = []
    for node in spec.nodes:
        layout = stack.layout(node)
        _, files = config.render(spec, choices, node, layout, stack.dist)
        for file_name, text in files.items():
            if transport.read_text(node, layout.conf_dir / file_name) != text:
                differs.append(f"{file_name} on {node.name}")
    differs += deploy.differences(transport, stack.record, distribution.installed(choices.stack))
    executors_hosts = len(stack.spark_workers() or []) if choices.spark_manager == "standalone" else len(stack.yarn_nodes())
    if not stack.hdfs_ready(spec.workers) or executors_hosts < spec.workers:
        differs.append("not every DataNode and NodeManager (or Spark worker) is live")
    if differs:
        raise SbclabError(f"Cluster '{name}' differs from what 'up' would make: {', '.join(differs[:5])}.",
                          f"Apply it with 'sbclab cluster down --name {name}' and 'up' again; the boards keep their data.")
    progress("every board is as deployed and every daemon is live; nothing changed")


def status(cluster: Cluster) -> dict:
    """What the daemons say about themselves: live DataNodes, YARN nodes, addresses."""
    stack = cluster.stack
    report = {"name": cluster.spec.name, "backend": cluster.spec.backend, "preset": cluster.choices.preset,
              "scale": cluster.spec.scale.model_dump(), "datanodes": [], "yarn_nodes": [], "problems": []}
    try:
        info = stack.namenode_info()
        report["safemode"] = info.get("Safemode") or "off"
        for name, dn in sorted(stack.live_datanodes().items()):
            report["datanodes"].append({"name": name, "address": dn.get("xferaddr"), "capacity": dn.get("capacity"),
                                        "used": dn.get("used"), "remaining": dn.get("remaining")})
    except Exception as err:  # noqa: BLE001 - report what is unreachable rather than fail the whole status
        report["problems"].append(f"NameNode did not answer: {err}")
    report["spark_manager"] = cluster.choices.spark_manager
    if cluster.choices.spark_manager == "standalone":
        workers = stack.spark_workers()
        if workers is None:
            report["problems"].append("the Spark master did not answer")
        report["spark_workers"] = [{"id": w.get("id"), "state": w.get("state"), "memory_mb": w.get("memory"),
                                    "cores": w.get("cores")} for w in workers or []]
    else:
        try:
            for n in stack.yarn_nodes():
                total = n.get("totalResource") or {}
                report["yarn_nodes"].append({"id": n["id"], "state": n["state"],
                                             "memory_mb": total.get("memory", n.get("availMemoryMB", 0) + n.get("usedMemoryMB", 0)),
                                             "vcores": total.get("vCores", n.get("availableVirtualCores", 0) + n.get("usedVirtualCores", 0))})
        except Exception as err:  # noqa: BLE001
            report["problems"].append(f"ResourceManager did not answer: {err}")
    report["addresses"] = [{"daemon": d, "node": n, "address": a} for d, n, a in stack.addresses()]
    # On boards these URLs are SSH forwards that live as long as this command: `sbclab cluster ui` holds them.
    report["web_uis"] = [{"ui": title, "url": url} for title, url in stack.web_uis()]
    return report
