"""Power and energy of a node over a run, from whichever source the node has, behind one interface.

Every source yields intervals (t0, t1, watts): RAPL as energy-counter differences, the model as a
function of each interval's CPU utilisation, and point readings (PMIC, smart plug, CSV meter) as
the mean of two consecutive readings. Energy is the integral over the run's window; where the
readings cover less of it, the coverage says so. A source that gives nothing falls back to the
model, and the figure says which it is.
"""

import csv
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from .. import profiles
from .series import gap_threshold

Interval = tuple[float, float, float]


@dataclass
class PowerResult:
    source: str
    estimate: bool
    intervals: list[Interval]
    notes: list[str] = field(default_factory=list)


def model_intervals(rows: list[dict], idle_w: float, load_w: float) -> list[Interval]:
    """P = idle + (load - idle) x utilisation: the seeds' idle and stress-test watts, linear between."""
    out = []
    for r in rows:
        idle_pct = r.get("cpu_idle_pct")
        if idle_pct is None:
            continue
        busy = max(0.0, min(1.0, (100 - idle_pct - (r.get("cpu_iowait_pct") or 0)) / 100))
        out.append((r["t"] - r["dt"], r["t"], idle_w + (load_w - idle_w) * busy))
    return out


def rapl_intervals(samples: list[dict], domains: dict[str, dict], interval_s: float) -> list[Interval]:
    out = []
    ordered = [s for s in sorted(samples, key=lambda s: s["t"]) if "rapl_uj" in s]
    for a, b in zip(ordered, ordered[1:]):
        dt = b["t"] - a["t"]
        if dt <= 0 or dt > gap_threshold(interval_s):
            continue
        joules = 0.0
        for domain, info in domains.items():
            x, y = a["rapl_uj"].get(domain), b["rapl_uj"].get(domain)
            if x is None or y is None:
                continue
            if y < x:  # the counter wrapped
                y += info["max_energy_range_uj"] + 1
            joules += (y - x) / 1e6
        out.append((a["t"], b["t"], joules / dt))
    return out


def point_intervals(points: list[tuple[float, float]], interval_s: float) -> list[Interval]:
    ordered = sorted(points)
    return [(t0, t1, (w0 + w1) / 2) for (t0, w0), (t1, w1) in zip(ordered, ordered[1:])
            if 0 < t1 - t0 <= gap_threshold(interval_s)]


def read_meter_csv(path: Path, time_column: str, watts_column: str) -> list[tuple[float, float]]:
    """A meter's log: times as epoch seconds or ISO 8601 (with a zone, or UTC), watts as numbers."""
    points = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = {time_column, watts_column} - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path} has no column {', '.join(sorted(missing))} (columns: {', '.join(reader.fieldnames or [])})")
        for number, line in enumerate(reader, start=2):
            raw_time, raw_watts = (line[time_column] or "").strip(), (line[watts_column] or "").strip()
            if not raw_time or not raw_watts:
                continue
            try:
                t = float(raw_time)
            except ValueError:
                try:
                    stamp = datetime.fromisoformat(raw_time.replace("Z", "+00:00"))
                except ValueError as err:
                    raise ValueError(f"{path}:{number}: '{raw_time}' is neither epoch seconds nor ISO 8601") from err
                if stamp.tzinfo is None:
                    stamp = stamp.replace(tzinfo=timezone.utc)
                t = stamp.timestamp()
            try:
                points.append((t, float(raw_watts)))
            except ValueError as err:
                raise ValueError(f"{path}:{number}: '{raw_watts}' is not a number of watts") from err
    return points


def for_node(power: dict, header: dict, samples: list[dict], rows: list[dict], board: str,
             interval_s: float, clock_offset_s: float = 0.0) -> PowerResult:
    """The node's power intervals from its configured source, or the model when that gives nothing."""
    spec = power.get("spec") or {"source": "model"}
    source = spec.get("source", "model")
    notes: list[str] = []
    intervals: list[Interval] = []
    if source == "rapl":
        intervals = rapl_intervals(samples, header.get("rapl") or {}, interval_s)
        why = _sampler_error(samples, "power") or "no RAPL readings"
    elif source == "pi5-pmic":
        intervals = point_intervals([(s["t"], s["pmic_w"]) for s in samples if "pmic_w" in s], interval_s)
        why = _sampler_error(samples, "power") or "no PMIC readings"
    elif source == "http-plug":
        intervals = point_intervals([(s["t"], s["w"]) for s in power.get("plug_samples") or []], interval_s)
        errors = power.get("plug_errors") or []
        why = f"the plug at {spec.get('url')} gave no reading" + (f" ({errors[0]})" if errors else "")
        if intervals and errors:
            notes.append(f"{len(errors)} plug readings failed, first: {errors[0]}")
    elif source == "csv":
        try:
            points = read_meter_csv(Path(spec["path"]), spec.get("time_column", "time"), spec.get("watts_column", "watts"))
            # A meter's clock is its own; the node's offset to this host aligns it when the meter logs node time.
            intervals = point_intervals([(t - clock_offset_s, w) for t, w in points], max(interval_s, 1.0))
            why = f"{spec['path']} has no reading during the run"
        except (OSError, ValueError) as err:
            why = f"the meter log cannot be read: {err}"
    else:
        why = ""
    if source != "model" and intervals:
        return PowerResult(source, False, intervals, notes)
    board_profile = profiles.board(board)
    if board_profile.idle_watts is None or board_profile.load_watts is None:
        notes.append(f"no power figure: board {board} has no idle and full-load watts in its profile")
        if source != "model":
            notes.insert(0, f"{source} unavailable: {why}")
        return PowerResult("none", True, [], notes)
    if source != "model":
        notes.append(f"{source} unavailable: {why}; the model estimate is used instead")
    return PowerResult("model", True, model_intervals(rows, board_profile.idle_watts, board_profile.load_watts), notes)


def _sampler_error(samples: list[dict], name: str) -> str | None:
    for s in samples:
        if name in (s.get("errors") or {}):
            return s["errors"][name]
    return None


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
