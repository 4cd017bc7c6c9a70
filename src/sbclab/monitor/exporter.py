"""The run in progress as Prometheus metrics: an HTTP scrape endpoint this sbclab serves while it runs.

Each scrape reads the newest two samples of every node's sampler (a board's over its SSH connection)
and gives what the report's series would give for that interval: CPU shares, disk and network rates,
memory, clock, temperature and the power model's watts. The marks (start and end of every engine
command) are gauges whose value is the mark's time, which Grafana draws as annotations
(examples/grafana/sbclab-dashboard.json). Nothing is served between runs but `sbclab_up`; what a
run stores is never read from here.
"""

import threading
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from .. import profiles
from ..errors import SbclabError
from . import sampling, series
from .power.model import model_intervals

CPU_MODES = ("user", "system", "iowait", "idle", "steal")


class RunMetrics(Collector):
    """The runs being recorded in this process, as metric families at each scrape."""

    def __init__(self):
        self._lock = threading.Lock()
        self._recorders: list = []

    def watch(self, recorder) -> None:
        with self._lock:
            self._recorders.append(recorder)

    def unwatch(self, recorder) -> None:
        with self._lock:
            if recorder in self._recorders:
                self._recorders.remove(recorder)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:
            recorders = list(self._recorders)
        up = GaugeMetricFamily("sbclab_up", "1 while this sbclab serves metrics", labels=[])
        up.add_metric([], 1)
        yield up
        families = _families()
        boards = profiles.boards() if recorders else {}
        for recorder in recorders:
            _add_run(families, recorder, boards)
        yield from (family for family in families.values() if family.samples)


def _families() -> dict[str, GaugeMetricFamily]:
    node = ["run_id", "node"]
    return {
        "run": GaugeMetricFamily("sbclab_run_info", "a run being recorded", labels=["run_id", "cluster", "backend"]),
        "mark": GaugeMetricFamily("sbclab_run_mark_timestamp_seconds",
                                  "when each phase mark of the run was taken (start or end of an engine command)",
                                  labels=["run_id", "mark"]),
        "sample": GaugeMetricFamily("sbclab_node_sample_timestamp_seconds", "the newest sample's time", labels=node),
        "cpu": GaugeMetricFamily("sbclab_node_cpu_percent",
                                 "share of the node's CPU capacity by mode over the newest interval",
                                 labels=[*node, "mode"]),
        "cores": GaugeMetricFamily("sbclab_node_cpu_cores_used", "cores' worth of CPU the node used", labels=node),
        "memory": GaugeMetricFamily("sbclab_node_memory_used_bytes", "memory in use on the node", labels=node),
        "disk": GaugeMetricFamily("sbclab_node_disk_bytes_per_second", "the node's data disk", labels=[*node, "direction"]),
        "net": GaugeMetricFamily("sbclab_node_network_bytes_per_second", "the node's cluster interface",
                                 labels=[*node, "direction"]),
        "clock": GaugeMetricFamily("sbclab_node_cpu_clock_mhz", "the slowest core's clock", labels=node),
        "temp": GaugeMetricFamily("sbclab_node_temperature_celsius", "the hottest sensor", labels=node),
        "power": GaugeMetricFamily("sbclab_node_power_watts",
                                   "the board profile's power model at the node's CPU use (an estimate; the "
                                   "run's stored power uses its configured source)", labels=node),
    }


def _add_run(families: dict[str, GaugeMetricFamily], recorder, boards: dict) -> None:
    spec = recorder.transport.spec
    families["run"].add_metric([recorder.run_id, spec.name, spec.backend], 1)
    with recorder.lock:
        marks = list(recorder.marks)
    for mark in marks:
        families["mark"].add_metric([recorder.run_id, mark["label"]], mark["t"])
    for sampler in list(recorder.samplers):
        header, samples = sampling.parse_samples(sampler.handle.newest_lines())
        # What the sampler read is its own resolved target (a board finds its device and cores).
        row = series.newest_row(samples, {**sampler.handle.target, **(header.get("target") or {})})
        if row is None:
            continue
        labels = [recorder.run_id, sampler.name]
        families["sample"].add_metric(labels, row["t"])
        for mode in CPU_MODES:
            if row.get(f"cpu_{mode}_pct") is not None:
                families["cpu"].add_metric([*labels, mode], row[f"cpu_{mode}_pct"])
        for key, family, extra in (("cpu_cores_used", "cores", []), ("mem_used_bytes", "memory", []),
                                   ("disk_read_bps", "disk", ["read"]), ("disk_write_bps", "disk", ["write"]),
                                   ("net_rx_bps", "net", ["receive"]), ("net_tx_bps", "net", ["transmit"]),
                                   ("clock_mhz_min", "clock", []), ("temp_max_c", "temp", [])):
            if row.get(key) is not None:
                families[family].add_metric([*labels, *extra], row[key])
        watts = _model_watts(boards.get(sampler.handle.node.board), row)
        if watts is not None:
            families["power"].add_metric(labels, watts)


def _model_watts(board, row: dict) -> float | None:
    if board is None or board.idle_watts is None or board.load_watts is None:
        return None
    intervals = model_intervals([row], board.idle_watts, board.load_watts)
    return round(intervals[0][2], 3) if intervals else None


_served: dict[str, RunMetrics] = {}
_serving = threading.Lock()


def serve(address: str) -> RunMetrics:
    """The endpoint at HOST:PORT, started once for this process."""
    with _serving:
        if address in _served:
            return _served[address]
        host, _, port = address.rpartition(":")
        registry = CollectorRegistry(auto_describe=False)
        metrics = RunMetrics()
        registry.register(metrics)
        try:
            start_http_server(int(port), addr=host.strip("[]") or "127.0.0.1", registry=registry)
        except OSError as err:
            raise SbclabError(f"Cannot serve Prometheus metrics at {address}: {err.strerror or err}.",
                              "Give a free port with --prometheus (e.g. 127.0.0.1:9464).") from err
        _served[address] = metrics
        return metrics
