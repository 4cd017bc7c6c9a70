"""Memory of each node by its board's RAM: daemon heaps, YARN's share of a worker and the sizes of the
jobs' containers, so that a 1 GB board runs what fits on it and an 8 GB board keeps upstream's sizes.

Everything here is the board's, unscaled: an emulated node given a share of its board's RAM (the
memory factor) is still seen by YARN and Spark as the board, so it holds the board's containers and a
job runs in the board's waves. What the node really holds, its heaps shrunk to fit its share, is
heaps.py's.

From 4 GB up the reserve for the OS, the page cache floor, the DataNode and the NodeManager and the
smallest container follow Hortonworks' sizing guide (HDP 2.6, "Determine YARN and MapReduce memory
configuration settings": 1 GB reserved of 4 GB, 2 GB of 8 and 16 GB, 4 GB of 24 GB; containers of at
least 512 MB on 4-8 GB nodes and 1024 MB above). The guide stops at 4 GB; the smaller bands hold the
daemons' resident memory measured on emulated 1 GB nodes (docs/notes.md, "Small boards"). Each
worker's containers are its RAM less the reserve, in whole smallest containers. A MapReduce
ApplicationMaster and a task always fit one worker together: upstream's 1536 and 1024 MB where they
do, else halves of the worker's containers.
"""

import re
from dataclasses import dataclass

from .. import profiles
from ..cluster.spec import ClusterSpec, NodeSpec
from ..errors import SbclabError

MAX_CONTAINER_MB = 8192
MAX_CONTAINER_VCORES = 4
UPSTREAM_AM_MB = 1536  # yarn.app.mapreduce.am.resource.mb
UPSTREAM_TASK_MB = 1024  # mapreduce.map.memory.mb and mapreduce.reduce.memory.mb
UPSTREAM_SORT_MB = 100  # mapreduce.task.io.sort.mb
HEAP_RATIO = 0.8  # mapreduce.job.heap.memory-mb.ratio: a task's heap of its container
UPSTREAM_AM_HEAP_MB = 1024  # yarn.app.mapreduce.am.command-opts: -Xmx1024m
# The map's sort buffer lives in its heap, beside the JVM's own and the records it reads: a quarter
# of a 205 MB heap kept a map of an emulated 1 GB board at 250 MB resident.
SORT_SHARE = 0.25


def board_memory_bytes(node: NodeSpec) -> int:
    """The RAM of the board a node is, or emulates: what YARN and Spark are told it has. (The node's
    memory_bytes is what this host gives it: the board's RAM x the memory factor.)"""
    return int(profiles.board(node.board).ram_gib * 2**30)


@dataclass(frozen=True)
class Band:
    """What a node of up to `up_to_mb` of RAM gives its daemons and containers."""

    up_to_mb: int
    reserved_mb: int  # a worker's OS, page cache floor, DataNode and NodeManager
    smallest_container_mb: int
    datanode_heap_mb: int
    nodemanager_heap_mb: int
    namenode_heap_mb: int
    resourcemanager_heap_mb: int
    historyserver_heap_mb: int


# Bands end between the sizes boards are sold with: a 4 GB Pi 4 shows about 3.7 GiB.
BANDS = (
    Band(1536, 512, 128, 96, 128, 160, 192, 128),
    Band(3072, 768, 256, 128, 192, 256, 320, 192),
    Band(6144, 1024, 512, 256, 384, 512, 768, 384),
    Band(20480, 2048, 1024, 512, 512, 1024, 1024, 512),
    Band(10**9, 4096, 1024, 1024, 1024, 2048, 2048, 1024),
)


def band(memory_bytes: int) -> Band:
    ram_mb = memory_bytes // 2**20
    return next(b for b in BANDS if ram_mb <= b.up_to_mb)


# Spark's standalone master and workers take the heaps of the YARN daemons they stand in for.
# Spark's History Server reads the event logs the JobHistory server's heap would hold the jobs of.
STANDS_IN_FOR = {"sparkmaster": "resourcemanager", "sparkworker": "nodemanager", "sparkhistory": "historyserver"}


def heap_in_band(found: Band, daemon_key: str) -> int:
    return getattr(found, f"{STANDS_IN_FOR.get(daemon_key, daemon_key)}_heap_mb")


