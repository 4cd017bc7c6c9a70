"""A job's task count and the task slots its cluster offered, from a stored run, and the task count
of a seed's cell: what a speedup's waves are made of.

A seed's speedup is a property of its waves: 100 Pi maps on one Pi 5 worker (three 1 GB map
containers beside the ApplicationMaster in YARN's 5 GB) are 34 waves, on two 13. A run that keeps
the seed's tasks keeps its waves; one that cut them (4 maps: two waves on one worker, one on two)
has another shape, whatever its times.
"""

import math
from typing import Any

from ..results.schema import RunRecord
from ..units import parse_size

SEEDS_BLOCK_SIZE = 128 * 2**20  # HDFS's default, which the seeds kept
# Hadoop 3's defaults where a run's configuration does not set them (mapred-default.xml).
MAP_MB, APP_MASTER_MB = 1024, 1536
_READS_HDFS = {"wordcount", "grep", "terasort", "sort"}


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def of_run(run: RunRecord) -> int | None:
    """The run's task count: Pi's maps, TestDFSIO's files, the input's HDFS blocks; None where unknown."""
    if run.workload == "pi":
        return _int(run.parameters.get("maps"))
    if run.workload.startswith("dfsio"):
        return _int(run.parameters.get("files"))
    size = _int(run.parameters.get("size_bytes"))
    if run.workload in _READS_HDFS and size:
        block = _int(run.configuration.get("hdfs-site", {}).get("dfs.blocksize")) or SEEDS_BLOCK_SIZE
        return math.ceil(size / block)
    return None


def of_seed(workload: str, size: str | int | None, parameters: dict[str, Any], size_meaning: str = "total") -> int | None:
    """The task count of a seed's cell, by the same rules, on the seed's 128 MiB blocks."""
    if workload == "pi":
        return _int(parameters.get("maps"))
    if workload.startswith("dfsio"):
        return _int(parameters.get("files"))
    if workload in _READS_HDFS and size:
        total = parse_size(size) if isinstance(size, str) else int(size)
        return math.ceil(total / SEEDS_BLOCK_SIZE)
    return None


def slots(run: RunRecord) -> int | None:
    """Tasks the cluster ran at once: YARN's map containers on the nodes that run tasks, less the
    ApplicationMaster's; Spark's executor cores. None where the run does not say."""
    settings = run.configuration
    if run.engine == "hadoop":
        mapred = settings.get("mapred-site", {})
        map_mb = _int(mapred.get("mapreduce.map.memory.mb")) or MAP_MB
        master_mb = _int(mapred.get("yarn.app.mapreduce.am.resource.mb")) or APP_MASTER_MB
        per_node = [n.yarn_memory_mb // map_mb for n in run.cluster.task_nodes if n.yarn_memory_mb]
        if not per_node:
            return None
        return max(1, sum(per_node) - math.ceil(master_mb / map_mb))
    if run.engine == "spark":
        spark = settings.get("spark-defaults", {})
        instances, cores = _int(spark.get("spark.executor.instances")), _int(spark.get("spark.executor.cores"))
        return instances * cores if instances and cores else None
    return None


def waves(run: RunRecord) -> float | None:
    """The run's task count over its slots (fractional: tasks of one wave do not start in lockstep)."""
    count, offered = of_run(run), slots(run)
    return count / offered if count and offered else None
