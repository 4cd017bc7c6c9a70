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
import os
import time
from pathlib import Path

from .cgroups import threads_file


def _tids(group: Path) -> list[int]:
    try:
        return [int(t) for t in threads_file(group).read_text().split()]
    except (OSError, ValueError):
        return []


def _cpu_ns(tid: int) -> int | None:
    """Nanoseconds the thread has run. /proc/TID/stat would give its whole process's time."""
    try:
        return int(Path(f"/proc/{tid}/task/{tid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


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

    def tick(self) -> bool:
        cores = sorted(self.node_group.glob("vcpu*"))
        if not cores:
            return self.node_group.exists()
        placement = {tid: i for i, core in enumerate(cores) for tid in _tids(core)}
        now: dict[int, int] = {}
        for tid in list(placement) + _tids(self.node_group):
            used = _cpu_ns(tid)
            if used is not None:
                now[tid] = used
        busy = {tid: now[tid] - self.last[tid] for tid in now if tid in self.last and now[tid] > self.last[tid]}
        # Threads born since the last tick sit on their parent's core (sysbench's four workers all on
        # one): they are placed now, not after a tick of history, which cost short runs a quarter of
        # their threads' time.
        arriving = [tid for tid in placement if tid not in self.last] if self.ticked else []
        self.last, self.ticked = now, True
        load = [0] * len(cores)
        # Busiest first, each to the least loaded core; staying put wins ties, so nothing churns.
        for tid in sorted(busy, key=busy.get, reverse=True):
            current = placement.get(tid)
            best = min(range(len(cores)), key=lambda i: (load[i], i != current))
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
        cores = sorted(self.node_group.glob("vcpu*"))
        if not self.ticked or len(cores) != len(self.load):
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
        for tid in newcomers:
            # Staying put wins ties here too: each move lets a thread spend a second core's quota in
            # the period it moves in.
            best = min(range(len(cores)), key=lambda i: (self.load[i], counts[i], i != placement.get(tid)))
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
        if args.ready is not None and not args.ready.exists():
            args.ready.write_text(f"{os.getpid()}\n")
        next_tick = time.monotonic() + args.interval
        while (left := next_tick - time.monotonic()) > 0:
            time.sleep(min(args.newcomers_interval, left))
            for b in balancers:
                b.place_newcomers()


if __name__ == "__main__":
    main()
