"""Per-node CPU, memory and disk limits through the host's cgroups, v1 or v2, and what the kernel
accounted against the memory limit: the most a node used, and the processes it killed.

cgroup v1 quirk (FACTS.md): a blkio throttle rule on a node's own cgroup misses buffered writes,
because write-back is issued by kernel threads in the root group. The rule is therefore set on the
root blkio cgroup, keyed by the node's own loop device, and the node's processes stay in the root
blkio group: the root rule then throttles their direct I/O and reads as well as the write-back.
cgroup v2 attributes write-back to the writer, so io.max on the node's cgroup is enough there.
"""

import math
import os
from pathlib import Path

from ..errors import SbclabError

ROOT = Path("/sys/fs/cgroup")
# The CFS period. A throttled thread waits for the next period, so under 100 ms every wait for a
# message a polling MPI rank makes takes tens of milliseconds (hpcc measured exactly 50 ms between two
# emulated nodes). Short periods fix that but cost the JVMs: with a quota of about 1 ms, runtime
# left on one host CPU's run queue (the kernel keeps up to 1 ms there) is lost to the group's
# threads on the other CPU, and Hadoop's jobs ran 20-30 % slower under 6 ms periods. So nodes keep
# 100 ms, and MPI runs switch their nodes to the shortest period the quotas allow (polling_period).
CFS_PERIOD_US = 100_000
MIN_QUOTA_US = 1000
MIN_PERIOD_US = 5_000
MAX_PERIOD_US = 1_000_000  # the kernel's longest CFS period


def node_period_us(smallest_share: float) -> int:
    """The node's CFS period: 100 ms, or longer where a share of a host core that small would need a
    quota under the kernel's minimum of 1 ms (Baun's RPi B is 0.005 of a host core: clamped to 1 ms
    of 100 it ran twice its speed), so the quota is exactly the share."""
    if smallest_share <= 0 or smallest_share * CFS_PERIOD_US >= MIN_QUOTA_US:
        return CFS_PERIOD_US
    return min(MAX_PERIOD_US, math.ceil(MIN_QUOTA_US / smallest_share))


def polling_period_us(smallest_share: float) -> int:
    """The shortest CFS period whose quota for smallest_share host cores is still the kernel's
    minimum of 1 ms, and not under 5 ms, where accounting overhead would grow."""
    if smallest_share <= 0:
        return CFS_PERIOD_US
    return min(node_period_us(smallest_share), max(MIN_PERIOD_US, math.ceil(MIN_QUOTA_US / smallest_share)))


# Not blkio: a node's processes stay in the root blkio group, where the rule keyed by the node's own
# loop device throttles their direct I/O, their reads and the kernel's write-back of their buffers
# alike. In a child blkio group their direct I/O would be charged to the child and escape the rule.
V1_CONTROLLERS = ("cpu", "cpuacct", "memory", "pids")


def version() -> int:
    if (ROOT / "cgroup.controllers").exists():
        return 2
    if (ROOT / "cpu").is_dir() and (ROOT / "memory").is_dir():
        return 1
    raise SbclabError("This host has no usable cgroup hierarchy for CPU and memory.",
                      "Use the processes backend (--backend processes), which does not shape nodes.")


def found_version() -> int | None:
    """The hierarchy this host has, as a run records it (emulated nodes are shaped on it); None where
    there is none to shape with."""
    try:
        return version()
    except SbclabError:
        return None


def threads_file(group: Path) -> Path:
    """The file listing (and taking) a group's threads: v1's tasks, v2's cgroup.threads."""
    return group / "tasks" if (group / "tasks").exists() else group / "cgroup.threads"


def _thread_count(group: Path) -> int:
    try:
        return len(threads_file(group).read_text().split())
    except OSError:
        return 1 << 30  # a core going away takes nothing new


def _quota(group: Path) -> tuple[int, int]:
    """(quota, period) in microseconds of a cpu group, v1 or v2; quota -1 when unlimited."""
    if (group / "cpu.max").exists():
        quota, period = (group / "cpu.max").read_text().split()
        return (-1 if quota == "max" else int(quota)), int(period)
    return int((group / "cpu.cfs_quota_us").read_text()), int((group / "cpu.cfs_period_us").read_text())


