"""A sampler on a node of this host (emulated and processes): a local process inside the node's
limits, its samples in the node's folder here, marks asked for with a signal.

The recorder drives every sampler through these methods; a board's sampler (board_sampler.py)
has the same ones, done over SSH."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from ..cluster import reaper
from ..cluster.local import LocalSession, LocalTransport
from ..cluster.spec import NodeSpec

MARK_WAIT_S = 3.0


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


# Enough for the last three samples of a node with many sensors.
TAIL_BYTES = 16384


class LocalSampler:

    def __init__(self, transport: LocalTransport, name: str, node: NodeSpec, target: dict, run_id: str,
                 interval_s: float, collected: Path):
        self.transport, self.name, self.node, self.target = transport, name, node, target
        collected.mkdir(parents=True, exist_ok=True)
        self.out = collected / f"{run_id}.jsonl"
        self.interval_s = interval_s
        self.session: LocalSession | None = None
        self.out.with_suffix(".target.json").write_text(json.dumps(target))

    def launch(self) -> None:
        argv = [sys.executable, "-m", "sbclab.monitor.sampler", "--target", str(self.out.with_suffix(".target.json")),
                "--out", str(self.out), "--interval", f"{self.interval_s:g}"]
        # Owned by this sbclab, so teardown or the next sbclab stops it; inside the node's CPU and
        # memory limits, so the node pays for it.
        self.session = self.transport.start(self.node, argv, dict(os.environ), self.out.with_suffix(".log"),
                                            label=f"sampler {self.name}", enter="limits")

    @property
    def proc(self) -> subprocess.Popen | None:
        return self.session.proc if self.session else None

    def starting(self) -> bool:
        """Still to write its header and first sample (and alive)."""
        return self.proc is not None and self.proc.poll() is None and _lines(self.out) < 2

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exit_status(self):
        return None if self.proc is None else self.proc.poll()

    def mark(self, label: str) -> bool:
        """A sample labelled `label` now; False when the sampler is not there to take it."""
        if not self.running():
            return False
        self.out.with_suffix(".jsonl.mark").write_text(label)
        try:
            self.proc.send_signal(signal.SIGUSR1)
        except ProcessLookupError:
            return False
        _wait_for_mark(self.out, label)
        return True

    def cpu_share(self) -> float | None:
        return _cpu_share(self.proc)

    def stop(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # the sampler writes its last sample and exits
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.transport.stop(self.session, grace_s=1)
        self.session = None

    def forget(self) -> None:
        """The sampler died: its record goes, so a relaunch records its successor."""
        if self.session is not None:
            self.transport.state.forget(self.session.entry)

    def samples_file(self) -> Path:
        return self.out

    def newest_lines(self) -> list[str]:
        """The file's header and its last few lines, for a scrape while the run goes on."""
        try:
            with open(self.out, "rb") as f:
                first = f.readline()
                f.seek(max(0, f.seek(0, os.SEEK_END) - TAIL_BYTES))
                tail = f.read().splitlines()[-3:]
        except OSError:
            return []
        return [line.decode(errors="replace") for line in (first, *tail)]


def _cpu_share(proc: subprocess.Popen | None) -> float | None:
    """The sampler's own CPU use, in % of one core, since it started: the cost of measuring."""
    if proc is None or proc.poll() is not None:
        return None
    try:
        p = psutil.Process(proc.pid)
        times = p.cpu_times()
        alive = time.clock_gettime(time.CLOCK_BOOTTIME) - reaper.started(proc.pid)
    except psutil.Error:
        return None
    return round(100 * (times.user + times.system) / alive, 4) if alive > 0 else None


def _wait_for_mark(out: Path, label: str) -> None:
    deadline = time.monotonic() + MARK_WAIT_S
    while time.monotonic() < deadline:
        try:
            with open(out, "rb") as f:
                f.seek(max(0, os.path.getsize(out) - 4096))
                tail = f.read().decode(errors="replace")
        except OSError:
            return
        if f'"mark":{json.dumps(label)}' in tail:
            return
        time.sleep(0.01)
