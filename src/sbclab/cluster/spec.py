"""The shape of a cluster: which nodes, with which resources, on which backend.

A spec is computed once at `cluster up` and stored in the cluster's state file and in every run,
so a run says exactly what each node was given.
"""

import ipaddress
import os
import re
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from .. import profiles
from ..errors import SbclabError
from . import dirty

if TYPE_CHECKING:
    from .calibration import HostCalibration
    from .inventory import Inventory

BACKENDS = ("emulated", "processes")
LAYOUTS = ("separate-master", "master-is-worker", "desktop-master")
RUNTIMES = ("native", "container")
_NAME = re.compile(r"^[a-z][a-z0-9]{0,7}$")


class NodeSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    role: Literal["master", "worker"]
    # Whether it runs a DataNode and a NodeManager (or Spark worker): every worker, and the master
    # in the master-is-worker layout.
    runs_tasks: bool
    address: str
    board: str
    storage: str
    # What the node is given on this host, after scaling (see Scale).
    cpu_cores: float
    memory_bytes: int
    disk_bytes: int
    disk_read_bytes_s: float
    disk_write_bytes_s: float
    disk_read_iops: float
    disk_write_iops: float
    link_mbit_s: float
    # Dirty pages the node may hold before a writer waits for its disk (0: the host kernel's own
    # limits, as on a real board).
    dirty_bytes: int = 0

    @model_validator(mode="before")
    @classmethod
    def _tasks_follow_the_role(cls, data):
        # Nodes stored before layouts were chosen ran tasks exactly when they were workers.
        if isinstance(data, dict) and "runs_tasks" not in data:
            return {**data, "runs_tasks": data.get("role") == "worker"}
        return data


class Scale(BaseModel):
    """How much of each profile this host could give.

    `factor` applies to CPU, disk bandwidth/IOPS and link rate together, so their ratios hold;
    memory has its own factor because JVM heaps need real bytes, not proportional ones.
    `core_speed` is how many host cores one board core is worth (sysbench, 1 thread).
    """

    model_config = ConfigDict(frozen=True)

    factor: float
    memory_factor: float
    host_cores: int
    host_memory_bytes: int
    calibrated: bool = False
    core_speed: float = 1.0
    limited_by: str = "cpu"
    host_calibration: str | None = None
    note: str = ""


class ClusterSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    backend: Literal["emulated", "processes", "ssh"]
    board: str
    storage: str
    workers: int
    subnet: str
    nodes: tuple[NodeSpec, ...]
    scale: Scale
    # Cluster knobs asked for by name (cluster/knobs.py CLUSTER_KNOBS): crc-off, fstrim.
    knobs: tuple[str, ...] = ()
    # Where the master's daemons run (the 2021 seed's "Separate" and "Combined", and its desktop
    # master): on a board of their own, on a board that is also a worker, or on a desktop.
    layout: Literal[LAYOUTS] = "separate-master"
    # Whether each node's processes run on it directly or inside an OCI container on it (Hajji &
    # Tso's native and Docker), cluster/containers.py.
    runtime: Literal[RUNTIMES] = "native"

    @property
    def master(self) -> NodeSpec:
        return next(n for n in self.nodes if n.role == "master")

    @property
    def worker_nodes(self) -> list[NodeSpec]:
        """The nodes that store blocks and run tasks (the master too when it is also a worker)."""
        return [n for n in self.nodes if n.runs_tasks]

    def node(self, name: str) -> NodeSpec:
        for n in self.nodes:
            if n.name == name:
                return n
        raise SbclabError(f"Cluster '{self.name}' has no node '{name}'.",
                          f"Nodes: {', '.join(n.name for n in self.nodes)}.")


HOST_RESERVED_BYTES = 2 * 2**30
DEFAULT_DISK_BYTES = 4 * 2**30


def host_cores() -> int:
    return len(os.sched_getaffinity(0))


def host_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise SbclabError(f"Cluster name '{name}' is not usable.",
                          "Use 1-8 lower-case letters and digits, starting with a letter (e.g. lab).")


