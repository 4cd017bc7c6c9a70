"""A whole recording to a run's measurements, without a cluster: synthetic samples of two nodes."""

import pytest

from sbclab.cluster import nodeops, spec
from sbclab.monitor import intermediate, measure
from sbclab.monitor.recorder import RawRecording

SHAPE = spec.build(backend="emulated", workers=1, cores=2, memory_bytes=24 * 2**30)


def samples(busy_share: float, capacity: float, start: float, seconds: int, written_per_s: int) -> list[dict]:
    out = []
    for i in range(seconds + 1):
        usage = int(busy_share * capacity * i * 1e9)
        out.append({"t": start + i, "cgroup_cpu": {"usage_ns": usage, "user_ns": usage, "system_ns": 0},
                    "cgroup_memory": {"rss": 2**30, "cache": 0, "swap": 0},
                    "swap": {"in_pages": 0, "out_pages": 0},
                    "disk": {"read_bytes": 0, "write_bytes": written_per_s * i, "reads": 0, "writes": 0, "io_ms": 0},
                    "net": {"rx_bytes": 1000 * i, "tx_bytes": 0}, "temp_c": {}})
    return out


def recording(idle_node_busy: float = 0.0) -> RawRecording:
    nodes = {}
    for node, busy in (("master", idle_node_busy), ("worker1", 1.0)):
        n = SHAPE.node(node)
        nodes[node] = {"header": {}, "samples": samples(busy, n.cpu_cores, 100.0, 20, 10**6),
                       "restarts": [], "target": {"scope": "node", "cores": 4, "cpu_capacity": n.cpu_cores},
                       "file": "/nonexistent", "sampler_cpu_pct": 0.2}
    return RawRecording(run_id="r", interval_s=1.0, nodes=nodes, marks=[], datanodes=[], clock_offsets={},
                        power={}, commands=[], emulated=True)


def test_a_busy_and_an_idle_node_over_a_window():
    m, document = measure.summarise(recording(), start=105.0, end=115.0, spec=SHAPE, engine="spark",
                                    counters={"task_metrics": {"shuffle_bytes_written": 5 * 10**6}},
                                    input_bytes=10**7, engine_phases=[], idle_watts={"master": 5.54, "worker1": 5.54})
    worker, master = m.nodes["worker1"], m.nodes["master"]
    assert worker.cpu_busy_pct_mean == 100.0 and master.cpu_busy_pct_mean == 0.0
    assert worker.disk_write_bytes == 10 * 10**6 and worker.net_rx_bytes == 10_000
    # The level a node held and its highest rate of one interval (Hajji & Tso's figures read these).
    assert worker.cpu_busy_pct_p90 == 100.0 and master.cpu_busy_pct_p90 == 0.0
    assert worker.net_rx_peak_bps == pytest.approx(1000) and worker.net_tx_peak_bps == 0
    # Pi 5 profile: 5.54 W idle, 10.31 W flat out.
    assert m.power["worker1"].avg_w == pytest.approx(10.31) and m.power["master"].avg_w == pytest.approx(5.54)
    assert m.power["worker1"].energy_j == pytest.approx(103.1)
    assert m.power["worker1"].energy_above_idle_j == pytest.approx(47.7)
    assert m.cluster_power.energy_j == pytest.approx(158.5) and m.cluster_power.peak_w == pytest.approx(15.85)
    assert m.intermediate.engine_ratio == 0.5 and not m.flags
    assert document["nodes"]["worker1"]["columns"]["power_w"][-1] == pytest.approx(10.31)
    assert worker.sampler_cpu_pct == 0.2


def test_a_window_without_samples_flags_the_nodes():
    m, _ = measure.summarise(recording(), start=200.0, end=210.0, spec=SHAPE, engine=None, counters={},
                             input_bytes=None, engine_phases=[])
    assert {f.node for f in m.flags if f.kind == "disappeared"} == {"master", "worker1"}
    assert m.intermediate is None


def test_a_nodes_swap_figure_is_its_cgroups_and_never_the_hosts_paging():
    raw = recording()
    for i, s in enumerate(raw.nodes["worker1"]["samples"]):
        s["swap"] = {"in_pages": 0, "out_pages": 100 * i}  # the host pages out all along
        s["cgroup_memory"]["swap"] = 2**20 if i >= 12 else 0  # the node swaps 1 MiB out at 112 s
    for s in raw.nodes["master"]["samples"]:
        s["swap"] = {"in_pages": 0, "out_pages": 100 * (s["t"] - 100)}
        del s["cgroup_memory"]["swap"]  # its cgroup accounts no swap
    m, _ = measure.summarise(raw, start=105.0, end=115.0, spec=SHAPE, engine=None, counters={},
                             input_bytes=None, engine_phases=[])
    assert m.nodes["worker1"].swap_bytes == 2**20
    assert m.nodes["master"].swap_bytes is None, "the host's paging is not the node's swap"
    details = {f.node: f.detail for f in m.flags if f.kind == "swap"}
    assert details["worker1"].startswith("worker1 swapped out 1.0 MiB")
    assert details["master"].startswith("the host swapped")


def test_what_fstrim_discards_after_a_job_is_kept_as_the_seeds_intermediate_data():
    assert nodeops._TRIMMED.search("/mnt/disk: 120 MiB (125829120 bytes) trimmed").group(1) == "125829120"
    measured = {"nodes": {}, "notes": []}
    intermediate.attach_trimmed(measured, {"worker1": 100, "worker2": 300}, input_bytes=200)
    assert measured["trimmed_bytes"] == 400 and measured["trimmed_ratio"] == 2.0
    assert measured["nodes"]["worker2"]["trimmed_bytes"] == 300


def test_one_meter_for_the_whole_cluster_is_counted_once(tmp_path):
    log = tmp_path / "meter.csv"
    log.write_text("time,watts\n" + "".join(f"{t},{30.0}\n" for t in range(100, 121)))
    raw = recording()
    raw.power["cluster"] = {"spec": {"source": "csv", "path": str(log)}, "polled": {}}
    m, _ = measure.summarise(raw, start=105.0, end=115.0, spec=SHAPE, engine="spark", counters={},
                             input_bytes=10**7, engine_phases=[], idle_watts={"cluster": 20.0})
    assert m.cluster_power.sources == {"cluster": "csv"} and m.cluster_power.estimate is False
    assert m.cluster_power.avg_w == pytest.approx(30.0)  # the meter's, not the nodes' model watts added to it
    assert m.cluster_power.energy_above_idle_j == pytest.approx(100.0)
    assert any("counted once" in n for n in m.notes)