def board_daemon_heap_mb(daemon_key: str, node: NodeSpec) -> int:
    """The -Xmx of a Hadoop or Spark daemon on the node's board (heaps.daemon_heap_mb: on this node)."""
    return heap_in_band(band(board_memory_bytes(node)), daemon_key)


@dataclass(frozen=True)
class WorkerMemory:
    ram_mb: int
    reserved_mb: int
    containers_mb: int  # yarn.nodemanager.resource.memory-mb
    smallest_container_mb: int  # yarn.scheduler.minimum-allocation-mb


def master_daemons_mb(memory_bytes: int) -> int:
    """The heaps of the master's daemons (NameNode, ResourceManager, JobHistory server), which a
    master that is also a worker keeps beside its containers."""
    found = band(memory_bytes)
    return found.namenode_heap_mb + found.resourcemanager_heap_mb + found.historyserver_heap_mb


def worker_memory(memory_bytes: int, also_master: bool = False) -> WorkerMemory:
    """A worker's RAM, its reserve (and the master's daemons, when it is the master too) and its
    containers, refused when an ApplicationMaster and a task cannot both fit."""
    found = band(memory_bytes)
    ram_mb = memory_bytes // 2**20
    unit = found.smallest_container_mb
    reserved = found.reserved_mb + (master_daemons_mb(memory_bytes) if also_master else 0)
    containers = (ram_mb - reserved) // unit * unit
    if containers < 2 * unit:
        daemons = "OS, DataNode, NodeManager and the master's daemons" if also_master else "OS, DataNode and NodeManager"
        raise SbclabError(
            f"A worker with {ram_mb} MB of RAM cannot run YARN: {reserved} MB go to the {daemons} and an "
            f"ApplicationMaster and a task need {2 * unit} MB more; it has {max(0, containers)} MB.",
            "Run node benchmarks on it (they need no YARN), use a board with more RAM"
            + (", or keep the master on a board of its own (layout separate-master)." if also_master else "."))
    return WorkerMemory(ram_mb, reserved, containers, unit)


def node_memory(node: NodeSpec) -> WorkerMemory:
    """What one task-running node's board gives its daemons and containers."""
    return worker_memory(board_memory_bytes(node), also_master=node.role == "master")


def yarn_share(node: NodeSpec) -> tuple[int, int]:
    """(container memory in MB, vcores) of a node that runs tasks; (0, 0) for a master that does not."""
    if not node.runs_tasks:
        return 0, 0
    return node_memory(node).containers_mb, profiles.board(node.board).cores


def largest_container(spec: ClusterSpec) -> tuple[int, int]:
    """(MB, vcores) of the largest container any worker can hold."""
    shares = [yarn_share(w) for w in spec.worker_nodes]
    return min(MAX_CONTAINER_MB, min(mb for mb, _ in shares)), min(MAX_CONTAINER_VCORES, min(v for _, v in shares))


def smallest_container(spec: ClusterSpec) -> int:
    """yarn.scheduler.minimum-allocation-mb: the smallest worker's."""
    return min(node_memory(w).smallest_container_mb for w in spec.worker_nodes)


