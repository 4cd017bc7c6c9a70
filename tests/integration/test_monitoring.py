"""Measurements of real runs on an emulated cluster: the per-node series against the engines' own
counters, the CPU quota in the CPU series, intermediate data of Hadoop WordCount, the idle
baseline, power sources that answer and ones that do not, and a sampler killed mid-run.

What is checked holds beside other tests (volumes against counters, a node's CPU under its quota,
series against totals, sources and gaps), so these run with the tests of mechanics; a node's whole
quota and its I/O wait read alone on the host are test_node_benchmarks.py's measurements.

The cluster uses the `stock` preset (dfs.replication=3 on two DataNodes, so every block is written
twice, once across the network): that makes the expected device and network volumes exact
multiples of what HDFS reports.
"""

import json
import os
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest

from sbclab.monitor import idle
from sbclab.report import build, html
from sbclab.monitor.settings import MonitorSettings
from sbclab.results.store import ResultsStore

from .conftest import OVERSUBSCRIBED, measure, module_cluster, two_second_windows

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="per-node figures need the emulated backend (root)")

NAME = "mon"
# No check of how busy the host is before a run (busy_window_s 0): other tests run beside these;
# test_diagnostics.py has that check.
SETTINGS = MonitorSettings(hz=2, margin_s=1, idle_baseline_s=3, busy_window_s=0)
FIXTURES = Path(__file__).parent.parent / "unit" / "fixtures" / "monitor"


@pytest.fixture(scope="module")
def cluster():
    # The default JVMs: what is measured here is what a user's runs give. What is checked is each
    # node's accounting against its own quota, which holds however many cores the host has, so the
    # nodes are OVERSUBSCRIBED.
    with module_cluster(NAME, preset="stock", subnet="10.216.0.0/24", knobs=(), cores=OVERSUBSCRIBED) as up:
        yield up


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return ResultsStore(tmp_path_factory.mktemp("monitoring") / "results")


def series_of(store, run) -> dict:
    return json.loads((store.root / run.measurements.series).read_text())


def integral(columns: dict, name: str, start: float, end: float) -> float:
    """A rate column summed over the rows inside [start, end]."""
    return sum((v or 0) * dt for t, dt, v in zip(columns["t"], columns["dt"], columns[name])
               if t - dt >= start - 1e-6 and t <= end + 1e-6)


def test_idle_baseline_and_clock_offsets(cluster, store):
    """The idle baseline gives every node its watts and clock offset and stores its series."""
    baseline = idle.measure_idle(cluster.transport, SETTINGS, store, "idle-test")
    assert set(baseline["watts"]) == {"master", "worker1", "worker2"}
    for watts in baseline["watts"].values():
        assert 5.54 <= watts < 10.31, "idle between the Pi 5 profile's idle and full-load watts"
    # The nodes share this host's clock: each offset is within its reading's own uncertainty (half the
    # time the node took to answer, which a busy host lengthens).
    assert all(abs(o["offset_s"]) <= o["uncertainty_s"] + 0.01 for o in baseline["clock_offsets"].values())
    assert (store.root / baseline["series"]).exists()


def test_teragen_series_add_up_to_hdfs_counters_and_show_the_quota(cluster, store):
    """The per-node series of a TeraGen add up to what HDFS counted (disk twice for replication, network once), with
    phase marks and energy."""
    run = measure(cluster, store, "teragen", "hadoop", size_bytes=24 * 10**6, monitor=SETTINGS)
    assert run.valid, [c for c in run.validity.checks if not c.passed]
    m = run.measurements
    hdfs_written = run.counters["File System Counters"]["HDFS: Number of bytes written"]
    workers = ("worker1", "worker2")

    # Two replicas of every block: the workers' devices take twice what HDFS was given (plus
    # checksum files, metadata and the journal), and one copy crosses the network.
    device = sum(m.nodes[w].disk_write_bytes for w in workers)
    assert 2.0 * hdfs_written <= device <= 2.4 * hdfs_written, (device, hdfs_written)
    # The DataNodes also store the job's own files twice: its jar, configuration, splits and history.
    datanodes = sum(m.intermediate.nodes[w]["hdfs_write_bytes"] for w in workers)
    assert 2.0 * hdfs_written <= datanodes <= 2.0 * hdfs_written + 8 * 2**20, (datanodes, hdfs_written)
    sent = sum(m.nodes[w].net_tx_bytes for w in workers)
    assert 1.0 * hdfs_written <= sent <= 1.2 * hdfs_written, (sent, hdfs_written)

    # The stored series integrate to the same totals the document gives.
    columns = series_of(store, run)["nodes"]
    for w in workers:
        from_series = integral(columns[w]["columns"], "disk_write_bps", m.window["start"] - 1, m.window["end"] + 5)
        assert from_series == pytest.approx(m.nodes[w].disk_write_bytes, rel=0.02, abs=2**20)

    # CPU shares are of each node's quota: TeraGen's workers never use more (a saturated node is
    # test_a_node_busy_on_every_core_reads_as_its_whole_quota's).
    for w in workers:
        node = m.nodes[w]
        assert max(two_second_windows(columns[w]["columns"])) <= 1.05 * node.cpu_capacity_cores
        # A node whose threads wake often while it is held to its quota, or while this host is busy,
        # has many of them waiting for a core at once; what no sample may hold is more than its threads
        # could have had: each in one state at a time over its interval (and the next, where a reading
        # lower than the one before stood in for it), with the sampler's 0.1 s allowance.
        node_columns = columns[w]["columns"]
        dts = node_columns["dt"]
        rows = [(load, threads, (dt + (dts[i + 1] if i + 1 < len(dts) else dt) + 0.1) / dt)
                for i, (load, threads, dt) in enumerate(zip(node_columns["load"], node_columns["threads"], dts))
                if load is not None]
        assert rows and all(threads for _, threads, _ in rows)
        assert all(load <= threads * allowed for load, threads, allowed in rows), max(rows, key=lambda r: r[0] / r[1])

    names = [p["name"] for p in m.phases]
    assert any(n.endswith("map phase") for n in names) and "hadoop teragen" in names
    assert not m.flags, m.flags
    assert m.cluster_power.energy_j > 0 and all(p.coverage > 0.9 for p in m.power.values())


