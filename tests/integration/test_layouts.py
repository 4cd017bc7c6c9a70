"""The 2021 seed's cluster layouts: a master that is also a worker ("Combined") runs the master's
daemons beside a DataNode and a NodeManager, stores blocks and runs tasks, and says so in the run."""

import pytest

from sbclab.stack import lifecycle, sizing

from .conftest import MECHANICS_BOARD, OVERSUBSCRIBED, measure, module_cluster


@pytest.fixture(scope="module")
def combined():
    with module_cluster("icomb", board=MECHANICS_BOARD, cores=OVERSUBSCRIBED, subnet="10.228.0.0/24",
                        layout="master-is-worker") as up:
        yield up


def test_a_master_that_is_a_worker_stores_blocks_and_runs_tasks(combined, tmp_path):
    """WordCount (one job; the 2021 seed measured TeraSort, three) on a master that is also a worker:
    its DataNode takes blocks and its NodeManager a share of YARN's memory beside the master's daemons."""
    spec = combined.spec
    assert [n.name for n in spec.nodes] == ["master", "worker1"] and spec.workers == 2
    status = lifecycle.status(combined)
    daemons_on_master = {row["daemon"] for row in status["addresses"] if row["node"] == "master"}
    assert {"NameNode", "ResourceManager", "DataNode", "NodeManager"} <= daemons_on_master
    assert len(status["yarn_nodes"]) == 2
    run = measure(combined, tmp_path / "results", "wordcount", "hadoop", size_bytes=4 * 10**6)
    assert run.valid, [c for c in run.validity.checks if not c.passed]
    assert run.cluster.layout == "master-is-worker"
    master = next(n for n in run.cluster.nodes if n.name == "master")
    assert master.runs_tasks and master.yarn_memory_mb == sizing.yarn_share(spec.master)[0] > 0
    assert master.yarn_memory_mb < next(n for n in run.cluster.nodes if n.name == "worker1").yarn_memory_mb
    # The master's DataNode took its share of the job's blocks, as a worker's does.
    written = run.measurements.intermediate
    assert written is not None and written.nodes["master"]["hdfs_write_bytes"] > 0
