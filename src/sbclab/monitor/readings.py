"""Parsers of what a node's kernel and firmware report: /proc, /sys, cgroup files, vcgencmd.

Pure functions of text, so each is tested on recorded samples. Standard library only: this module
and sampler.py are what runs on a node, including a board with nothing but Python 3 installed.
Counters are returned as the kernel keeps them (cumulative); rates are made later (series.py).
"""

import re

USER_HZ = 100  # the unit of /proc/stat and cpuacct.stat on every Linux architecture sbclab runs on
SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size

_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def proc_stat_cpu(text: str) -> dict[str, int]:
    """The aggregate `cpu` line of /proc/stat, in USER_HZ ticks (guest time is inside user already)."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            values = [int(v) for v in line.split()[1:]]
            return {name: values[i] if i < len(values) else 0 for i, name in enumerate(_CPU_FIELDS)}
    raise ValueError("no aggregate cpu line in /proc/stat")


def loadavg(text: str) -> float:
    """The one-minute load average of /proc/loadavg."""
    return float(text.split()[0])


def meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo in bytes: total, available, cached (page cache + reclaimable slab is not counted), swap."""
    kib = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            kib[name] = int(parts[0])
    total = kib["MemTotal"] * 1024
    available = kib.get("MemAvailable", kib.get("MemFree", 0) + kib.get("Cached", 0)) * 1024
    return {"total": total, "available": available, "used": total - available,
            "cached": kib.get("Cached", 0) * 1024,
            "swap_used": (kib.get("SwapTotal", 0) - kib.get("SwapFree", 0)) * 1024}


def vmstat_swap(text: str) -> dict[str, int]:
    """Pages swapped in and out since boot (/proc/vmstat pswpin, pswpout)."""
    found = {"pswpin": 0, "pswpout": 0}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in found:
            found[name] = int(value)
    return {"in_pages": found["pswpin"], "out_pages": found["pswpout"]}


def vmstat_oom_kills(text: str) -> int:
    """Processes the kernel has killed for want of memory since boot (/proc/vmstat oom_kill)."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == "oom_kill":
            return int(value)
    raise ValueError("no oom_kill in /proc/vmstat (the kernel counts OOM kills there from Linux 4.13)")


def diskstats(text: str, device: str) -> dict[str, int]:
    """One device's line of /proc/diskstats: bytes read and written, and milliseconds it was busy."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 14 and fields[2] == device:
            return {"read_bytes": int(fields[5]) * SECTOR_BYTES, "write_bytes": int(fields[9]) * SECTOR_BYTES,
                    "reads": int(fields[3]), "writes": int(fields[7]), "io_ms": int(fields[12])}
    raise ValueError(f"no device {device} in /proc/diskstats")


def proc_net_dev(text: str, interface: str) -> dict[str, int]:
    """One interface's received and sent bytes from /proc/net/dev."""
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if sep and name.strip() == interface:
            fields = rest.split()
            return {"rx_bytes": int(fields[0]), "tx_bytes": int(fields[8])}
    raise ValueError(f"no interface {interface} in /proc/net/dev")


def cpuinfo_mhz(text: str) -> list[float]:
    """Each core's clock from /proc/cpuinfo, where the kernel has no cpufreq driver (virtual machines)."""
    return [float(line.split(":", 1)[1]) for line in text.splitlines() if line.lower().startswith("cpu mhz")]


def cpuacct_stat(text: str) -> dict[str, int]:
    """cgroup v1 cpuacct.stat: user and system time of a group, in USER_HZ ticks."""
    found = dict(line.split() for line in text.splitlines() if line.strip())
    return {"user": int(found.get("user", 0)), "system": int(found.get("system", 0))}


def cgroup2_cpu_stat(text: str) -> dict[str, int]:
    """cgroup v2 cpu.stat: usage, user and system time in microseconds."""
    found = dict(line.split() for line in text.splitlines() if line.strip())
    return {"usage_us": int(found.get("usage_usec", 0)), "user_us": int(found.get("user_usec", 0)),
            "system_us": int(found.get("system_usec", 0))}


