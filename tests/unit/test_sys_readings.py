"""The sampler's /sys and cgroup reads on fake trees: thermal zones and hwmon sensors, cpufreq,
RAPL, interface statistics, and a node cgroup's memory and swap (v1 and v2)."""

from pathlib import Path

import pytest

from sbclab.monitor import readings
from sbclab.monitor.sampler import Sampler

FIXTURES = Path(__file__).parent / "fixtures" / "monitor"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def sys_root(tmp_path) -> Path:
    """A board's sysfs as the kernel lays it out, values as it prints them (newline-terminated)."""
    return write(tmp_path / "sys", {
        "class/thermal/thermal_zone0/temp": "51234\n", "class/thermal/thermal_zone0/type": "cpu-thermal\n",
        "class/thermal/thermal_zone1/temp": "-4500\n",  # no type file: named after its folder
        "class/hwmon/hwmon0/name": "nvme\n", "class/hwmon/hwmon0/temp1_input": "38850\n",
        "class/hwmon/hwmon0/temp2_input": "40850\n",
        "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq": "1500000\n",
        "devices/system/cpu/cpu1/cpufreq/scaling_cur_freq": "600000\n",
        "devices/system/cpu/cpu2/cpufreq/scaling_cur_freq": "2400000\n",
        "devices/system/cpu/cpu10/cpufreq/scaling_cur_freq": "1800000\n",
        "devices/system/cpu/cpufreq/policy0/scaling_cur_freq": "999\n",  # not a core: never read
        "class/net/eth0/statistics/rx_bytes": "461857150\n", "class/net/eth0/statistics/tx_bytes": "1602263\n",
        "class/powercap/intel-rapl:0/name": "package-0\n",
        "class/powercap/intel-rapl:0/energy_uj": "123456789\n",
        "class/powercap/intel-rapl:0/max_energy_range_uj": "262143328850\n",
        "class/powercap/intel-rapl:0:0/name": "core\n",  # a sub-domain, inside the package's figure
        "class/powercap/intel-rapl:0:0/energy_uj": "1000\n",
    })


def board(**extra) -> dict:
    return {"node": "w1", "scope": "node", "cores": 4, "vcgencmd": "", "interface": {"name": "eth0"}, **extra}


def test_the_value_parsers_read_what_sysfs_prints():
    assert readings.thermal_zone_c("51234\n") == 51.234
    assert readings.thermal_zone_c("-4500\n") == -4.5
    assert readings.scaling_cur_freq_mhz("1500000\n") == 1500.0
    assert readings.rapl_energy_uj("262143328850\n") == 262143328850
    assert readings.net_statistic("461857150\n") == 461857150
    with pytest.raises(ValueError):
        readings.thermal_zone_c("")  # a sensor that is not ready reads empty


def test_sensors_clocks_and_interface_from_a_fake_sys(sys_root):
    sampler = Sampler(board(), sys_root=str(sys_root))
    header = sampler.header()["header"]
    assert header["clock_source"] == "cpufreq"
    assert header["temperature_sensors"] == ["cpu-thermal", "nvme:temp1_input", "nvme:temp2_input", "thermal_zone1"]
    s = sampler.sample()
    assert s["temp_c"] == {"cpu-thermal": 51.234, "thermal_zone1": -4.5, "nvme:temp1_input": 38.85,
                           "nvme:temp2_input": 40.85}
    assert s["mhz"] == [1500.0, 600.0, 2400.0, 1800.0], "cores in number order, cpu10 after cpu2"
    assert s["net"] == {"rx_bytes": 461857150, "tx_bytes": 1602263}
    assert "rapl_uj" not in s, "RAPL is read only when it is the node's power source"
    assert not sampler.errors


def test_the_host_end_of_a_veth_swaps_directions(sys_root):
    s = Sampler(board(interface={"name": "eth0", "peer_side": True}), sys_root=str(sys_root))
    s.header()
    assert s.sample()["net"] == {"rx_bytes": 1602263, "tx_bytes": 461857150}


