"""Kill one of a worker's processes with SIGKILL, as a board losing power kills everything on it at
once, or the kernel's OOM killer kills one process: a daemon (DataNode, NodeManager, Spark worker),
a MapReduce task, a Spark executor, or the job's ApplicationMaster.

Nothing on the node undoes a kill: a daemon is started again by the liveness repair after the run
(stack/liveness.py), and how long the cluster took to be whole again is the fault's recovery time."""

from ..errors import SbclabError
from .base import PROCESSES, Applied, FaultSpec, signal_processes

name = "kill"
lasting = False


def check(spec: FaultSpec) -> None:
    if spec.process not in PROCESSES:
        raise ValueError(f"a kill needs process: one of {', '.join(PROCESSES)}")
    if spec.for_s is not None:
        raise ValueError("a killed process does not come back by itself: leave out for_s")


def unsupported(backend: str) -> str | None:
    return None


def apply(cluster, spec: FaultSpec, node_name: str) -> Applied:
    transport = cluster.transport
    node = transport.spec.node(node_name)
    pids = transport.node_processes(node, PROCESSES[spec.process])
    if not pids:
        raise SbclabError(f"No {spec.process} process ran on {node_name} at {spec.at_s:g} s: nothing was killed.",
                          "Aim the fault at a later time or another node (a task or executor runs only while the job does).")
    entry, killed = signal_processes(cluster, node_name, name, pids, "KILL", spec.process, heal=[])
    return Applied(f"SIGKILL to {spec.process} on {node_name} (pid {', '.join(map(str, killed))})", entry)
