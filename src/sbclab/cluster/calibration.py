"""Measuring this host with the seeds' own tools, so emulated nodes can be shaped to a board's figures.

sysbench CPU (the seeds' `--cpu-max-prime`) gives how many host cores one board core is worth;
fio in the seeds' iozone patterns (direct I/O) gives what the host disk holding the node
filesystems can deliver; iperf3 between two namespaces gives what an unshaped veth link carries.
Results are cached per host and re-measured when the CPU model, core count or kernel changes.
"""

import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel

from .. import atomic, paths
from ..errors import SbclabError
from . import system

TOOLS = {"sysbench": "sysbench", "fio": "fio", "iperf3": "iperf3"}
SECONDS_PER_TEST = 5


class DiskFigures(BaseModel):
    seq_read_mb_s: float
    seq_write_mb_s: float
    rand_read_iops: float
    rand_write_iops: float


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
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        packages = " ".join(TOOLS[t] for t in missing)
        raise SbclabError(f"Calibration needs {', '.join(missing)}, which this host lacks.",
                          f"Install them (Debian: apt-get install {packages}) or run 'make setup'.")


def sysbench_cpu(max_prime: int, threads: int, seconds: int = SECONDS_PER_TEST, prefix: list[str] | None = None,
                 preexec=None) -> float:
    """sysbench CPU events per second, the seeds' test (`sysbench cpu --cpu-max-prime=N`)."""
    out = subprocess.run([*(prefix or []), "sysbench", "cpu", f"--cpu-max-prime={max_prime}", f"--threads={threads}",
                          f"--time={seconds}", "run"], capture_output=True, text=True, check=True,
                         preexec_fn=preexec).stdout
    for line in out.splitlines():
        if "events per second" in line:
            return float(line.split(":")[1])
    raise SbclabError("sysbench printed no 'events per second'.", "Check the sysbench installation (sysbench --version).")


def fio_job(directory: Path, name: str, rw: str, block_size: str, size: str = "256M", seconds: int = SECONDS_PER_TEST,
            direct: bool = True, prefix: list[str] | None = None, preexec=None) -> dict:
    """One fio job in `directory`; returns {'mb_s', 'iops'} of its read or write side."""
    argv = [*(prefix or []), "fio", f"--name={name}", f"--directory={directory}", f"--rw={rw}", f"--bs={block_size}",
            f"--size={size}", f"--runtime={seconds}", "--time_based", f"--direct={1 if direct else 0}",
            "--ioengine=psync", "--numjobs=1", "--group_reporting", "--output-format=json"]
    if not direct:
        argv.append("--end_fsync=1")
    done = subprocess.run(argv, capture_output=True, text=True, preexec_fn=preexec)
    if done.returncode != 0:
        raise SbclabError(f"fio {rw} {block_size} in {directory} failed: {done.stderr.strip()[:300]}",
                          "Check free space and that the directory is writable.")
    job = json.loads(done.stdout[done.stdout.index("{"):])["jobs"][0]
    side = job["read"] if "read" in rw else job["write"]
    return {"mb_s": side["bw_bytes"] / 1e6, "iops": side["iops"]}


def _measure_disk(directory: Path) -> DiskFigures:
    work = Path(tempfile.mkdtemp(dir=directory, prefix=".sbclab-calibrate-"))
    try:
        write = fio_job(work, "seqwrite", "write", "16m")
        read = fio_job(work, "seqread", "read", "16m")
        rand_write = fio_job(work, "randwrite", "randwrite", "4k")
        rand_read = fio_job(work, "randread", "randread", "4k")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return DiskFigures(seq_read_mb_s=read["mb_s"], seq_write_mb_s=write["mb_s"],
                       rand_read_iops=rand_read["iops"], rand_write_iops=rand_write["iops"])


def iperf3_mbps(server_prefix: list[str], client_prefix: list[str], server_address: str,
                seconds: int = 3, server_preexec=None, client_preexec=None) -> float:
    """TCP throughput client → server in Mb/s, the seeds' `iperf3 -c`."""
    server = subprocess.Popen([*server_prefix, "iperf3", "-s", "-B", server_address], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, preexec_fn=server_preexec)
    try:
        last = ""
        for _ in range(50):
            probe = subprocess.run([*client_prefix, "iperf3", "-c", server_address, "-t", str(seconds), "-J"],
                                   capture_output=True, text=True, preexec_fn=client_preexec)
            try:
                report = json.loads(probe.stdout)
            except json.JSONDecodeError:
                report = {"error": (probe.stderr or probe.stdout).strip()}
            received = report.get("end", {}).get("sum_received", {}).get("bits_per_second")
            if received:
                return received / 1e6
            last = str(report.get("error") or "no throughput in the report")
            # The server may not listen yet, or still be finishing a previous test.
            if not any(word in last for word in ("refused", "busy", "no throughput")):
                break
            time.sleep(0.2)
        raise SbclabError(f"iperf3 to {server_address} failed: {last[:300]}.", "Check the iperf3 installation.")
    finally:
        server.kill()
        server.wait()


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
        return iperf3_mbps(["ip", "netns", "exec", a], ["ip", "netns", "exec", b], "10.254.254.1")
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
        sysbench[prime] = {1: sysbench_cpu(prime, 1), cores: sysbench_cpu(prime, cores)}
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
    from .. import profiles
    primes = {b.sysbench.max_prime for b in profiles.boards().values() if b.sysbench and b.sysbench.metric == "events_per_s"}
    return primes or {2000}


def current(progress=lambda message: None, remeasure: bool = False) -> HostCalibration:
    """This host's calibration: cached, or measured now (about a minute) and cached."""
    found = None if remeasure else cached()
    if found and needed_primes() <= set(found.sysbench):
        return found
    progress("calibrating this host once (cached afterwards)")
    return measure(needed_primes(), progress)
