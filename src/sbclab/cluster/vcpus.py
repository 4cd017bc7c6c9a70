"""Virtual cores: a node's CPU as `cores` cores of the board's speed, not one pool of host time.

A CPU quota alone limits a node's total CPU time, so one thread on an emulated Pi would run at a
full host core's speed. Threads can sit in different groups (cgroup v1; on v2, the threaded groups
of the node's threaded subtree), so each node's cpu group has one child per board core, each with quota = core speed × scale factor, and this
balancer places every thread of the node in one of them: new threads go to the least loaded
core, and every tick the busiest threads are spread over the cores by longest-processing-time
first, the way a scheduler balances run queues. Threads a thread creates start on its core and are
placed by the next tick; a process entering the node starts on a core too (NodeCgroup.join), so no
thread runs under the node's whole quota, which would give a lone thread several cores' speed.

Runs as one process per cluster, started at `cluster up`, stopped at `cluster down`; it exits by
itself when the cluster's groups disappear.
"""

import argparse
import errno
import os
import time
from pathlib import Path

from .. import atomic
from .cgroups import share_of, threads_file, usage_file, usage_ns

# A tick reads every thread's CPU time. While the node has used less than this share of its smallest
# core's quota since the last tick, no core can have been short, so the tick only places newcomers:
# an idle cluster's daemons (a few hundred threads a node) then cost the balancer almost nothing,
# where reading them all four times a second made it the busiest process of an idle cluster.
QUIET_SHARE = 0.25


def _read(path: str) -> bytes:
    """A kernel file's whole text through the bare system calls: a tick reads one file per thread of the
    cluster, four times a second, and Python's file objects cost three times the CPU."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _tids(group: Path) -> list[int]:
    for name in ("tasks", "cgroup.threads"):  # v1's, else v2's (threads_file, without a stat first)
        try:
            return [int(t) for t in _read(f"{group}/{name}").split()]
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return []
    return []


# Each thread's schedstat, kept open from one read to the next: a full tick reads one per thread of the
# cluster, and a pread of an open file costs a quarter of the CPU of opening, reading and closing it
# (2 against 9 us here; eight emulated Pi 5 workers' threads made the balancer 15 % of a host core).
_schedstats: dict[int, int] = {}


def _cpu_ns(tid: int) -> int | None:
    """Nanoseconds the thread has run. /proc/TID/stat would give its whole process's time."""
    for _ in range(2):  # a descriptor kept for a thread that ended is dropped, and its id read afresh
        fd = _schedstats.get(tid)
        if fd is None:
            try:
                fd = _schedstats[tid] = os.open(f"/proc/{tid}/task/{tid}/schedstat", os.O_RDONLY)
            except OSError as err:
                if err.errno not in (errno.EMFILE, errno.ENFILE):
                    return None  # the thread ended
                try:  # no descriptor left to keep: read it the long way
                    return int(_read(f"/proc/{tid}/task/{tid}/schedstat").split()[0])
                except (OSError, ValueError, IndexError):
                    return None
        try:
            return int(os.pread(fd, 256, 0).split()[0])
        except (OSError, ValueError, IndexError):
            _close_schedstat(tid)
    return None


def _close_schedstat(tid: int) -> None:
    fd = _schedstats.pop(tid, None)
    if fd is not None:
        os.close(fd)


def _keep_schedstats_of(tids) -> None:
    """Close what is kept open for threads no longer in the cluster."""
    for tid in set(_schedstats) - set(tids):
        _close_schedstat(tid)


def _move(tid: int, group: Path) -> None:
    try:
        threads_file(group).write_text(str(tid))
    except OSError:
        pass  # the thread ended in between