def _set_quota(group: Path, quota: int, period: int) -> None:
    """A v2 group's quota and period at once (v1 groups take them one file each, apply_limits)."""
    _write(group / "cpu.max", f"{'max' if quota < 0 else quota} {period}")


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as err:
        raise SbclabError(f"Cannot set {path} to '{value}': {err.strerror}.",
                          "Run as root on a host with cgroups, or use --backend processes.") from err


def usage_file(cpu_group: Path) -> Path | None:
    """The file that holds the CPU time a cpu group's threads have used: v2's cpu.stat, v1's
    cpuacct.usage (in the same directory when the two controllers share a hierarchy, else the same
    group in cpuacct's); None where neither is found."""
    if version() == 2:
        return cpu_group / "cpu.stat" if (cpu_group / "cpu.stat").exists() else None
    candidates = [cpu_group / "cpuacct.usage"]
    try:
        candidates.append(ROOT / "cpuacct" / cpu_group.relative_to(ROOT / "cpu") / "cpuacct.usage")
    except ValueError:
        pass
    return next((path for path in candidates if path.exists()), None)


def usage_ns(path: Path | None) -> int | None:
    """The CPU time in a usage file (usage_file): v1's nanoseconds, v2's usage_usec; None if unreadable."""
    if path is None:
        return None
    try:
        text = path.read_text()
        if path.name != "cpu.stat":
            return int(text)
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) * 1000
    except (OSError, ValueError):
        pass
    return None


def share_of(group: Path) -> float | None:
    """Host cores a cpu group's quota gives; None when it has no quota."""
    try:
        quota, period = _quota(group)
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None


