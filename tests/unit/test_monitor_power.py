"""Power sources on recorded answers and logs, and the energy arithmetic."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import BaseModel, ValidationError

from sbclab.monitor import power
from sbclab.monitor.power import base, http_plug, meter_csv, model, rapl
from sbclab.monitor.settings import MonitorSettings, PowerSpec, spec_model

FIXTURES = Path(__file__).parent / "fixtures" / "monitor"


def answer(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def test_smart_plug_formats():
    assert http_plug.shelly_watts(answer("shelly_gen1_status.json")) == 23.61
    assert http_plug.shelly_gen2_watts(answer("shelly_gen2_switch_status.json")) == 18.4
    assert http_plug.tasmota_watts(answer("tasmota_status8.json")) == 27
    assert http_plug.tasmota_watts({"StatusSNS": {"ENERGY": {"Power": [10, 5]}}}) == 15
    with pytest.raises(ValueError, match="meters"):
        http_plug.shelly_watts(answer("tasmota_status8.json"))
    with pytest.raises(ValueError, match="not valid"):
        http_plug.shelly_watts({"meters": [{"power": 3.0, "is_valid": False}]})


def test_meter_csv_with_iso_and_epoch_times():
    points = meter_csv.read_meter_csv(FIXTURES / "meter.csv", "time", "watts")
    assert points == [(1795370400.0, 20.0), (1795370401.0, 22.0), (1795370402.0, 24.0), (1795370403.0, 26.0)]
    with pytest.raises(ValueError, match="no column"):
        meter_csv.read_meter_csv(FIXTURES / "meter.csv", "timestamp", "watts")


def test_bad_csv_value_names_the_line(tmp_path):
    log = tmp_path / "m.csv"
    log.write_text("time,watts\n1,2\nyesterday,3\n")
    with pytest.raises(ValueError, match=r"m.csv:3: 'yesterday'"):
        meter_csv.read_meter_csv(log, "time", "watts")


def test_energy_integrates_over_the_window_and_reports_coverage():
    intervals = base.point_intervals([(0, 10.0), (1, 20.0), (2, 20.0), (3, 10.0)], 1.0)
    assert intervals == [(0, 1, 15.0), (1, 2, 20.0), (2, 3, 15.0)]
    got = power.energy(intervals, 0.5, 2.5)
    assert got["energy_j"] == pytest.approx(0.5 * 15 + 20 + 0.5 * 15)
    assert got["peak_w"] == 20.0 and got["coverage"] == 1.0
    partial = power.energy(intervals, 2.0, 5.0)
    assert partial["coverage"] == pytest.approx(1 / 3, abs=1e-3)


def test_point_readings_across_a_gap_are_not_joined():
    assert base.point_intervals([(0, 10.0), (1, 10.0), (30, 50.0), (31, 50.0)], 1.0) == [(0, 1, 10.0), (30, 31, 50.0)]


def test_rapl_counters_wrap():
    domains = {"d": {"max_energy_range_uj": 1_000_000}}
    samples = [{"t": 0.0, "rapl_uj": {"d": 900_000}}, {"t": 1.0, "rapl_uj": {"d": 100_000}}]
    assert rapl.rapl_intervals(samples, domains, 1.0) == [(0.0, 1.0, pytest.approx(0.200001))]


def test_model_is_linear_in_utilisation():
    rows = [{"t": 1.0, "dt": 1.0, "cpu_idle_pct": 100.0, "cpu_iowait_pct": 0.0},
            {"t": 2.0, "dt": 1.0, "cpu_idle_pct": 0.0, "cpu_iowait_pct": 0.0},
            {"t": 3.0, "dt": 1.0, "cpu_idle_pct": 40.0, "cpu_iowait_pct": 10.0}]
    assert model.model_intervals(rows, 5.0, 10.0) == [(0.0, 1.0, 5.0), (1.0, 2.0, 10.0), (2.0, 3.0, 7.5)]


def test_unreachable_source_falls_back_to_the_model_and_says_so():
    rows = [{"t": 1.0, "dt": 1.0, "cpu_idle_pct": 50.0}]
    spec = {"source": "http-plug", "url": "http://10.0.0.9/status", "format": "shelly"}
    result = power.for_node({"spec": spec, "polled": {"samples": [], "errors": ["ConnectionError: refused"]}},
                            {}, [], rows, "rpi5b", 1.0)
    assert result.source == "model" and result.estimate
    assert "http-plug unavailable" in result.notes[0] and "refused" in result.notes[0]
    rapl = power.for_node({"spec": {"source": "rapl"}}, {}, [{"t": 0, "errors": {"power": "no RAPL package domain"}}],
                          rows, "rpi5b", 1.0)
    assert rapl.source == "model" and "no RAPL package domain" in rapl.notes[0]


def test_a_board_without_watts_gets_no_figure():
    result = power.for_node({}, {}, [], [{"t": 1.0, "dt": 1.0, "cpu_idle_pct": 50.0}], "rpi2b", 1.0)
    assert result.source == "none" and "rpi2b" in result.notes[0]


def test_power_settings_are_validated():
    with pytest.raises(ValidationError, match="url"):
        PowerSpec(source="http-plug", format="shelly")
    with pytest.raises(ValidationError, match="http://"):
        PowerSpec(source="http-plug", url="10.0.0.9/status", format="tasmota")
    with pytest.raises(ValidationError, match="path"):
        PowerSpec(source="csv")
    with pytest.raises(ValidationError):
        MonitorSettings(hz=20)
    settings = MonitorSettings(power={"default": {"source": "rapl"}, "worker1": {"source": "pi5-pmic"}})
    assert settings.power_for("worker1").source == "pi5-pmic" and settings.power_for("worker2").source == "rapl"


class _MeterFields(BaseModel):
    serial: str | None = None
    token: Annotated[str | None, base.Redacted(lambda value: "HIDDEN")] = None


class _Meter(base.PowerSource):
    """a made-up meter the node's sampler reads by serial number"""

    name = "made-up"
    fields = _MeterFields

    def check(self, spec):
        if not spec.serial:
            raise ValueError("a made-up source needs 'serial'")

    def node_side(self, spec):
        return {"source": self.name, "serial": spec.serial}

    def readings(self, spec, node):
        return base.measured([(s["t"] - 1, s["t"], s["made_up_w"]) for s in node.samples if "made_up_w" in s],
                             f"meter {spec.serial} read nothing")


