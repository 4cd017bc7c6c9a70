"""The shape of a cluster: which nodes, with which resources, on which backend.

A spec is computed once at `cluster up` and stored in the cluster's state file and in every run,
so a run says exactly what each node was given.
"""

import ipaddress
import os
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .. import profiles
from ..errors import SbclabError

BACKENDS = ("emulated", "processes")
PRESETS = ("stock", "paper")
_NAME = re.compile(r"^[a-z][a-z0-9]{0,7}$")


class NodeSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    role: Literal["master", "worker"]
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
    # YARN's share of the node: what containers may use without overcommitting it.
    yarn_memory_mb: int
    yarn_vcores: int


class Scale(BaseModel):
    """How much of each profile this host could give.

    `factor` applies to CPU, disk bandwidth/IOPS and link rate together, so their ratios hold;
    memory has its own factor because JVM heaps need real bytes, not proportional ones.
    """

    model_config = ConfigDict(frozen=True)

    factor: float
    memory_factor: float
    host_cores: int
    host_memory_bytes: int
    calibrated: bool = False
    note: str = ("Uncalibrated: one board core is taken as one host core and disk/link figures "
                 "are the profile's, all times the factor.")


class ClusterSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    backend: Literal["emulated", "processes"]
    preset: Literal["stock", "paper"]
    board: str
    storage: str
    workers: int
    subnet: str
    nodes: tuple[NodeSpec, ...]
    scale: Scale

    @property
    def master(self) -> NodeSpec:
        return next(n for n in self.nodes if n.role == "master")

    @property
    def worker_nodes(self) -> list[NodeSpec]:
        return [n for n in self.nodes if n.role == "worker"]

    def node(self, name: str) -> NodeSpec:
        for n in self.nodes:
            if n.name == name:
                return n
        raise SbclabError(f"Cluster '{self.name}' has no node '{name}'.",
                          f"Nodes: {', '.join(n.name for n in self.nodes)}.")


# Memory a worker keeps outside YARN: OS, page cache floor, DataNode and NodeManager heaps.
WORKER_RESERVED_MB = 2048
MIN_ALLOCATION_MB = 1024
HOST_RESERVED_BYTES = 2 * 2**30
DEFAULT_DISK_BYTES = 4 * 2**30


def host_cores() -> int:
    return len(os.sched_getaffinity(0))


def host_memory_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def yarn_memory_mb(node_memory_bytes: int) -> int:
    """Container memory for a worker: its RAM less the reserve, in whole minimum allocations."""
    usable = node_memory_bytes // 2**20 - WORKER_RESERVED_MB
    whole = (usable // MIN_ALLOCATION_MB) * MIN_ALLOCATION_MB
    if whole < MIN_ALLOCATION_MB * 2:
        raise SbclabError(
            f"A worker with {node_memory_bytes / 2**30:.1f} GiB cannot hold an ApplicationMaster and a task "
            f"after {WORKER_RESERVED_MB} MB for the OS and daemons.",
            "Use fewer workers or a board profile with more RAM.")
    return whole


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


def build(*, name: str = "lab", backend: str, preset: str = "stock", board: str = "rpi5b",
          storage: str = "nvme", workers: int = 2, subnet: str = "10.213.0.0/24",
          disk_bytes: int = DEFAULT_DISK_BYTES, cores: int | None = None,
          memory_bytes: int | None = None) -> ClusterSpec:
    """A master and `workers` workers of one board and medium, scaled to fit this host."""
    _check_name(name)
    if backend not in BACKENDS:
        raise SbclabError(f"Unknown backend '{backend}'.", f"Choose one of: {', '.join(BACKENDS)}.")
    if preset not in PRESETS:
        raise SbclabError(f"Unknown preset '{preset}'.", f"Choose one of: {', '.join(PRESETS)}.")
    if not 1 <= workers <= 64:
        raise SbclabError(f"{workers} workers is out of range.", "Give between 1 and 64 workers.")
    b = profiles.board(board)
    medium = profiles.storage(storage).figures_on(board)

    count = workers + 1
    have_cores = cores or host_cores()
    have_memory = memory_bytes or host_memory_bytes()
    factor = min(1.0, have_cores / (b.cores * count))
    board_memory = int(b.ram_gib * 2**30)
    memory_factor = min(1.0, (have_memory - HOST_RESERVED_BYTES) / (board_memory * count))
    node_memory = int(board_memory * memory_factor)
    scale = Scale(factor=round(factor, 6), memory_factor=round(memory_factor, 6),
                  host_cores=have_cores, host_memory_bytes=have_memory)

    addresses = _addresses(backend, subnet, count)
    nodes = []
    for i, address in enumerate(addresses):
        role = "master" if i == 0 else "worker"
        nodes.append(NodeSpec(
            name="master" if i == 0 else f"worker{i}",
            role=role, address=address, board=board, storage=storage,
            cpu_cores=round(b.cores * factor, 4),
            memory_bytes=node_memory,
            disk_bytes=disk_bytes,
            disk_read_bytes_s=medium.seq_read_mb_s * 1e6 * factor,
            disk_write_bytes_s=medium.seq_write_mb_s * 1e6 * factor,
            disk_read_iops=medium.rand_read_iops * factor,
            disk_write_iops=medium.rand_write_iops * factor,
            link_mbit_s=b.nic_mbps * factor,
            yarn_memory_mb=yarn_memory_mb(node_memory) if role == "worker" else 0,
            yarn_vcores=b.cores if role == "worker" else 0,
        ))
    return ClusterSpec(name=name, backend=backend, preset=preset, board=board, storage=storage,
                       workers=workers, subnet=subnet if backend == "emulated" else "127.0.0.1/32",
                       nodes=tuple(nodes), scale=scale)
