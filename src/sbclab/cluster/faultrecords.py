"""Changes to a node's system that sbclab undoes — faults, and on boards the packet filter that keeps
the daemons' ports to the cluster — as the cluster keeps them: each recorded in the cluster's state,
with the commands that undo it on its node, before it is applied. Whatever becomes of the sbclab that applied it (killed
mid-run, its host rebooted), the next sbclab on the cluster or `cluster down --force` runs those
commands: no paused process, packet filter or filler file outlives the run that made it.

What a fault is and how it is applied lives in sbclab.faults; here is only what undoes it, as
commands on the node, so that teardown needs nothing above this layer.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

from . import system
from .local import orphaned, sbclab_owner
from .transport import Captured, Transport

KIND = "fault"
# A change that lives as long as the cluster (not as the sbclab that made it): undone at `down` only.
LASTING = "node_change"
KINDS = (KIND, LASTING)


def record(transport: Transport, node: str, fault: str, heal: list[list[str]], **fields) -> dict:
    """A fault about to be applied on the node, with the commands that undo it (each must succeed
    also when the fault is already undone, or was never applied). With on_host=True they run on
    this host (an emulated node's disk throttle lives in this host's cgroups)."""
    return transport.state.record(KIND, node=node, fault=fault, heal=heal, applied_at=None, **sbclab_owner(),
                                  **fields)


def record_lasting(transport: Transport, node: str, what: str, heal: list[list[str]]) -> dict:
    """A change the cluster keeps until it is taken down (a board's packet filter)."""
    return transport.state.record(LASTING, node=node, fault=what, heal=heal, applied_at=None)


def applied(transport: Transport, entry: dict) -> None:
    """The fault is in place now."""
    transport.state.update(entry, applied_at=datetime.now(timezone.utc).isoformat())


@contextmanager
def applying(transport: Transport, node: str, fault: str, **fields) -> Iterator[dict]:
    """A fault being applied in the body: recorded with its undoing first, marked in place when the
    body ends, and undone and forgotten when the body raises — a fault that failed half-way is no
    fault, and its record would otherwise stay until the cluster is taken down."""
    entry = record(transport, node, fault, **fields)
    try:
        yield entry
    except BaseException:
        heal(transport, entry)
        raise
    applied(transport, entry)


def heal(transport: Transport, entry: dict) -> list[str]:
    """Run the fault's undoing commands on its node and forget it; what failed, one phrase each."""
    node = transport.spec.node(entry["node"])
    problems = []
    for argv in entry.get("heal") or []:
        try:
            done = (system.run(*argv, check=False) if entry.get("on_host") else transport.capture(node, argv, timeout_s=60))
            if entry.get("on_host"):
                done = Captured(done.returncode, done.stdout.encode(), done.stderr.encode())
        except Exception as err:  # noqa: BLE001 - a node that cannot be reached is said, the others still healed
            problems.append(f"{entry['fault']} on {node.name}: {err}")
            continue
        if done.status != 0:
            problems.append(f"{entry['fault']} on {node.name}: '{' '.join(argv[:4])}' exited {done.status}: "
                            f"{done.stderr.decode(errors='replace').strip()[:200]}")
    transport.state.forget(entry)
    return problems


def unhealed(transport: Transport, orphans_only: bool = False) -> list[dict]:
    """The changes still recorded: all, or the faults whose sbclab died without undoing them."""
    if orphans_only:
        return orphaned(transport.state, KIND)
    return [entry for kind in KINDS for entry in transport.state.of_kind(kind)]


def heal_all(transport: Transport, orphans_only: bool = False) -> tuple[list[str], list[str]]:
    """Undo every recorded fault (or only those a dead sbclab left); (what was undone, what failed)."""
    undone, problems = [], []
    for entry in unhealed(transport, orphans_only):
        problems += heal(transport, entry)
        undone.append(f"{entry['fault']} on {entry['node']}")
    return undone, problems
