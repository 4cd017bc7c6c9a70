"""The node-side parsers on recorded /proc, /sys, cgroup and vcgencmd output."""

from pathlib import Path

import pytest

from sbclab.monitor import readings, taskstats

FIXTURES = Path(__file__).parent / "fixtures" / "monitor"


def text(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_proc_stat_aggregate_cpu_line():
    cpu = readings.proc_stat_cpu(text("proc_stat.txt"))
    first = text("proc_stat.txt").splitlines()[0].split()
    assert cpu["user"] == int(first[1]) and cpu["iowait"] == int(first[5]) and cpu["steal"] == int(first[8])
    assert set(cpu) == {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}


def test_meminfo_in_bytes():
    mem = readings.meminfo(text("meminfo.txt"))
    kib = {l.split(":")[0]: int(l.split()[1]) for l in text("meminfo.txt").splitlines()}
    assert mem["total"] == kib["MemTotal"] * 1024
    assert mem["available"] == kib["MemAvailable"] * 1024
    assert mem["used"] == mem["total"] - mem["available"]


def test_vmstat_swap_pages_and_loadavg():
    assert set(readings.vmstat_swap(text("vmstat.txt"))) == {"in_pages", "out_pages"}
    assert readings.loadavg(text("loadavg.txt")) == float(text("loadavg.txt").split()[0])


def test_diskstats_of_one_device_in_bytes():
    line = next(l for l in text("diskstats.txt").splitlines() if l.split()[2] == "loop1").split()
    disk = readings.diskstats(text("diskstats.txt"), "loop1")
    assert disk == {"read_bytes": int(line[5]) * 512, "write_bytes": int(line[9]) * 512, "reads": int(line[3]),
                    "writes": int(line[7]), "io_ms": int(line[12])}
    with pytest.raises(ValueError, match="no device"):
        readings.diskstats(text("diskstats.txt"), "nvme9n1")


def test_proc_net_dev_by_interface():
    assert readings.proc_net_dev(text("net_dev.txt"), "eth0") == {"rx_bytes": 461857150, "tx_bytes": 1602263}
    with pytest.raises(ValueError):
        readings.proc_net_dev(text("net_dev.txt"), "wlan0")


def test_cpuinfo_clock_per_core():
    clocks = readings.cpuinfo_mhz(text("cpuinfo.txt"))
    assert len(clocks) == text("cpuinfo.txt").count("processor\t:") and all(c > 100 for c in clocks)


def test_cgroup_v1_and_v2_accounting():
    v1 = readings.cpuacct_stat(text("cpuacct_stat_v1.txt"))
    assert v1["user"] > 0 and v1["system"] > 0
    assert readings.cgroup2_cpu_stat(text("cpu_stat_v2.txt")) == {
        "usage_us": 83521437, "user_us": 61234567, "system_us": 22286870}
    mem1 = readings.memory_stat(text("memory_stat_v1.txt"))
    found = dict(l.split() for l in text("memory_stat_v1.txt").splitlines())
    assert mem1["rss"] == int(found["total_rss"]) and mem1["cache"] == int(found["total_cache"])
    assert readings.memory_stat(text("memory_stat_v2.txt")) == {"rss": 734003200, "cache": 1209532416, "swap": 0}


def test_vcgencmd_outputs():
    bits = readings.vcgencmd_throttled(text("vcgencmd_get_throttled.txt"))
    assert bits == 0x50005
    assert readings.throttle_reasons(bits) == ["under-voltage detected", "currently throttled"]
    assert readings.throttle_reasons(bits, current_only=False)[-2:] == ["under-voltage has occurred",
                                                                         "throttling has occurred"]
    assert readings.vcgencmd_clock_hz(text("vcgencmd_measure_clock_arm.txt")) == 1500004352
    assert readings.vcgencmd_temp_c(text("vcgencmd_measure_temp.txt")) == 58.4
    with pytest.raises(ValueError):
        readings.vcgencmd_throttled("VCHI initialization failed")


def test_pmic_rails_sum_volts_times_amps():
    watts = readings.pmic_watts(text("vcgencmd_pmic_read_adc.txt"))
    # By hand: the twelve rails with both a current and a voltage.
    assert watts == pytest.approx(0.0517284 * 3.311066 + 0.161032 * 1.798681 + 0.0224469 * 1.11258
                                  + 0.18933 * 1.105 + 0.349395 * 0.801315 + 0.7362 * 0.72016
                                  + 0.0004884 * 3.30402 + 0.00042735 * 3.307683 + 0.00525126 * 0.79997
                                  + 0.0231957 * 5.145596, rel=1e-6)
    assert readings.pmic_watts("VDD_CORE_V=0.8750V\nVDD_CORE_A=1.2340A\n") == pytest.approx(0.875 * 1.234)
    with pytest.raises(ValueError):
        readings.pmic_watts("EXT5V_V volt(24)=5.14990000V\n")


def test_taskstats_struct_offsets():
    import struct
    raw = bytearray(96)
    struct.pack_into("Q", raw, 24, 111)
    struct.pack_into("Q", raw, 40, 222)
    struct.pack_into("Q", raw, 64, 333)
    assert taskstats.parse_stats(bytes(raw)) == {"cpu_delay_ns": 111, "blkio_delay_ns": 222, "swapin_delay_ns": 0,
                                                 "cpu_run_real_ns": 333}


def test_a_delay_equal_to_the_kernel_clock_is_not_counted():
    from sbclab.monitor.sampler import plausible_delay
    second = 10**9
    clock = 10_047 * second
    assert plausible_delay(clock + 3 * second, threads=80, interval_ns=second, clock_ns=clock) == 3 * second
    assert plausible_delay(5 * second, threads=2, interval_ns=second, clock_ns=clock) == 2 * second
    assert plausible_delay(-4, threads=2, interval_ns=second, clock_ns=clock) == 0


def test_memory_stat_swap_is_the_groups_own_and_absent_when_not_accounted():
    v1 = text("memory_stat_v1.txt").replace("total_swap 0", "total_swap 104857600").replace("\nswap 0", "\nswap 4096")
    assert readings.memory_stat(v1)["swap"] == 104857600, "v1: the hierarchical total, as for rss and cache"
    unaccounted = "\n".join(l for l in text("memory_stat_v1.txt").splitlines() if "swap" not in l)
    assert "swap" not in readings.memory_stat(unaccounted)
    v2 = "\n".join(l for l in text("memory_stat_v2.txt").splitlines() if not l.startswith("swap"))
    assert readings.memory_stat(v2) == {"rss": 734003200, "cache": 1209532416}
    assert readings.cgroup2_swap_current("8388608\n") == 8388608


class _Readings:
    """Per process, the thread-group figures the kernel gives at each reading (None: not readable)."""

    def __init__(self, figures: dict[int, list]):
        self.figures = figures
        self.reading = 0

    def thread_group(self, pid):
        values = self.figures[pid]
        value = values[min(self.reading, len(values) - 1)]
        return None if value is None else {"cpu_delay_ns": 0, "blkio_delay_ns": value, "swapin_delay_ns": 0,
                                           "cpu_run_real_ns": 0}


def _group(tmp_path, figures: dict[int, list], ages: dict[int, float], members: list[list[int]]):
    """A NodeGroupDelays over fake readings taken a second apart; yields its totals of blkio delay in seconds."""
    from sbclab.monitor.sampler import NodeGroupDelays
    procs = tmp_path / "cgroup.procs"
    readings = _Readings(figures)
    clock = iter(range(10_000 * 10**9, 20_000 * 10**9, 10**9))
    group = NodeGroupDelays(str(procs), stats=readings, shape=lambda pid: (4, ages[pid] + readings.reading),
                            clock=lambda: next(clock))
    totals = []
    for reading, pids in enumerate(members):
        readings.reading = reading
        procs.write_text("\n".join(map(str, pids)))
        got = group.read()
        assert got["of_previous"] == 1
        totals.append(got["blkio_delay_ns"] / 1e9)
    return totals, group


def test_a_reading_high_by_an_exiting_thread_counts_nothing_of_it(tmp_path):
    """A thread that is exiting is counted twice for a moment: the reading after is lower again."""
    s = 10**9
    figures = {7: [100 * s, 101 * s, 140 * s, 103 * s, 104 * s]}
    totals, group = _group(tmp_path, figures, {7: 500.0}, [[7]] * 5)
    # Each total is as of the reading before; the 140 s reading is never confirmed, and the one
    # after it stands in for it.
    assert totals == [0, 0, 1, 3, 3]
    assert group.discarded == 0


def test_a_process_that_starts_in_the_group_counts_from_zero_and_one_already_running_from_now(tmp_path):
    s = 10**9
    figures = {7: [50 * s, 51 * s, 52 * s, 53 * s], 8: [0, s // 2, 2 * s, 3 * s]}
    # 7 ran long before it was first seen; 8 started half a second before the second reading.
    totals, _ = _group(tmp_path, figures, {7: 500.0, 8: -0.5}, [[7], [7, 8], [7, 8], [7, 8]])
    assert totals == [0, 0, 1 + 0.5, 2 + 2]


def test_a_process_gone_keeps_what_was_confirmed_and_an_unreadable_one_its_last_values(tmp_path):
    s = 10**9
    figures = {7: [0, s, 2 * s, None, 5 * s, 6 * s], 8: [0, s, 9 * s]}
    totals, _ = _group(tmp_path, figures, {7: 500.0, 8: 500.0}, [[7, 8], [7, 8], [7, 8], [7], [7], [7]])
    # 8's last reading (9 s) was never confirmed; 7, unreadable once, counts its 2 s -> 5 s later.
    assert totals == [0, 0, 1 + 1, 1 + 1, 2 + 1, 5 + 1]


def test_a_jump_by_the_kernel_clock_is_discarded_after_confirmation(tmp_path):
    s = 10**9
    clock_at_third = 10_002 * s
    figures = {7: [0, s, clock_at_third + 2 * s, clock_at_third + 3 * s]}
    totals, group = _group(tmp_path, figures, {7: 500.0}, [[7]] * 4)
    # The clock is taken at the reading, a second after the jump: that second's real delay goes too.
    assert totals == [0, 0, 1, 1]
    assert group.discarded == clock_at_third + s


def test_running_waiting_and_blocked_together_are_capped_at_every_thread_for_the_interval(tmp_path):
    """A thread is in one of the three at a time: their sum over an interval is at most threads x time."""
    from sbclab.monitor.sampler import NodeGroupDelays
    s = 10**9
    procs = tmp_path / "cgroup.procs"
    procs.write_text("7")
    readings = iter([{"cpu_run_real_ns": 0, "cpu_delay_ns": 0, "blkio_delay_ns": 0, "swapin_delay_ns": 0},
                     {"cpu_run_real_ns": 3 * s, "cpu_delay_ns": 3 * s, "blkio_delay_ns": 2 * s, "swapin_delay_ns": 0},
                     {"cpu_run_real_ns": 3 * s, "cpu_delay_ns": 3 * s, "blkio_delay_ns": 2 * s, "swapin_delay_ns": 0}])
    clock = iter(range(10_000 * s, 10_010 * s, s))
    group = NodeGroupDelays(str(procs), stats=type("R", (), {"thread_group": lambda self, pid: next(readings)})(),
                            shape=lambda pid: (4, 500.0), clock=lambda: next(clock))
    group.read(), group.read()
    got = group.read()
    # Four threads over the second (and the 0.1 s allowed for a late reading) hold 4.4 s, not 8.
    states = got["cpu_run_real_ns"] + got["cpu_delay_ns"] + got["blkio_delay_ns"]
    assert states == pytest.approx(4.4 * s, rel=1e-6) and got["threads"] == 4
    assert got["cpu_run_real_ns"] == pytest.approx(4.4 * s * 3 / 8, rel=1e-6)
    assert group.discarded == pytest.approx(8 * s - 4.4 * s, rel=1e-6)
