"""Power sources on recorded answers and logs, and the energy arithmetic."""

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from sbclab.monitor import plug, power
from sbclab.monitor.settings import MonitorSettings, PowerSpec

FIXTURES = Path(__file__).parent / "fixtures" / "monitor"


def answer(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def test_smart_plug_formats():
    assert plug.shelly_watts(answer("shelly_gen1_status.json")) == 23.61
    assert plug.shelly_gen2_watts(answer("shelly_gen2_switch_status.json")) == 18.4
    assert plug.tasmota_watts(answer("tasmota_status8.json")) == 27
    assert plug.tasmota_watts({"StatusSNS": {"ENERGY": {"Power": [10, 5]}}}) == 15
    with pytest.raises(ValueError, match="meters"):
        plug.shelly_watts(answer("tasmota_status8.json"))
    with pytest.raises(ValueError, match="not valid"):
        plug.shelly_watts({"meters": [{"power": 3.0, "is_valid": False}]})


def test_meter_csv_with_iso_and_epoch_times():
    points = power.read_meter_csv(FIXTURES / "meter.csv", "time", "watts")
    assert points == [(1795370400.0, 20.0), (1795370401.0, 22.0), (1795370402.0, 24.0), (1795370403.0, 26.0)]
    with pytest.raises(ValueError, match="no column"):
        power.read_meter_csv(FIXTURES / "meter.csv", "timestamp", "watts")


def test_bad_csv_value_names_the_line(tmp_path):
    log = tmp_path / "m.csv"
    log.write_text("time,watts\n1,2\nyesterday,3\n")
    with pytest.raises(ValueError, match=r"m.csv:3: 'yesterday'"):
        power.read_meter_csv(log, "time", "watts")


def test_energy_integrates_over_the_window_and_reports_coverage():
    intervals = power.point_intervals([(0, 10.0), (1, 20.0), (2, 20.0), (3, 10.0)], 1.0)
    assert intervals == [(0, 1, 15.0), (1, 2, 20.0), (2, 3, 15.0)]
    got = power.energy(intervals, 0.5, 2.5)
    assert got["energy_j"] == pytest.approx(0.5 * 15 + 20 + 0.5 * 15)
    assert got["peak_w"] == 20.0 and got["coverage"] == 1.0
    partial = power.energy(intervals, 2.0, 5.0)
    assert partial["coverage"] == pytest.approx(1 / 3, abs=1e-3)


def test_point_readings_across_a_gap_are_not_joined():
    assert power.point_intervals([(0, 10.0), (1, 10.0), (30, 50.0), (31, 50.0)], 1.0) == [(0, 1, 10.0), (30, 31, 50.0)]


def test_rapl_counters_wrap():
    domains = {"d": {"max_energy_range_uj": 1_000_000}}
    samples = [{"t": 0.0, "rapl_uj": {"d": 900_000}}, {"t": 1.0, "rapl_uj": {"d": 100_000}}]
    assert power.rapl_intervals(samples, domains, 1.0) == [(0.0, 1.0, pytest.approx(0.200001))]


def test_model_is_linear_in_utilisation():
    rows = [{"t": 1.0, "dt": 1.0, "cpu_idle_pct": 100.0, "cpu_iowait_pct": 0.0},
            {"t": 2.0, "dt": 1.0, "cpu_idle_pct": 0.0, "cpu_iowait_pct": 0.0},
            {"t": 3.0, "dt": 1.0, "cpu_idle_pct": 40.0, "cpu_iowait_pct": 10.0}]
    assert power.model_intervals(rows, 5.0, 10.0) == [(0.0, 1.0, 5.0), (1.0, 2.0, 10.0), (2.0, 3.0, 7.5)]


def test_unreachable_source_falls_back_to_the_model_and_says_so():
    rows = [{"t": 1.0, "dt": 1.0, "cpu_idle_pct": 50.0}]
    spec = {"source": "http-plug", "url": "http://10.0.0.9/status", "format": "shelly"}
    result = power.for_node({"spec": spec, "plug_samples": [], "plug_errors": ["ConnectionError: refused"]},
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
