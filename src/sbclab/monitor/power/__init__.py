"""Power and energy of a node over a run, from whichever source the node has, behind one interface.

Each source is a module here (base.py says what a source is) and one entry in SOURCES. Every source
yields intervals (t0, t1, watts): RAPL as energy-counter differences, the model as a function of each
interval's CPU utilisation, and point readings (PMIC, smart plug, CSV meter) as the mean of two
consecutive readings. Energy is the integral over the run's window; where the readings cover less of
it, the coverage says so. A source that gives nothing falls back to the model, and the figure says
which it is.
"""

from dataclasses import dataclass, field

from .base import Interval, NodeRecording, Poller, PowerSource, Redacted
from .http_plug import HttpPlug
from .meter_csv import MeterCsv
from .model import Model
from .pi5_pmic import Pi5Pmic
from .rapl import Rapl

__all__ = ["FALLBACK", "SOURCES", "Interval", "Poller", "PowerResult", "PowerSource", "Redacted", "energy",
           "for_node"]

# Every source by the name power files give it.
SOURCES: dict[str, PowerSource] = {s.name: s for s in (
    Model(),
    Rapl(),
    Pi5Pmic(),
    HttpPlug(),
    MeterCsv(),
)}

# The source of a node whose settings name none, and what stands in when a node's source gives
# nothing: it needs only the samples every node has.
FALLBACK = "model"


@dataclass
class PowerResult:
    source: str
    estimate: bool
    intervals: list[Interval]
    notes: list[str] = field(default_factory=list)


def for_node(power: dict, header: dict, samples: list[dict], rows: list[dict], board: str,
             interval_s: float, clock_offset_s: float = 0.0) -> PowerResult:
    """The node's power intervals from its configured source, or the model when that gives nothing.

    `power` is what the recording kept of the node's source: {"spec": as shown, "polled": ...}."""
    spec = power.get("spec") or {"source": FALLBACK}
    source = SOURCES[spec.get("source", FALLBACK)]
    node = NodeRecording(header, samples, rows, board, interval_s, clock_offset_s, power.get("polled") or {})
    got = source.readings(source.own(spec), node)
    if got.unavailable is None:
        return PowerResult(source.name, source.estimate, got.intervals, got.notes)
    if source.name == FALLBACK:
        return PowerResult("none", True, [], [f"no power figure: {got.unavailable}"])
    fallback = SOURCES[FALLBACK]
    instead = fallback.readings(fallback.own({}), node)
    # report/build.py reads these notes back: "SOURCE unavailable: WHY[; the model ...]".
    why = f"{source.name} unavailable: {got.unavailable}"
    if instead.unavailable is not None:
        return PowerResult("none", True, [], [why, f"no power figure: {instead.unavailable}"])
    return PowerResult(fallback.name, fallback.estimate, instead.intervals,
                       [f"{why}; the model estimate is used instead"])


def energy(intervals: list[Interval], start: float, end: float) -> dict:
    """Joules, mean and peak watts over [start, end], and how much of it the readings cover."""
    joules = covered = 0.0
    peak = None
    for t0, t1, watts in intervals:
        overlap = min(t1, end) - max(t0, start)
        if overlap <= 0:
            continue
        joules += watts * overlap
        covered += overlap
        peak = watts if peak is None else max(peak, watts)
    span = max(end - start, 1e-9)
    if covered == 0:
        return {"energy_j": None, "avg_w": None, "peak_w": None, "coverage": 0.0}
    return {"energy_j": round(joules, 3), "avg_w": round(joules / covered, 4), "peak_w": round(peak, 4),
            "coverage": round(min(1.0, covered / span), 4)}
