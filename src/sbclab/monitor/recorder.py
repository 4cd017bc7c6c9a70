"""Recording a run: a sampler on every node from before the job to after it, phases marked on the
same clock, and everything collected into one raw recording when the run ends.

Marks are taken at the start and end of every engine command (clients.py calls them): the nodes'
filesystems are synced first, so the device counters read at a mark include what the command left
in the page cache, then each sampler takes a sample labelled with the mark. The DataNodes' own
byte counters are read at the same moments, which is how HDFS input and output are told apart
from intermediate data (intermediate.py).

A sampler that dies is started again at the next mark and the gap is recorded, never filled in.
Where a node has a cgroup of its own, its peak memory and OOM kills are read from it when the
recording starts and stops (memory.py).
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from ..cluster import nodeops
from ..cluster.transport import Transport
from ..errors import SbclabError
from ..results.diagnostics import Diagnostics
from . import diagnostics, exporter, sampling
from .memory import MemoryWatch
from .power import Poller
from .settings import CLUSTER_METER, MonitorSettings


@dataclass
class SamplerRecord:
    handle: object
    restarts: list[dict] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.handle.name


@dataclass
class RawRecording:
    """What a recording collected, before any arithmetic (series.py and measure.py do that)."""

    run_id: str
    interval_s: float
    nodes: dict[str, dict[str, Any]]  # name -> {"header", "samples", "restarts", "target", "file"}
    marks: list[dict[str, Any]]
    datanodes: list[dict[str, Any]]  # {"t", "label", "nodes": {name: {BytesWritten, BytesRead}}}
    clock_offsets: dict[str, dict[str, float]]
    power: dict[str, dict[str, Any]]  # name -> {"spec": as recorded, "polled": what its poller on this host kept}
    commands: list[dict[str, Any]]
    emulated: bool
    # name -> what its cgroup accounted from start to stop (memory.py); nodes without one are not in it
    memory: dict[str, dict[str, Any]] = field(default_factory=dict)
    diagnostics: Diagnostics | None = None  # the machines' CPUs around the recording (diagnostics.py)

    def files(self) -> dict[str, Path]:
        return {f"samples/{name}.jsonl": Path(n["file"]) for name, n in self.nodes.items()}


def measure_clock_offsets(transport, points) -> dict[str, dict[str, float]]:
    """Each node's clock minus this host's, from the node's time read between two host readings."""
    offsets = {}
    for name, node, _ in points:
        before = time.time()
        node_time = nodeops.node_time(transport, node)
        after = time.time()
        if node_time is None:
            continue
        offsets[name] = {"offset_s": round(node_time - (before + after) / 2, 4),
                         "uncertainty_s": round((after - before) / 2, 4)}
    return offsets


