"""The nemesis: a run's faults applied on time while its job runs, and undone on time or when the job
ends, whatever happens. Each fault is recorded before it is applied (cluster/faultrecords.py), so
what this process cannot undo (it is killed) the next sbclab or `cluster down --force` does."""

import random
import threading
import time

from ..cluster import faultrecords
from ..stack.lifecycle import Cluster
from . import get
from .base import FaultRun, FaultSpec
from .effects import Watch

WATCH_EVERY_S = 2.0


class Nemesis:
    def __init__(self, cluster: Cluster, faults: list[FaultSpec], run_id: str, say=lambda message: None):
        self.cluster, self.say = cluster, say
        workers = [n.name for n in cluster.spec.worker_nodes]
        chooser = random.Random(run_id)  # a random node that the run's id reproduces
        self.runs = [FaultRun(spec=f, node=chooser.choice(workers) if f.node == "random" else f.node) for f in faults]
        self.watch = Watch(cluster)
        self.first_applied: float | None = None  # monotonic
        self._records: dict[int, dict] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._timeline, name="nemesis", daemon=True)
        self._t0 = 0.0

    def __enter__(self) -> "Nemesis":
        self._t0 = time.monotonic()
        if self.runs:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _events(self) -> list[tuple[float, str, int]]:
        events = []
        for i, run in enumerate(self.runs):
            events.append((run.spec.at_s, "apply", i))
            if get(run.spec.kind).lasting and run.spec.for_s:
                events.append((run.spec.at_s + run.spec.for_s, "heal", i))
        return sorted(events)

    def _timeline(self) -> None:
        for at, action, i in self._events():
            while not self._stop.is_set():
                left = self._t0 + at - time.monotonic()
                if left <= 0:
                    break
                if self.first_applied is not None:
                    self.watch.sample()
                self._stop.wait(min(left, WATCH_EVERY_S))
            if self._stop.is_set():
                return
            (self._apply if action == "apply" else self._heal)(i)
        while not self._stop.is_set():
            self.watch.sample()
            self._stop.wait(WATCH_EVERY_S)

    def _apply(self, i: int) -> None:
        run = self.runs[i]
        try:
            applied = get(run.spec.kind).apply(self.cluster, run.spec, run.node)
        except Exception as err:  # noqa: BLE001 - a fault that could not be applied is the run's finding, not a crash
            run.problems.append(getattr(err, "message", None) or f"{type(err).__name__}: {err}")
            return
        run.applied_s = round(time.monotonic() - self._t0, 2)
        run.detail = applied.detail
        if self.first_applied is None:
            self.first_applied = time.monotonic()
        if applied.record is not None:
            self._records[i] = applied.record
        self.say(f"fault: {applied.detail} at {run.applied_s:.1f} s")
        self.watch.sample()

    def _heal(self, i: int) -> None:
        entry = self._records.pop(i, None)
        if entry is None:
            return
        run = self.runs[i]
        run.problems += faultrecords.heal(self.cluster.transport, entry)
        if entry.get("heal"):
            run.healed_s = round(time.monotonic() - self._t0, 2)
            self.say(f"fault undone: {run.spec.kind} on {run.node} at {run.healed_s:.1f} s")

    def stop(self) -> list[FaultRun]:
        """Stop applying, undo what is still in place; the faults as they went."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=120)
        for i in list(self._records):
            self._heal(i)
        return self.runs
