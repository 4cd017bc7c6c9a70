"""The sampler as a process: samples at its rate, a mark on SIGUSR1, a last sample on SIGTERM, and a
Pi's vcgencmd readings (a stand-in vcgencmd that answers with recorded output)."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from sbclab.monitor import readings
from sbclab.monitor.recorder import read_samples

FIXTURES = Path(__file__).parent / "fixtures" / "monitor"


def fake_vcgencmd(folder: Path) -> Path:
    script = folder / "vcgencmd"
    script.write_text(f"""#!/bin/sh
case "$1" in
  get_throttled) cat {FIXTURES / 'vcgencmd_get_throttled.txt'} ;;
  measure_clock) cat {FIXTURES / 'vcgencmd_measure_clock_arm.txt'} ;;
  measure_temp) cat {FIXTURES / 'vcgencmd_measure_temp.txt'} ;;
  pmic_read_adc) cat {FIXTURES / 'vcgencmd_pmic_read_adc.txt'} ;;
  *) exit 1 ;;
esac
""")
    script.chmod(0o755)
    return script


def test_sampler_marks_stops_and_reads_a_pi(tmp_path):
    target = {"node": "pi", "scope": "node", "cores": 4, "interface": {"name": "lo"},
              "vcgencmd": str(fake_vcgencmd(tmp_path)), "power": {"source": "pi5-pmic"}}
    (tmp_path / "target.json").write_text(json.dumps(target))
    out = tmp_path / "samples.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "sbclab.monitor.sampler", "--target", str(tmp_path / "target.json"),
                             "--out", str(out), "--interval", "0.2"])
    try:
        time.sleep(1.5)
        Path(str(out) + ".mark").write_text("start job")
        proc.send_signal(signal.SIGUSR1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
    header, samples = read_samples(out)
    assert header["target"]["node"] == "pi"
    assert len(samples) >= 6
    assert [s["mark"] for s in samples if "mark" in s] == ["start job", "stop"]
    s = samples[-1]
    pmic = readings.pmic_watts((FIXTURES / "vcgencmd_pmic_read_adc.txt").read_text())
    assert s["throttled"] == 0x50005 and s["arm_hz"] == 1500004352 and s["pmic_w"] == round(pmic, 4)
    assert s["temp_c"] == {"soc": 58.4}, "a board without thermal zones gets vcgencmd's temperature"
    assert "cpu" in s and "memory" in s and "net" in s
    times = [x["t"] for x in samples]
    assert times == sorted(times)


def test_a_missing_vcgencmd_is_said_once_and_sampling_goes_on(tmp_path):
    target = {"node": "pi", "scope": "node", "cores": 4, "vcgencmd": str(tmp_path / "absent"),
              "power": {"source": "pi5-pmic"}}
    (tmp_path / "target.json").write_text(json.dumps(target))
    out = tmp_path / "samples.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "sbclab.monitor.sampler", "--target", str(tmp_path / "target.json"),
                             "--out", str(out), "--interval", "0.2"])
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    _, samples = read_samples(out)
    with_errors = [s for s in samples if "errors" in s]
    assert len(with_errors) == 1 and "vcgencmd" in with_errors[0]["errors"]
    assert all("cpu" in s for s in samples)
