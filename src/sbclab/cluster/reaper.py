"""Stopping every process a cluster started, including ones its daemons started (YARN containers)."""

import os
import signal
import time
from pathlib import Path

import psutil


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# A start recorded by an earlier sbclab, in seconds since the epoch rather than since boot, is this large.
_EPOCH_START = 1e9


def started(pid: int) -> float:
    """When a process started, in seconds after the host booted (0 when it is already gone): with its
    pid, what tells it apart from a later process given the same pid.

    Counted by the kernel from boot, not read off the clock: a time sync that steps the host's clock
    moves the boot time the kernel reports, and with it every start time derived from the clock, so a
    process recorded before such a step would look gone after it (its daemons "ended", its owner dead
    and its cluster abandoned) while it runs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    # Fields are counted after the command name's last ')' (the name may hold spaces and brackets);
    # the start, in clock ticks, is the 22nd field.
    return int(stat.rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")


def _same_start(proc: psutil.Process, recorded_start: float) -> bool:
    if recorded_start > _EPOCH_START:
        return abs(proc.create_time() - recorded_start) < 1.0
    return abs(started(proc.pid) - recorded_start) < 0.5


def recorded(entries: list[dict]) -> list[psutil.Process]:
    """The recorded processes still running; a reused PID is told apart by its start time."""
    procs = []
    for entry in entries:
        try:
            proc = psutil.Process(entry["pid"])
            if _same_start(proc, entry["create_time"]):
                procs.append(proc)
        except psutil.Error:
            continue
    return procs


def mentioning(fragment: str) -> list[psutil.Process]:
    """Processes whose command line names a path under the cluster's directory."""
    found = []
    me = os.getpid()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if proc.info["pid"] == me:
            continue
        cmdline = proc.info["cmdline"] or []
        if any(fragment in arg for arg in cmdline):
            found.append(proc)
    return found


def in_cgroup(procs_file: Path) -> list[psutil.Process]:
    try:
        pids = [int(line) for line in procs_file.read_text().split()]
    except OSError:
        return []
    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.Error:
            pass
    return procs


def stop(procs: list[psutil.Process], grace_s: float = 5.0) -> list[psutil.Process]:
    """SIGTERM each process tree, SIGKILL what is left after the grace period; return survivors."""
    everyone: dict[int, psutil.Process] = {}
    for proc in procs:
        try:
            everyone[proc.pid] = proc
            for child in proc.children(recursive=True):
                everyone[child.pid] = child
        except psutil.Error:
            pass
    for proc in everyone.values():
        try:
            proc.send_signal(signal.SIGTERM)
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(list(everyone.values()), timeout=grace_s)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    # A killed process still writing to a slow disk goes only when the kernel lets it.
    _, alive = psutil.wait_procs(alive, timeout=10)
    deadline = time.time() + 5
    while alive and time.time() < deadline:
        alive = [p for p in alive if _alive(p)]
        time.sleep(0.1)
    return alive
