"""The buffers a task fills, when its data is a share of the seed's.

A reproduction scales the seed's data, and the HDFS block with it, so a job keeps the seed's task
count (experiments/reproduce.py); each task then holds `data_scale` of the seed's bytes. Whether a
task spills, and how often, is a matter of its data against its buffers: a map spills when its output
passes the sort buffer's spill threshold, a reduce merges to disk when the map outputs it fetched fill
its share of its heap, and a Spark task spills when its execution memory fills. Those buffers are
scaled by the same share, so a task spills as often as the seed's did, and the intermediate data
written to the nodes' disks (what the 2026 seed measured) keeps the seed's proportion to the input.

The board's buffers are what its settings give (upstream's where none do); on a node whose heaps
shrank (heaps.py) a buffer kept as a share of the heap is set against the node's heap, so the buffer
in bytes is still the board's x the data's share. A buffer never grows past the board's setting.
"""

import math

from . import heaps, sizing

SORT_MB = "mapreduce.task.io.sort.mb"
SPILL_PERCENT = "mapreduce.map.sort.spill.percent"
SHUFFLE_BUFFER = "mapreduce.reduce.shuffle.input.buffer.percent"
SPARK_FRACTION = "spark.memory.fraction"

UPSTREAM_SPILL_PERCENT = 0.80
UPSTREAM_SHUFFLE_BUFFER = 0.70
UPSTREAM_SPARK_FRACTION = 0.6
# Spark sets this much of an executor's heap aside before its memory fraction applies.
SPARK_RESERVED_MB = 300


def _share(value: float) -> str:
    return f"{max(value, 1e-4):.4g}"


def mapreduce_settings(share: float, board: dict[str, str], node: dict[str, str]) -> dict[str, str]:
    """The mapred-site settings that scale a task's buffers with its data: `board` is the board's
    mapred-site, `node` the same after heaps.py shrank it to the node; nothing at data_scale 1.

    The sort buffer is whole MB, so it is rounded up and the spill threshold lowered to put the map's
    first spill at the board's threshold x the share, to the byte. The reduce's in-memory shuffle
    buffer is a share of its heap: it becomes the share that holds the board's buffer x the data's."""
    if share >= 1:
        return {}
    board_sort = int(board.get(SORT_MB, sizing.UPSTREAM_SORT_MB))
    threshold_mb = board_sort * float(board.get(SPILL_PERCENT, UPSTREAM_SPILL_PERCENT)) * share
    sort = max(1, min(math.ceil(board_sort * share), int(node.get(SORT_MB, board_sort))))
    found = {SORT_MB: str(sort), SPILL_PERCENT: _share(min(1.0, threshold_mb / sort))}
    board_heap, node_heap = (heaps.task_on_board(settings, "reduce")[1] for settings in (board, node))
    buffer = float(board.get(SHUFFLE_BUFFER, UPSTREAM_SHUFFLE_BUFFER))
    found[SHUFFLE_BUFFER] = _share(min(buffer, buffer * share * board_heap / node_heap))
    return found


def spark_settings(share: float, board: dict[str, str], node: dict[str, str]) -> dict[str, str]:
    """The spark-defaults that scale an executor's execution and storage memory with its data:
    spark.memory.fraction of what the node's executor heap leaves after Spark's reserve, set to hold
    the board's x the data's share; nothing at data_scale 1."""
    if share >= 1:
        return {}
    key, upstream = heaps.EXECUTOR[0], heaps.EXECUTOR[2]
    board_heap, node_heap = (sizing.jvm_megabytes(settings.get(key, upstream)) for settings in (board, node))
    fraction = float(board.get(SPARK_FRACTION, UPSTREAM_SPARK_FRACTION))
    usable = max(1.0, node_heap - SPARK_RESERVED_MB)
    return {SPARK_FRACTION: _share(min(fraction, fraction * share * (board_heap - SPARK_RESERVED_MB) / usable))}
