"""Per-run diagnostics on recorded /proc and /sys trees: busy outside the cluster (busy, not busy,
unreadable), frequency residency deltas, the measured clock from perf's output, the too-busy flag
through a run's measurements, and the report's sentence that names what explains a slow run."""

import json
import os
import shutil
from pathlib import Path

import pytest

from sbclab.analysis import explanations
from sbclab.analysis.cells import exclusion_reason
from sbclab.cli.options import Monitoring
from sbclab.experiments import doctor
from sbclab.monitor import cpu_probe, diagnostics, measure
from sbclab.report import build, html, tables
from sbclab.results import summary
from sbclab.results.diagnostics import Diagnostics, DomainClock, MachineClock
from sbclab.results.measurements import Measurements
from sbclab.results.store import read_runs

from .test_doctor import HOST as DOCTOR_HOST, PI5_FACTS
from .test_monitor_measure import SHAPE, recording

RESULTS = Path(__file__).parent / "fixtures" / "results"
CLUSTER_DIR = "/root/.sbclab/clusters/c1/"
# perf stat -x, on a Raspberry Pi 4 (1.5 GHz) over half a second of the probe's loop, and on a virtual machine.
PERF_PI4 = "749532114,,cycles:u,500612345,100.00,,\n500.61,msec,task-clock,500612345,100.00,0.998,CPUs utilized\n"
PERF_VM = "<not supported>,,cycles:u,0,100.00,,\n378.01,msec,task-clock,378006256,100.00,0.915,CPUs utilized\n"


def cpu_line(busy: int, idle: int) -> str:
    """/proc/stat's aggregate line: `busy` ticks of user time, `idle` of idle."""
    return f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n"


def process(proc: Path, pid: int, name: str, ppid: int, ticks: int, start: int = 500, command: str = "",
            cgroup: str = "0::/user.slice\n") -> None:
    folder = proc / str(pid)
    folder.mkdir(parents=True, exist_ok=True)
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ... starttime
    (folder / "stat").write_text(f"{pid} ({name}) S {ppid} {pid} {pid} 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0 {start} "
                                 "0 0\n")
    (folder / "cmdline").write_bytes(command.replace(" ", "\0").encode())
    (folder / "cgroup").write_text(cgroup)


