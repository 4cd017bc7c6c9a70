"""A node's page cache, scaled like its disk: what it can cache is the board's free memory × the scale factor.

An emulated node gets almost its board's memory, because a JVM's heap needs real bytes, but its data
is scaled down with its disk's rate. Its page cache would then hold data the board must read from its
medium — a 4 GB input on an 8 GB board is a 640 MB input here, cached whole — and every storage
shape would vanish. Under cgroup v1 there is no limit on a group's page cache alone, so this governor
moves the node's memory limit every tick to what its processes hold (anonymous memory, mapped files
such as the JVM's own code, shared memory, kernel memory) plus the scaled share of the rest:

    limit = held + (node memory − held) × factor

When a process needs more, the kernel takes it from the cache first, as on the board. A burst that
outruns the governor does not kill anything: the node's OOM killer is off while the limit is below
the node's memory, so the allocating thread waits, the next tick gives the node all of its memory,
and only a node that is out of memory at its full size has the kernel's OOM killer back — which is
what the board would do. Dirty and in-flight pages are never forced out (the kernel would wait for
the throttled disk); the dirty limit (dirty.py) keeps them few.

cgroup v2 has memory.high, which reclaims and throttles instead of killing; the same limit is set there.

Runs as one process per cluster, started with the nodes' CPU shaping, stopped at `cluster down`; it
gives every node its whole memory back and exits when asked or when the nodes' groups disappear.
"""

import argparse
import signal
import time
from dataclasses import dataclass
from pathlib import Path

INTERVAL_S = 0.5
# After an OOM wait, the node keeps its whole memory this long: a JVM that just grew will grow again.
RELEASE_S = 10.0
FULL_MARGIN = 8 * 2**20


def _stat(group: Path) -> dict[str, int]:
    values = {}
    for line in (group / "memory.stat").read_text().splitlines():
        key, _, value = line.partition(" ")
        values[key] = int(value)
    return values


def _read(path: Path) -> str:
    return path.read_text().strip()


def _write(path: Path, value: int | str) -> bool:
    try:
        path.write_text(str(value))
        return True
    except OSError:  # a limit under what cannot be reclaimed now, or the group is gone
        return False


def cache_limit(held: int, pinned_cache: int, node_memory: int, factor: float) -> int:
    """The node's memory limit: what its processes hold, plus the scaled share of the rest for its
    page cache, and never under the dirty and in-flight pages (pinned_cache) the disk has to take."""
    free = max(0, node_memory - held)
    return min(node_memory, max(held + int(free * factor), held + pinned_cache))


@dataclass
class NodeCache:
    group: Path  # the node's memory cgroup
    node_memory: int
    factor: float
    v2: bool = False
    released_until: float = 0.0
    killer_on: bool = True  # the kernel's OOM killer for this node (cgroup v1's memory.oom_control)

    def start(self) -> None:
        self._killer(False)

    def _killer(self, on: bool) -> None:
        if not self.v2 and on != self.killer_on and _write(self.group / "memory.oom_control", int(not on)):
            self.killer_on = on

    def tick(self, now: float) -> bool:
        if not self.group.exists():
            return False
        try:
            stat = _stat(self.group)
            usage = int(_read(self.group / ("memory.current" if self.v2 else "memory.usage_in_bytes")))
            under_oom = (not self.v2) and "under_oom 1" in _read(self.group / "memory.oom_control")
        except (OSError, ValueError):
            return self.group.exists()
        if under_oom:
            self.released_until = now + RELEASE_S
            if self._limit() >= self.node_memory and usage >= self.node_memory - FULL_MARGIN:
                # Out of memory at the board's size: the kernel kills as it would on the board. (A
                # thread woken by the raised limit may not have run yet on a small CPU share, so only
                # a node really full is let go.)
                self._killer(True)
            self._set(self.node_memory)
            return True
        if now < self.released_until:
            return True
        if self.v2:
            cache = stat.get("file", 0)
            mapped_or_shared = stat.get("file_mapped", 0) + stat.get("shmem", 0)
            pinned = stat.get("file_dirty", 0) + stat.get("file_writeback", 0)
        else:
            cache = stat.get("total_cache", 0)
            mapped_or_shared = stat.get("total_mapped_file", 0) + stat.get("total_shmem", 0)
            pinned = stat.get("total_dirty", 0) + stat.get("total_writeback", 0)
        held = max(0, usage - cache) + mapped_or_shared
        self._killer(False)
        self._set(cache_limit(held, pinned, self.node_memory, self.factor))
        return True

    def _limit(self) -> int:
        text = _read(self.group / ("memory.high" if self.v2 else "memory.limit_in_bytes"))
        return self.node_memory if text == "max" else int(text)

    def _set(self, limit: int) -> None:
        _write(self.group / ("memory.high" if self.v2 else "memory.limit_in_bytes"), limit)

    def give_back(self) -> None:
        if not self.group.exists():
            return
        if self.v2:
            _write(self.group / "memory.high", "max")
        else:
            self._set(self.node_memory)
            _write(self.group / "memory.oom_control", 0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Scale the page cache of a cluster's nodes with their disks.")
    parser.add_argument("--node", action="append", required=True, metavar="GROUP:BYTES",
                        help="a node's memory cgroup and the memory it was given")
    parser.add_argument("--factor", type=float, required=True)
    parser.add_argument("--v2", action="store_true")
    parser.add_argument("--state", help="the cluster's state file (names this process as the cluster's)")
    args = parser.parse_args(argv)
    nodes = []
    for given in args.node:
        group, _, memory = given.rpartition(":")
        nodes.append(NodeCache(Path(group), int(memory), args.factor, args.v2))
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    for node in nodes:
        node.start()
    try:
        while not stopping:
            alive = [node.tick(time.monotonic()) for node in nodes]
            if not any(alive):
                return
            time.sleep(INTERVAL_S)
    finally:
        for node in nodes:
            node.give_back()


if __name__ == "__main__":
    main()
