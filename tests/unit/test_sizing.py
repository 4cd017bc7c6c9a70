"""Memory sizing by the board's RAM: what fits a 1 GB board, upstream's sizes where they fit, and
refusals that name the numbers (test_heaps.py: the same boards emulated on a share of their RAM)."""

import hashlib
import json
from pathlib import Path

import pytest

from sbclab.cluster import spec
from sbclab.errors import SbclabError
from sbclab.experiments import model
from sbclab.stack import config, daemons, heaps, lifecycle, sizing
from sbclab.stack.distribution import Distribution
from sbclab.stack.choices import StackChoices
from sbclab.stack.versions import STACKS

from .shaped import Shaped

GiB = 2**30


def build(board: str, workers: int = 2, preset: str = "stock", **kw) -> Shaped:
    return Shaped(spec.build(backend="emulated", board=board, storage="microsd", workers=workers, cores=2,
                             memory_bytes=24 * GiB, **kw), StackChoices(preset=preset))


def test_a_1gb_worker_holds_an_application_master_and_a_task_of_its_size():
    cluster = build("rpi3b")
    memory = sizing.worker_memory(cluster.worker_nodes[0].memory_bytes)
    assert (memory.ram_mb, memory.reserved_mb, memory.containers_mb, memory.smallest_container_mb) == (1024, 512, 512, 128)
    mapreduce = sizing.mapreduce_memory(cluster.spec)
    am, task = int(mapreduce["yarn.app.mapreduce.am.resource.mb"]), int(mapreduce["mapreduce.map.memory.mb"])
    assert am + task <= memory.containers_mb and am >= 128 and task >= 128
    assert int(mapreduce["mapreduce.task.io.sort.mb"]) <= 0.25 * task
    config.check_memory(*cluster, ("hadoop",))
    assert heaps.daemon_heap_mb("datanode", cluster.worker_nodes[0]) < heaps.daemon_heap_mb("datanode", build("rpi5b").worker_nodes[0])


def test_boards_of_4_and_8_gb_keep_upstreams_job_sizes():
    for board, containers, unit in (("rpi4b-4gb", 3072, 512), ("rpi5b", 6144, 1024)):
        cluster = build(board, workers=1)
        memory = sizing.worker_memory(cluster.worker_nodes[0].memory_bytes)
        assert (memory.containers_mb, memory.smallest_container_mb) == (containers, unit)
        assert sizing.mapreduce_memory(cluster.spec) == {} and sizing.spark_memory(cluster.spec) == {}
        lifecycle.check(*cluster)  # an ApplicationMaster and a task, or an executor, fit the one worker


def test_spark_on_yarn_does_not_fit_a_1gb_worker_and_says_by_how_much():
    with pytest.raises(SbclabError) as err:
        config.check_memory(*build("rpi3b"), ("spark",))
    assert "512 MB of containers" in err.value.message and "standalone" in err.value.hint


def test_the_496mb_raspberry_pi_b_runs_no_yarn_and_says_what_it_can_run():
    with pytest.raises(SbclabError) as err:
        lifecycle.check(*build("rpi1b"), ())
    assert "507 MB of RAM" in err.value.message and "node benchmarks" in err.value.hint


def test_the_2021_seeds_settings_do_not_fit_one_4gb_worker():
    """Its Table 11: an ApplicationMaster of 3072 MB and reduces of 4096 MB on NodeManagers of 4096 MB."""
    with pytest.raises(SbclabError) as err:
        lifecycle.check(*build("rpi4b-4gb", workers=1, preset="paper-2021"), ("hadoop",))
    assert "3072 MB" in err.value.message and "4096 MB" in err.value.message
    lifecycle.check(*build("rpi4b-4gb", workers=2, preset="paper-2021"), ("hadoop",))


def with_settings(cluster: Shaped, **files: dict[str, str]) -> Shaped:
    return cluster.chosen(settings=tuple((file.replace("_", "-"), name, value)
                                         for file, props in files.items() for name, value in props.items()))