def mapreduce_memory(spec: ClusterSpec) -> dict[str, str]:
    """The ApplicationMaster's and tasks' containers where upstream's do not fit beside each other on
    the smallest worker (else nothing: upstream's sizes stand), with each task's sort buffer inside
    its heap."""
    smallest = min((node_memory(w) for w in spec.worker_nodes), key=lambda m: m.containers_mb)
    unit = smallest.smallest_container_mb
    if UPSTREAM_AM_MB + UPSTREAM_TASK_MB <= smallest.containers_mb:
        return {}
    task = max(unit, smallest.containers_mb // 2 // unit * unit)
    am = max(unit, (smallest.containers_mb - task) // unit * unit)
    heap = int(task * HEAP_RATIO)
    return {"yarn.app.mapreduce.am.resource.mb": str(am), "mapreduce.map.memory.mb": str(task),
            "mapreduce.reduce.memory.mb": str(task),
            "mapreduce.task.io.sort.mb": str(min(UPSTREAM_SORT_MB, int(heap * SORT_SHARE)))}


SPARK_OVERHEAD_MB = 384  # spark.executor.memoryOverhead and spark.yarn.am.memoryOverhead: at least this
UPSTREAM_EXECUTOR_MB = 1024  # spark.executor.memory
UPSTREAM_SPARK_AM_MB = 512  # spark.yarn.am.memory (client mode)
# Spark refuses a driver or an executor whose heap holds less than 1.5 x its 300 MB reserve (450 MB);
# -Xmx512m leaves the JVM about 491 MB of it.
SMALL_EXECUTOR_MB = 512
SMALL_OVERHEAD_MB = 128
SMALL_SPARK_AM_MB = 256


def spark_memory(spec: ClusterSpec) -> dict[str, str]:
    """Spark's executors and ApplicationMaster sized down where upstream's do not fit beside each
    other on the smallest worker (else nothing)."""
    unit = smallest_container(spec)
    smallest = min(yarn_share(w)[0] for w in spec.worker_nodes)

    def rounded(mb: int) -> int:
        return -(-mb // unit) * unit
    if rounded(UPSTREAM_EXECUTOR_MB + SPARK_OVERHEAD_MB) + rounded(UPSTREAM_SPARK_AM_MB + SPARK_OVERHEAD_MB) <= smallest:
        return {}
    return {"spark.executor.memory": f"{SMALL_EXECUTOR_MB}m", "spark.executor.memoryOverhead": f"{SMALL_OVERHEAD_MB}m",
            "spark.yarn.am.memory": f"{SMALL_SPARK_AM_MB}m", "spark.yarn.am.memoryOverhead": f"{SMALL_OVERHEAD_MB}m",
            "spark.driver.memory": f"{SMALL_EXECUTOR_MB}m"}


def spark_standalone_memory(spec: ClusterSpec) -> dict[str, str]:
    """Executor and driver heaps on Spark's standalone manager, where a worker offers its containers'
    memory (no NodeManager runs beside it): upstream's 1 GB where it fits, else Spark's least."""
    offered = min(yarn_share(w)[0] for w in spec.worker_nodes)
    executor = UPSTREAM_EXECUTOR_MB if UPSTREAM_EXECUTOR_MB <= offered else SMALL_EXECUTOR_MB
    driver = UPSTREAM_EXECUTOR_MB if band(board_memory_bytes(spec.master)).up_to_mb > BANDS[0].up_to_mb else SMALL_EXECUTOR_MB
    return {"spark.executor.memory": f"{executor}m", "spark.driver.memory": f"{driver}m"}


def check(spec: ClusterSpec, where: str = "") -> None:
    """Refuse a cluster whose workers' boards cannot hold YARN's containers, naming the node."""
    for worker in spec.worker_nodes:
        try:
            yarn_share(worker)
        except SbclabError as err:
            raise SbclabError(f"{where}{worker.name} ({worker.board}): {err.message}", err.hint) from err


def jvm_megabytes(memory: str) -> float:
    """MB in a JVM memory setting as Spark writes them: 512m, 1g, or bytes."""
    units = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
    text = memory.strip().lower().removesuffix("b")
    return float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text) / 2**20


XMX = re.compile(r"-Xmx(\d+)([kKmMgG]?)")


def xmx_mb(java_opts: str | None) -> int | None:
    """The heap a JVM's options give it (the last -Xmx wins), or None."""
    found = XMX.findall(java_opts or "")
    return int(jvm_megabytes(found[-1][0] + (found[-1][1] or "b"))) if found else None


def spark_container_mb(memory: str, overhead: str | None) -> int:
    """A Spark process's YARN container: its heap and the overhead given, else Spark's (10 %, at least 384 MB)."""
    heap = jvm_megabytes(memory)
    return int(heap + (jvm_megabytes(overhead) if overhead else max(SPARK_OVERHEAD_MB, heap * 0.10)))


def executors_that_fit(spec: ClusterSpec, executor_mb: int, application_master_mb: int) -> int:
    """Spark executors YARN can hold at once beside one application's master, each container
    rounded up to whole smallest containers (the capacity scheduler counts memory only)."""
    unit = smallest_container(spec)

    def rounded(mb: int) -> int:
        return -(-mb // unit) * unit
    shares = sorted((yarn_share(w)[0] for w in spec.worker_nodes), reverse=True)
    if not shares:
        return 0
    shares[0] -= rounded(application_master_mb)
    return sum(max(0, share) // rounded(executor_mb) for share in shares)
