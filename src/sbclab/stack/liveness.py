"""Whether a cluster still has every daemon its shape says, counted before and after every run.

Two views, because each is blind where the other sees. A daemon's own process is gone the moment it
dies, but a paused or cut-off node's processes still run. The masters' counts (the NameNode's live
DataNodes, the ResourceManager's running NodeManagers, the standalone master's alive workers) see a
node that stopped answering, but only after their expiry intervals (ten minutes by default), and
go on counting a dead daemon until then. A daemon is missing when either view says so.

A cluster found short before a run is repaired: the daemons whose processes ended are started again
on their nodes and waited for; what cannot be repaired that way (a master that counts fewer than it
should while every process runs) is waited for, then refused with the reason.
"""

import time
from dataclasses import dataclass, field

import requests

from ..errors import SbclabError
from .daemons import DATANODE, NODEMANAGER, SPARK_WORKER, Daemon, Stack, daemons_of, logs_dir

# The master's count of each worker daemon, and who keeps it.
_COUNTED_BY = {DATANODE.title: "the NameNode", NODEMANAGER.title: "the ResourceManager",
               SPARK_WORKER.title: "the Spark master"}


@dataclass
class Census:
    """Each daemon of the cluster's shape: how many it should have, whose processes have ended,
    and how many its master counts (None where the master did not answer)."""

    expected: dict[str, int]
    ended: dict[str, list[str]] = field(default_factory=dict)   # daemon title -> nodes whose process ended
    counted: dict[str, int | None] = field(default_factory=dict)  # daemon title -> the master's count

    @property
    def missing(self) -> list[str]:
        """What is short, one phrase each ("DataNode on worker2: its process has ended")."""
        found = []
        for title, nodes in self.ended.items():
            found += [f"{title} on {node}: its process has ended" for node in nodes]
        for title, count in self.counted.items():
            want = self.expected[title]
            if count is None:
                found.append(f"{title}: {_COUNTED_BY[title]} did not answer")
            elif count < want and not self.ended.get(title):
                found.append(f"{title}: {count} of {want} counted live by {_COUNTED_BY[title]}")
        return found

    @property
    def whole(self) -> bool:
        return not self.missing

    def as_record(self) -> dict:
        return {"expected": dict(self.expected), "counted": dict(self.counted), "missing": self.missing}


def _master_count(stack: Stack, daemon: Daemon) -> int | None:
    try:
        if daemon is DATANODE:
            return stack.datanodes_counted()
        if daemon is NODEMANAGER:
            return len(stack.yarn_nodes())
        if daemon is SPARK_WORKER:
            workers = stack.spark_workers()
            return None if workers is None else len(workers)
    except (requests.RequestException, ValueError, KeyError, IndexError, TypeError):
        return None
    return None


def census(stack: Stack) -> Census:
    """The cluster's daemons now, by both views."""
    spec = stack.spec
    daemons = daemons_of(stack.choices)
    found = Census(expected={d.title: len(stack.nodes_for(d)) for d in daemons})
    for daemon in daemons:
        entries = stack.transport.sessions(daemon.key)
        running = stack.transport.still_running(entries)
        alive_on = {e["node"] for e, up in zip(entries, running) if up}
        # A node with no recorded session at all (a cluster started before sessions were labelled)
        # is judged by its master alone.
        recorded_on = {e["node"] for e in entries}
        ended = [n.name for n in stack.nodes_for(daemon) if n.name in recorded_on and n.name not in alive_on]
        if ended:
            found.ended[daemon.title] = ended
        if daemon.title in _COUNTED_BY:
            found.counted[daemon.title] = _master_count(stack, daemon)
    return found


def lost_between(before: Census, after: Census) -> list[str]:
    """What after misses that before did not: what the run in between lost."""
    earlier = set(before.missing)
    return [m for m in after.missing if m not in earlier]


def repair(stack: Stack, found: Census, timeout_s: float = 180, say=lambda message: None) -> list[str]:
    """Start again the daemons whose processes ended and wait until the census is whole; what was
    done, one phrase each. Refused (SbclabError) when the cluster is still short at the deadline."""
    done = []
    by_title = {d.title: d for d in daemons_of(stack.choices)}
    for title, node_names in found.ended.items():
        daemon = by_title[title]
        nodes = [n for n in stack.nodes_for(daemon) if n.name in node_names]
        # The dead sessions' records go: teardown has nothing of theirs to stop.
        entries = stack.transport.sessions(daemon.key)
        for entry, up in zip(entries, stack.transport.still_running(entries)):
            if not up:
                stack.transport.state.forget(entry)
        say(f"restarting the {title} on {', '.join(node_names)} (its process had ended)")
        stack.start(daemon, nodes)
        done += [f"{title} restarted on {name}" for name in node_names]
    deadline = time.monotonic() + timeout_s
    now = census(stack)
    while not now.whole and time.monotonic() < deadline:
        time.sleep(1)
        now = census(stack)
    if not now.whole:
        raise SbclabError(f"Cluster '{stack.spec.name}' is short of daemons: {'; '.join(now.missing[:4])}.",
                          f"Read the daemons' logs under {logs_dir(stack.spec.name)}, or bring the cluster down and "
                          "up again ('sbclab cluster down' and 'up').")
    return done


def ensure_whole(stack: Stack, timeout_s: float = 180, say=lambda message: None) -> tuple[Census, list[str]]:
    """The census before a run, the cluster repaired first where it is short; (census, repairs)."""
    found = census(stack)
    if found.whole:
        return found, []
    say(f"the cluster is short: {'; '.join(found.missing[:4])}")
    repairs = repair(stack, found, timeout_s, say)
    return census(stack), repairs