def test_settings_that_overcommit_a_board_are_refused_naming_its_ram():
    pi = build("rpi5b", workers=2)
    with pytest.raises(SbclabError) as err:
        lifecycle.check(*with_settings(pi, yarn_site={"yarn.nodemanager.resource.memory-mb": "64000"},
                                      mapred_site={"mapreduce.map.memory.mb": "30000"}), ("hadoop",))
    assert "NodeManager 64000 MB" in err.value.message and "rpi5b has 8192 MB of RAM" in err.value.message
    assert "at most 8192 MB" in err.value.hint and "6144 MB" in err.value.hint
    with pytest.raises(SbclabError) as err:
        lifecycle.check(*with_settings(pi, yarn_site={"yarn.nodemanager.resource.memory-mb": "7000"},
                                      mapred_site={"mapreduce.map.memory.mb": "30000"}), ("hadoop",))
    assert "30720 MB for a task" in err.value.message and "7000 MB of containers" in err.value.message
    assert "cluster.settings" in err.value.hint
    with pytest.raises(SbclabError, match="14336 MB for an executor"):
        config.check_memory(*with_settings(pi, spark_defaults={"spark.executor.memory": "12g"}), ("spark",))
    # Up to the board's RAM is the user's to give; a preset's (the 2021 seed's 4096 MB) is not checked against it.
    config.check_memory(*with_settings(pi, yarn_site={"yarn.nodemanager.resource.memory-mb": "8192"}), ("hadoop",))
    config.check_memory(*build("rpi4b-4gb", preset="paper-2021"), ("hadoop",))


@pytest.mark.parametrize("name, value", [("yarn.nodemanager.resource.memory-mb", "lots"),
                                         ("yarn.nodemanager.resource.memory-mb", "0"),
                                         ("mapreduce.map.memory.mb", "1.5"), ("spark.executor.memory", "huge"),
                                         ("spark.memory.fraction", "2"), ("spark.executor.instances", "-1")])
def test_a_sizing_setting_that_is_no_number_is_refused_by_name(name, value):
    file = "yarn-site" if name.startswith("yarn") else "mapred-site" if name.startswith("mapreduce") else "spark-defaults"
    with pytest.raises(SbclabError) as err:
        model.parse({"workloads": ["pi"], "cluster": {"settings": {file: {name: value}}}}, "x.yaml")
    assert f"cluster.settings: {file} {name} is '{value}', not " in err.value.message
    model.parse({"workloads": ["pi"], "cluster": {"settings": {"mapred-site": {"mapreduce.map.memory.mb": -1}}}})


def test_spark_standalone_fits_1gb_workers_and_runs_no_mapreduce():
    """Hajji & Tso's system: no NodeManager, each worker's 512 MB to one executor of Spark's least heap."""
    cluster = build("rpi2b").chosen(spark_manager="standalone")
    assert sizing.spark_standalone_memory(cluster.spec) == {"spark.executor.memory": "512m", "spark.driver.memory": "512m"}
    config.check_memory(*cluster, ("spark",))
    with pytest.raises(SbclabError) as err:
        config.check_memory(*cluster, ("hadoop",))
    assert "YARN" in err.value.message
    assert [d.key for d in daemons.daemons_of(cluster.choices)] == ["namenode", "datanode", "sparkmaster", "sparkworker"]
    assert heaps.daemon_heap_mb("sparkworker", cluster.worker_nodes[0]) == heaps.daemon_heap_mb("nodemanager", cluster.worker_nodes[0])


def test_a_standalone_clusters_spark_defaults_name_its_master_and_every_core():
    cluster = build("rpi2b").chosen(spark_manager="standalone")
    layout = config.NodeLayout(conf_dir=Path("/c"), disk=Path("/d"), log_dir=Path("/l"))
    dist = Distribution(STACKS["lee-park-2026"], Path("/h"), Path("/s"), Path("/j.jar"))
    values = config.settings(*cluster, cluster.master, layout, dist)["spark-defaults"]
    assert values["spark.master"] == f"spark://{cluster.master.address}:7077"
    assert values["spark.cores.max"] == "8" and values["spark.scheduler.minRegisteredResourcesRatio"] == "1.0"
    assert values["spark.executor.memory"] == "512m"


def test_the_spark_manager_layout_runtime_stack_and_fault_key_a_cell_only_when_they_are_not_the_first_ones():
    raw = {"workloads": ["pi"], "engines": ["spark"], "repetitions": 1, "stacks": ["lee-park-2026"]}
    yarn = model.cells(model.parse(raw))[0]
    later = ("spark_manager", "layout", "runtime", "stack", "fault", "variant", "job_settings")
    digest = json_digest({k: v for k, v in yarn.model_dump().items() if k not in later})
    assert yarn.key == digest, "the cells stored before the dimensions keep their keys"
    standalone = model.cells(model.parse({**raw, "cluster": {"spark_manager": "standalone"}}))[0]
    assert standalone.key != yarn.key and standalone.spark_manager == "standalone"
    swept = model.cells(model.parse({**raw, "layouts": ["separate-master", "master-is-worker"],
                                     "runtimes": ["native", "container"]}))
    assert len({c.key for c in swept}) == 4 and len({c.shape for c in swept}) == 4
    assert yarn.key in {c.key for c in swept}
    faulted = model.cells(model.parse({**raw, "faults": [{"kind": "pause", "for_s": 30}]}))
    assert [c.fault for c in faulted] == [None, {"kind": "pause", "for_s": 30.0}]
    assert faulted[0].key == yarn.key and faulted[1].key != yarn.key and "under pause on random" in faulted[1].label()
    assert "master-is-worker container" in next(c for c in swept if c.layout != "separate-master"
                                                and c.runtime == "container").label()
    stacks = model.cells(model.parse({**raw, "stacks": ["lee-park-2026", "current"]}))
    assert stacks[0].key == yarn.key and stacks[1].key != yarn.key and stacks[1].shape[-1] == "current"
    assert "current" in stacks[1].label()