def machine(proc: Path, hog_ticks: int, busy: int, idle: int, extra_ticks: int = 0) -> None:
    """A 2-core host: a cluster's daemon and its child, an emulated node's process, a kernel thread,
    and a hog outside the cluster with `hog_ticks` of CPU so far."""
    (proc / "stat").parent.mkdir(parents=True, exist_ok=True)
    (proc / "stat").write_text(cpu_line(busy, idle))
    process(proc, 10, "java", 1, 100 + extra_ticks, command=f"java -Dhadoop.log.dir={CLUSTER_DIR}nodes/master/logs")
    process(proc, 11, "java", 10, 50 + extra_ticks // 2, command="java YarnChild")  # a container of that daemon
    process(proc, 12, "python3", 1, 30 + extra_ticks // 5, command="python3 -m sbclab.monitor.sampler",
            cgroup="4:memory:/sbclab/c1/worker1\n0::/\n")
    process(proc, 13, "kworker/0:1", 2, 7 + extra_ticks // 10)
    if hog_ticks:
        process(proc, 20, "busy-hog", 1, hog_ticks, command="/tmp/busy-hog")


def busy_over(tmp_path: Path, hog_before: int, hog_after: int, busy_after: int, idle_after: int,
              extra_ticks: int = 20) -> dict:
    proc = tmp_path / "proc"
    marks = ([CLUSTER_DIR], ["/sbclab/c1/"])
    machine(proc, hog_before, busy=1000, idle=5000)
    before = cpu_probe.snapshot(*marks, proc=str(proc))
    machine(proc, hog_after, busy=busy_after, idle=idle_after, extra_ticks=extra_ticks)
    return cpu_probe.busy_between(before, cpu_probe.snapshot(*marks, proc=str(proc)), 2.0)


def test_a_host_busy_outside_the_cluster_names_the_process_and_not_the_clusters_own(tmp_path):
    """2 s on 2 cores = 400 ticks: the hog's 288 are 72 %; the daemon, its container (by descent) and the node's
    sampler (by its cgroup) are the cluster's own, the kernel's threads are named as such."""
    got = busy_over(tmp_path, hog_before=1000, hog_after=1288, busy_after=1000 + 340, idle_after=5000 + 60)
    assert got["busy_pct"] == 85.0
    own = 20 + 10 + 4  # the daemon, its container, the sampler
    assert got["outside_pct"] == pytest.approx(100 * (340 - own) / 400, abs=0.05)
    assert got["top"][:2] == [{"name": "busy-hog", "pct": 72.0}, {"name": "kernel threads", "pct": 0.5}]
    assert got["unattributed_pct"] == pytest.approx(100 * (340 - own - 288 - 2) / 400, abs=0.05)


def test_a_quiet_host_is_not_too_busy_and_a_process_started_in_the_window_counts_whole(tmp_path):
    got = busy_over(tmp_path, hog_before=0, hog_after=6, busy_after=1000 + 40, idle_after=5000 + 360, extra_ticks=20)
    assert got["outside_pct"] < 3 and got["top"][0] == {"name": "busy-hog", "pct": 1.5}
    check = diagnostics.diagnose(_before({"host": {"busy": got, "residency": {"unavailable": "x"}}}),
                                 {"host": {"residency": {"unavailable": "x"}}})
    assert check.busy.too_busy == {} and diagnostics.too_busy_flags(check, 0.0) == []


def test_a_machine_whose_proc_cannot_be_read_is_unavailable_not_idle(tmp_path):
    got = cpu_probe.busy_outside(0.01, [], [], proc=str(tmp_path / "nowhere"))
    assert set(got) == {"unavailable"} and "could not be read" in got["unavailable"]
    d = diagnostics.diagnose(_before({"host": {"busy": got, "residency": cpu_probe.residency_snapshot(str(tmp_path))}}),
                             {"host": {"residency": cpu_probe.residency_snapshot(str(tmp_path))}})
    assert d.busy.machines["host"].outside_pct is None and d.busy.too_busy == {}
    assert "could not be read" in d.busy.machines["host"].sentence("host")
    assert "no cpufreq on this machine" in d.residency["host"].unavailable


def _before(read: dict, threshold: float = 10.0, clock: str | None = diagnostics.EMULATED_CLOCK) -> diagnostics.Before:
    return diagnostics.Before(machines={name: None for name in read}, read=read, threshold_pct=threshold,
                              checked=True, clock_unavailable=clock)


def cpufreq(sys_root: Path, policy: str, cpus: str, steps: dict[int, int] | None) -> None:
    folder = sys_root / "devices/system/cpu/cpufreq" / policy
    (folder / "stats").mkdir(parents=True, exist_ok=True)
    (folder / "related_cpus").write_text(cpus + "\n")
    if steps is not None:
        (folder / "stats/time_in_state").write_text("".join(f"{khz} {t}\n" for khz, t in steps.items()))


def test_residency_is_the_share_of_the_run_at_each_step_between_two_readings(tmp_path):
    cpufreq(tmp_path, "policy0", "0 1 2 3", {600000: 1000, 1500000: 5000})
    cpufreq(tmp_path, "policy4", "4-7", {408000: 10, 2400000: 20})
    before = cpu_probe.residency_snapshot(str(tmp_path))
    cpufreq(tmp_path, "policy0", "0 1 2 3", {600000: 1600, 1500000: 5400})
    cpufreq(tmp_path, "policy4", "4-7", {408000: 10, 2400000: 1020})
    got = cpu_probe.residency_between(before, cpu_probe.residency_snapshot(str(tmp_path)))
    little, big = got["policies"]["policy0"], got["policies"]["policy4"]
    assert little == {"cpus": [0, 1, 2, 3], "seconds": 10.0, "top_mhz": 1500.0, "below_top_pct": 60.0,
                      "steps": [{"mhz": 1500.0, "pct": 40.0}, {"mhz": 600.0, "pct": 60.0}]}
    assert big["cpus"] == [4, 5, 6, 7] and big["below_top_pct"] == 0.0 and big["steps"] == [{"mhz": 2400.0, "pct": 100.0}]


def test_residency_says_why_it_is_missing_and_never_invents_it(tmp_path):
    assert "no cpufreq" in cpu_probe.residency_snapshot(str(tmp_path / "none"))["unavailable"]
    cpufreq(tmp_path, "policy0", "0-3", None)
    assert "CONFIG_CPU_FREQ_STAT" in cpu_probe.residency_snapshot(str(tmp_path))["unavailable"]
    cpufreq(tmp_path, "policy0", "0-3", {600000: 900, 1500000: 900})
    before = cpu_probe.residency_snapshot(str(tmp_path))
    cpufreq(tmp_path, "policy0", "0-3", {600000: 10, 1500000: 20})  # stats/reset written mid-run
    assert "reset" in cpu_probe.residency_between(before, cpu_probe.residency_snapshot(str(tmp_path)))["unavailable"]
    assert "counted no time" in cpu_probe.residency_between(before, before)["unavailable"]


def test_perf_output_gives_the_clock_or_says_why_it_cannot():
    cycles, task_ms = cpu_probe.perf_stat(PERF_PI4)
    assert round(cycles / (task_ms * 1000)) == 1497
    with pytest.raises(ValueError, match="counted no cycles"):
        cpu_probe.perf_stat(PERF_VM)
    with pytest.raises(ValueError, match="no cycles and task-clock"):
        cpu_probe.perf_stat("Error: perf not found for kernel 6.6\n")


def _fake_tool(folder: Path, name: str, script: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("#!/bin/sh\n" + script)
    (folder / name).chmod(0o755)


def test_a_pi_whose_firmware_throttles_while_cpufreq_says_full_clock(tmp_path, monkeypatch):
    """The probe's own path with perf and vcgencmd standing in: perf counts 600 MHz, cpufreq still says 1500."""
    tools = tmp_path / "bin"
    _fake_tool(tools, "perf", "echo '300306172,,cycles:u,500510000,100.00,,' >&2\n"
                              "echo '500.51,msec,task-clock,500510000,100.00,0.998,CPUs utilized' >&2\n")
    _fake_tool(tools, "vcgencmd", "echo 'frequency(48)=600117184'\n")
    sys_root = tmp_path / "sys"
    (sys_root / "devices/system/cpu/cpu0/cpufreq").mkdir(parents=True)
    (sys_root / "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq").write_text("1500000\n")
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    got = cpu_probe.measure_clock([0, 1, 2, 3], 0.05, str(sys_root))
    assert got == {"cpus": [0, 1, 2, 3], "cpu": 0, "cpufreq_mhz": 1500.0, "firmware_mhz": pytest.approx(600.117184),
                   "measured_mhz": 600.0}
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert "perf is not installed" in cpu_probe.measure_clock([0], 0.05, str(sys_root))["unavailable"]


def _diagnostics(outside: float = 85.0, threshold: float = 10.0) -> Diagnostics:
    busy = {"window_s": 2.0, "busy_pct": outside + 5, "outside_pct": outside, "unattributed_pct": 0.0,
            "top": [{"name": "python3", "pct": min(72.0, outside - 1)}, {"name": "kernel threads", "pct": 0.5}]}
    return diagnostics.diagnose(_before({"host": {"busy": busy, "residency": {"unavailable": "no cpufreq on this machine"}}},
                                        threshold),
                                {"host": {"residency": {"unavailable": "no cpufreq on this machine"}}})


def test_a_host_too_busy_flags_the_run_through_its_measurements():
    raw = recording()
    raw.diagnostics = _diagnostics()
    m, _ = measure.summarise(raw, start=105.0, end=115.0, spec=SHAPE, engine=None, counters={}, input_bytes=None,
                             engine_phases=[])
    [flag] = [f for f in m.flags if f.kind == "too_busy"]
    assert flag.node == "host" and flag.at == 105.0
    assert flag.detail == ("too busy to benchmark: host 85 % busy outside the cluster (python3 72 %, kernel threads "
                           "0.5 %) before the run (more than 10 %)")
    assert m.diagnostics.clock["host"].unavailable == "emulated: the node's CPU is a quota, its clock is the host's"
    quiet = recording()
    quiet.diagnostics = _diagnostics(outside=4.0)
    m, _ = measure.summarise(quiet, start=105.0, end=115.0, spec=SHAPE, engine=None, counters={}, input_bytes=None,
                             engine_phases=[])
    assert not [f for f in m.flags if f.kind == "too_busy"] and m.diagnostics.busy.machines["host"].outside_pct == 4.0


def test_a_board_whose_probe_failed_is_unavailable_in_every_diagnostic():
    d = diagnostics.diagnose(_before({"worker1": {"error": "python3: not found"}}, clock=None), {"worker1": {"error": "x"}})
    assert "python3: not found" in d.busy.machines["worker1"].unavailable
    assert "python3: not found" in d.residency["worker1"].unavailable and "python3" in d.clock["worker1"].unavailable
    assert diagnostics.too_busy_flags(d, 0.0) == []


def test_busy_max_zero_skips_the_check_and_a_value_sets_the_threshold():
    def given(busy_max):
        return Monitoring(sample_hz=None, no_sampling=False, idle_baseline=None, power_file=None, prometheus=None,
                          busy_max=busy_max).settings()
    assert given(0).busy_window_s == 0 and given(25).busy_max_pct == 25 and given(None).busy_max_pct == 10


def test_measurements_stored_before_diagnostics_still_load():
    doc = json.loads(next((RESULTS / "runs").glob("*spark-pi*.json")).read_text())
    assert "diagnostics" not in doc["measurements"]
    assert Measurements.model_validate(doc["measurements"]).diagnostics is None


@pytest.fixture
def cell_with_a_slow_run(tmp_path):
    """Four runs of one Spark Pi cell: three counted near 10 s, and one of 18 s on a host too busy before it."""
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    source = next((results / "runs").glob("*spark-pi*.json"))
    doc = json.loads(source.read_text())
    source.unlink()
    for suffix, seconds, busy in (("a", 10.0, None), ("b", 10.2, 3.0), ("c", 9.8, None), ("d", 18.0, 85.0)):
        copy = json.loads(json.dumps(doc))
        copy["run_id"] = doc["run_id"] + suffix
        copy["wall_time_s"] = seconds
        copy["started_at"] = copy["started_at"].replace("20:11:03", f"20:1{'abcd'.index(suffix)}:03")
        if busy is not None:
            d = _diagnostics(outside=busy)
            copy["measurements"]["diagnostics"] = d.model_dump(mode="json")
            copy["measurements"]["flags"] += diagnostics.too_busy_flags(d, copy["measurements"]["window"]["start"])
        (results / "runs" / f"{copy['run_id']}.json").write_text(json.dumps(copy))
    return results, doc["run_id"] + "d"


def test_the_report_says_a_slow_run_was_slow_because_the_host_was_busy(cell_with_a_slow_run, tmp_path):
    results, slow = cell_with_a_slow_run
    report = build.build(results)
    [run] = [r for r in report.runs if r.run_id == slow]
    assert run.status == "flagged" and "too busy to benchmark: host 85 % busy outside the cluster" in exclusion_reason(run)
    rows = {r["run_id"]: r for r in tables.diagnostic_rows(report)}
    assert rows[slow]["explanation"] == ("slower than its cell's others (1.80x their mean of 10.0 s); the host was 85 % "
                                         "busy outside the cluster (python3 72 %, kernel threads 0.5 %) before it started")
    quiet = rows[slow[:-1] + "b"]
    assert quiet["explanation"] == "" and quiet["busy_outside"].startswith("host 3 % busy outside the cluster")
    assert "emulated: the node's CPU is a quota" in quiet["clock"] and "no cpufreq" in quiet["frequency_steps"]
    written = html.write(report, tmp_path / "out")
    page = written["html"].read_text()
    assert 'id="diagnostics"' in page and "the host was 85 % busy outside the cluster" in page
    assert f"`{slow}` (flagged): slower than its cell's others" in written["markdown"].read_text()
    [shown] = [r for r in read_runs(results)[0] if r.run_id == slow]
    notes = summary.measurement_notes(shown)
    assert any(n.startswith("flag: host too_busy") for n in notes)
    assert ("diagnostics: before the run: host 85 % busy outside the cluster (python3 72 %, kernel threads 0.5 %) "
            "(flagged above 10 %)") in notes


def test_a_slow_run_without_a_diagnostic_says_so_and_a_board_clock_below_its_claim_is_named(cell_with_a_slow_run):
    results, slow = cell_with_a_slow_run
    report = build.build(results)
    [cell] = [c for c in report.cells if any(r.run_id == slow for r in c.runs + c.excluded)]
    [run] = [r for r in cell.excluded if r.run_id == slow]
    quiet = run.model_copy(deep=True)
    quiet.measurements.diagnostics.busy.machines["host"].outside_pct = 2.0
    assert explanations.explain(quiet, cell).endswith("; no diagnostic explains it")
    board = quiet.model_copy(deep=True)
    board.measurements.diagnostics.clock = {"worker1": MachineClock(method="perf", domains={"policy0": DomainClock(
        cpus=[0, 1, 2, 3], cpu=0, measured_mhz=600.0, cpufreq_mhz=1500.0, firmware_mhz=600.0)})}
    assert explanations.findings(board) == [
        "worker1's cores (policy0) ran at 600 MHz measured while cpufreq reported 1500 MHz"]


def test_time_below_the_top_step_explains_a_run_only_beyond_the_time_the_cores_were_idle(cell_with_a_slow_run):
    """worker1 was 39 % busy (61 % idle) in the recorded run: 60 % below its top step is the governor resting
    idle cores; 90 % below it is 29 % of the run worked at a lower clock."""
    results, slow = cell_with_a_slow_run
    [run] = [r for r in build.build(results).runs if r.run_id == slow]

    def below(share: float) -> list[str]:
        changed = run.model_dump()
        changed["measurements"]["diagnostics"]["busy"] = None
        changed["measurements"]["diagnostics"]["residency"] = {"worker1": {"policies": {"policy0": {
            "cpus": [0, 1, 2, 3], "seconds": 80.0, "top_mhz": 2400.0, "below_top_pct": share,
            "steps": [{"mhz": 2400.0, "pct": 100 - share}, {"mhz": 1500.0, "pct": share}]}}}}
        return explanations.findings(type(run).model_validate(changed))
    assert below(60.0) == []
    assert below(90.0) == ["worker1's cores (policy0) spent 90 % of the run below their top step of 2400 MHz while "
                           "idle 61 % of it (down to 1500 MHz)"]


def test_doctor_says_whether_a_board_can_measure_its_clock():
    def said(perf: str) -> doctor.Finding:
        facts = doctor.parse_facts(PI5_FACTS + perf)
        [found] = [f for f in doctor.judge(DOCTOR_HOST, facts, 10 * 2**30) if f.check == "measured clock"]
        return found
    assert said("perf=/usr/bin/perf\n").severity == "ok"
    missing = said("perf=\n")
    assert missing.severity == "warning" and missing.fix == "sudo apt-get install linux-perf"
