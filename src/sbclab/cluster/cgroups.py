"""Per-node CPU, memory and disk limits through the host's cgroups, v1 or v2.

cgroup v1 quirk (FACTS.md): a blkio throttle rule on a node's own cgroup misses buffered writes,
because write-back is issued by kernel threads in the root group. The rule is therefore set on the
root blkio cgroup, keyed by the node's own loop device, and the node's processes stay in the root
blkio group: the root rule then throttles their direct I/O and reads as well as the write-back.
cgroup v2 attributes write-back to the writer, so io.max on the node's cgroup is enough there.
"""

import math
from pathlib import Path

from ..errors import SbclabError

ROOT = Path("/sys/fs/cgroup")
# A throttled thread waits for the next period, so a long period turns every wait for a message into
# tens of milliseconds: ranks of an MPI program polling for each other measured exactly 50 ms latency
# under 100 ms periods, and 2.25 ms under 6 ms. The period is therefore as short as the kernel's
# smallest quota (1 ms) allows for the smallest share in the group, and never shorter than 5 ms,
# where accounting overhead would grow; shares stay exact either way.
MIN_QUOTA_US = 1000
MIN_PERIOD_US = 5_000
MAX_PERIOD_US = 100_000


def cfs_period_us(smallest_share: float) -> int:
    """The CFS period for a group whose smallest per-thread-group share is smallest_share host cores."""
    if smallest_share <= 0:
        return MAX_PERIOD_US
    return min(MAX_PERIOD_US, max(MIN_PERIOD_US, math.ceil(MIN_QUOTA_US / smallest_share)))
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


def _write(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except OSError as err:
        raise SbclabError(f"Cannot set {path} to '{value}': {err.strerror}.",
                          "Run as root on a host with cgroups, or use --backend processes.") from err


class NodeCgroup:
    """The cgroup(s) of one node: <hierarchy>/sbclab/<cluster>/<node>."""

    def __init__(self, cluster: str, node: str):
        self.version = version()
        self.relative = Path("sbclab") / cluster / node

    def dirs(self) -> list[Path]:
        if self.version == 2:
            return [ROOT / self.relative]
        return [ROOT / c / self.relative for c in V1_CONTROLLERS if (ROOT / c).is_dir()]

    def procs_files(self) -> list[Path]:
        return [d / "cgroup.procs" for d in self.dirs()]

    def vcpu_dirs(self) -> list[Path]:
        """Per-core child groups (v1 only); see vcpus.py."""
        if self.version != 1:
            return []
        return sorted((ROOT / "cpu" / self.relative).glob("vcpu*"))

    def create(self, cpu_cores: float, memory_bytes: int, vcpus: int = 0) -> None:
        """Limit the node to cpu_cores host cores and memory_bytes; with vcpus, also split the CPU
        into that many per-core groups of cpu_cores / vcpus each (cgroup v1)."""
        if self.version == 2:
            self._enable_v2_controllers()
        for d in self.dirs():
            d.mkdir(parents=True, exist_ok=True)
        split = self.version == 1 and vcpus > 0
        period = cfs_period_us(cpu_cores / vcpus if split else cpu_cores)
        quota = max(MIN_QUOTA_US, int(cpu_cores * period))
        if self.version == 2:
            d = ROOT / self.relative
            _write(d / "cpu.max", f"{quota} {period}")
            _write(d / "memory.max", str(memory_bytes))
            if (d / "memory.swap.max").exists():
                _write(d / "memory.swap.max", "0")
        else:
            cpu = ROOT / "cpu" / self.relative
            # The period first: a quota above the old period's share of a child would be refused.
            _write(cpu / "cpu.cfs_period_us", str(period))
            _write(cpu / "cpu.cfs_quota_us", str(quota))
            _write(ROOT / "memory" / self.relative / "memory.limit_in_bytes", str(memory_bytes))
            if split:
                per_core = max(MIN_QUOTA_US, int(cpu_cores / vcpus * period))
                for i in range(vcpus):
                    d = cpu / f"vcpu{i}"
                    d.mkdir(exist_ok=True)
                    _write(d / "cpu.cfs_quota_us", str(per_core))
                    _write(d / "cpu.cfs_period_us", str(period))

    def _enable_v2_controllers(self) -> None:
        parent = ROOT
        for part in self.relative.parts:
            _write(parent / "cgroup.subtree_control", "+cpu +memory +io")
            parent = parent / part
            parent.mkdir(exist_ok=True)

    def join(self) -> None:
        """Move the calling process in; used in a child between fork and exec."""
        for procs in self.procs_files():
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


def throttle_device(cgroup: NodeCgroup, major_minor: str, read_bps: int, write_bps: int,
                    read_iops: int, write_iops: int) -> None:
    if cgroup.version == 2:
        _write(ROOT / cgroup.relative / "io.max",
               f"{major_minor} rbps={read_bps} wbps={write_bps} riops={read_iops} wiops={write_iops}")
        return
    blkio = ROOT / "blkio"
    for name, value in (("read_bps_device", read_bps), ("write_bps_device", write_bps),
                        ("read_iops_device", read_iops), ("write_iops_device", write_iops)):
        _write(blkio / f"blkio.throttle.{name}", f"{major_minor} {value}")


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
