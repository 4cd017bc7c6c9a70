"""Emulated nodes seen by YARN and Spark as their boards, their heaps shrunk to the share of the board's
RAM this host gives them: the board's containers and waves, heaps that fit the node, the boards' own
settings at full size, and a refusal naming the host that would hold a shape whose heaps cannot fit."""

import json
import math
import re
from pathlib import Path

import pytest

from sbclab.cluster import spec
from sbclab.errors import SbclabError
from sbclab.stack import config, daemons, heaps, lifecycle, sizing
from sbclab.stack.choices import StackChoices
from sbclab.stack.distribution import Distribution
from sbclab.stack.versions import STACKS

from .shaped import Shaped

GiB = 2**30
DIST = Distribution(STACKS["lee-park-2026"], Path("/h"), Path("/s"), Path("/j.jar"))
LAYOUT = config.NodeLayout(conf_dir=Path("/c"), disk=Path("/d"), log_dir=Path("/l"))
# Every setting and daemon heap these shapes rendered at memory factor 1 before heaps shrank with it.
FULL_SIZE = Path(__file__).parent / "fixtures" / "sizing" / "full-size-settings.json"
SHAPES = ([(b, p, "separate-master", (), "yarn") for b in ("rpi3b", "rpi4b-4gb", "rpi5b")
           for p in ("stock", "paper", "paper-2021")]
          + [(b, "stock", "master-is-worker", (), "yarn") for b in ("rpi4b-4gb", "rpi5b")]
          + [(b, "stock", "separate-master", ("quick-start",), "yarn") for b in ("rpi3b", "rpi4b-4gb", "rpi5b")]
          + [(b, "stock", "separate-master", (), "standalone") for b in ("rpi2b", "rpi5b")])


def cluster(board: str, workers: int, host_gib: float, preset: str = "paper", layout: str = "separate-master",
            knobs: tuple[str, ...] = (), manager: str = "yarn", settings=()) -> Shaped:
    built = spec.build(backend="emulated", board=board, storage="microsd", workers=workers, cores=2,
                       memory_bytes=int(host_gib * GiB), layout=layout)
    return Shaped(built.model_copy(update={"knobs": knobs}),
                  StackChoices(preset=preset, spark_manager=manager, settings=settings))


def settings(s: Shaped, node: str = "worker1") -> dict[str, dict[str, str]]:
    return config.settings(s.spec, s.choices, s.node(node), LAYOUT, DIST)


def test_boards_given_their_whole_ram_keep_the_settings_they_had():
    """1, 4 and 8 GB boards at memory factor 1 under every preset, in both layouts, with the
    quick-start knob and on Spark's standalone manager."""
    expected = json.loads(FULL_SIZE.read_text())
    for board, preset, layout, knobs, manager in SHAPES:
        s = cluster(board, 2, 128, preset, layout, knobs, manager)
        assert s.scale.memory_factor == 1.0
        for node in (s.master, s.node("worker1")):
            values = settings(s, node.name)
            values.pop("capacity-scheduler")
            found = {"settings": values, "heaps": {d.key: heaps.daemon_heap_mb(d.key, node) for d in daemons.daemons_of(s.choices)}}
            assert found == expected[" ".join([board, preset, layout, *knobs, manager])][node.name], (board, preset, node.name)


def containers(values: dict[str, dict[str, str]]) -> dict[str, int]:
    """Every container size YARN accounts, upstream's where a setting is left out."""
    yarn, mapred, spark = values["yarn-site"], values["mapred-site"], values["spark-defaults"]
    return {**{key: int(yarn[key]) for key in ("yarn.nodemanager.resource.memory-mb", "yarn.nodemanager.resource.cpu-vcores",
                                               "yarn.scheduler.minimum-allocation-mb", "yarn.scheduler.maximum-allocation-mb",
                                               "yarn.scheduler.maximum-allocation-vcores")},
            "am": int(mapred.get("yarn.app.mapreduce.am.resource.mb", sizing.UPSTREAM_AM_MB)),
            "map": int(mapred.get("mapreduce.map.memory.mb", sizing.UPSTREAM_TASK_MB)),
            "reduce": int(mapred.get("mapreduce.reduce.memory.mb", sizing.UPSTREAM_TASK_MB)),
            "executor": sizing.spark_container_mb(spark.get("spark.executor.memory", "1g"), spark.get("spark.executor.memoryOverhead")),
            "spark am": sizing.spark_container_mb(spark.get("spark.yarn.am.memory", "512m"), spark.get("spark.yarn.am.memoryOverhead")),
            "executors awaited": float(spark["spark.scheduler.minRegisteredResourcesRatio"])}