class NodeBalancer:
    def __init__(self, node_group: Path):
        self.node_group = node_group
        self.last: dict[int, int] = {}
        self.ticked = False
        # Each core's load as the last tick left it, and what a thread just born counts as.
        self.load: list[int] = []
        self.presumed = 1
        self.cores: list[Path] = []  # as the last tick found them: they change only with the cluster
        self.usage_path = usage_file(node_group)
        self.smallest_share: float | None = None
        # Each core's speed as its quota (host cores): alike on most boards, two kinds on big.LITTLE ones.
        self.capacity: list[float] = []
        self.usage: tuple[float, int] | None = None  # (when, the node's CPU ns) at the last tick
        self.stale = False  # ticks were skipped: the threads' times in `last` span more than a tick

    def _read_capacity(self, cores: list[Path]) -> None:
        shares = [share_of(core) for core in cores]
        known = [s for s in shares if s is not None]
        self.smallest_share = min(known) if known else None
        self.capacity = [s if s is not None else max(known, default=1.0) for s in shares]

    def _quiet(self, cores: list[Path]) -> bool:
        now, used = time.monotonic(), usage_ns(self.usage_path)
        before, self.usage = self.usage, (now, used) if used is not None else None
        if cores != self.cores or self.smallest_share is None:
            self._read_capacity(cores)
        if before is None or used is None or self.smallest_share is None:
            return False
        return used - before[1] < QUIET_SHARE * self.smallest_share * (now - before[0]) * 1e9

    def tick(self) -> bool:
        found = sorted(self.node_group.glob("vcpu*"))
        if not found:
            return self.node_group.exists()
        quiet = self.ticked and self._quiet(found)
        if found != self.cores or len(self.capacity) != len(found):
            self._read_capacity(found)
        cores = self.cores = found
        capacity = self.capacity
        if quiet:
            self.stale = True
            self.place_newcomers()
            return True
        placement = {tid: i for i, core in enumerate(cores) for tid in _tids(core)}
        now: dict[int, int] = {}
        for tid in list(placement) + _tids(self.node_group):
            used = _cpu_ns(tid)
            if used is not None:
                now[tid] = used
        # After quiet ticks a thread's time since `last` is mostly from before this one: balanced from the next.
        busy = {} if self.stale else {tid: now[tid] - self.last[tid] for tid in now
                                      if tid in self.last and now[tid] > self.last[tid]}
        self.stale = False
        # Threads born since the last tick sit on their parent's core (sysbench's four workers all on
        # one): they are placed now, not after a tick of history, which cost short runs a quarter of
        # their threads' time.
        arriving = [tid for tid in placement if tid not in self.last] if self.ticked else []
        self.last, self.ticked = now, True
        load = [0] * len(cores)
        # Busiest first: the first one to a core each, the busiest to the fastest (a scheduler idles no
        # core while threads wait, and moves heavy threads to big cores), then each to the core where
        # it would finish first. Staying put wins ties, so nothing churns. On cores alike this is
        # longest-processing-time-first by load.
        for rank, tid in enumerate(sorted(busy, key=busy.get, reverse=True)):
            current = placement.get(tid)
            if rank < len(cores):
                best = min((i for i in range(len(cores)) if load[i] == 0),
                           key=lambda i: (-capacity[i], i != current))
            else:
                best = min(range(len(cores)), key=lambda i: ((load[i] + busy[tid]) / capacity[i], i != current))
            load[best] += busy[tid]
            if best != current:
                _move(tid, cores[best])
                placement[tid] = best
        # A thread just born is counted as busy as the busiest: the next one then goes to another core,
        # not beside it on the core whose only load was their parent's burst of creating them (two of
        # sysbench's four workers shared a core for a tick, then one moved).
        self.load, self.presumed = load, max(busy.values(), default=0) + 1
        self._place(cores, placement, arriving + _tids(self.node_group))  # and processes that just joined the node
        return True

    def place_newcomers(self) -> None:
        """Threads born since the last tick, placed between ticks: until then a program's new threads
        share their parent's core, and four sysbench workers ran a tick at a quarter of their speed."""
        cores = self.cores
        if not self.ticked or not cores or len(cores) != len(self.load):
            return
        placement = {tid: i for i, core in enumerate(cores) for tid in _tids(core)}
        newcomers = [tid for tid in placement if tid not in self.last] + _tids(self.node_group)
        if newcomers:
            self._place(cores, placement, newcomers)
            for tid in newcomers:
                used = _cpu_ns(tid)
                if used is not None:
                    self.last[tid] = used  # the next tick balances them by what they use from now on

    def _place(self, cores: list[Path], placement: dict[int, int], newcomers: list[int]) -> None:
        counts = [0] * len(cores)
        for tid, i in placement.items():
            counts[i] += tid not in newcomers
        capacity = self.capacity if len(self.capacity) == len(cores) else [1.0] * len(cores)
        for tid in newcomers:
            # Where it would finish first, as if as busy as the busiest: the fastest idle core. Staying
            # put wins ties here too: each move lets a thread spend a second core's quota in the period
            # it moves in.
            best = min(range(len(cores)), key=lambda i: ((self.load[i] + self.presumed) / capacity[i], counts[i],
                                                         i != placement.get(tid)))
            if placement.get(tid) != best:
                _move(tid, cores[best])
            self.load[best] += self.presumed
            counts[best] += 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Balance a cluster's threads over its nodes' virtual cores.")
    parser.add_argument("--node-group", action="append", type=Path, required=True, help="a node's cpu cgroup")
    parser.add_argument("--state", help="the cluster's state file (names this process as the cluster's)")
    parser.add_argument("--interval", type=float, default=0.25)
    # Looking for new threads reads only the groups' thread lists, not every thread's CPU time as a
    # tick does, so it can run five times as often for a fraction of the cost.
    parser.add_argument("--newcomers-interval", type=float, default=0.05)
    parser.add_argument("--ready", type=Path, help="a file written once the first tick is done")
    args = parser.parse_args(argv)
    balancers = [NodeBalancer(group) for group in args.node_group]
    while True:
        alive = [b.tick() for b in balancers]
        if not any(alive):
            return
        _keep_schedstats_of(set().union(*(b.last for b in balancers)))
        if args.ready is not None and not args.ready.exists():
            # Whole or absent: the waiting side reads it the moment it exists.
            atomic.write_text(args.ready, f"{os.getpid()}\n")
        next_tick = time.monotonic() + args.interval
        while (left := next_tick - time.monotonic()) > 0:
            time.sleep(min(args.newcomers_interval, left))
            for b in balancers:
                b.place_newcomers()


if __name__ == "__main__":
    main()
