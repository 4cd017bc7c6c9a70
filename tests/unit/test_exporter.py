"""The run in progress as Prometheus metrics: served over HTTP, read back with prometheus_client's own parser."""

import json
import re
import socket
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from sbclab.errors import SbclabError
from sbclab.monitor import exporter
from sbclab.monitor.local_sampler import LocalSampler

from .test_monitor_series import NODE, sample


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _recorder(tmp_path, samples: dict[str, list[dict]], marks: list[dict]):
    """What the exporter reads of a Recorder: its samplers' handles, marks and cluster."""
    samplers = []
    for name, rows in samples.items():
        handle = LocalSampler.__new__(LocalSampler)
        handle.name, handle.target, handle.node = name, NODE, SimpleNamespace(board="rpi5b")
        handle.out = tmp_path / f"{name}.jsonl"
        handle.out.write_text("\n".join(json.dumps(r) for r in [{"header": {"target": NODE}}, *rows]) + "\n")
        samplers.append(SimpleNamespace(name=name, handle=handle))
    spec = SimpleNamespace(name="pi", backend="emulated")
    return SimpleNamespace(run_id="20261126T090000Z-hadoop-terasort-abcd", samplers=samplers, marks=marks,
                           lock=threading.RLock(), transport=SimpleNamespace(spec=spec))


def _scrape(address: str) -> dict[str, list]:
    text = requests.get(f"http://{address}/metrics", timeout=5).text
    return {family.name: family.samples for family in text_string_to_metric_families(text)}


def test_each_nodes_newest_interval_and_the_runs_marks_are_served_while_it_is_watched(tmp_path):
    address = f"127.0.0.1:{_free_port()}"
    metrics = exporter.serve(address)
    assert exporter.serve(address) is metrics, "one endpoint per address for the process"
    # A torn last line (the sampler is writing it) is left out.
    worker = [sample(0, 0), sample(1, 0.4, disk_w=2_000_000, rx=500_000), sample(2, 1.2, blkio_s=1.0, disk_w=6_000_000,
                                                                                 rx=1_500_000)]
    recorder = _recorder(tmp_path, {"worker1": worker, "master": [sample(0, 0), sample(1, 0.1)]},
                         [{"label": "start terasort", "t": 0.5}])
    with open(tmp_path / "worker1.jsonl", "a") as f:
        f.write('{"t": 3, "cgroup_cp')
    assert _scrape(address)["sbclab_up"][0].value == 1
    assert "sbclab_node_cpu_percent" not in _scrape(address), "nothing between runs"

    metrics.watch(recorder)
    try:
        found = _scrape(address)
    finally:
        metrics.unwatch(recorder)
    cpu = {(s.labels["node"], s.labels["mode"]): s.value for s in found["sbclab_node_cpu_percent"]}
    # The worker's newest interval: 0.8 of its 0.8-core quota busy (75 % user), a second of blocked threads
    # over four board cores.
    assert cpu[("worker1", "user")] == 75.0 and cpu[("worker1", "iowait")] == 0.0
    assert {s.labels["node"] for s in found["sbclab_node_cpu_percent"]} == {"worker1", "master"}
    disk = {(s.labels["node"], s.labels["direction"]): s.value for s in found["sbclab_node_disk_bytes_per_second"]}
    assert disk[("worker1", "write")] == 4_000_000
    net = {(s.labels["node"], s.labels["direction"]): s.value for s in found["sbclab_node_network_bytes_per_second"]}
    assert net[("worker1", "receive")] == 1_000_000
    watts = {s.labels["node"]: s.value for s in found["sbclab_node_power_watts"]}
    assert 0 < watts["master"] < watts["worker1"], "the model at each node's CPU use"
    marks = found["sbclab_run_mark_timestamp_seconds"]
    assert [(m.labels["mark"], m.value) for m in marks] == [("start terasort", 0.5)]
    assert found["sbclab_run_info"][0].labels == {"run_id": recorder.run_id, "cluster": "pi", "backend": "emulated"}
    assert "sbclab_node_cpu_percent" not in _scrape(address), "the run is over"


def test_a_port_in_use_is_one_sentence():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(SbclabError, match="Cannot serve Prometheus metrics") as err:
            exporter.serve(f"127.0.0.1:{taken.getsockname()[1]}")
    assert "--prometheus" in err.value.hint


def test_the_grafana_dashboard_asks_only_for_metrics_the_endpoint_serves():
    dashboard = json.loads((Path(__file__).parents[2] / "examples" / "grafana" / "sbclab-dashboard.json").read_text())
    asked = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    asked += [a["expr"] for a in dashboard["annotations"]["list"]]
    served = {family.name for family in exporter._families().values()}
    for expr in asked:
        names = set(re.findall(r"\bsbclab_[a-z_]+", expr))
        assert names and names <= served, expr