def test_a_new_source_is_its_class_and_its_entry(monkeypatch):
    monkeypatch.setitem(power.SOURCES, "made-up", _Meter())
    spec_class = spec_model(power.SOURCES)
    with pytest.raises(ValidationError, match="serial"):
        spec_class(source="made-up")
    spec = spec_class(source="made-up", serial="A1", token="t0k3n")
    assert spec.node_side() == {"source": "made-up", "serial": "A1"} and spec.poller(1.0, Path("/x"), "r") is None
    assert spec.shown()["token"] == "HIDDEN"
    rows = [{"t": 2.0, "dt": 1.0, "cpu_idle_pct": 50.0}]
    got = power.for_node({"spec": spec.shown()}, {}, [{"t": 2.0, "made_up_w": 4.0}], rows, "rpi5b", 1.0)
    assert got.source == "made-up" and not got.estimate and got.intervals == [(1.0, 2.0, 4.0)]
    fallen = power.for_node({"spec": spec.shown()}, {}, [], rows, "rpi5b", 1.0)
    assert fallen.source == "model" and fallen.notes == ["made-up unavailable: meter A1 read nothing; "
                                                         "the model estimate is used instead"]


def test_sources_may_not_disagree_on_a_field(monkeypatch):
    class Other(BaseModel):
        url: int = 0

    class Clash(_Meter):
        name = "clash"
        fields = Other

    monkeypatch.setitem(power.SOURCES, "clash", Clash())
    with pytest.raises(TypeError, match="url"):
        spec_model(power.SOURCES)


def test_only_the_plug_polls_from_this_host(tmp_path):
    others = [PowerSpec(source=s) for s in ("model", "rapl", "pi5-pmic")] + [PowerSpec(source="csv", path="m.csv")]
    assert all(spec.poller(1.0, tmp_path, "r") is None for spec in others)
    assert PowerSpec(source="rapl").node_side() == {"source": "rapl", "powercap": "/sys/class/powercap"}
    assert PowerSpec(source="pi5-pmic").node_side() == {"source": "pi5-pmic"}
    assert PowerSpec(source="csv", path="m.csv").node_side() is None


class _Plug(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the http.server interface
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write((FIXTURES / "shelly_gen1_status.json").read_bytes())

    def log_message(self, *args):
        pass


def test_a_plug_is_polled_into_its_file_and_errors_are_redacted(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Plug)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        live = PowerSpec(source="http-plug", url=f"http://u:pw@127.0.0.1:{server.server_address[1]}/status",
                         format="shelly")
        dead = PowerSpec(source="http-plug", url="http://127.0.0.1:9/status?token=s3cr3t", format="shelly",
                         timeout_s=0.2)
        pollers = [live.poller(0.2, tmp_path / "worker1", "r"), dead.poller(0.2, tmp_path / "worker2", "r")]
        for poller in pollers:
            poller.start()
        time.sleep(0.7)
        for poller in pollers:
            poller.stop()
    finally:
        server.shutdown()
    kept = pollers[0].collected()
    assert kept["samples"] and all(s["w"] == 23.61 for s in kept["samples"])
    assert (tmp_path / "worker1" / "r.plug.jsonl").read_text().count("23.61") >= len(kept["samples"])
    failed = pollers[1].collected()
    assert not failed["samples"] and failed["errors"] and "s3cr3t" not in " ".join(failed["errors"])


def test_a_whole_cluster_meter_must_be_read_by_this_host():
    settings = MonitorSettings(power={"cluster": {"source": "csv", "path": "/tmp/meter.csv"}})
    assert settings.cluster_meter.source == "csv" and settings.power_for("worker1").source == "model"
    settings.check_nodes(["master", "worker1"])  # 'cluster' is not a node name the cluster must have
    with pytest.raises(ValidationError, match="read by this host"):
        MonitorSettings(power={"cluster": {"source": "rapl"}})
