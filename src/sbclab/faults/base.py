"""What a fault is: its declaration in an experiment (FaultSpec), the interface every kind of fault
implements, and what a run keeps of each fault applied during it (FaultRun, in the run document).

A kind of fault is one module beside this one, registered in faults/__init__.py. It says what it
needs (check), whether this cluster can have it (unsupported), and applies it on a node — recording
first, through cluster/faultrecords.py, the commands that undo it, so that nothing it does outlives
the run even when sbclab is killed.
"""

from dataclasses import dataclass
from typing import Protocol

from ..cluster import faultrecords
from ..errors import SbclabError
from ..results.faults import ANY_JAVA, PROCESSES, FaultRun, FaultSpec
from ..stack.lifecycle import Cluster

__all__ = ["ANY_JAVA", "PROCESSES", "Applied", "FaultKind", "FaultRun", "FaultSpec", "sh", "signal_processes"]


@dataclass
class Applied:
    """What applying did: a sentence, and the fault record whose commands undo it (None: nothing to undo)."""

    detail: str
    record: dict | None


class FaultKind(Protocol):
    name: str
    lasting: bool  # undone after for_s (a pause, a partition); else it stays until the run ends

    def check(self, spec: FaultSpec) -> None:
        """Refuse (ValueError, one sentence) what this kind cannot be given."""

    def unsupported(self, cluster_backend: str) -> str | None:
        """Why a cluster of this backend cannot have this fault; None when it can."""

    def apply(self, cluster: Cluster, spec: FaultSpec, node_name: str) -> Applied:
        """Record the undoing, then apply it on the node."""


def sh(script: str, *args: str) -> list[str]:
    """A shell script as an argv, its arguments passed apart (never pasted into it)."""
    return ["sh", "-c", script, "sh", *args]


def signal_processes(cluster, node_name: str, fault: str, pids: list[int], signal: str, target: str,
                     heal: list[list[str]]) -> tuple[dict, list[int]]:
    """Send a signal to processes of a node, the fault and its undoing recorded first; its record and
    the pids signalled. A pid gone since it was read is passed over: a JVM forking a helper shows
    its own command line in the child until the child's exec, so such a child can match and be gone."""
    transport = cluster.transport
    with faultrecords.applying(transport, node_name, fault, heal=heal, target=target, pids=pids) as entry:
        done = transport.capture(transport.spec.node(node_name),
                                 sh(f'for p; do kill -{signal} "$p" && echo "$p"; done; true', *map(str, pids)))
        signalled = [int(p) for p in done.stdout.decode().split() if p.isdigit()]
        if not signalled:
            raise SbclabError(f"SIG{signal} to {target} on {node_name} failed: none of pids "
                              f"{', '.join(map(str, pids))} could be signalled ({done.stderr.decode(errors='replace').strip()[:200]}).",
                              "Read the node's processes with 'sbclab cluster shell'.")
    return entry, signalled
