"""The nemesis: a run's faults applied on time while its job runs, and undone on time or when the job
ends, whatever happens. Each fault is recorded before it is applied (cluster/faultrecords.py), so
what this process cannot undo (it is killed) the next sbclab or `cluster down --force` does."""

import random
import threading
import time

from ..cluster import faultrecords
from ..stack.lifecycle import Cluster
from . import get, phases
from .base import FaultRun, FaultSpec
from .effects import Watch

WATCH_EVERY_S = 2.0
PHASE_POLL_S = 1.0


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
            try:
                self.watch.start()
            except Exception:  # noqa: BLE001 - without a baseline the worst is read as it is
                pass
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _timeline(self) -> None:
        """Apply each fault when due (its time, or its time after its phase began), undo the lasting
        ones when theirs is up, and watch the masters once a fault is in place."""
        due: dict[int, float | None] = {i: None if r.spec.phase else r.spec.at_s for i, r in enumerate(self.runs)}
        heals: dict[int, float] = {}
        since_ms = int((time.time() - (time.monotonic() - self._t0)) * 1000)
        watched = -WATCH_EVERY_S
        while not self._stop.is_set():
            now = time.monotonic() - self._t0
            for i, run in enumerate(self.runs):
                if i not in due:
                    continue
                if due[i] is None and self._reached(run.spec.phase, since_ms):
                    run.phase_s = round(now, 2)
                    due[i] = now + run.spec.at_s
                if due[i] is not None and now >= due[i]:
                    del due[i]
                    self._apply(i)
                    if i in self._records and get(run.spec.kind).lasting and run.spec.for_s:
                        # Counted from when it was in place: applying a partition or a throttle takes time.
                        heals[i] = run.applied_s + run.spec.for_s
            for i, at in list(heals.items()):
                if now >= at:
                    del heals[i]
                    self._heal(i)
            if self.first_applied is not None and now - watched >= WATCH_EVERY_S:
                self.watch.sample()
                watched = now
            # Awake for the next fault or undoing that is due, and every second while a phase is awaited.
            timed = [t for t in (*due.values(), *heals.values()) if t is not None]
            pending_phase = any(t is None for t in due.values())
            wake = min([*timed, now + (PHASE_POLL_S if pending_phase else WATCH_EVERY_S)]) - now
            self._stop.wait(max(0.01, wake))
        for i in due:  # what the job ended before
            spec = self.runs[i].spec
            when = (f"its {spec.phase} phase was seen" if spec.phase and self.runs[i].phase_s is None
                    else f"the fault was due ({spec.label})")
            self.runs[i].problems.append(f"the job ended before {when}: not applied")

    def _reached(self, phase: str, since_ms: int) -> bool:
        try:
            return phases.reached(self.cluster, phase, since_ms)
        except Exception:  # noqa: BLE001 - a master that does not answer now may answer at the next look
            return False

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