class NodeCgroup:
    """The cgroup(s) of one node: <hierarchy>/sbclab/<cluster>/<node>."""

    def __init__(self, cluster: str, node: str):
        self.version = version()
        self.relative = Path("sbclab") / cluster / node

    def dirs(self) -> list[Path]:
        if self.version == 2:
            return [ROOT / self.relative]
        return [ROOT / c / self.relative for c in V1_CONTROLLERS if (ROOT / c).is_dir()]

    def memory_dir(self) -> Path:
        return ROOT / self.relative if self.version == 2 else ROOT / "memory" / self.relative

    def procs_files(self) -> list[Path]:
        return [d / "cgroup.procs" for d in self.dirs()]

    def cpu_usage_ns(self) -> int | None:
        """CPU time the node's processes have used, all their threads together; None if unreadable."""
        return usage_ns(usage_file(self.cpu_dir()))

    def pids(self) -> list[int]:
        """The node's processes (on v2 its threaded root lists those of its virtual cores too)."""
        try:
            return [int(line) for line in (self.memory_dir() / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def cpu_dir(self) -> Path:
        return ROOT / self.relative if self.version == 2 else ROOT / "cpu" / self.relative

    def vcpu_dirs(self) -> list[Path]:
        """Per-core child groups (threaded ones on v2); see vcpus.py."""
        return sorted(self.cpu_dir().glob("vcpu*"))

    def create(self, memory_bytes: int) -> None:
        """The node's groups, its memory limited to memory_bytes; its CPU is limited by limit_cpu."""
        if self.version == 2:
            self._enable_v2_controllers()
        for d in self.dirs():
            d.mkdir(parents=True, exist_ok=True)
        if self.version == 2:
            d = ROOT / self.relative
            _write(d / "memory.max", str(memory_bytes))
            if (d / "memory.swap.max").exists():
                _write(d / "memory.swap.max", "0")
        else:
            _write(ROOT / "memory" / self.relative / "memory.limit_in_bytes", str(memory_bytes))

    def oom_kills(self) -> int | None:
        """Processes the kernel killed because the node ran out of memory, since the group was made;
        None where the kernel does not count them (v1's memory.oom_control has oom_kill from Linux 4.13)."""
        path = self.memory_dir() / ("memory.events" if self.version == 2 else "memory.oom_control")
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return None

    def memory_peak(self) -> "MemoryPeak":
        """A watch of the most memory the node uses from when it is started (MemoryPeak.start)."""
        return MemoryPeak(self.memory_dir(), self.version)

    def limit_cpu(self, cpu_cores: float, core_speeds: list[float] | tuple[float, ...] = ()) -> None:
        """Limit the node to cpu_cores host cores; with core_speeds, also split them into one per-core
        group (virtual core) per entry, each its speed's share of cpu_cores (cores of two kinds on a
        big.LITTLE board, alike otherwise). On v2 those are threaded groups: the node becomes the
        domain of a threaded subtree whose cpu controller limits each thread by the core it is placed
        on (memory and io, domain controllers, stay on the node)."""
        shares = [cpu_cores * speed / sum(core_speeds) for speed in core_speeds]
        period = node_period_us(min(shares, default=cpu_cores))
        quota = max(MIN_QUOTA_US, int(cpu_cores * period))
        per_core = [max(MIN_QUOTA_US, int(share * period)) for share in shares]
        if self.version == 2:
            node = ROOT / self.relative
            _set_quota(node, quota, period)
            for i in range(len(shares)):
                d = node / f"vcpu{i}"
                d.mkdir(exist_ok=True)
                _write(d / "cgroup.type", "threaded")
            if shares:
                _write(node / "cgroup.subtree_control", "+cpu")
            for i, core_quota in enumerate(per_core):
                _set_quota(node / f"vcpu{i}", core_quota, period)
        else:
            cpu = ROOT / "cpu" / self.relative
            _write(cpu / "cpu.cfs_period_us", str(period))
            _write(cpu / "cpu.cfs_quota_us", str(quota))
            for i, core_quota in enumerate(per_core):
                d = cpu / f"vcpu{i}"
                d.mkdir(exist_ok=True)
                _write(d / "cpu.cfs_period_us", str(period))
                _write(d / "cpu.cfs_quota_us", str(core_quota))

    def smallest_share(self) -> float:
        """Host cores of the node's smallest CPU group (a virtual core, or the node itself)."""
        limits = [_quota(g) for g in self.vcpu_dirs() or [self.cpu_dir()]]
        shares = [quota / period for quota, period in limits if quota > 0]
        return min(shares) if shares else 0.0

    def cpu_limits(self) -> dict[Path, tuple[int, int]]:
        """(quota, period) of the node's cpu group and its virtual cores, node first."""
        node = self.cpu_dir()
        return {d: _quota(d) for d in [node, *self.vcpu_dirs()]}

    def on_period(self, period: int) -> dict[Path, tuple[int, int]]:
        """The node's limits moved to another CFS period, each group keeping its share."""
        return {d: (q if q <= 0 else max(MIN_QUOTA_US, round(q * period / p)), period)
                for d, (q, p) in self.cpu_limits().items()}

    def apply_limits(self, limits: dict[Path, tuple[int, int]]) -> None:
        """Set (quota, period) per group, node first as cpu_limits gives them.

        The kernel refuses a child whose share would exceed its parent's at any step, so the node's
        group first takes whichever of its two values raises its share, the children then change
        completely (the value that lowers theirs first), and the node's group ends at its own. A v2
        group takes both values at once and a child's limit is not checked against its parent's."""
        if self.version == 2:
            for group, (quota, period) in limits.items():
                _set_quota(group, quota, period)
            return
        node, *children = limits
        quota, period = limits[node]
        old_period = _quota(node)[1]
        steps = [("cpu.cfs_period_us", period), ("cpu.cfs_quota_us", quota)]
        if period > old_period:
            steps.reverse()
        _write(node / steps[0][0], str(steps[0][1]))
        for child in children:
            c_quota, c_period = limits[child]
            c_steps = [("cpu.cfs_quota_us", c_quota), ("cpu.cfs_period_us", c_period)]
            if c_period > _quota(child)[1]:
                c_steps.reverse()
            for name, value in c_steps:
                _write(child / name, str(value))
        _write(node / steps[1][0], str(steps[1][1]))

    def _enable_v2_controllers(self) -> None:
        parent = ROOT
        for part in self.relative.parts:
            _write(parent / "cgroup.subtree_control", "+cpu +memory +io")
            parent = parent / part
            parent.mkdir(exist_ok=True)

    def join(self) -> None:
        """Move the calling process in; used in a child between fork and exec.

        Where the node has virtual cores, the process starts on one of them (the one with the fewest
        threads; the balancer moves it within 50 ms if another is less loaded), and its threads are born
        there. In the node's own group a lone busy thread ran under the whole node's quota until the
        balancer first placed it: 70 ms of CPU in its first 0.15 s on a Pi 5 node whose core's quota is
        7 ms per 100 ms, which made a 5 s sysbench at one thread 1.1-1.2 times one core's speed."""
        cores = self.vcpu_dirs()
        core = min(cores, key=_thread_count) if cores else None
        for procs in self.procs_files():
            if core is not None and procs.parent == self.cpu_dir():
                procs = core / "cgroup.procs"
            procs.write_text("0")

    def remove(self) -> bool:
        """Remove the node's cgroup and empty parents; False while processes remain in it."""
        ok = True
        for d in self.vcpu_dirs():
            try:
                d.rmdir()
            except OSError:
                ok = False
        for d in self.dirs():
            for path in (d, d.parent, d.parent.parent):
                try:
                    path.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    if path == d:
                        ok = False
                    break
        return ok


class MemoryPeak:
    """The most memory a node's group used, its processes' and its page cache's, from start() to read().

    v1 starts over when 0 is written to memory.max_usage_in_bytes. v2's memory.peak starts over only
    for the open file it is written to (Linux 6.12+), so the watch keeps that file open until it is
    read. Where neither can start over (memory.peak of Linux 5.19-6.11 is the group's high since it was
    made), that high is the run's own only if the run raised it; else, as without the file at all,
    read() gives None and `why` says what is missing."""

    def __init__(self, group_dir: Path, version: int):
        self.version = version
        self.file = group_dir / ("memory.peak" if version == 2 else "memory.max_usage_in_bytes")
        self._own: int | None = None  # the file descriptor whose peak starts with this watch
        self._high_before: int | None = None
        self.why = ""

    def start(self) -> None:
        if not self.file.exists():
            self.why = f"this kernel has no {self.file.name} (cgroup v2 has it from Linux 5.19)"
            return
        try:
            if self.version == 2:
                self._own = os.open(self.file, os.O_RDWR)
                os.write(self._own, b"reset\n")
            else:
                self.file.write_text("0")
            return
        except OSError:
            self.close()
        try:
            self._high_before = int(self.file.read_text())
        except (OSError, ValueError) as err:
            self.why = f"{self.file.name} could neither start over nor be read ({err})"

    def read(self) -> int | None:
        """The peak since start(), or None (see `why`); the watch is closed after it."""
        try:
            if self._own is not None:
                return int(os.pread(self._own, 64, 0))
            if self.why:
                return None
            high = int(self.file.read_text())
            if self._high_before is not None and high <= self._high_before:
                self.why = (f"{self.file.name} is the group's high since it was made and the run did not pass it; "
                            "a run's own peak needs Linux 6.12")
                return None
            return high
        except (OSError, ValueError) as err:
            self.why = f"{self.file.name} could not be read ({err})"
            return None
        finally:
            self.close()

    def close(self) -> None:
        if self._own is not None:
            os.close(self._own)
            self._own = None


def throttle_device(cgroup: NodeCgroup, major_minor: str, read_bps: int, write_bps: int,
                    read_iops: int, write_iops: int) -> None:
    for path, value in throttle_writes(cgroup, major_minor, read_bps, write_bps, read_iops, write_iops):
        _write(path, value)


def throttle_writes(cgroup: NodeCgroup, major_minor: str, read_bps: int, write_bps: int,
                    read_iops: int, write_iops: int) -> list[tuple[Path, str]]:
    """The (file, line) writes that throttle a node's disk device."""
    if cgroup.version == 2:
        return [(ROOT / cgroup.relative / "io.max",
                 f"{major_minor} rbps={read_bps} wbps={write_bps} riops={read_iops} wiops={write_iops}")]
    blkio = ROOT / "blkio"
    return [(blkio / f"blkio.throttle.{name}", f"{major_minor} {value}")
            for name, value in (("read_bps_device", read_bps), ("write_bps_device", write_bps),
                                ("read_iops_device", read_iops), ("write_iops_device", write_iops))]


def unthrottle_device(major_minor: str) -> None:
    """Drop the root-level v1 rules for a device (v2 rules go with the cgroup)."""
    blkio = ROOT / "blkio"
    if not (blkio / "blkio.throttle.read_bps_device").exists():
        return
    for name in ("read_bps_device", "write_bps_device", "read_iops_device", "write_iops_device"):
        try:
            (blkio / f"blkio.throttle.{name}").write_text(f"{major_minor} 0")
        except OSError:
            pass
