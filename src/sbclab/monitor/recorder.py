"""Recording a run: a sampler on every node from before the job to after it, phases marked on the
same clock, and everything collected into one raw recording when the run ends.

Marks are taken at the start and end of every engine command (clients.py calls them): the nodes'
filesystems are synced first, so the device counters read at a mark include what the command left
in the page cache, then each sampler takes a sample labelled with the mark. The DataNodes' own
byte counters are read at the same moments, which is how HDFS input and output are told apart
from intermediate data (intermediate.py).

A sampler that dies is started again at the next mark and the gap is recorded, never filled in.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import requests

from ..cluster import reaper
from ..cluster.spec import NodeSpec
from . import plug
from .settings import MonitorSettings, PowerSpec

MARK_WAIT_S = 3.0


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


@dataclass
class SamplerProcess:
    name: str
    node: NodeSpec
    target: dict
    out: Path
    proc: subprocess.Popen | None = None
    entry: dict | None = None
    restarts: list[dict] = field(default_factory=list)


@dataclass
class RawRecording:
    """What a recording collected, before any arithmetic (series.py and measure.py do that)."""

    run_id: str
    interval_s: float
    nodes: dict[str, dict[str, Any]]  # name -> {"header", "samples", "restarts", "target", "file"}
    marks: list[dict[str, Any]]
    datanodes: list[dict[str, Any]]  # {"t", "label", "nodes": {name: {BytesWritten, BytesRead}}}
    clock_offsets: dict[str, dict[str, float]]
    power: dict[str, dict[str, Any]]  # name -> {"spec", "samples" (plug) or None, "note"}
    commands: list[dict[str, Any]]
    emulated: bool

    def files(self) -> dict[str, Path]:
        return {f"samples/{name}.jsonl": Path(n["file"]) for name, n in self.nodes.items()}


def measure_clock_offsets(backend, points) -> dict[str, dict[str, float]]:
    """Each node's clock minus this host's, from `date` run on the node between two host readings."""
    offsets = {}
    for name, node, _ in points:
        argv, prepare = backend.on_node(node, ["date", "+%s.%N"])
        before = time.time()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=20, preexec_fn=prepare)
            node_time = float(done.stdout.strip().splitlines()[-1])
        except (subprocess.SubprocessError, OSError, ValueError, IndexError):
            continue
        after = time.time()
        offsets[name] = {"offset_s": round(node_time - (before + after) / 2, 4),
                         "uncertainty_s": round((after - before) / 2, 4)}
    return offsets


class Recorder:
    def __init__(self, cluster, run_id: str, settings: MonitorSettings, datanode_counters=None):
        self.cluster = cluster
        self.backend = cluster.backend
        self.run_id = run_id
        self.settings = settings
        self.interval = 1.0 / settings.hz
        self.datanode_counters = datanode_counters
        self.samplers: list[SamplerProcess] = []
        self.marks: list[dict] = []
        self.datanodes: list[dict] = []
        self.commands: list[dict] = []
        self.lock = threading.RLock()
        self.pollers: dict[str, plug.Poller] = {}
        self.power_notes: dict[str, str] = {}
        self.offsets: dict = {}

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        points = self.backend.sampling_points()
        self.offsets = measure_clock_offsets(self.backend, points)
        for name, node, target in points:
            power = self.settings.power_for(name)
            folder = self.backend.node_dir(node) / "samples"
            folder.mkdir(parents=True, exist_ok=True)
            target = {**target, "power": power.node_side()}
            sampler = SamplerProcess(name, node, target, folder / f"{self.run_id}.jsonl")
            (folder / f"{self.run_id}.target.json").write_text(json.dumps(target))
            self._launch(sampler)
            self.samplers.append(sampler)
            if power.source == "http-plug":
                self.pollers[name] = plug.Poller(power, self.interval, folder / f"{self.run_id}.plug.jsonl")
                self.pollers[name].start()
        self._datanode_snapshot("start")
        self._wait_for_first_samples()
        time.sleep(self.settings.margin_s)

    def _wait_for_first_samples(self, timeout_s: float = 20) -> None:
        """Until every sampler has written its header and first sample: starting Python on a slow
        emulated node can take longer than the margin, and a short run would then have no samples.
        A sampler that never starts is not waited for past the timeout; its gap is recorded."""
        deadline = time.monotonic() + timeout_s
        waiting = list(self.samplers)
        while waiting and time.monotonic() < deadline:
            waiting = [s for s in waiting if s.proc is not None and s.proc.poll() is None and _lines(s.out) < 2]
            if waiting:
                time.sleep(0.05)

    def _launch(self, sampler: SamplerProcess) -> None:
        argv = [sys.executable, "-m", "sbclab.monitor.sampler", "--target", str(sampler.out.with_suffix(".target.json")),
                "--out", str(sampler.out), "--interval", f"{self.interval:g}"]
        log = open(sampler.out.with_suffix(".log"), "ab")
        try:
            sampler.proc, sampler.entry = self.backend.start_sampler(sampler.node, argv, log, f"sampler {sampler.name}")
        finally:
            log.close()

    def stop(self) -> RawRecording:
        time.sleep(self.settings.margin_s)
        cost = {}
        for sampler in self.samplers:
            cost[sampler.name] = _cpu_share(sampler.proc)
            self._stop_one(sampler)
        power = {}
        for name, poller in self.pollers.items():
            poller.stop()
        for sampler in self.samplers:
            spec = self.settings.power_for(sampler.name)
            power[sampler.name] = {"spec": spec.model_dump(exclude_none=True),
                                   "plug_samples": self.pollers[sampler.name].samples if sampler.name in self.pollers else None,
                                   "plug_errors": self.pollers[sampler.name].errors if sampler.name in self.pollers else []}
        nodes = {}
        for sampler in self.samplers:
            header, samples = read_samples(sampler.out)
            nodes[sampler.name] = {"header": header, "samples": samples, "restarts": sampler.restarts,
                                   "target": sampler.target, "file": str(sampler.out),
                                   "sampler_cpu_pct": cost[sampler.name]}
        return RawRecording(run_id=self.run_id, interval_s=self.interval, nodes=nodes, marks=self.marks,
                            datanodes=self.datanodes, clock_offsets=self.offsets, power=power,
                            commands=self.commands, emulated=self.cluster.spec.backend == "emulated")

    def abandon(self) -> None:
        """Stop everything without collecting (the run failed in a way that stores nothing)."""
        for sampler in self.samplers:
            self._stop_one(sampler)
        for poller in self.pollers.values():
            poller.stop()

    def _stop_one(self, sampler: SamplerProcess) -> None:
        proc = sampler.proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                reaper.stop([psutil.Process(proc.pid)], grace_s=1)
        self.backend.state.forget(sampler.entry)
        sampler.proc = None

    # --- marks ----------------------------------------------------------------------------

    def command_started(self, label: str) -> None:
        self.mark(f"start {label}")

    def command_finished(self, label: str, started_at, finished_at, exit_status: int) -> None:
        self.mark(f"end {label}")
        with self.lock:
            self.commands.append({"label": label, "start": started_at.timestamp(), "end": finished_at.timestamp(),
                                  "exit_status": exit_status})

    def mark(self, label: str) -> None:
        with self.lock:
            self.backend.sync_disks()
            t = time.time()
            waiting = []
            for sampler in self.samplers:
                if sampler.proc is None:
                    continue
                if sampler.proc.poll() is not None:
                    self._restart(sampler, t)
                    continue
                sampler.out.with_suffix(".jsonl.mark").write_text(label)
                try:
                    sampler.proc.send_signal(signal.SIGUSR1)
                    waiting.append(sampler)
                except ProcessLookupError:
                    self._restart(sampler, t)
            for sampler in waiting:
                _wait_for_mark(sampler.out, label, t)
            self.marks.append({"label": label, "t": round(t, 4)})
            self._datanode_snapshot(label)

    def _restart(self, sampler: SamplerProcess, t: float) -> None:
        self.backend.state.forget(sampler.entry)
        status = sampler.proc.poll()
        died = last_sample_time(sampler.out)
        self._launch(sampler)
        sampler.restarts.append({"last_sample": died, "restarted": round(t, 4), "exit_status": status})

    def _datanode_snapshot(self, label: str) -> None:
        if self.datanode_counters is None:
            return
        try:
            self.datanodes.append({"t": round(time.time(), 4), "label": label, "nodes": self.datanode_counters()})
        except (requests.RequestException, ValueError, KeyError, IndexError):
            pass  # a DataNode that does not answer leaves this snapshot out; intermediate data says so


def _cpu_share(proc: subprocess.Popen | None) -> float | None:
    """The sampler's own CPU use, in % of one core, since it started: the cost of measuring."""
    if proc is None or proc.poll() is not None:
        return None
    try:
        p = psutil.Process(proc.pid)
        times = p.cpu_times()
        alive = time.time() - p.create_time()
    except psutil.Error:
        return None
    return round(100 * (times.user + times.system) / alive, 4) if alive > 0 else None


def _wait_for_mark(out: Path, label: str, since: float) -> None:
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


def last_sample_time(path: Path) -> float | None:
    _, samples = read_samples(path)
    return samples[-1]["t"] if samples else None


def read_samples(path: Path) -> tuple[dict, list[dict]]:
    """The header and samples of a sampler file; a torn last line (the sampler was killed) is dropped."""
    header: dict = {}
    samples: list[dict] = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return header, samples
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "header" in record:
            header = header or record["header"]
        else:
            samples.append(record)
    return header, samples


__all__ = ["Recorder", "RawRecording", "PowerSpec", "read_samples", "measure_clock_offsets"]