def test_job_settings_variants_alternate_within_a_cell_and_key_it():
    raw = {"workloads": ["wordcount"], "engines": ["hadoop"], "repetitions": 2, "sizes": ["16MB"]}
    plain = model.cells(model.parse(raw))
    variants = {"stock": {}, "compressed": {"mapred-site": {"mapreduce.map.output.compress": True}}}
    both = model.cells(model.parse({**raw, "variants": variants}))
    assert [(c.repetition, c.variant) for c in both] == [(1, "stock"), (1, "compressed"), (2, "stock"),
                                                          (2, "compressed")]
    assert both[1].job_settings == {"mapred-site": {"mapreduce.map.output.compress": "true"}}
    assert both[0].job_settings is None and both[0].key != plain[0].key  # a named variant is a cell of its own
    assert len({c.key for c in both}) == 4 and "compressed" in both[1].label()
    for refused, says in [({"yarn-site": {"yarn.nodemanager.resource.memory-mb": "4096"}}, "read by the daemons"),
                          ({"mapred-site": {"mapreduce.jobhistory.cleaner.enable": "false"}}, "not a job's setting"),
                          ({"hdfs-site": {"dfs.namenode.handler.count": "20"}}, "not a job's setting"),
                          ({"spark-defaults": {"spark.master": "local"}}, "not a job's setting")]:
        with pytest.raises(SbclabError, match=says):
            model.parse({**raw, "variants": {"bad": refused}})


def json_digest(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:20]


class _Files:
    """A transport that keeps what is written to the master in memory."""

    def __init__(self, cluster):
        self.spec, self.files, self.removed = cluster, {}, []

    def node_dir(self, node):
        return Path("/nodes") / node.name

    def node_disk(self, node):
        return Path("/disks") / node.name

    shares_host = False

    def base_env(self, node):
        return {}

    def make_dirs(self, node, folders, fresh=()):
        pass

    def put(self, node, folder, files):
        self.files.update({folder / name: text for name, text in files.items()})

    def remove(self, node, path):
        self.removed.append(path)


def test_a_jobs_settings_reach_its_client_only_while_it_runs():
    cluster = build("rpi4b-4gb")
    transport = _Files(cluster.spec)
    dist = Distribution(STACKS["lee-park-2026"], Path("/h"), Path("/s"), Path("/j.jar"))
    values = {"mapred-site": {"mapreduce.job.reduces": "2"}, "core-site": {"fs.defaultFS": "hdfs://m:9000"}}
    stack = daemons.Stack(transport, dist, daemons.StackRecord(configuration=values))
    master = cluster.master
    plain = stack.java(master, "Main", [], client=True)
    with stack.job_settings({"mapred-site": {"mapreduce.job.reduces": "4"}}) as merged:
        assert merged["mapred-site"]["mapreduce.job.reduces"] == "4" and merged["core-site"] == values["core-site"]
        job_conf = stack.conf_dir(master, client=True)
        assert job_conf != stack.layout(master).conf_dir
        assert str(job_conf) in stack.java(master, "Main", [], client=True)[-2]
        assert stack.env(master, client=True)["HADOOP_CONF_DIR"] == str(job_conf)
        # The daemons and the workers keep the cluster's configuration.
        assert str(job_conf) not in stack.java(master, "Main", [])[-2]
        assert stack.env(cluster.worker_nodes[0], client=True)["HADOOP_CONF_DIR"] != str(job_conf)
        written = transport.files[job_conf / "mapred-site.xml"]
        assert "<name>mapreduce.job.reduces</name><value>4</value>" in written
    assert stack.java(master, "Main", [], client=True) == plain and transport.removed == [job_conf]
    with pytest.raises(SbclabError, match="read by the daemons"):
        with stack.job_settings({"yarn-site": {"yarn.nodemanager.resource.memory-mb": "1"}}):
            pass
    with stack.job_settings(None) as unchanged:
        assert unchanged == values and stack.job_conf_dir is None
