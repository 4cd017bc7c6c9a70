"""Measuring this host with the seeds' own tools, so emulated nodes can be shaped to a board's figures.

sysbench CPU (the seeds' `--cpu-max-prime`) gives how many host cores one board core is worth;
fio in the seeds' iozone patterns (direct I/O) gives what the host disk holding the node
filesystems can deliver; iperf3 between two namespaces gives what an unshaped veth link carries.
Results are cached per host and re-measured when the CPU model, core count or kernel changes.
"""

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel

from .. import atomic, paths, profiles
from ..errors import SbclabError
from . import packages, system, tools

TOOLS = ("sysbench", "fio", "iperf3")
LOOP_IMAGE_BYTES = 512 * 2**20


class DiskFigures(BaseModel):
    seq_read_mb_s: float
    seq_write_mb_s: float
    rand_read_iops: float
    rand_write_iops: float
    # 4 KB random writes inside a loop-mounted ext4 image, as on a node's disk: the journal and the
    # loop device cost writes the bare directory does not pay (None: not root, or not measured).
    loop_rand_write_iops: float | None = None


class HostCalibration(BaseModel):
    host_key: str
    measured_at: datetime
    cpu_model: str
    cores: int
    kernel: str
    # events/s by --cpu-max-prime, then by thread count
    sysbench: dict[int, dict[int, float]]
    disk: DiskFigures
    disk_path: str
    veth_mbps: float | None
    tool_versions: dict[str, str]

    def core_events_per_s(self, max_prime: int) -> float | None:
        return (self.sysbench.get(max_prime) or {}).get(1)


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def host_key() -> str:
    facts = f"{_cpu_model()}|{len(os.sched_getaffinity(0))}|{platform.release()}"
    return hashlib.sha256(facts.encode()).hexdigest()[:16]


def cache_file() -> Path:
    return paths.home() / "calibration" / f"host-{host_key()}.json"


def cached() -> HostCalibration | None:
    path = cache_file()
    if not path.exists():
        return None
    try:
        return HostCalibration.model_validate_json(path.read_text())
    except ValueError:
        return None


def require_tools() -> None:
    packages.check_here(TOOLS)


def _measure_disk(directory: Path) -> DiskFigures:
    work = Path(tempfile.mkdtemp(dir=directory, prefix=".sbclab-calibrate-"))
    try:
        write = tools.fio_job(tools.here(), work, "seqwrite", "write", "16m")
        read = tools.fio_job(tools.here(), work, "seqread", "read", "16m")
        rand_write = tools.fio_job(tools.here(), work, "randwrite", "randwrite", "4k")
        rand_read = tools.fio_job(tools.here(), work, "randread", "randread", "4k")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return DiskFigures(seq_read_mb_s=read["mb_s"], seq_write_mb_s=write["mb_s"],
                       rand_read_iops=rand_read["iops"], rand_write_iops=rand_write["iops"],
                       loop_rand_write_iops=_measure_loop_rand_write(directory))


def _measure_loop_rand_write(directory: Path) -> float | None:
    """fio's 4 KB random writes on an ext4 image mounted through a direct-I/O loop device, the way an
    emulated node's disk is made; everything made is removed whatever happens."""
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("losetup", "mkfs.ext4", "mount")):
        return None
    work = Path(tempfile.mkdtemp(dir=directory, prefix=".sbclab-calibrate-loop-"))
    image, mountpoint, device, mounted = work / "disk.img", work / "mnt", None, False
    try:
        mountpoint.mkdir()
        with open(image, "wb") as out:
            out.truncate(LOOP_IMAGE_BYTES)
        system.run("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", str(image))
        device = system.run("losetup", "--find", "--show", "--direct-io=on", str(image)).stdout.strip()
        system.run("mount", "-o", "noatime", device, str(mountpoint))
        mounted = True
        return tools.fio_job(tools.here(), mountpoint, "randwrite", "randwrite", "4k")["iops"]
    except (SbclabError, OSError, subprocess.TimeoutExpired):
        return None
    finally:
        if mounted:
            system.quietly("umount", str(mountpoint))
        if device:
            system.quietly("losetup", "-d", device)
            # A detach is deferred while udev still holds the device open: wait for it, or it outlives us.
            deadline = time.monotonic() + 5
            while system.run("losetup", "-j", str(image), check=False).stdout.strip() and time.monotonic() < deadline:
                time.sleep(0.2)
        shutil.rmtree(work, ignore_errors=True)