def test_eight_pi5_workers_on_24_gib_get_the_boards_containers_and_heaps_that_fit_their_share():
    shared, board = cluster("rpi5b", 8, 24), cluster("rpi5b", 8, 128)
    factor = shared.scale.memory_factor
    assert 0.29 < factor < 0.32 and board.scale.memory_factor == 1.0
    small, full = settings(shared), settings(board)
    assert containers(small) == containers(full)
    assert containers(small)["yarn.nodemanager.resource.memory-mb"] == 6144  # six 1 GB tasks a node, as on the board
    assert sizing.executors_that_fit(shared.spec, 1408, 896) == sizing.executors_that_fit(board.spec, 1408, 896) == 23

    worker = shared.node("worker1")
    node_mb = worker.memory_bytes // 2**20
    mapred = small["mapred-site"]
    task = math.ceil(1024 * float(mapred["mapreduce.job.heap.memory-mb.ratio"]))
    assert task == pytest.approx(0.8 * 1024 * factor, rel=0.02) and "mapreduce.map.java.opts" not in mapred
    assert sizing.xmx_mb(mapred["yarn.app.mapreduce.am.command-opts"]) == pytest.approx(1024 * factor, rel=0.02)
    assert int(mapred["mapreduce.task.io.sort.mb"]) <= task * sizing.SORT_SHARE
    datanode, nodemanager = heaps.daemon_heap_mb("datanode", worker), heaps.daemon_heap_mb("nodemanager", worker)
    assert datanode == nodemanager == int(512 * factor)
    # The board's worker at its fullest, six tasks, fits the node's share with every JVM's fixed memory.
    assert datanode + nodemanager + 6 * task + 8 * heaps.JVM_OVERHEAD_MB <= node_mb
    assert heaps.daemon_heap_mb("namenode", shared.master) == int(1024 * factor)

    # Spark's least heap binds: an executor keeps 512 MB, and its overhead fills the board's container.
    spark = small["spark-defaults"]
    assert (spark["spark.executor.memory"], spark["spark.executor.memoryOverhead"]) == ("512m", "896m")
    assert (spark["spark.yarn.am.memory"], spark["spark.yarn.am.memoryOverhead"]) == ("256m", "640m")
    assert spark["spark.driver.memory"] == "512m"
    lifecycle.check(*shared)  # both engines, and the daemons alone at cluster up
    heaps.check(shared.spec)


def test_a_preset_s_containers_stay_and_heaps_follow_them():
    """The 2021 seed's Table 11 on five 4 GB workers, each given 0.92 of its board."""
    s = cluster("rpi4b-4gb", 5, 24, preset="paper-2021")
    factor = s.scale.memory_factor
    assert 0.9 < factor < 1
    mapred = settings(s)["mapred-site"]
    assert (mapred["yarn.app.mapreduce.am.resource.mb"], mapred["mapreduce.map.memory.mb"],
            mapred["mapreduce.reduce.memory.mb"]) == ("3072", "2048", "4096")
    assert float(mapred["mapreduce.job.heap.memory-mb.ratio"]) == pytest.approx(0.8 * factor, abs=1e-4)
    assert settings(s)["yarn-site"]["yarn.nodemanager.resource.memory-mb"] == "4096"
    lifecycle.check(*s, ("hadoop",))


def test_a_heap_given_in_java_opts_shrinks_there_and_its_container_stays():
    s = cluster("rpi5b", 8, 24, knobs=("quick-start",),
                settings=(("mapred-site", "mapreduce.reduce.java.opts", "-Xmx800m -verbose:gc"),))
    mapred = settings(s)["mapred-site"]
    factor = s.scale.memory_factor
    # Hadoop would infer a container left unset from the heap and the ratio: it is written out as the board's.
    assert mapred["mapreduce.reduce.memory.mb"] == str(math.ceil(800 / 0.8))
    assert mapred["mapreduce.reduce.java.opts"] == f"-Xmx{int(800 * factor)}m -verbose:gc"
    assert mapred["mapreduce.map.java.opts"] == config.QUICK_START  # its heap from the ratio
    assert mapred["yarn.app.mapreduce.am.command-opts"] == f"-Xmx{int(1024 * factor)}m {config.QUICK_START}"


def host_in_hint(err: SbclabError) -> float:
    return float(re.search(r"at least ([\d.]+) GiB", err.hint).group(1))


def test_a_shape_whose_heaps_cannot_fit_is_refused_with_the_host_that_would_hold_it():
    with pytest.raises(SbclabError) as err:
        lifecycle.check(*cluster("rpi5b", 8, 12), ("spark",))
    assert "its driver 512 MB (its floor)" in err.value.message
    least = host_in_hint(err.value)
    assert 12 < least < 16
    lifecycle.check(*cluster("rpi5b", 8, least), ("spark",))
    with pytest.raises(SbclabError):
        lifecycle.check(*cluster("rpi5b", 8, least - 0.2), ("spark",))
    lifecycle.check(*cluster("rpi5b", 8, 12), ("hadoop",))  # MapReduce's heaps are smaller

    # 1 GB boards' heaps are at their floors already: any share less than the whole board is too small.
    with pytest.raises(SbclabError) as err:
        lifecycle.check(*cluster("rpi3b", 30, 24, preset="stock"), ("hadoop",))
    assert "worker1 (rpi3b) gets 726 MB" in err.value.message and "a task 204 MB (its floor)" in err.value.message
    assert host_in_hint(err.value) > 24


def test_1gb_boards_on_spark_s_standalone_manager_keep_their_executors_heaps():
    """A standalone worker counts executors by their heaps, so they keep the board's."""
    s = cluster("rpi2b", 4, 5, preset="stock", manager="standalone")
    assert s.scale.memory_factor < 1
    spark = settings(s, "master")["spark-defaults"]
    assert spark["spark.executor.memory"] == "512m" and spark["spark.driver.memory"] == "512m"
    with pytest.raises(SbclabError) as err:
        lifecycle.check(*s, ("spark",))
    assert "master (rpi2b)" in err.value.message and "its driver 512 MB (its floor)" in err.value.message