def _addresses(backend: str, subnet: str, count: int) -> list[str]:
    if backend == "processes":
        # All on loopback; nodes are told apart by their ports (stack/config.py).
        return ["127.0.0.1"] * count
    else:
        try:
            net = ipaddress.ip_network(subnet, strict=True)
        except ValueError as err:
            raise SbclabError(f"Subnet '{subnet}' is not a network address.",
                              "Give one like 10.213.0.0/24.") from err
        if not net.is_private or net.num_addresses < 16 + count:
            raise SbclabError(f"Subnet '{subnet}' must be a private range with room for {count} nodes.",
                              "Give one like 10.213.0.0/24.")
    hosts = list(net.hosts())
    return [str(hosts[9 + i]) for i in range(count)]


def core_speed(board: "profiles.Board", calibration: "HostCalibration | None") -> tuple[float, str]:
    """Host cores one board core is worth: the ratio of their sysbench single-thread events/s."""
    if calibration is None:
        return 1.0, "uncalibrated: one board core is taken as one host core"
    if board.sysbench is None:
        return 1.0, f"{board.name} has no sysbench figure: one board core is taken as one host core"
    host = calibration.core_events_per_s(board.sysbench.max_prime)
    events = board.sysbench_events(1)
    if not host or not events:
        return 1.0, f"no host sysbench figure at --cpu-max-prime={board.sysbench.max_prime}; run 'sbclab calibrate'"
    derived = (f" (the board's figure is derived, not a seed's: 'sbclab profiles show {board.name}' says how far off "
               "it could be)") if board.derivation("sysbench") else ""
    return events / host, (f"sysbench --cpu-max-prime={board.sysbench.max_prime}: board {events:.6g}, host {host:.6g} "
                           f"events/s per core{derived}")


# The seeds' desktop master (lee2021 Table 5) and its disk: a desktop's SSD sits on PCIe or SATA; no
# seed measured it, so the NVMe drive's slowest known figures stand in (and the spec's note says so).
DESKTOP_MASTER = "desktop-i5-9600k"
DESKTOP_MASTER_STORAGE = "nvme-p31-gen3"


def _node_kinds(layout: str, workers: int, board: str, storage: str, master_board: str | None,
                master_storage: str | None) -> list[tuple["profiles.Board", "profiles.Storage"]]:
    """(board, medium) of each node, the master first: a master of its own (of the workers' board and
    medium unless given others: a Pi 5 master beside RK3588 workers, say), one that is also the first
    worker, or a desktop master beside `workers` boards."""
    if layout not in LAYOUTS:
        raise SbclabError(f"Unknown cluster layout '{layout}'.", f"Choose one of: {', '.join(LAYOUTS)}.")
    if (master_board or master_storage) and layout == "master-is-worker":
        raise SbclabError("A master board or medium of its own needs a master of its own, not the master-is-worker "
                          "layout.", "Give layout separate-master or desktop-master, or leave the master's board and "
                          "medium out.")
    worker = profiles.check_pair(board, profiles.resolve_storage(storage))
    if layout == "master-is-worker":
        return [worker] * workers
    if layout == "desktop-master":
        master = profiles.check_pair(master_board or DESKTOP_MASTER,
                                     profiles.resolve_storage(master_storage or DESKTOP_MASTER_STORAGE))
    else:
        master = profiles.check_pair(master_board or board, profiles.resolve_storage(master_storage or storage))
    return [master] + [worker] * workers