def memory_stat(text: str) -> dict[str, int]:
    """cgroup memory.stat (v1 total_* or v2 names) as resident and page cache bytes, and the bytes
    of the group swapped out ("swap") when the file reports them.

    v1 reports `total_swap` only with swap accounting on; v2 keeps swap out of memory.stat (it is
    memory.swap.current, see cgroup2_swap_current). Without a figure "swap" is left out rather than
    given as 0, so nobody mistakes "not accounted" for "did not swap"."""
    found = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            found[parts[0]] = int(parts[1])
    if "total_rss" in found:  # v1, hierarchical totals
        out = {"rss": found["total_rss"],  # includes transparent huge pages
               "cache": found.get("total_cache", 0)}
        swap = found.get("total_swap", found.get("swap"))
    else:
        out = {"rss": found.get("anon", 0), "cache": found.get("file", 0)}
        swap = found.get("swap")
    if swap is not None:
        out["swap"] = swap
    return out


def cgroup2_swap_current(text: str) -> int:
    """cgroup v2 memory.swap.current: bytes of the group's memory now in swap."""
    return int(text.strip())


_THROTTLED = re.compile(r"throttled=(0x[0-9a-fA-F]+)")
_CLOCK = re.compile(r"frequency\(\d+\)=(\d+)")
_TEMP = re.compile(r"temp=([0-9.]+)'C")
# Rails print as "VDD_CORE_A current(7)=0.73620000A" / "VDD_CORE_V volt(15)=0.72016000V"; some
# firmware prints "VDD_CORE_A=0.7362A".
_PMIC_RAIL = re.compile(r"^\s*(\S+?)_([AV])(?:\s+(?:current|volt|voltage)\(\d+\))?=([0-9.]+)[AV]\s*$")

# `vcgencmd get_throttled` bits (Raspberry Pi firmware documentation): now (0-3) and since boot (16-19).
THROTTLE_BITS = {
    0: "under-voltage detected", 1: "arm frequency capped", 2: "currently throttled",
    3: "soft temperature limit active",
    16: "under-voltage has occurred", 17: "arm frequency capping has occurred",
    18: "throttling has occurred", 19: "soft temperature limit has occurred",
}


def vcgencmd_throttled(text: str) -> int:
    match = _THROTTLED.search(text)
    if not match:
        raise ValueError(f"not get_throttled output: {text.strip()[:80]!r}")
    return int(match.group(1), 16)


def throttle_reasons(bits: int, current_only: bool = True) -> list[str]:
    """What a get_throttled value says; only the bits about now, unless asked for the sticky ones too."""
    return [name for bit, name in sorted(THROTTLE_BITS.items()) if bits >> bit & 1 and (bit < 16 or not current_only)]


def vcgencmd_clock_hz(text: str) -> int:
    match = _CLOCK.search(text)
    if not match:
        raise ValueError(f"not measure_clock output: {text.strip()[:80]!r}")
    return int(match.group(1))


def vcgencmd_temp_c(text: str) -> float:
    match = _TEMP.search(text)
    if not match:
        raise ValueError(f"not measure_temp output: {text.strip()[:80]!r}")
    return float(match.group(1))


def pmic_watts(text: str) -> float:
    """Total power of the Pi 5's PMIC rails (`vcgencmd pmic_read_adc`): the sum of volts x amps per rail.

    The PMIC sees the board's rails after the 5 V input, so this is the board's own draw without
    the power supply's losses or USB peripherals (documented next to the power sources)."""
    amps, volts = {}, {}
    for line in text.splitlines():
        match = _PMIC_RAIL.match(line)
        if match:
            rail, kind, value = match.groups()
            (amps if kind == "A" else volts)[rail] = float(value)
    rails = amps.keys() & volts.keys()
    if not rails:
        raise ValueError("no rail with both a current and a voltage in pmic_read_adc output")
    return sum(amps[r] * volts[r] for r in rails)


def thermal_zone_c(text: str) -> float:
    """A /sys/class/thermal/thermal_zone*/temp or hwmon temp*_input value (millidegrees Celsius;
    negative below freezing). An empty read (a sensor that is not ready) raises ValueError."""
    return int(text.strip()) / 1000.0


def scaling_cur_freq_mhz(text: str) -> float:
    """A cpufreq scaling_cur_freq value (kHz)."""
    return int(text.strip()) / 1000.0


def rapl_energy_uj(text: str) -> int:
    """A powercap energy_uj counter (microjoules, wraps at max_energy_range_uj)."""
    return int(text.strip())


def net_statistic(text: str) -> int:
    """One /sys/class/net/IFACE/statistics/* counter (rx_bytes, tx_bytes: bytes since the interface appeared)."""
    return int(text.strip())
