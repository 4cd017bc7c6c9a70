"""The Raspberry Pi 5's PMIC: the node's sampler reads every rail's volts and amps
(`vcgencmd pmic_read_adc`) and keeps their sum of products. That is the board after its 5 V input,
without the supply's losses or USB devices.
"""

from .base import NodeRecording, PowerSource, Readings, measured, point_intervals, sampler_error


class Pi5Pmic(PowerSource):
    """the Raspberry Pi 5's PMIC rail readings (`vcgencmd pmic_read_adc`)"""

    name = "pi5-pmic"

    def node_side(self, spec) -> dict:
        return {"source": self.name}

    def readings(self, spec, node: NodeRecording) -> Readings:
        points = [(s["t"], s["pmic_w"]) for s in node.samples if "pmic_w" in s]
        return measured(point_intervals(points, node.interval_s),
                        sampler_error(node.samples, "power") or "no PMIC readings")