def build(*, name: str = "lab", backend: str, board: str = "rpi5b",
          storage: str = "nvme", workers: int = 2, subnet: str = "10.213.0.0/24",
          disk_bytes: int = DEFAULT_DISK_BYTES, cores: int | None = None,
          memory_bytes: int | None = None, calibration: "HostCalibration | None" = None,
          scale_factor: float | None = None, memory_factor: float | None = None,
          layout: str = "separate-master", master_board: str | None = None,
          master_storage: str | None = None) -> ClusterSpec:
    """A master and `workers` workers of one board and medium (in the master-is-worker layout, the
    master is one of them; in desktop-master, it is a desktop), scaled to fit this host.

    With a host calibration, one factor is the largest that lets every node have its profile's
    CPU (in host cores), sequential disk bandwidth, 4 KB IOPS and link rate at once:
    factor = min(1, host capacity / sum of the nodes' demands) over those resources.
    """
    _check_name(name)
    if backend not in BACKENDS:
        raise SbclabError(f"Unknown backend '{backend}'.", f"Choose one of: {', '.join(BACKENDS)}.")
    if not 1 <= workers <= 64:
        raise SbclabError(f"{workers} workers is out of range.", "Give between 1 and 64 workers.")
    kinds = _node_kinds(layout, workers, board, storage, master_board, master_storage)
    b, medium_profile = kinds[-1]
    figures = [m.figures_on(k.io_like or k.name) for k, m in kinds]
    speeds = {k.name: core_speed(k, calibration) for k, _ in kinds}
    speed, speed_note = speeds[b.name]

    have_cores = cores or host_cores()
    have_memory = memory_bytes or host_memory_bytes()
    limits = {"cpu": have_cores / sum(k.core_capacity * speeds[k.name][0] for k, _ in kinds)}
    if calibration is not None:
        disk = calibration.disk
        limits["disk write"] = disk.seq_write_mb_s / sum(f.seq_write for f in figures)
        limits["disk read"] = disk.seq_read_mb_s / sum(f.seq_read for f in figures)
        limits["disk IOPS"] = min(disk.rand_read_iops / sum(f.read_iops for f in figures),
                                  disk.rand_write_iops / sum(f.write_iops for f in figures))
        if calibration.veth_mbps:
            limits["network"] = calibration.veth_mbps / sum(k.nic_mbps for k, _ in kinds)
    limited_by = min(limits, key=limits.get)
    factor = min(1.0, limits[limited_by])
    mixed = kinds[0] != kinds[-1]
    shape = f"{len(kinds)} nodes of {board}/{storage}" + (f" and a {kinds[0][0].name}/{kinds[0][1].name} master"
                                                          if mixed else "")
    if scale_factor is not None:
        # A fixed factor lets clusters of different boards be compared on one scale.
        if not 0 < scale_factor <= factor:
            raise SbclabError(f"A scale factor of {scale_factor:g} is more than this host can give "
                              f"{shape} (at most {factor:.4g}, limited by {limited_by}).",
                              f"Give --scale {factor:.4g} or less, or fewer workers.")
        factor = scale_factor
    board_memory = [int(k.ram_gib * 2**30) for k, _ in kinds]
    memory_fits = min(1.0, (have_memory - HOST_RESERVED_BYTES) / sum(board_memory))
    # A factor given back from a stored scale (an experiment's one memory factor) is rounded as
    # Scale stores it, so it may exceed the factor it was rounded from by its last digit.
    if memory_factor is not None and not 0 < memory_factor <= round(memory_fits, 6):
        raise SbclabError(f"A memory factor of {memory_factor:g} is more than this host can give "
                          f"{shape} (at most {memory_fits:.4g}).", "Give fewer workers.")
    memory_factor = memory_factor if memory_factor is not None else memory_fits
    notes = [speed_note] if speed_note else []
    if mixed and kinds[0][0].name != b.name:
        master_kind = kinds[0][0]
        notes.append(f"master {master_kind.name}: {speeds[master_kind.name][1]}")
    for k, m in {(k.name, m.name): (k, m) for k, m in kinds}.values():
        host_board = k.io_like or k.name
        if not m.measured_on(host_board):
            notes.append(f"{m.name} was never measured in {host_board}: the slowest figures it has in another "
                         "board stand in for them")
    loop = calibration.disk.loop_rand_write_iops if calibration is not None else None
    shaped = sum(f.write_iops for f in figures) * factor
    if loop and loop < shaped:
        notes.append(
            f"4 KB random writes: this host's loop-mounted node disks deliver about {loop:,.0f} IOPS in all, "
            f"{loop / shaped:.0%} of the {shaped:,.0f} the nodes are shaped to, so random-write rates are the host's "
            "limit there, not the board's")
    scale = Scale(factor=round(factor, 6), memory_factor=round(memory_factor, 6), host_cores=have_cores,
                  host_memory_bytes=have_memory, calibrated=calibration is not None, core_speed=round(speed, 6),
                  limited_by=limited_by if factor < 1 else "nothing",
                  note="; ".join(notes) + ("." if notes else ""),
                  host_calibration=calibration.host_key if calibration else None)

    addresses = _addresses(backend, subnet, len(kinds))
    nodes = []
    for i, ((k, m), medium, memory, address) in enumerate(zip(kinds, figures, board_memory, addresses)):
        nodes.append(NodeSpec(
            name="master" if i == 0 else f"worker{i}",
            role="master" if i == 0 else "worker", runs_tasks=i > 0 or layout == "master-is-worker",
            address=address, board=k.name, storage=m.name,
            cpu_cores=round(k.core_capacity * speeds[k.name][0] * factor, 4),
            memory_bytes=int(memory * memory_factor),
            disk_bytes=disk_bytes,
            disk_read_bytes_s=medium.seq_read * 1e6 * factor,
            disk_write_bytes_s=medium.seq_write * 1e6 * factor,
            disk_read_iops=medium.read_iops * factor,
            disk_write_iops=medium.write_iops * factor,
            link_mbit_s=k.nic_mbps * factor,
            # Scaled like the disk's rate, so a board's dirty buffer fills in as long as the board's.
            dirty_bytes=int(memory * dirty.BOARD_DIRTY_RATIO * factor),
        ))
    return ClusterSpec(name=name, backend=backend, board=b.name, storage=medium_profile.name,
                       workers=workers, subnet=subnet if backend == "emulated" else "127.0.0.1/32",
                       nodes=tuple(nodes), scale=scale, layout=layout)


