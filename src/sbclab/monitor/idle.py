"""The idle baseline: every node sampled with the cluster up and nothing running, before a suite.

Its mean watts per node let each run report energy above idle too. Its clock offsets are where
a suite warns about nodes whose clocks disagree by more than a second; when the baseline is
skipped (sampling off, or idle_baseline_s 0) the offsets are still measured and warned about,
since a skewed clock misplaces a node's samples and its engine's phase times just the same.
"""

import time
from datetime import datetime, timezone

from ..cluster.transport import Transport
from ..results.store import ResultsStore
from . import measure, sampling
from .recorder import Recorder, measure_clock_offsets
from .settings import MonitorSettings

CLOCK_TOLERANCE_S = 1.0


def clock_warnings(offsets: dict[str, dict[str, float]]) -> list[str]:
    """One sentence per node whose clock is more than CLOCK_TOLERANCE_S from this host's.

    Only a CSV power meter's log is shifted by the offset (power/meter_csv.py); samples and the engines'
    phase times are kept in the node's own time, so the fix is to sync the clock, not to trust
    a correction."""
    return [f"{name}'s clock is {o['offset_s']:+.2f} s from this host's (recorded with every sampled run). "
            "Samples taken on it and phase times its daemons log are kept in its own time, so they are that "
            "far off this host's marks; only a CSV power meter's readings are shifted by the offset. "
            "Sync its clock (NTP) before measuring."
            for name, o in sorted(offsets.items()) if abs(o["offset_s"]) > CLOCK_TOLERANCE_S]


def clock_notes(baseline: dict | None) -> list[str]:
    """Short notes for a run document on the offsets over the tolerance in a baseline's result."""
    offsets = (baseline or {}).get("clock_offsets") or {}
    return [f"{name}'s clock was {o['offset_s']:+.2f} s from this host's before the suite"
            for name, o in sorted(offsets.items()) if abs(o["offset_s"]) > CLOCK_TOLERANCE_S]


def check_clocks(transport: Transport, say=lambda message: None) -> dict[str, dict[str, float]]:
    """Each sampled node's clock offset to this host's, with a warning for each one over the tolerance."""
    offsets = measure_clock_offsets(transport, sampling.points(transport))
    for sentence in clock_warnings(offsets):
        say(f"warning: {sentence}")
    return offsets


def measure_idle(transport: Transport, settings: MonitorSettings, store: ResultsStore, run_id: str,
                 say=lambda message: None) -> dict | None:
    """The idle baseline's result (watts, sources, clock offsets), stored for every run of the suite.

    Skipped (sampling off or idle_baseline_s 0), it holds the clock offsets only, with `skipped`
    saying why; the clocks are checked either way."""
    if not settings.enabled or settings.idle_baseline_s <= 0:
        why = "sampling is off" if not settings.enabled else "idle_baseline_s is 0"
        return {"run_id": None, "skipped": why, "clock_offsets": check_clocks(transport, say)}
    say(f"measuring the idle baseline: {settings.idle_baseline_s:g} s with nothing running")
    recorder = Recorder(transport, run_id, settings)
    recorder.start()
    start = time.time()
    try:
        time.sleep(settings.idle_baseline_s)
    except BaseException:
        recorder.abandon()
        raise
    end = time.time()
    raw = recorder.stop()
    measured, document = measure.summarise(raw, start=start, end=end, spec=transport.spec, engine=None, counters={},
                                           input_bytes=None, engine_phases=[])
    path = store.write_series(run_id, document)
    for sentence in clock_warnings(raw.clock_offsets):
        say(f"warning: {sentence}")
    return {"run_id": run_id, "measured_at": datetime.fromtimestamp(start, timezone.utc).isoformat(),
            "seconds": round(end - start, 3), "series": str(path.relative_to(store.root)),
            "watts": {n: p.avg_w for n, p in measured.power.items() if p.avg_w is not None},
            "sources": {n: p.source for n, p in measured.power.items()},
            "cpu_busy_pct": {n: f.cpu_busy_pct_mean for n, f in measured.nodes.items()},
            "clock_offsets": raw.clock_offsets, "notes": measured.notes}
