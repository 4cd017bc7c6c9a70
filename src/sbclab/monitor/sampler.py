"""The per-node sampler: reads the node's counters at a fixed rate and appends them to a file.

Runs on the node while a run is in flight: `python3 -m sbclab.monitor.sampler --target T --out F`.
What to read is in the target (a JSON file): the node's data device, its network interface, on an
emulated node its cgroup, and which optional sources (vcgencmd, RAPL, the Pi 5's PMIC) to try.
Each line of the output is one sample of cumulative counters as the kernel keeps them; rates are
made afterwards, so a missed tick loses resolution, never bytes. A line is written and flushed per
sample, so whatever was sampled before a crash is kept.

On a real board the target may name a path and an address instead of a device and an interface
(`device_of`, `interface_of`): the sampler finds them on the board itself (resolve_target), since
only the board knows which disk holds its data directory and which interface has its address.

Signals: SIGUSR1 takes a sample at once, labelled with the text of OUT.mark (a run phase starts or
ends); SIGTERM takes a last sample and exits. Standard library only: this file and readings.py
are all a board needs.
"""

import argparse
import fcntl
import glob
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

if __package__ in (None, ""):  # copied to a board as plain files
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import readings  # type: ignore[no-redef]
    import taskstats  # type: ignore[no-redef]
else:
    from . import readings, taskstats


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _threads_and_age(pid: int) -> tuple[int, float] | None:
    """A process's thread count and seconds since it started (/proc/PID/stat fields 20 and 22)."""
    try:
        fields = _read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()
        uptime = float(_read("/proc/uptime").split()[0])
        return int(fields[17]), uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def plausible_delay(delta_ns: int, threads: int, interval_ns: int, clock_ns: int) -> int:
    """A delay increment no process can have had, trimmed to one it can.

    Seen on this kernel: a wait whose start was never recorded ends with a delay equal to the
    scheduler clock itself (the time since boot). Such whole multiples are removed; what is left
    is capped at every thread waiting for the whole interval."""
    if clock_ns > 0 and delta_ns > clock_ns // 2:
        delta_ns -= round(delta_ns / clock_ns) * clock_ns
    return max(0, min(delta_ns, threads * interval_ns))


class _Process:
    """One process of the group: what was counted of it, and its newest reading, not yet confirmed."""

    def __init__(self, counted: dict[str, int], pending: dict[str, int], span_ns: int, threads: int):
        self.counted = counted
        self.pending = pending
        self.span_ns = span_ns  # the time the pending reading covers beyond what was counted
        self.threads = threads  # at the pending reading


# A thread is at any moment in at most one of these: running, waiting for a core, blocked on I/O.
_STATES = ("cpu_run_real_ns", "cpu_delay_ns", "blkio_delay_ns")


class NodeGroupDelays:
    """Delay counters summed over a cgroup's processes, kept cumulative across processes that come
    and go.

    The kernel's figure for a thread group is its live threads' plus what its exited threads left,
    and a thread that is exiting is briefly in both: one reading can be high by a whole thread's
    totals and the next lower again (a process whose threads come and go, read 1.08 million times
    on this host, went back 1,254 times). So a reading counts only once the next one confirms it:
    a process adds the lesser of its last two readings, so the totals read() returns belong with the
    reading before (`of_previous`; series.py puts them back on that sample). A process gone
    before its newest reading was confirmed keeps what was confirmed.

    A process seen for the first time adds all it has only if it started since the last reading (it
    started inside the group), and a process that could not be read once keeps its last values
    rather than counting again from zero."""

    def __init__(self, procs_file: str, stats=None, shape=None, clock=time.monotonic_ns):
        self.procs_file = procs_file
        self.stats = stats if stats is not None else taskstats.Taskstats()
        self.shape = shape or _threads_and_age
        self.clock = clock
        self.processes: dict[int, _Process] = {}
        self.total = {name: 0 for name in taskstats._FIELDS}
        self.discarded = 0  # delay the kernel reported that no process could have had (see plausible_delay)
        self.read_at: int | None = None

    def read(self) -> dict[str, int]:
        now_ns = self.clock()
        since_ns = now_ns - self.read_at if self.read_at is not None else 0
        members = [int(p) for p in _read(self.procs_file).split()]
        current = {}
        counted_threads = 0  # of the processes whose interval was counted now
        for pid in members:
            got = self.stats.thread_group(pid)
            known = self.processes.get(pid)
            if got is None:
                if known is not None:
                    current[pid] = known
                continue
            shape = self.shape(pid)
            threads = shape[0] if shape else 1
            if known is None:
                new = self.read_at is not None and shape is not None and shape[1] * 1e9 <= since_ns + 5e8
                counted = {name: 0 for name in got} if new else dict(got)
                current[pid] = _Process(counted, got, int(shape[1] * 1e9) if new else 0, threads)
                continue
            most = max(threads, known.threads)
            # What is confirmed is the pending reading, unless this one is lower: then this one, and
            # the time up to now.
            fell_back = any(got[name] < known.pending[name] for name in got)
            span = known.span_ns + (since_ns if fell_back else 0) + 10**8
            kept = {}
            for name, value in got.items():
                confirmed = min(value, known.pending[name])
                delta = confirmed - known.counted[name]
                kept[name] = plausible_delay(delta, most, span, now_ns)
                self.discarded += max(0, delta - kept[name])
                known.counted[name] = max(known.counted[name], confirmed)
            # Each of the three alone is capped above; together they cannot exceed the threads either.
            states = sum(kept.get(name, 0) for name in _STATES)
            if states > most * span:
                for name in _STATES:
                    if name in kept:
                        share = kept[name] * most * span // states
                        self.discarded += kept[name] - share
                        kept[name] = share
            for name, value in kept.items():
                self.total[name] += value
            counted_threads += most
            known.pending, known.span_ns, known.threads = got, since_ns, threads
            current[pid] = known
        self.processes = current
        self.read_at = now_ns
        return dict(self.total, processes=len(current), threads=counted_threads, implausible_ns=self.discarded,
                    of_previous=1)


