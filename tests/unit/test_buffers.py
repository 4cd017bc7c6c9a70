"""A task holding a share of the seed's data gets that share of the board's buffers: a map spills at
the board's threshold x the share, a reduce keeps that share of the board's shuffle buffer in memory,
an executor that share of its execution memory; whatever the node's heaps shrank to, and nothing
changes where the data is the seed's."""

from pathlib import Path

import pytest

from sbclab.cluster import spec
from sbclab.stack import buffers, config, heaps, sizing
from sbclab.stack.choices import StackChoices
from sbclab.stack.distribution import Distribution
from sbclab.stack.versions import STACKS

GiB = 2**30
DIST = Distribution(STACKS["lee-park-2026"], Path("/h"), Path("/s"), Path("/j.jar"))
LAYOUT = config.NodeLayout(conf_dir=Path("/c"), disk=Path("/d"), log_dir=Path("/l"))


def rendered(data_scale: float, host_gib: float = 128, workers: int = 2, manager: str = "yarn", settings=()):
    built = spec.build(backend="emulated", board="rpi5b", storage="nvme", workers=workers, cores=2,
                       memory_bytes=int(host_gib * GiB))
    choices = StackChoices(preset="paper", data_scale=data_scale, spark_manager=manager, settings=settings)
    return config.settings(built, choices, built.node("worker1"), LAYOUT, DIST)


def test_at_the_seeds_data_the_buffers_are_the_boards():
    mapred = rendered(1.0)["mapred-site"]
    assert buffers.SPILL_PERCENT not in mapred and buffers.SHUFFLE_BUFFER not in mapred
    assert buffers.SPARK_FRACTION not in rendered(1.0)["spark-defaults"]


@pytest.mark.parametrize("share", [0.5, 0.0387, 0.0123, 0.001])
@pytest.mark.parametrize("host_gib", [128, 24])  # the board's whole RAM, and nine nodes' 0.30 of it
def test_a_maps_first_spill_comes_at_the_boards_threshold_times_the_share(share, host_gib):
    mapred = rendered(share, host_gib, workers=8)["mapred-site"]
    spill_at_mb = int(mapred[buffers.SORT_MB]) * float(mapred[buffers.SPILL_PERCENT])
    board_mb = sizing.UPSTREAM_SORT_MB * buffers.UPSTREAM_SPILL_PERCENT * share
    if board_mb >= 1:  # below 1 MB the sort buffer's whole MB bounds it
        assert spill_at_mb == pytest.approx(board_mb, rel=1e-3)
    assert int(mapred[buffers.SORT_MB]) >= 1 and float(mapred[buffers.SPILL_PERCENT]) <= 1


@pytest.mark.parametrize("host_gib", [128, 24])
def test_a_reduce_keeps_the_share_of_the_boards_shuffle_buffer_in_its_heap(host_gib):
    board = rendered(1.0, host_gib=128, workers=8)["mapred-site"]
    node = rendered(0.05, host_gib, workers=8)["mapred-site"]
    board_bytes = heaps.task_on_board(board, "reduce")[1] * buffers.UPSTREAM_SHUFFLE_BUFFER
    node_bytes = heaps.task_on_board(node, "reduce")[1] * float(node[buffers.SHUFFLE_BUFFER])
    assert node_bytes == pytest.approx(board_bytes * 0.05, rel=1e-3)
    if host_gib == 24:  # the heap shrank with the node, so the share of it grew back
        assert heaps.task_on_board(node, "reduce")[1] < heaps.task_on_board(board, "reduce")[1]


@pytest.mark.parametrize("manager", ["yarn", "standalone"])
@pytest.mark.parametrize("host_gib", [128, 24])
def test_an_executor_keeps_the_share_of_the_boards_execution_memory(manager, host_gib):
    board = rendered(1.0, 128, workers=8, manager=manager)["spark-defaults"]
    node = rendered(0.05, host_gib, workers=8, manager=manager)["spark-defaults"]

    def usable(values, fraction):
        return (sizing.jvm_megabytes(values.get("spark.executor.memory", "1024m")) - buffers.SPARK_RESERVED_MB) * fraction

    assert usable(node, float(node[buffers.SPARK_FRACTION])) == pytest.approx(
        usable(board, buffers.UPSTREAM_SPARK_FRACTION) * 0.05, rel=1e-3)


def test_a_buffer_set_by_the_experiment_is_the_boards_and_never_grows():
    given = (("mapred-site", buffers.SORT_MB, "50"), ("mapred-site", buffers.SHUFFLE_BUFFER, "0.5"),
             ("spark-defaults", buffers.SPARK_FRACTION, "0.4"))
    values = rendered(0.1, settings=given)
    mapred = values["mapred-site"]
    assert int(mapred[buffers.SORT_MB]) * float(mapred[buffers.SPILL_PERCENT]) == pytest.approx(50 * 0.8 * 0.1)
    assert float(mapred[buffers.SHUFFLE_BUFFER]) == pytest.approx(0.05)
    assert float(values["spark-defaults"][buffers.SPARK_FRACTION]) == pytest.approx(0.04)
    # A share of 1 at a shrunk heap would need more than the board's share of the heap: kept at it.
    assert float(rendered(1.0, 24, workers=8)["mapred-site"].get(buffers.SHUFFLE_BUFFER, 0.7)) <= 0.7
