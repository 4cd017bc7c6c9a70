"""What happens between two runs so each starts from the same state, as the seeds prescribe.

The page cache is dropped so no run reads what the previous one left in memory; the nodes'
filesystems are trimmed (the 2026 seed saw up to 3x run-to-run variation on flash without it);
and sbclab waits until the nodes are idle, so a run does not share the CPU with the tail of the
last one (YARN containers exiting, HDFS deleting blocks).
"""

import time
from dataclasses import dataclass, field

from ..cluster import nodeops
from ..cluster.transport import Transport
from .model import BetweenRuns


@dataclass
class Reset:
    dropped_caches: bool = False
    trimmed: list[str] = field(default_factory=list)
    idle_after_s: float | None = None
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"before the run: caches dropped {self.dropped_caches}, trimmed {', '.join(self.trimmed) or 'none'}, "
                f"idle after {self.idle_after_s} s")


def wait_idle(transport: Transport, max_cpu_percent: float = 20.0, timeout_s: float = 60.0,
              window_s: float = 1.0) -> float | None:
    """Seconds until the nodes' CPU use over one window fell below max_cpu_percent; None on timeout."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if nodeops.busy_percent(transport, window_s) < max_cpu_percent:
            return round(time.monotonic() - start, 1)
    return None


def between_runs(transport: Transport, settings: BetweenRuns) -> Reset:
    reset = Reset()
    if settings.drop_caches:
        reset.dropped_caches = nodeops.drop_caches(transport)
        if not reset.dropped_caches:
            reset.notes.append("page cache not dropped: needs root")
    if settings.fstrim:
        reset.trimmed = nodeops.fstrim(transport)
        if not reset.trimmed:
            reset.notes.append("filesystems not trimmed: only emulated nodes run as root and boards have their own")
    if settings.idle_timeout_s > 0:
        reset.idle_after_s = wait_idle(transport, settings.idle_cpu_percent, settings.idle_timeout_s)
        if reset.idle_after_s is None:
            reset.notes.append(f"nodes not idle (CPU < {settings.idle_cpu_percent:g} %) within "
                               f"{settings.idle_timeout_s:g} s; ran anyway")
    return reset
