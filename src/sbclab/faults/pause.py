"""Pause a worker: SIGSTOP to every JVM of the cluster on it, SIGCONT after for_s — a board that hangs
(a stalled microSD card, a kernel busy in reclaim) and comes back. Its daemons miss their heartbeats
while paused; the masters notice only after their expiry intervals, so a short pause is a stall,
a long one a lost node."""

from ..errors import SbclabError
from .base import ANY_JAVA, Applied, FaultSpec, sh, signal_processes

name = "pause"
lasting = True


def check(spec: FaultSpec) -> None:
    if spec.for_s is None:
        raise ValueError("a pause needs for_s, how long the node stays paused")
    if spec.process or spec.loss_pct or spec.level_pct:
        raise ValueError("a pause takes node, at_s and for_s only")


def unsupported(backend: str) -> str | None:
    return None


def apply(cluster, spec: FaultSpec, node_name: str) -> Applied:
    transport = cluster.transport
    node = transport.spec.node(node_name)
    pids = transport.node_processes(node, ANY_JAVA)
    if not pids:
        raise SbclabError(f"No JVM ran on {node_name}: nothing to pause.", "Check the cluster with 'sbclab cluster status'.")
    # The undoing is recorded first: a sbclab killed now leaves processes the next one continues.
    entry, paused = signal_processes(cluster, node_name, name, pids, "STOP", "every JVM",
                             heal=[sh('kill -CONT "$@" 2>/dev/null; true', *map(str, pids))])
    return Applied(f"SIGSTOP to {len(paused)} JVMs on {node_name}", entry)
