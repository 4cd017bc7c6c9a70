"""Containers on emulated nodes: Hajji & Tso's web figure natively and in a podman container, a container's
processes shaped like the node's native ones, and Spark's standalone manager with every node's daemons in a
container. The node image is built once into sbclab's cache and reused by later runs."""

import csv
import os
import shutil
import subprocess
import sys
import time

import psutil
import pytest

from sbclab.cluster import containers, nodes, tools
from sbclab.results.store import ResultsStore
from sbclab.stack import lifecycle
from sbclab.stack.choices import StackChoices

from .conftest import MECHANICS_BOARD, NOTHING, OVERSUBSCRIBED, leaked, measure, remove_if_left, small_spec

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="containers inside emulated nodes need root"),
              pytest.mark.skipif(not shutil.which("podman") or not shutil.which("mmdebstrap"),
                                 reason="podman and mmdebstrap are installed by 'make setup'")]

# Hajji & Tso's board; one worker serves, the master runs httperf.
SHAPE = {"board": "rpi2b", "storage": "microsd", "workers": 1}


@pytest.fixture(scope="module")
def image():
    """The node image in sbclab's cache: built by the first run on a machine (about 40 s), reused after."""
    runtime = containers.runtime_here()
    assert not isinstance(runtime, str), runtime
    return containers.ensure_image(runtime)


@pytest.mark.measurement  # one busy thread timed natively and in the container: alone on the host
def test_a_containers_processes_are_the_nodes_and_teardown_removes_what_was_left(image):
    """In the node's cgroup, under its virtual cores (one busy thread no faster in the container than
    natively), with its host name; a container left running is removed with the nodes."""
    name = "ctrcpu"
    remove_if_left(name)
    assert leaked() == NOTHING
    spec = small_spec(name, subnet="10.235.0.0/24", **SHAPE)
    with nodes.bare(spec) as transport:
        worker = spec.worker_nodes[0]
        runtime = containers.runtime_on(transport, worker)
        assert isinstance(runtime, containers.Runtime), runtime
        native = tools.on_node(transport, worker)

        def inside(argv):
            wrapped, entry = containers.wrap(transport, worker, runtime, image, argv, "probe")
            try:
                return native(wrapped)
            finally:
                assert containers.remove(transport, worker, entry)

        status, out, err = inside(["sh", "-c", "hostname; cat /proc/self/cgroup"])
        assert status == 0, err
        assert out.splitlines()[0] == worker.name
        assert any(line.split(":")[1] == "cpu" and f"/sbclab/{name}/{worker.name}" in line for line in out.splitlines()[1:])
        # The balancer keeps one thread to one virtual core: natively and in the container alike (without
        # it, a thread could use the whole node's quota, here the board's four cores' worth).
        events = {where: tools.sysbench_cpu(run, 2000, 1, 2) for where, run in (("native", native), ("container", inside))}
        assert events["container"] < 1.5 * events["native"], events

        # A container whose sbclab is gone: teardown finds it in the cluster's record.
        wrapped, _ = containers.wrap(transport, worker, runtime, image, ["sleep", "600"], "left")
        transport.start(worker, wrapped, transport.base_env(worker), transport.node_dir(worker) / "left.log", label="left")
        deadline = time.monotonic() + 30
        while "sbclab-ctrcpu-worker1-left" not in containers.leftover_names() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "sbclab-ctrcpu-worker1-left" in containers.leftover_names()
    assert leaked() == NOTHING


