"""A run's memory on each node: the limit it was given, the most it used, and the processes the
kernel killed for want of it.

A node with a cgroup of its own (an emulated node) is read by this host when the recording starts
and ends (MemoryWatch): the cgroup's peak, started over at the start (cluster/cgroups.py MemoryPeak),
and its OOM kill counter, whose rise is the run's kills. Its limit is the memory the node was given:
the page-cache governor (cluster/pagecache.py) moves v1's limit file below it while the cache fills,
but gives the node all of it back before the kernel may kill.

A node without one (a real board, or the host that the processes backend's nodes share) has its
figures from its sampler: MemTotal as the limit, the highest sampled use as the peak, and the rise of
the kernel's oom_kill counter in /proc/vmstat. An emulated node whose kernel keeps no peak of the run
gets its sampled peak too, labelled so. A figure that cannot be had is None with a note saying why.
"""

from dataclasses import dataclass, field

from ..cluster.cgroups import MemoryPeak, NodeCgroup
from ..cluster.transport import Transport
from ..errors import SbclabError
from ..results.measurements import NodeFigures, NodeMemory


@dataclass
class _Watched:
    limit_bytes: int | None
    group: NodeCgroup | None = None
    peak: MemoryPeak | None = None
    kills_before: int | None = None
    notes: list[str] = field(default_factory=list)


class MemoryWatch:
    """The cgroup readings of every node that has a cgroup, from start() to stop()."""

    def __init__(self, transport: Transport):
        self.transport = transport
        self._nodes: dict[str, _Watched] = {}

    def start(self) -> None:
        for node in self.transport.spec.nodes:
            try:
                group = self.transport.memory_group(node)
            except SbclabError as err:
                self._nodes[node.name] = _Watched(None, notes=[f"its cgroup could not be found ({err.message})"])
                continue
            if group is None:
                continue
            watched = _Watched(self.transport.parts(node).memory_limit, group, group.memory_peak())
            watched.peak.start()
            watched.kills_before = _kills(group, watched.notes)
            self._nodes[node.name] = watched

    def stop(self) -> dict[str, dict]:
        """Per node: limit_bytes, peak_bytes, oom_kills (each None where it could not be had) and notes."""
        found = {}
        for name, watched in self._nodes.items():
            notes = watched.notes
            peak_bytes = None
            if watched.peak is not None:
                peak_bytes = watched.peak.read()
                if peak_bytes is None:
                    notes.append(f"no peak from its cgroup: {watched.peak.why}")
            kills = None
            if watched.kills_before is not None:
                after = _kills(watched.group, notes)
                # A group made anew in between (the cluster brought up again) counts from 0: no figure.
                kills = after - watched.kills_before if after is not None and after >= watched.kills_before else None
            found[name] = {"limit_bytes": watched.limit_bytes, "peak_bytes": peak_bytes, "oom_kills": kills,
                           "notes": notes}
        return found

    def abandon(self) -> None:
        for watched in self._nodes.values():
            if watched.peak is not None:
                watched.peak.close()


def _kills(group: NodeCgroup, notes: list[str]) -> int | None:
    try:
        kills = group.oom_kills()
    except (OSError, ValueError) as err:
        notes.append(f"its cgroup's OOM kill count could not be read ({err})")
        return None
    if kills is None:
        notes.append("its cgroup counts no OOM kills (memory.oom_control has oom_kill from Linux 4.13)")
    return kills


def sampled_oom_kills(samples: list[dict]) -> tuple[int | None, float | None]:
    """The kills the samples' oom_kill counter rose by, and the first sample it rose at; None where
    fewer than two samples carry it. A counter that went back (a board rebooted) is skipped over."""
    counted = sorted((s for s in samples if s.get("oom_kills") is not None), key=lambda s: s["t"])
    if len(counted) < 2:
        return None, None
    kills, first = 0, None
    for a, b in zip(counted, counted[1:]):
        rise = b["oom_kills"] - a["oom_kills"]
        if rise > 0:
            kills += rise
            first = b["t"] if first is None else first
    return kills, first


def _memory_total(samples: list[dict]) -> int | None:
    totals = [s["memory"]["total"] for s in samples if (s.get("memory") or {}).get("total")]
    return totals[-1] if totals else None


def node_memory(read: dict | None, recorded: dict, figures: NodeFigures) -> tuple[NodeMemory, float | None]:
    """A node's memory over the recording, from its cgroup's readings (`read`, None where MemoryWatch
    had none of it) or else its samples; and when its first OOM kill was sampled, where it was."""
    samples = recorded["samples"]
    if read is not None:
        notes = list(read["notes"])
        peak, source = read["peak_bytes"], "cgroup"
        if peak is None and figures.mem_used_max_bytes is not None:
            peak, source = figures.mem_used_max_bytes, "sampled"
            notes.append("the samplers' highest resident memory stands in for the peak (page cache not counted)")
        return NodeMemory(limit_bytes=read["limit_bytes"], peak_bytes=peak,
                          peak_source=source if peak is not None else None, oom_kills=read["oom_kills"],
                          notes=notes), None
    notes = []
    if figures.scope == "host":
        notes.append("the nodes share this host's memory: these are the host's figures")
    limit = recorded["target"].get("memory_limit") or _memory_total(samples)
    if limit is None:
        notes.append("no memory limit: the samples carry no MemTotal")
    peak = figures.mem_used_max_bytes
    if peak is None:
        notes.append("no peak: no sample in the run's window read the memory in use")
    kills, first = sampled_oom_kills(samples)
    if kills is None:
        why = figures.sampler_errors.get("oom kills")
        notes.append(f"no OOM kill count: {why}" if why else
                     "no OOM kill count: fewer than two of its samples carry the kernel's oom_kill counter")
    return NodeMemory(limit_bytes=limit, peak_bytes=peak, peak_source="sampled" if peak is not None else None,
                      oom_kills=kills, notes=notes), first
