"""RAPL: the powercap energy counters of an Intel or AMD node (the desktop comparison). The node's
sampler reads every package domain's counter (its sub-domains, cores, uncore and DRAM, are inside
it); power is the counters' difference between two samples, summed over the packages.
"""

from pydantic import BaseModel, Field

from ..series import gap_threshold
from .base import Interval, NodeRecording, PowerSource, Readings, measured, sampler_error


class RaplFields(BaseModel):
    powercap: str = Field("/sys/class/powercap", description="where the powercap tree is")


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


class Rapl(PowerSource):
    """the powercap energy counters of an Intel/AMD node (package domains summed)"""

    name = "rapl"
    fields = RaplFields

    def node_side(self, spec: RaplFields) -> dict:
        return {"source": self.name, "powercap": spec.powercap}

    def readings(self, spec: RaplFields, node: NodeRecording) -> Readings:
        return measured(rapl_intervals(node.samples, node.header.get("rapl") or {}, node.interval_s),
                        sampler_error(node.samples, "power") or "no RAPL readings")
