"""Node micro-benchmarks with the seeds' tools, run on a node: sysbench CPU, fio, iperf3.

The same functions measure the host during calibration (no node) and an emulated node (its
namespaces and cgroup), so host and node figures come from identical commands.
"""

from dataclasses import dataclass
from pathlib import Path

from ..cluster.backends.base import Backend
from ..cluster.calibration import fio_job, iperf3_mbps, sysbench_cpu
from ..cluster.spec import NodeSpec


@dataclass(frozen=True)
class OnNode:
    """How to run a command on a node: a command prefix and a function for the child to run first."""

    prefix: list[str]
    preexec: object

    @classmethod
    def of(cls, backend: Backend, node: NodeSpec) -> "OnNode":
        prefix, preexec = backend.on_node(node, [])
        return cls(prefix, preexec)


def sysbench_events(on: OnNode, threads: int, max_prime: int = 2000, seconds: int = 5) -> float:
    return sysbench_cpu(max_prime, threads, seconds, prefix=on.prefix, preexec=on.preexec)


def fio(on: OnNode, directory: Path, rw: str, block_size: str, direct: bool = True, size: str = "128M",
        seconds: int = 5) -> dict:
    """fio in the seeds' iozone pattern on the node's own disk: {'mb_s', 'iops'}."""
    directory.mkdir(parents=True, exist_ok=True)
    return fio_job(directory, f"{rw}-{block_size}", rw, block_size, size=size, seconds=seconds, direct=direct,
                   prefix=on.prefix, preexec=on.preexec)


def iperf3(server: OnNode, server_address: str, client: OnNode, seconds: int = 3) -> float:
    """TCP throughput from client to server node in Mb/s."""
    return iperf3_mbps(server.prefix, client.prefix, server_address, seconds, server.preexec, client.preexec)