def test_hadoop_wordcount_intermediate_data_is_a_multiple_of_its_input(cluster, store):
    """WordCount's intermediate data is measured from the engine and from the devices, and is a multiple of its input."""
    # 12 MB: what is measured is a ratio to the input, and generating the airline rows is CPU of this host's.
    run = measure(cluster, store, "wordcount", "hadoop", size_bytes=12 * 10**6, monitor=SETTINGS)
    assert run.valid
    inter = run.measurements.intermediate
    # Unique lines defeat the combiner: map output is the input again, spilled and then merged on
    # the reduce side. The seeds measured 3.94x at 32 GB, where maps spill more than once.
    assert inter.engine_ratio >= 2.0, inter
    assert inter.device_ratio >= 1.0, inter
    assert inter.engine["reduce_shuffle_bytes"] >= inter.input_bytes


class _Plug(BaseHTTPRequestHandler):
    body = (FIXTURES / "shelly_gen1_status.json").read_bytes()

    def do_GET(self):  # noqa: N802 - the http.server interface
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def _marked(sampler_pid: int, prefix: str) -> bool:
    """Whether the sampler has written a sample marked with a label that starts with `prefix`."""
    try:
        argv = Path(f"/proc/{sampler_pid}/cmdline").read_bytes().decode().split("\0")
        lines = Path(argv[argv.index("--out") + 1]).read_text().splitlines()
    except (OSError, ValueError, IndexError):
        return False
    return any((json.loads(line).get("mark") or "").startswith(prefix) for line in lines if line.startswith("{"))


def test_power_sources_and_a_sampler_killed_mid_run(cluster, store):
    """A plug, a failed plug and RAPL fall back as documented; a sampler killed mid-run leaves a gap that flags the
    run, and no secret is written."""
    plug = ThreadingHTTPServer(("127.0.0.1", 0), _Plug)
    threading.Thread(target=plug.serve_forever, daemon=True).start()
    closed = ThreadingHTTPServer(("127.0.0.1", 0), _Plug)
    # Plugs whose URLs carry credentials: none may reach anything the run writes (run document,
    # series, log copies, the report and its exports).
    dead_url = f"http://127.0.0.1:{closed.server_address[1]}/status?token=s3cr3t-dead"
    closed.server_close()  # a plug that is offline
    live_url = f"http://meter:s3cr3t-pw@127.0.0.1:{plug.server_address[1]}/status?auth_key=s3cr3t-key"
    settings = MonitorSettings.model_validate({**SETTINGS.model_dump(), "power": {
        "worker1": {"source": "http-plug", "url": live_url, "format": "shelly"},
        "worker2": {"source": "http-plug", "url": dead_url, "format": "shelly", "timeout_s": 0.5},
        "master": {"source": "rapl", "powercap": "/nonexistent/powercap"}}})
    killed = {}

    def kill_worker1_sampler():
        # Mid-job, seconds after the job's start mark: a sampler found dead at a mark is started again
        # there, so one killed just before the start mark would leave too short a gap to be one.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            for entry in cluster.state.of_kind("process"):
                if entry.get("label") == "sampler worker1" and _marked(entry["pid"], "start "):
                    time.sleep(3)
                    os.kill(entry["pid"], signal.SIGKILL)
                    killed["at"] = time.time()
                    return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_worker1_sampler)
    killer.start()
    try:
        run = measure(cluster, store, "pi", "spark", {"maps": 4, "samples_per_map": 20000}, monitor=settings)
    finally:
        killer.join()
        plug.shutdown()
    assert killed, "the sampler was found and killed"
    assert run.valid
    m = run.measurements
    assert m.power["worker1"].source == "http-plug" and not m.power["worker1"].estimate
    assert m.power["worker1"].avg_w == pytest.approx(23.61)
    assert any("outside it" in n for n in m.power["worker1"].notes), "an emulated node's plug is not the node"
    assert m.power["worker2"].source == "model" and "http-plug unavailable" in m.power["worker2"].notes[0]
    assert m.power["master"].source == "model" and "rapl unavailable" in m.power["master"].notes[0]

    # The killed sampler's gap is recorded, flagged, and not filled in.
    gaps = m.nodes["worker1"].gaps
    assert gaps and gaps[0]["from"] <= killed["at"] + 1 and gaps[0]["to"] > killed["at"]
    assert any(f.kind == "disappeared" and f.node == "worker1" for f in m.flags)
    assert run.flagged and not run.headline
    columns = series_of(store, run)["nodes"]["worker1"]["columns"]
    assert not [t for t, dt in zip(columns["t"], columns["dt"]) if t - dt < gaps[0]["to"] - 0.01 and t > gaps[0]["from"] + 0.01]
    # This run's samplers (their output is named by the run): other modules' clusters sample beside this one.
    assert not [p for p in psutil.process_iter(["cmdline"])
                if "sbclab.monitor.sampler" in " ".join(p.info["cmdline"] or []) and run.run_id in " ".join(p.info["cmdline"])]

    html.write(build.build(store.root), store.root / "report")
    leaked = [str(path) for path in store.root.rglob("*") if path.is_file() and b"s3cr3t" in path.read_bytes()]
    assert not leaked, leaked