def device_of(path: str, sys_root: str = "/sys") -> str | None:
    """The kernel name (as in /proc/diskstats) of the block device holding a path; None for a virtual one."""
    try:
        st = os.stat(path)
        device = os.path.realpath(os.path.join(sys_root, "dev/block", f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"))
    except OSError:
        return None
    return os.path.basename(device) if os.path.exists(device) else None


_SIOCGIFADDR = 0x8915


def interface_of(address: str) -> str | None:
    """The network interface that holds an IPv4 address on this machine."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                raw = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue  # no IPv4 address on this one
            if socket.inet_ntoa(raw[20:24]) == address:
                return name
    return None


def resolve_target(target: dict, sys_root: str = "/sys") -> dict:
    """The target with a board's device, interface and core count found where it only names them."""
    resolved = dict(target)
    if resolved.get("device_of") and not resolved.get("device"):
        resolved["device"] = device_of(resolved["device_of"], sys_root)
    if resolved.get("interface_of") and not resolved.get("interface"):
        name = interface_of(resolved["interface_of"])
        resolved["interface"] = {"name": name} if name else None
    if not resolved.get("cores"):
        resolved["cores"] = os.cpu_count() or 1
    return resolved


def _cpu_number(path: str) -> int:
    """N of a .../cpuN/cpufreq/scaling_cur_freq path, so cpu10 sorts after cpu9."""
    return int(path.split(os.sep)[-3][len("cpu"):])


class Sampler:
    """What one node's samples hold; `sys_root` is where sysfs is mounted (a copy of it in tests)."""

    def __init__(self, target: dict, sys_root: str = "/sys"):
        target = resolve_target(target, sys_root)
        self.target = target
        self.sys_root = sys_root
        self.errors: dict[str, str] = {}
        cgroup = target.get("cgroup") or {}
        self.cgroup = cgroup
        self.delays = None
        if cgroup.get("procs"):
            try:
                if not taskstats.delay_accounting_on():
                    raise OSError("kernel.task_delayacct is 0")
                self.delays = NodeGroupDelays(cgroup["procs"])
            except OSError as err:
                self.errors["iowait"] = f"no per-node delay accounting ({err})"
        self.thermal = sorted(glob.glob(os.path.join(sys_root, "class/thermal/thermal_zone*/temp")))
        self.hwmon = sorted(glob.glob(os.path.join(sys_root, "class/hwmon/hwmon*/temp*_input")))
        self.cpufreq = sorted(glob.glob(os.path.join(sys_root, "devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq")),
                              key=_cpu_number)
        self.zone_names: dict[str, str] = {}
        self.rapl_domains: dict[str, dict] = {}
        vcgencmd = target.get("vcgencmd", "auto")
        self.vcgencmd = shutil.which("vcgencmd") if vcgencmd == "auto" else vcgencmd
        power = target.get("power") or {}
        self.power_source = power.get("source")
        powercap = power.get("powercap", os.path.join(sys_root, "class/powercap"))
        # Package domains only (intel-rapl:N): their sub-domains (cores, uncore, dram) are inside them.
        self.rapl = sorted(glob.glob(os.path.join(powercap, "intel-rapl:[0-9]"))) if self.power_source == "rapl" else []
        if self.power_source == "rapl" and not self.rapl:
            self.errors["power"] = f"no RAPL package domain under {powercap}"
        if self.power_source == "pi5-pmic" and not self.vcgencmd:
            self.errors["power"] = "vcgencmd is not installed"

    def header(self) -> dict:
        zones = {}
        for path in self.thermal:
            try:
                zones[path] = _read(os.path.join(os.path.dirname(path), "type")).strip()
            except OSError:
                zones[path] = os.path.basename(os.path.dirname(path))
        for path in self.hwmon:
            try:
                zones[path] = _read(os.path.join(os.path.dirname(path), "name")).strip() + ":" + os.path.basename(path)
            except OSError:
                zones[path] = path
        self.zone_names = zones
        rapl = {}
        for domain in self.rapl:
            try:
                rapl[domain] = {"name": _read(domain + "/name").strip(),
                                "max_energy_range_uj": int(_read(domain + "/max_energy_range_uj"))}
            except OSError as err:
                self.errors["power"] = f"RAPL not readable: {err.strerror}"
        self.rapl_domains = rapl
        return {"header": {"target": self.target, "pid": os.getpid(), "started": time.time(),
                           "clock_source": "cpufreq" if self.cpufreq else "cpuinfo",
                           "temperature_sensors": sorted(zones.values()), "rapl": rapl}}

    def _try(self, name: str, read):
        if name in self.errors:
            return None
        try:
            return read()
        except (OSError, ValueError, IndexError, KeyError, subprocess.SubprocessError) as err:
            self.errors[name] = f"{type(err).__name__}: {err}"
            return None

    def _vcgencmd(self, *args: str) -> str:
        return subprocess.run([self.vcgencmd, *args], capture_output=True, text=True, timeout=5, check=True).stdout

    def sample(self) -> dict:
        s: dict = {"t": round(time.time(), 4)}
        t = self.target
        host_cpu = self._try("cpu", lambda: readings.proc_stat_cpu(_read("/proc/stat")))
        if self.cgroup:
            s["cgroup_cpu"] = self._try("cgroup cpu", self._cgroup_cpu)
            s["cgroup_memory"] = self._try("cgroup memory", self._cgroup_memory)
            s["host_cpu"] = host_cpu
            if self.delays:
                s["delays"] = self._try("iowait", self.delays.read)
        else:
            s["cpu"] = host_cpu
            s["load"] = self._try("load", lambda: readings.loadavg(_read("/proc/loadavg")))
            s["memory"] = self._try("memory", lambda: readings.meminfo(_read("/proc/meminfo")))
        # Always the host's paging. On a node with a cgroup its own swap is cgroup_memory["swap"],
        # which series.py prefers; this stays for nodes whose cgroup does not account swap.
        vmstat = self._try("swap", lambda: _read("/proc/vmstat"))
        if vmstat is not None:
            s["swap"] = self._try("swap", lambda: readings.vmstat_swap(vmstat))
            if not self.cgroup:  # a node's cgroup counts its own kills (monitor/memory.py reads them)
                s["oom_kills"] = self._try("oom kills", lambda: readings.vmstat_oom_kills(vmstat))
        if t.get("device"):
            s["disk"] = self._try("disk", lambda: readings.diskstats(_read("/proc/diskstats"), t["device"]))
        if t.get("interface"):
            s["net"] = self._try("net", self._net)
        s["mhz"] = self._try("clock", self._clock)
        temps = {}
        for path, name in self.zone_names.items():
            value = self._try(f"temperature {name}", lambda p=path: readings.thermal_zone_c(_read(p)))
            if value is not None:
                temps[name] = value
        if self.vcgencmd and "vcgencmd" not in self.errors:
            s["throttled"] = self._try("vcgencmd", lambda: readings.vcgencmd_throttled(self._vcgencmd("get_throttled")))
            s["arm_hz"] = self._try("vcgencmd", lambda: readings.vcgencmd_clock_hz(self._vcgencmd("measure_clock", "arm")))
            if not temps:
                soc = self._try("vcgencmd", lambda: readings.vcgencmd_temp_c(self._vcgencmd("measure_temp")))
                if soc is not None:
                    temps["soc"] = soc
        s["temp_c"] = temps
        if self.power_source == "rapl" and self.rapl_domains:
            s["rapl_uj"] = self._try("power", lambda: {d: readings.rapl_energy_uj(_read(d + "/energy_uj"))
                                                       for d in self.rapl_domains})
        elif self.power_source == "pi5-pmic" and self.vcgencmd:
            s["pmic_w"] = self._try("power", lambda: round(readings.pmic_watts(self._vcgencmd("pmic_read_adc")), 4))
        return {k: v for k, v in s.items() if v is not None}

    def _cgroup_cpu(self) -> dict:
        c = self.cgroup
        if c.get("version") == 2:
            stat = readings.cgroup2_cpu_stat(_read(os.path.join(c["unified"], "cpu.stat")))
            return {"usage_ns": stat["usage_us"] * 1000, "user_ns": stat["user_us"] * 1000,
                    "system_ns": stat["system_us"] * 1000}
        usage = int(_read(os.path.join(c["cpuacct"], "cpuacct.usage")))
        ticks = readings.cpuacct_stat(_read(os.path.join(c["cpuacct"], "cpuacct.stat")))
        per_tick = 1e9 / readings.USER_HZ
        return {"usage_ns": usage, "user_ns": int(ticks["user"] * per_tick), "system_ns": int(ticks["system"] * per_tick)}

    def _cgroup_memory(self) -> dict:
        c = self.cgroup
        folder = c["unified"] if c.get("version") == 2 else c["memory"]
        memory = readings.memory_stat(_read(os.path.join(folder, "memory.stat")))
        if c.get("version") == 2 and "cgroup swap" not in self.errors:
            try:
                memory["swap"] = readings.cgroup2_swap_current(_read(os.path.join(folder, "memory.swap.current")))
            except (OSError, ValueError) as err:
                self.errors["cgroup swap"] = f"no memory.swap.current ({type(err).__name__}: {err})"
        if "swap" not in memory and "cgroup swap" not in self.errors:
            # Said once: without it the swap figures of this node are the host's (series.py).
            self.errors["cgroup swap"] = "the node's cgroup does not account swap (no total_swap in memory.stat)"
        return memory

    def _net(self) -> dict:
        iface = self.target["interface"]
        stats = os.path.join(self.sys_root, "class/net", iface["name"], "statistics")
        rx = readings.net_statistic(_read(os.path.join(stats, "rx_bytes")))
        tx = readings.net_statistic(_read(os.path.join(stats, "tx_bytes")))
        # The host end of an emulated node's veth sees the node's traffic the other way round.
        return {"rx_bytes": tx, "tx_bytes": rx} if iface.get("peer_side") else {"rx_bytes": rx, "tx_bytes": tx}

    def _clock(self) -> list[float]:
        if self.cpufreq:
            return [readings.scaling_cur_freq_mhz(_read(p)) for p in self.cpufreq]
        return readings.cpuinfo_mhz(_read("/proc/cpuinfo"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Sample a node's counters to a file until SIGTERM.")
    parser.add_argument("--target", required=True, help="JSON file: what to read on this node")
    parser.add_argument("--out", required=True, help="the samples file (JSON lines), appended to")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples (0.1-5)")
    args = parser.parse_args(argv)
    if not 0.1 <= args.interval <= 5:
        parser.error("--interval must be between 0.1 and 5 seconds")
    with open(args.target) as f:
        sampler = Sampler(json.load(f))
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGTERM, signal.SIGINT})
    mark_file = args.out + ".mark"
    with open(args.out, "a") as out:
        def write(record: dict) -> None:
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
            out.flush()

        write(sampler.header())
        next_tick = time.monotonic()
        reported: dict = {}
        while True:
            sample = sampler.sample()
            if sampler.errors != reported:  # a source that failed is said once, then left out
                reported = dict(sampler.errors)
                sample["errors"] = reported
            write(sample)
            next_tick += args.interval
            while True:
                left = next_tick - time.monotonic()
                if left <= 0:
                    # Fell behind (the node was starved): skip the missed ticks rather than burst.
                    next_tick = time.monotonic()
                    break
                got = signal.sigtimedwait({signal.SIGUSR1, signal.SIGTERM, signal.SIGINT}, left)
                if got is None:
                    break
                marked = sampler.sample()
                if got.si_signo == signal.SIGUSR1:
                    try:
                        marked["mark"] = _read(mark_file).strip()
                    except OSError:
                        marked["mark"] = "?"
                    write(marked)
                    continue
                marked["mark"] = "stop"
                write(marked)
                return


if __name__ == "__main__":
    main()