def test_spark_standalone_in_containers_runs_sort_inside_each_nodes_container(image, tmp_path):
    """Hajji & Tso's second phase on their own versions (Spark 1.4.0 standalone over Hadoop 2.6.4 HDFS,
    on the Java 8 sbclab assembles): every daemon and the job's client in a container on its node
    (one per node, exec'd into); Sort's input written by Spark, as no YARN runs to take MapReduce's
    RandomWriter; the run says which image and which versions."""
    name = "ictrspk"
    remove_if_left(name)
    assert leaked() == NOTHING
    spec = small_spec(name, board=MECHANICS_BOARD, cores=OVERSUBSCRIBED, subnet="10.230.0.0/24"
                      ).model_copy(update={"runtime": "container"})
    try:
        up = lifecycle.up(spec, StackChoices(spark_manager="standalone", stack="hajji-tso-2016"))
        assert {f"sbclab-{name}-{n.name}-node" for n in spec.nodes} <= set(containers.leftover_names())
        worker = spec.worker_nodes[0]
        # The JVM itself, not the podman client that exec'd it (whose command line names it too).
        daemon = next(p for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [""])[0].endswith("/java")
                      and "org.apache.spark.deploy.worker.Worker" in p.info["cmdline"]
                      and f"/{name}/nodes/{worker.name}/" in " ".join(p.info["cmdline"]))
        # In a process namespace of the container's, in the node's cgroup.
        assert os.readlink(f"/proc/{daemon.pid}/ns/pid") != os.readlink("/proc/self/ns/pid")
        assert f"/sbclab/{name}/{worker.name}" in open(f"/proc/{daemon.pid}/cgroup").read()
        run = measure(up, tmp_path / "results", "sort", "spark", size_bytes=4 * 10**6)
        assert run.valid, [c for c in run.validity.checks if not c.passed]
        assert run.cluster.runtime == "container" and run.cluster.spark_manager == "standalone"
        assert run.cluster.container["image_digest"] == image.digest
        assert (run.versions["spark"], run.versions["hadoop"]) == ("1.4.0", "2.6.4") and '"1.8.0' in run.versions["java"]
    finally:
        remove_if_left(name)
    assert leaked() == NOTHING


def test_hajji_and_tsos_web_figure_is_reproduced_natively_and_in_a_container(image, tmp_path):
    """`sbclab reproduce hajji figure4` end to end: nginx's peak rate at 1 and 100 KB on an RPi 2B, natively
    and in a container, set beside the seed's printed rates and judged on container over native."""
    results = tmp_path / "results"
    done = subprocess.run([sys.executable, "-m", "sbclab.cli", "reproduce", "hajji", "figure4", "--repetitions", "1",
                           "--work", "0.1", "--idle-baseline", "0", "--results", str(results),
                           # The tests of mechanics share this host with two others: its runs would be flagged
                           # too busy to benchmark, and what is checked here is the reproduction, not the host's
                           # quiet (test_diagnostics.py checks that).
                           "--busy-max", "0",
                           # test_reproduce.py's reproductions may run beside it, under the default name and subnet.
                           "--name", "ihajfig", "--subnet", "10.236.0.0/24"],
                          capture_output=True, text=True, timeout=1200, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2809 | " in done.stdout and "957.5 | " in done.stdout  # the seed's 1 KB rates, ours beside
    runs = list(ResultsStore(results).runs())
    assert sorted((r.cluster.runtime, r.parameters["doc_size"]) for r in runs) == \
        [("container", "100KB"), ("container", "1KB"), ("native", "100KB"), ("native", "1KB")]
    assert all(r.valid for r in runs) and len({r.scale.factor for r in runs}) == 1
    # A container's run says what ran it: the runtime, its version and the image's digest.
    for contained in (r for r in runs if r.cluster.runtime == "container"):
        assert contained.result["runtime"] == "container" and contained.result["steps"][0]["ok_replies"] > 0
        recorded = contained.result["container"]
        assert recorded["runtime"] == "podman" and recorded["version"]
        assert recorded["image"] == image.tag and recorded["image_digest"] == image.digest
        assert recorded["image_digest"].startswith("sha256:")
    rows = list(csv.DictReader(open(results / "reproduction" / "hajjitso2016-figure4.csv")))
    assert sum(1 for r in rows if r["ours_mean"] and r["published"]) == 3, rows
    assert leaked() == NOTHING