def from_inventory(inventory: "Inventory", *, name: str = "lab", layout: str = "separate-master") -> ClusterSpec:
    """Real boards as the inventory lists them, each given its whole profile (no scaling). The master
    is a board of its own, one that is also a worker (master-is-worker), or whatever the inventory's
    master is (a desktop: desktop-master).

    The cluster's board and storage are the workers' (the first worker's when they differ), which is
    what a run's cell is keyed on."""
    _check_name(name)
    if layout not in LAYOUTS:
        raise SbclabError(f"Unknown cluster layout '{layout}'.", f"Choose one of: {', '.join(LAYOUTS)}.")
    nodes = []
    for host in inventory.hosts:
        b, medium_profile = profiles.check_pair(host.board, profiles.resolve_storage(host.storage))
        medium = medium_profile.figures_on(b.io_like or b.name)
        memory = int(b.ram_gib * 2**30)
        nodes.append(NodeSpec(
            name=host.name, role=host.role, address=host.address, board=b.name, storage=medium_profile.name,
            runs_tasks=host.role == "worker" or layout == "master-is-worker", cpu_cores=float(b.cores), memory_bytes=memory, disk_bytes=0,
            disk_read_bytes_s=medium.seq_read * 1e6, disk_write_bytes_s=medium.seq_write * 1e6,
            disk_read_iops=medium.read_iops, disk_write_iops=medium.write_iops, link_mbit_s=b.nic_mbps))
    first = next((n for n in nodes if n.role == "worker"), nodes[0])
    scale = Scale(factor=1.0, memory_factor=1.0, host_cores=sum(int(n.cpu_cores) for n in nodes),
                  host_memory_bytes=sum(n.memory_bytes for n in nodes), limited_by="nothing",
                  note=f"real boards from {inventory.source}")
    return ClusterSpec(name=name, backend="ssh", board=first.board, storage=first.storage,
                       workers=sum(n.runs_tasks for n in nodes), subnet="inventory", nodes=tuple(nodes),
                       scale=scale, layout=layout)


def shaping(calibration: "HostCalibration", workers: int) -> list[dict]:
    """How one worker of every board and medium it takes would be shaped on this host, in a cluster
    of master + `workers` workers; a pair the host cannot shape says why."""
    rows = []
    for b in profiles.boards().values():
        for s in profiles.storages().values():
            if s.interface not in b.storage_interfaces or not s.measured_on(b.io_like or b.name):
                continue
            try:
                shaped = build(backend="emulated", board=b.name, storage=s.name, workers=workers, calibration=calibration)
            except SbclabError as err:
                rows.append({"board": b.name, "storage": s.name, "refused": err.message})
                continue
            n = shaped.worker_nodes[0]
            rows.append({"board": b.name, "storage": s.name, "factor": shaped.scale.factor,
                         "limited_by": shaped.scale.limited_by, "core_speed": shaped.scale.core_speed,
                         "cpu_cores": n.cpu_cores, "disk_read_mb_s": n.disk_read_bytes_s / 1e6,
                         "disk_write_mb_s": n.disk_write_bytes_s / 1e6, "read_iops": n.disk_read_iops,
                         "write_iops": n.disk_write_iops, "link_mbit_s": n.link_mbit_s,
                         "memory_gib": n.memory_bytes / 2**30, "dirty_mb": n.dirty_bytes / 1e6})
    return rows
