"""Clock offsets are checked before a suite even when the idle baseline is skipped; the warning says
what is and is not corrected. A stand-in backend whose nodes' clocks run ahead of this host's."""

import time
from types import SimpleNamespace

import pytest

from sbclab.cluster.transport import Captured, NodeParts
from sbclab.monitor import idle
from sbclab.monitor.settings import MonitorSettings


class AheadTransport:
    """Nodes whose clocks run `ahead` seconds (by name) ahead of this host's."""

    def __init__(self, ahead: dict[str, float]):
        self.ahead = ahead
        nodes = [SimpleNamespace(name=name) for name in ahead]
        self.spec = SimpleNamespace(nodes=nodes, master=nodes[0])

    def parts(self, node):
        return NodeParts(scope="node")

    def capture(self, node, argv, env=None, timeout_s=120):
        return Captured(0, f"{time.time() + self.ahead[node.name]:.6f}\n".encode(), b"")


def cluster(**ahead) -> AheadTransport:
    return AheadTransport(ahead)


@pytest.mark.parametrize("settings", [MonitorSettings(idle_baseline_s=0), MonitorSettings(enabled=False)])
def test_a_skipped_baseline_still_checks_and_returns_the_clocks(settings):
    said = []
    got = idle.measure_idle(cluster(master=0.0, worker1=5.0), settings, store=None, run_id="idle-x", say=said.append)
    assert got["skipped"] in ("idle_baseline_s is 0", "sampling is off") and got["run_id"] is None
    assert set(got["clock_offsets"]) == {"master", "worker1"}
    assert got["clock_offsets"]["worker1"]["offset_s"] == pytest.approx(5.0, abs=0.5)
    warnings = [s for s in said if s.startswith("warning:")]
    assert len(warnings) == 1 and "worker1's clock is +5.0" in warnings[0]
    assert not got.get("watts"), "no idle watts: energy above idle stays unknown"


def test_the_warning_says_only_a_csv_meter_is_shifted():
    sentence, = idle.clock_warnings({"worker1": {"offset_s": -2.5, "uncertainty_s": 0.01},
                                     "worker2": {"offset_s": 0.3, "uncertainty_s": 0.01}})
    assert sentence.startswith("worker1's clock is -2.50 s")
    assert "aligned" not in sentence and "only a CSV power meter" in sentence and "NTP" in sentence


def test_offsets_become_run_notes_for_runs_without_measurements():
    baseline = {"skipped": "sampling is off", "clock_offsets": {"worker1": {"offset_s": 3.0}, "master": {"offset_s": 0.1}}}
    assert idle.clock_notes(baseline) == ["worker1's clock was +3.00 s from this host's before the suite"]
    assert idle.clock_notes(None) == []
