"""Slow a worker's storage to a share of its medium's rates and IOPS, for for_s or until the run
ends: a microSD card that stalls as it wears or overheats, a USB drive renegotiating its link. The
emulated node's disk throttle (this host's blkio/io.max rule for its own loop device) is set lower,
then back to the medium's figures; the undoing runs on this host, where the rule lives. A board's
own storage cannot be slowed from software without taking it over, so boards refuse it."""

from ..cluster import faultrecords, system
from ..errors import SbclabError
from .base import Applied, FaultSpec

name = "slow-disk"
lasting = True

_WRITE = 'while [ $# -gt 1 ]; do printf "%s\\n" "$2" > "$1" || exit 1; shift 2; done'


def check(spec: FaultSpec) -> None:
    if spec.speed_pct is None:
        raise ValueError("slow-disk needs speed_pct, the share of its speed the disk keeps")
    if spec.process or spec.loss_pct or spec.level_pct:
        raise ValueError("slow-disk takes node, at_s, for_s and speed_pct only")


def unsupported(backend: str) -> str | None:
    if backend == "processes":
        return "the processes backend's nodes share this host's disk, unthrottled"
    if backend == "ssh":
        return "a board's own storage cannot be slowed from software"
    return None


def _argv(writes) -> list[str]:
    return ["sh", "-c", _WRITE, "sh", *(str(part) for path, line in writes for part in (path, line))]


def apply(cluster, spec: FaultSpec, node_name: str) -> Applied:
    transport = cluster.transport
    node = transport.spec.node(node_name)
    if not hasattr(transport, "disk_throttle"):
        raise SbclabError(f"{node_name} has no disk throttle to slow.", "Run the fault on an emulated cluster.")
    with faultrecords.applying(transport, node_name, name, heal=[_argv(transport.disk_throttle(node, 1.0))],
                               on_host=True, target=f"{spec.speed_pct:g} % of its medium's speed") as entry:
        done = system.run(*_argv(transport.disk_throttle(node, spec.speed_pct / 100)), check=False)
        if done.returncode != 0:
            raise SbclabError(f"Slowing {node_name}'s disk failed: {done.stderr.strip()[:300]}.", "Run sbclab as root.")
    return Applied(f"{node_name}'s disk slowed to {spec.speed_pct:g} % of {node.storage}'s rates and IOPS", entry)