def test_rapl_package_domains_only(sys_root):
    sampler = Sampler(board(power={"source": "rapl"}), sys_root=str(sys_root))
    header = sampler.header()["header"]
    domain = str(sys_root / "class/powercap/intel-rapl:0")
    assert header["rapl"] == {domain: {"name": "package-0", "max_energy_range_uj": 262143328850}}
    assert sampler.sample()["rapl_uj"] == {domain: 123456789}


def test_missing_and_broken_sources_are_said_and_left_out(sys_root):
    (sys_root / "class/thermal/thermal_zone0/temp").write_text("")
    sampler = Sampler(board(interface={"name": "wlan0"}, power={"source": "rapl", "powercap": str(sys_root / "none")}),
                      sys_root=str(sys_root))
    sampler.header()
    s = sampler.sample()
    assert "cpu-thermal" not in s["temp_c"] and s["temp_c"]["nvme:temp1_input"] == 38.85
    assert "net" not in s and "wlan0" in sampler.errors["net"]
    assert sampler.errors["power"].startswith("no RAPL package domain under")
    assert "temperature cpu-thermal" in sampler.errors


def test_without_cpufreq_the_clock_comes_from_cpuinfo(tmp_path):
    sampler = Sampler(board(), sys_root=str(tmp_path))
    assert sampler.header()["header"]["clock_source"] == "cpuinfo"
    assert sampler.header()["header"]["temperature_sensors"] == []


def cgroup_v1(tmp_path: Path, memory_stat: str) -> dict:
    write(tmp_path / "memory", {"memory.stat": memory_stat})
    write(tmp_path / "cpuacct", {"cpuacct.usage": "5000000000\n", "cpuacct.stat": "user 300\nsystem 100\n"})
    return {"version": 1, "memory": str(tmp_path / "memory"), "cpuacct": str(tmp_path / "cpuacct")}


def test_a_v1_node_reports_its_own_swap(tmp_path):
    text = (FIXTURES / "memory_stat_v1.txt").read_text().replace("total_swap 0", "total_swap 52428800")
    sampler = Sampler(board(cgroup=cgroup_v1(tmp_path, text)), sys_root=str(tmp_path / "sys"))
    sampler.header()
    s = sampler.sample()
    assert s["cgroup_memory"]["swap"] == 52428800
    assert s["cgroup_cpu"] == {"usage_ns": 5000000000, "user_ns": 3000000000, "system_ns": 1000000000}
    assert "cgroup swap" not in sampler.errors


def test_a_v1_node_without_swap_accounting_says_so(tmp_path):
    text = "\n".join(l for l in (FIXTURES / "memory_stat_v1.txt").read_text().splitlines() if "swap" not in l)
    sampler = Sampler(board(cgroup=cgroup_v1(tmp_path, text)), sys_root=str(tmp_path / "sys"))
    sampler.header()
    s = sampler.sample()
    assert "swap" not in s["cgroup_memory"] and "total_swap" in sampler.errors["cgroup swap"]
    assert "swap" in s, "the host's paging is still recorded"


def test_a_v2_node_reads_memory_swap_current(tmp_path):
    stat = "\n".join(l for l in (FIXTURES / "memory_stat_v2.txt").read_text().splitlines() if not l.startswith("swap"))
    group = write(tmp_path / "node", {"memory.stat": stat, "memory.swap.current": "8192\n",
                                      "cpu.stat": (FIXTURES / "cpu_stat_v2.txt").read_text()})
    sampler = Sampler(board(cgroup={"version": 2, "unified": str(group)}), sys_root=str(tmp_path / "sys"))
    sampler.header()
    assert sampler.sample()["cgroup_memory"] == {"rss": 734003200, "cache": 1209532416, "swap": 8192}
    (group / "memory.swap.current").unlink()
    sampler = Sampler(board(cgroup={"version": 2, "unified": str(group)}), sys_root=str(tmp_path / "sys"))
    sampler.header()
    assert "swap" not in sampler.sample()["cgroup_memory"]
    assert "memory.swap.current" in sampler.errors["cgroup swap"]
