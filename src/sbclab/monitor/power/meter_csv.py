"""An external power meter's log: a CSV file with a time column and a watts column, read after the
run and aligned to it by timestamp (epoch seconds, or ISO 8601 where a naive time is UTC).
"""

import csv
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, Field

from .base import NodeRecording, PowerSource, Readings, measured, point_intervals


class MeterFields(BaseModel):
    path: str | None = Field(None, description="the meter's log file")
    time_column: str = "time"
    watts_column: str = "watts"


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


class MeterCsv(PowerSource):
    """a log from an external meter: a time column and a watts column, aligned by timestamp"""

    name = "csv"
    fields = MeterFields

    def check(self, spec: MeterFields) -> None:
        if not spec.path:
            raise ValueError("a csv source needs 'path', the meter's log file")

    def readings(self, spec: MeterFields, node: NodeRecording) -> Readings:
        try:
            points = read_meter_csv(Path(spec.path), spec.time_column, spec.watts_column)
        except (OSError, ValueError) as err:
            return Readings([], f"the meter log cannot be read: {err}")
        # A meter's clock is its own; the node's offset to this host aligns it when the meter logs node time.
        intervals = point_intervals([(t - node.clock_offset_s, w) for t, w in points], max(node.interval_s, 1.0))
        return measured(intervals, f"{spec.path} has no reading during the run")
