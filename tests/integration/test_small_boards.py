"""The seeds' small boards on emulated nodes that hold exactly their RAM: Hadoop on 1 GB boards and on
one 4 GB worker, Spark's standalone manager on 1 GB boards (Hajji & Tso's system), and bare-node
benchmarks on the 512 MB Raspberry Pi B (no YARN at all).

Each node's memory cgroup is its board's RAM, so a container or daemon sized past it would be killed
by the kernel; the tests check that no node's OOM killer fired."""

import os

import pytest

from sbclab import workloads
from sbclab.cluster import cgroups, spec as cluster_spec
from sbclab.experiments.orchestrator import cluster_for
from sbclab.results.store import ResultsStore
from sbclab.stack import config, lifecycle, sizing

from .conftest import NOTHING, OVERSUBSCRIBED, leaked, measure, module_cluster, prometheus_families, remove_if_left, \
    runner

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a node's memory limit needs the emulated backend (root)")


def no_oom_kills(cluster) -> None:
    killed = {n.name: cgroups.NodeCgroup(cluster.spec.name, n.name).oom_kills() for n in cluster.spec.nodes}
    assert not any(killed.values()), killed


def test_two_1gb_boards_run_hadoop_wordcount_within_their_memory(tmp_path):
    """RPi 3B workers (1 GB): containers of 256 MB beside 512 MB for the DataNode, the NodeManager and
    the OS; WordCount is valid and no node ran out of memory."""
    with module_cluster("ismall", board="rpi3b", storage="microsd", subnet="10.224.0.0/24", cores=OVERSUBSCRIBED) as up:
        assert all(n.memory_bytes == 2**30 for n in up.spec.nodes)
        run = measure(up, tmp_path / "results", "wordcount", "hadoop", size_bytes=4 * 10**6)
        assert run.valid, [c for c in run.validity.checks if not c.passed]
        mapred, yarn = run.configuration["mapred-site"], run.configuration["yarn-site"]
        assert (mapred["yarn.app.mapreduce.am.resource.mb"], mapred["mapreduce.map.memory.mb"]) == ("256", "256")
        assert (yarn["yarn.nodemanager.resource.memory-mb"], yarn["yarn.scheduler.minimum-allocation-mb"]) == ("512", "128")
        no_oom_kills(up)


def test_one_4gb_worker_holds_the_application_master_and_the_tasks_of_a_job(tmp_path):
    """A 1-worker RPi 4B (4 GB) cluster: upstream's ApplicationMaster (1536 MB) and tasks (1024 MB)
    side by side in its 3072 MB of containers. WordCount's map and reduce containers are TeraSort's
    size, in one job instead of TeraSort's three (TeraGen, TeraSort, TeraValidate). Its master is a
    Pi 5 (8 GB) on NVMe: a cluster of mixed boards, each node shaped and recorded as its own."""
    with module_cluster("ifour", board="rpi4b-4gb", storage="microsd", subnet="10.225.0.0/24", workers=1,
                        cores=OVERSUBSCRIBED, master_board="rpi5b", master_storage="nvme") as up:
        assert sizing.yarn_share(up.spec.worker_nodes[0])[0] == 3072
        assert up.spec.master.memory_bytes == pytest.approx(2 * up.spec.worker_nodes[0].memory_bytes, abs=2)
        run = measure(up, tmp_path / "results", "wordcount", "hadoop", size_bytes=2 * 10**6)
        mapred = run.configuration["mapred-site"]
        assert mapred.get("yarn.app.mapreduce.am.resource.mb", "1536") == "1536"
        assert mapred.get("mapreduce.map.memory.mb", "1024") == mapred.get("mapreduce.reduce.memory.mb", "1024") == "1024"
        assert run.valid, [c for c in run.validity.checks if not c.passed]
        assert [(n.board, n.storage) for n in run.cluster.nodes] == [("rpi5b", "nvme-p31-gen3"),
                                                                      ("rpi4b-4gb", "microsd-pro-plus")]
        no_oom_kills(up)


def test_the_512mb_raspberry_pi_b_runs_sysbench_and_hpl_on_one_node(tmp_path):
    """Baun's RPi B: no YARN fits 496 MB, and none is needed for sysbench and HPL on one node."""
    name = "ipib"
    remove_if_left(name)
    assert leaked() == NOTHING
    shaped = cluster_spec.build(name=name, backend="emulated", board="rpi1b", storage="microsd", workers=1,
                                subnet="10.226.0.0/24", disk_bytes=2**30)
    with cluster_for(shaped, bare=True) as cluster:
        on = runner(cluster, ResultsStore(tmp_path / "results"))
        worker = cluster.spec.worker_nodes[0]
        cpu = workloads.get("sysbench-cpu")
        events = on.measure(cpu, "node", cpu.parameters(None, {"node": worker.name, "threads": [1], "seconds": 2}))
        hpl = workloads.get("hpl")
        linpack = on.measure(hpl, "mpi", hpl.parameters(None, {"nodes": 1, "n": 200, "nb": 32}))
        assert events.valid and events.result["events_per_s"]["1"] > 0
        assert linpack.valid and linpack.parameters["ranks_per_node"] == 1 and linpack.result["rmax_gflops"] > 0
        no_oom_kills(cluster)
    assert leaked() == NOTHING


def test_spark_standalone_on_two_1gb_boards_runs_wordcount_in_java_and_python(tmp_path):
    """Hajji & Tso's system: RPi 2B workers (1 GB) with HDFS and Spark's standalone master and workers,
    no YARN; each worker offers its 512 MB to one executor of Spark's least heap, and PySpark's workers
    fit beside it."""
    with module_cluster("istand", board="rpi2b", storage="microsd", subnet="10.227.0.0/24", cores=OVERSUBSCRIBED,
                        spark_manager="standalone") as up:
        status = lifecycle.status(up)
        assert [w["state"] for w in status["spark_workers"]] == ["ALIVE", "ALIVE"] and not status["yarn_nodes"]
        assert {row["daemon"] for row in status["addresses"]} == {"NameNode", "DataNode", "Spark master", "Spark worker"}
        # Spark's own metrics for Prometheus, on the master's web UI.
        master = up.spec.master
        served = prometheus_families(f"http://{config.web_host(up.choices, master)}:"
                                     f"{config.port(up.spec, master, 'spark_master_http')}/metrics/prometheus")
        assert any("master" in name and "aliveWorkers" in name for name in served), sorted(served)[:5]
        store = tmp_path / "results"
        count = measure(up, store, "wordcount", "spark", size_bytes=4 * 10**6)
        in_python = measure(up, store, "wordcount-py", "spark", size_bytes=4 * 10**6)
        for run in (count, in_python):
            assert run.valid, [c for c in run.validity.checks if not c.passed]
            assert run.cluster.spark_manager == "standalone"
            assert run.configuration["spark-defaults"]["spark.master"].startswith("spark://")
        assert in_python.result["distinct"] == count.result["distinct"], "the same words, counted in Python"
        no_oom_kills(up)