class Recorder:
    def __init__(self, transport: Transport, run_id: str, settings: MonitorSettings, datanode_counters=None,
                 diagnose: bool = False):
        """`diagnose`: a run's recording, whose machines are checked before it (too busy? their clocks)
        and whose frequency residency is read over it."""
        self.transport = transport
        self.run_id = run_id
        self.settings = settings
        self.interval = 1.0 / settings.hz
        self.datanode_counters = datanode_counters
        self.samplers: list[SamplerRecord] = []
        self.marks: list[dict] = []
        self.datanodes: list[dict] = []
        self.commands: list[dict] = []
        self.lock = threading.RLock()
        self.pollers: dict[str, Poller] = {}
        self.power_notes: dict[str, str] = {}
        self.offsets: dict = {}
        self.metrics: exporter.RunMetrics | None = None
        self.memory = MemoryWatch(transport)
        self.diagnose = diagnose
        self.before: diagnostics.Before | None = None

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        if self.settings.prometheus:  # a port in use is refused before anything is started
            self.metrics = exporter.serve(self.settings.prometheus)
        if self.diagnose:  # before anything of the recording's own runs, so none of it is measured
            self.before = diagnostics.before_run(self.transport, self.settings)
        points = sampling.points(self.transport)
        self.offsets = measure_clock_offsets(self.transport, points)
        for name, node, target in points:
            power = self.settings.power_for(name)
            target = {**target, "power": power.node_side()}
            self.samplers.append(SamplerRecord(sampling.sampler(self.transport, name, node, target, self.run_id,
                                                                self.interval)))
            poller = power.poller(self.interval, sampling.collected_dir(self.transport, node), self.run_id)
            if poller is not None:
                self.pollers[name] = poller
                poller.start()
        meter = self.settings.cluster_meter
        if meter is not None:
            poller = meter.poller(self.interval, sampling.collected_dir(self.transport, self.transport.spec.master),
                                  f"{self.run_id}-{CLUSTER_METER}")
            if poller is not None:
                self.pollers[CLUSTER_METER] = poller
                poller.start()
        launched = _each(self.samplers, _launch)
        failed = [err for err in launched.values() if err is not None]
        if failed:
            self.abandon()
            raise failed[0]
        # After the samplers: an emulated node's sampler is in its cgroup, and its memory is the run's too.
        self.memory.start()
        self._datanode_snapshot("start")
        self._wait_for_first_samples()
        if self.metrics is not None:
            self.metrics.watch(self)
        time.sleep(self.settings.margin_s)

    def _wait_for_first_samples(self, timeout_s: float = 20) -> None:
        """Until every sampler has written its header and first sample: starting Python on a slow
        emulated node can take longer than the margin, and a short run would then have no samples.
        A sampler that never starts is not waited for past the timeout; its gap is recorded."""
        deadline = time.monotonic() + timeout_s
        waiting = list(self.samplers)
        while waiting and time.monotonic() < deadline:
            waiting = [s for s in waiting if s.handle.starting()]
            if waiting:
                time.sleep(0.05)

    def stop(self) -> RawRecording:
        time.sleep(self.settings.margin_s)
        self._unwatched()
        memory = self.memory.stop()
        cost = _each(self.samplers, _stop)
        power = {}
        for poller in self.pollers.values():
            poller.stop()
        for sampler in self.samplers:
            poller = self.pollers.get(sampler.name)
            power[sampler.name] = {"spec": self.settings.power_for(sampler.name).shown(),
                                   "polled": poller.collected() if poller is not None else {}}
        meter = self.settings.cluster_meter
        if meter is not None:
            poller = self.pollers.get(CLUSTER_METER)
            power[CLUSTER_METER] = {"spec": meter.shown(), "polled": poller.collected() if poller is not None else {}}
        diagnosed = diagnostics.after_run(self.transport, self.before) if self.before is not None else None
        nodes = {}
        for sampler in self.samplers:
            path = sampler.handle.samples_file()
            header, samples = read_samples(path)
            # What the sampler read is its own resolved target (a board finds its device and cores).
            target = {**sampler.handle.target, **(header.get("target") or {})}
            nodes[sampler.name] = {"header": header, "samples": samples, "restarts": sampler.restarts,
                                   "target": target, "file": str(path),
                                   "sampler_cpu_pct": cost.get(sampler.name)}
        return RawRecording(run_id=self.run_id, interval_s=self.interval, nodes=nodes, marks=self.marks,
                            datanodes=self.datanodes, clock_offsets=self.offsets, power=power,
                            commands=self.commands, emulated=self.transport.name == "emulated", memory=memory,
                            diagnostics=diagnosed)

    def abandon(self) -> None:
        """Stop everything without collecting (the run failed in a way that stores nothing)."""
        self._unwatched()
        self.memory.abandon()
        _each(self.samplers, lambda s: s.handle.stop())
        for poller in self.pollers.values():
            poller.stop()

    def _unwatched(self) -> None:
        if self.metrics is not None:
            self.metrics.unwatch(self)

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
            sampling.sync_disks(self.transport)
            t = time.time()
            # All nodes at once: a board's mark is a round trip over SSH.
            marked = _each([s for s in self.samplers if s.handle.running() or s.handle.exit_status() is not None],
                           lambda s: s.handle.mark(label))
            for sampler in self.samplers:
                if marked.get(sampler.name) is False:
                    self._restart(sampler, t)
            self.marks.append({"label": label, "t": round(t, 4)})
            self._datanode_snapshot(label)

    def _restart(self, sampler: SamplerRecord, t: float) -> None:
        handle = sampler.handle
        handle.forget()
        status = handle.exit_status()
        died = last_sample_time(handle.samples_file())
        handle.launch()
        sampler.restarts.append({"last_sample": died, "restarted": round(t, 4), "exit_status": status})

    def _datanode_snapshot(self, label: str) -> None:
        if self.datanode_counters is None:
            return
        try:
            self.datanodes.append({"t": round(time.time(), 4), "label": label, "nodes": self.datanode_counters()})
        except (requests.RequestException, ValueError, KeyError, IndexError):
            pass  # a DataNode that does not answer leaves this snapshot out; intermediate data says so


def _launch(sampler: SamplerRecord) -> SbclabError | None:
    try:
        sampler.handle.launch()
    except SbclabError as err:
        return err
    return None


def _stop(sampler: SamplerRecord) -> float | None:
    """Stop a sampler; its CPU use until then (a board's is read in the same command that stops it)."""
    cost = sampler.handle.cpu_share()
    sampler.handle.stop()
    return sampler.handle.cpu_share() if cost is None else cost


def _each(samplers: list[SamplerRecord], work) -> dict[str, object]:
    """work(sampler) for every sampler at once, by node name."""
    if not samplers:
        return {}
    with ThreadPoolExecutor(max_workers=min(16, len(samplers))) as pool:
        return dict(zip((s.name for s in samplers), pool.map(work, samplers)))


def last_sample_time(path: Path) -> float | None:
    _, samples = read_samples(path)
    return samples[-1]["t"] if samples else None


def read_samples(path: Path) -> tuple[dict, list[dict]]:
    """The header and samples of a sampler file; a torn last line (the sampler was killed) is dropped."""
    try:
        return sampling.parse_samples(Path(path).read_text().splitlines())
    except OSError:
        return {}, []
