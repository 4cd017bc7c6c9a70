"""Where a cluster's samplers go and how each is driven: one per node that has figures of its own
(emulated nodes, boards), one for the host where the nodes are plain processes on it.

What a node is made of comes from its transport (cgroup, device, interface); the sampler's target
is that, as sampler.py reads it. Samplers on this host are local processes (local_sampler.py);
a board's is driven over SSH (board_sampler.py).
"""

import json
import os
from pathlib import Path

from ..cluster import nodeops
from ..cluster.spec import NodeSpec
from ..cluster.ssh import SshTransport
from ..cluster.transport import Transport
from .board_sampler import BoardSampler
from .local_sampler import LocalSampler


def points(transport: Transport) -> list[tuple[str, NodeSpec, dict]]:
    """(name, node, sampler target) of every sampler a run needs (see sampler.py)."""
    found = []
    for node in transport.spec.nodes:
        parts = transport.parts(node)
        if parts.scope == "host":
            # Nodes without figures of their own: one sampler for the host they all share.
            return [("host", transport.spec.master, {"node": "host", "scope": "host", "cores": os.cpu_count() or 1,
                                                     "device_of": str(transport.state.root),
                                                     "interface": {"name": "lo"}})]
        target = {"node": node.name, "scope": "node"}
        for key in ("cores", "cpu_capacity", "memory_limit", "cgroup", "device", "device_of", "interface",
                    "interface_of", "disk_limits"):
            value = getattr(parts, key)
            if value is not None:
                target[key] = value
        found.append((node.name, node, target))
    return found


def collected_dir(transport: Transport, node: NodeSpec) -> Path:
    """Where this host keeps what it collects of a node (samples, plug readings)."""
    if transport.shares_host:
        return transport.node_dir(node) / "samples"
    return transport.state.root / "boards" / node.name / "samples"


def sampler(transport: Transport, name: str, node: NodeSpec, target: dict, run_id: str, interval_s: float):
    """The recorder's handle of a node's sampler."""
    collected = collected_dir(transport, node)
    if isinstance(transport, SshTransport):
        return BoardSampler(transport, name, node, target, run_id, interval_s, collected)
    return LocalSampler(transport, name, node, target, run_id, interval_s, collected)


def sync_disks(transport: Transport) -> None:
    """Every node's dirty pages written to its storage before a mark, so device counters include them
    (a board syncs in its sampler's mark, board_sampler.py, one round trip instead of two)."""
    nodeops.sync_filesystems(transport)


def parse_samples(lines) -> tuple[dict, list[dict]]:
    """A sampler file's header and samples from its lines; a torn line (the sampler was killed, or is
    writing it now) is dropped."""
    header: dict = {}
    samples: list[dict] = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "header" in record:
            header = header or record["header"]
        else:
            samples.append(record)
    return header, samples