def _measure_veth() -> float | None:
    """An unshaped veth pair between two scratch namespaces: the ceiling of any emulated link."""
    if os.geteuid() != 0:
        return None
    a, b = "sbclab-cal-a", "sbclab-cal-b"
    try:
        system.run("ip", "netns", "add", a)
        system.run("ip", "netns", "add", b)
        system.run("ip", "link", "add", "sb-cal-a", "netns", a, "type", "veth", "peer", "name", "sb-cal-b", "netns", b)
        for ns, dev, address in ((a, "sb-cal-a", "10.254.254.1/30"), (b, "sb-cal-b", "10.254.254.2/30")):
            system.run("ip", "-n", ns, "addr", "add", address, "dev", dev)
            system.run("ip", "-n", ns, "link", "set", dev, "up")
            system.run("ip", "-n", ns, "link", "set", "lo", "up")
        return tools.iperf3_mbps(lambda argv: tools.Serving(["ip", "netns", "exec", a], argv),
                                 tools.here(["ip", "netns", "exec", b]), "10.254.254.1")
    finally:
        system.quietly("ip", "netns", "del", a)
        system.quietly("ip", "netns", "del", b)


def _version(tool: str) -> str:
    out = subprocess.run([tool, "--version"], capture_output=True, text=True)
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else "unknown"


def measure(max_primes: set[int], progress=lambda message: None) -> HostCalibration:
    require_tools()
    cores = len(os.sched_getaffinity(0))
    sysbench = {}
    for prime in sorted(max_primes):
        progress(f"sysbench cpu --cpu-max-prime={prime}, 1 and {cores} threads")
        sysbench[prime] = {1: tools.sysbench_cpu(tools.here(), prime, 1),
                           cores: tools.sysbench_cpu(tools.here(), prime, cores)}
    disk_path = paths.home()
    disk_path.mkdir(parents=True, exist_ok=True)
    progress(f"fio: sequential 16 MB and random 4 KB, direct I/O, in {disk_path}")
    disk = _measure_disk(disk_path)
    progress("iperf3 over an unshaped veth link")
    veth = _measure_veth()
    calibration = HostCalibration(
        host_key=host_key(), measured_at=datetime.now(timezone.utc), cpu_model=_cpu_model(), cores=cores,
        kernel=platform.release(), sysbench=sysbench, disk=disk, disk_path=str(disk_path), veth_mbps=veth,
        tool_versions={tool: _version(tool) for tool in TOOLS})
    atomic.write_text(cache_file(), calibration.model_dump_json(indent=1) + "\n")
    return calibration


def needed_primes() -> set[int]:
    """Every --cpu-max-prime a board's figure was measured at, Baun's total times of sysbench 0.4
    included (its 10,000 requests are 10,000 of today's events, so a board core's speed follows
    from them too)."""
    primes = {b.sysbench.max_prime for b in profiles.boards().values() if b.sysbench}
    return primes or {2000}


def usable() -> HostCalibration | None:
    """The cached calibration when it holds every figure a board is shaped by: what current() returns
    without measuring anything; None when it would measure."""
    found = cached()
    return found if found and needed_primes() <= set(found.sysbench) else None


def current(progress=lambda message: None, remeasure: bool = False) -> HostCalibration:
    """This host's calibration: cached, or measured now (about a minute) and cached."""
    found = None if remeasure else usable()
    if found:
        return found
    progress("calibrating this host once (cached afterwards)")
    return measure(needed_primes(), progress)
