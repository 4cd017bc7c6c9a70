"""The idle baseline: every node sampled with the cluster up and nothing running, before a suite.

Its mean watts per node let each run report energy above idle too; its clock offsets are where
a suite warns about nodes whose clocks disagree by more than a second.
"""

import time
from datetime import datetime, timezone

from ..results.store import ResultsStore
from . import measure
from .recorder import Recorder
from .settings import MonitorSettings

CLOCK_TOLERANCE_S = 1.0


def measure_idle(cluster, settings: MonitorSettings, store: ResultsStore, run_id: str,
                 say=lambda message: None) -> dict | None:
    if not settings.enabled or settings.idle_baseline_s <= 0:
        return None
    say(f"measuring the idle baseline: {settings.idle_baseline_s:g} s with nothing running")
    recorder = Recorder(cluster, run_id, settings)
    recorder.start()
    start = time.time()
    try:
        time.sleep(settings.idle_baseline_s)
    except BaseException:
        recorder.abandon()
        raise
    end = time.time()
    raw = recorder.stop()
    measured, document = measure.summarise(raw, start=start, end=end, spec=cluster.spec, engine=None, counters={},
                                           input_bytes=None, engine_phases=[])
    path = store.write_series(run_id, document)
    for name, offset in raw.clock_offsets.items():
        if abs(offset["offset_s"]) > CLOCK_TOLERANCE_S:
            say(f"warning: {name}'s clock is {offset['offset_s']:+.2f} s from this host's; phases and power "
                "readings of that node are aligned with this offset (recorded with every run). Sync its clock (NTP).")
    return {"run_id": run_id, "measured_at": datetime.fromtimestamp(start, timezone.utc).isoformat(),
            "seconds": round(end - start, 3), "series": str(path.relative_to(store.root)),
            "watts": {n: p.avg_w for n, p in measured.power.items() if p.avg_w is not None},
            "sources": {n: p.source for n, p in measured.power.items()},
            "cpu_busy_pct": {n: f.cpu_busy_pct_mean for n, f in measured.nodes.items()},
            "clock_offsets": raw.clock_offsets, "notes": measured.notes}
