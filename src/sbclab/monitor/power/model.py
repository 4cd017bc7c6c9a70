"""The model: a node's watts estimated from its CPU use, linear between the board profile's idle and
full-load watts (the seeds' idle and stress-test figures). It needs nothing but the samples every node
has, so it also stands in for any other source that gives nothing; run documents mark it an estimate.
"""

from ... import profiles
from .base import Interval, NodeRecording, PowerSource, Readings


def model_intervals(rows: list[dict], idle_w: float, load_w: float) -> list[Interval]:
    """P = idle + (load - idle) x utilisation."""
    out = []
    for r in rows:
        idle_pct = r.get("cpu_idle_pct")
        if idle_pct is None:
            continue
        busy = max(0.0, min(1.0, (100 - idle_pct - (r.get("cpu_iowait_pct") or 0)) / 100))
        out.append((r["t"] - r["dt"], r["t"], idle_w + (load_w - idle_w) * busy))
    return out


class Model(PowerSource):
    """linear between the board profile's idle and full-load watts by CPU utilisation (an estimate)"""

    name = "model"
    estimate = True

    def readings(self, spec, node: NodeRecording) -> Readings:
        board = profiles.board(node.board)
        if board.idle_watts is None or board.load_watts is None:
            return Readings([], f"board {node.board} has no idle and full-load watts in its profile")
        return Readings(model_intervals(node.rows, board.idle_watts, board.load_watts))
