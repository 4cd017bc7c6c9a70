"""What an emulated node really holds: its board's heaps, shrunk by the memory factor.

YARN and Spark see each node as the board it emulates (sizing.py), so a node holds the board's
containers and a job runs in the board's waves. What runs in those containers, and the daemons
beside them, must fit the node's memory cgroup: the board's RAM x the memory factor (cluster/spec.py).
So every heap is the board's x that factor, never more than the board's and never under its floor:
the daemons'; a MapReduce task's, through mapreduce.job.heap.memory-mb.ratio so that it follows
whatever container a preset gives, with its sort buffer inside it; the MapReduce ApplicationMaster's;
and Spark's executors', ApplicationMaster's and driver's, whose YARN overhead grows by what their
heap lost, so YARN counts each container at the board's size. A container then holds less than YARN
accounts it, which YARN's physical-memory check never holds against it (it kills only above).

The floors are the heaps the smallest boards run with: the 1 GB band's daemon heaps and a 1 GB
board's tasks (docs/notes.md, "Small boards"), and Spark's least heap for an executor or a driver.
A JVM's fixed memory beside its heap (metaspace, compiled code, thread stacks) does not shrink at all.
Where these leave a node too small for its daemons, an ApplicationMaster and a task, check() refuses
the shape and names the host memory that would hold it. At memory factor 1 nothing here applies:
the node is the board, and the board's settings stand.
"""

import math
from dataclasses import dataclass

from ..cluster.spec import HOST_RESERVED_BYTES, ClusterSpec, NodeSpec
from ..errors import SbclabError
from . import sizing

MAPREDUCE_HEAP_FLOOR_MB = int(256 * sizing.HEAP_RATIO)  # a 1 GB board's tasks: 256 MB containers
SPARK_HEAP_FLOOR_MB = sizing.SMALL_EXECUTOR_MB  # Spark refuses an executor or driver heap under 450 MB
SPARK_AM_FLOOR_MB = sizing.SMALL_SPARK_AM_MB  # a client-mode ApplicationMaster runs no Spark memory manager
# Resident memory beside the heap, which no -Xmx shrinks: 40-90 MB for the DataNode, NodeManager
# and a map on emulated 1 GB nodes (docs/notes.md, "Small boards").
JVM_OVERHEAD_MB = 80

RATIO = "mapreduce.job.heap.memory-mb.ratio"
SORT = "mapreduce.task.io.sort.mb"
AM_OPTS = "yarn.app.mapreduce.am.command-opts"
CHILD_OPTS = "mapred.child.java.opts"


def memory_factor(node: NodeSpec) -> float:
    """The share of its board's RAM this host gives the node (1 on a board)."""
    return min(1.0, node.memory_bytes / sizing.board_memory_bytes(node))


def shrunk(board_mb: int, floor_mb: int, factor: float) -> int:
    """A heap of the board's `board_mb` on a node given `factor` of the board's RAM: the board's x the
    factor, not under the floor, and never above the board's."""
    return min(board_mb, max(floor_mb, int(board_mb * factor)))


def daemon_heap_mb(daemon_key: str, node: NodeSpec) -> int:
    """The -Xmx of a Hadoop or Spark daemon on this node."""
    return shrunk(sizing.board_daemon_heap_mb(daemon_key, node), sizing.heap_in_band(sizing.BANDS[0], daemon_key),
                  memory_factor(node))


def _job_factor(spec: ClusterSpec) -> float:
    return min(memory_factor(n) for n in spec.nodes)


def _with_xmx(java_opts: str, heap_mb: int) -> str:
    """The options with this heap: their -Xmx replaced, or one put first."""
    if sizing.xmx_mb(java_opts) is not None:
        return sizing.XMX.sub(f"-Xmx{heap_mb}m", java_opts)
    return f"-Xmx{heap_mb}m {java_opts}".strip()


# --- MapReduce -------------------------------------------------------------------------------


def _task_opts(mapred: dict[str, str], kind: str) -> str:
    return mapred.get(f"mapreduce.{kind}.java.opts", mapred.get(CHILD_OPTS, ""))


def task_on_board(mapred: dict[str, str], kind: str) -> tuple[int, int]:
    """(container, heap) in MB of a map or a reduce on the board, as Hadoop 3 derives them
    (JobConf.getMemoryRequired and getTaskJavaOpts): a container not set from the heap in its java
    opts and the ratio, else 1024 MB; a heap not in its java opts from its container and the ratio."""
    ratio = float(mapred.get(RATIO, sizing.HEAP_RATIO))
    given = sizing.xmx_mb(_task_opts(mapred, kind))
    container = int(mapred.get(f"mapreduce.{kind}.memory.mb", -1))
    if container <= 0:
        container = math.ceil(given / ratio) if given else sizing.UPSTREAM_TASK_MB
    return container, given or math.ceil(container * ratio)


def _am_on_board(mapred: dict[str, str]) -> tuple[int, int]:
    """(container, heap) in MB of a MapReduce ApplicationMaster on the board: its -Xmx (upstream's
    1024 MB where its options give none), but no more than its container's heap share, which is all
    YARN's physical-memory check lets it hold on a board whose containers are smaller."""
    container = int(mapred.get("yarn.app.mapreduce.am.resource.mb", sizing.UPSTREAM_AM_MB))
    ratio = float(mapred.get(RATIO, sizing.HEAP_RATIO))
    given = sizing.xmx_mb(mapred.get(AM_OPTS)) or sizing.UPSTREAM_AM_HEAP_MB
    return container, min(given, math.ceil(container * ratio))


def mapreduce_settings(spec: ClusterSpec, mapred: dict[str, str]) -> dict[str, str]:
    """The mapred-site settings that shrink a job's heaps to the node, over the board's `mapred`
    (sizing, preset, knobs and the experiment's own settings); nothing at memory factor 1.

    Containers are written out as the board has them, since Hadoop infers one left unset from the heap
    and the ratio. A heap its java opts give is shrunk there; the others through the ratio, raised
    where the smallest task's heap would go under its floor. The sort buffer keeps the board's size
    where it fits a quarter of the shrunk heap, as on a small board, and is cut to that where not: how
    often a map spills is a matter of its output against this buffer, not of memory. (Hadoop 2 has no
    ratio: its tasks keep mapred.child.java.opts' -Xmx200m, about the floor, on any board.)"""
    factor = _job_factor(spec)
    if factor >= 1:
        return {}
    found: dict[str, str] = {}
    ratio = float(mapred.get(RATIO, sizing.HEAP_RATIO))
    by_ratio = []
    for kind in ("map", "reduce"):
        container, heap = task_on_board(mapred, kind)
        found[f"mapreduce.{kind}.memory.mb"] = str(container)
        opts = _task_opts(mapred, kind)
        if sizing.xmx_mb(opts) is None:
            by_ratio.append(container)
        else:
            found[f"mapreduce.{kind}.java.opts"] = _with_xmx(opts, shrunk(heap, MAPREDUCE_HEAP_FLOOR_MB, factor))
    if by_ratio:
        # Rounded up, so that the heap Hadoop takes (rounded up too) is never under the floor.
        scaled = min(ratio, max(ratio * factor, MAPREDUCE_HEAP_FLOOR_MB / min(by_ratio)))
        found[RATIO] = f"{math.ceil(scaled * 10**4) / 10**4:g}"
    map_heap = sizing.xmx_mb(found.get("mapreduce.map.java.opts")) or math.ceil(
        int(found["mapreduce.map.memory.mb"]) * float(found.get(RATIO, ratio)))
    sort = int(mapred.get(SORT, sizing.UPSTREAM_SORT_MB))
    found[SORT] = str(max(1, min(sort, int(map_heap * sizing.SORT_SHARE))))
    _, am_heap = _am_on_board(mapred)
    found[AM_OPTS] = _with_xmx(mapred.get(AM_OPTS, ""), shrunk(am_heap, MAPREDUCE_HEAP_FLOOR_MB, factor))
    return found


# --- Spark ------------------------------------------------------------------------------------

EXECUTOR = ("spark.executor.memory", "spark.executor.memoryOverhead", f"{sizing.UPSTREAM_EXECUTOR_MB}m", SPARK_HEAP_FLOOR_MB)
SPARK_AM = ("spark.yarn.am.memory", "spark.yarn.am.memoryOverhead", f"{sizing.UPSTREAM_SPARK_AM_MB}m", SPARK_AM_FLOOR_MB)
DRIVER = "spark.driver.memory"
UPSTREAM_DRIVER = f"{sizing.UPSTREAM_EXECUTOR_MB}m"


def spark_settings(spec: ClusterSpec, spark: dict[str, str], standalone: bool = False) -> dict[str, str]:
    """The spark-defaults that shrink Spark's heaps to the node, over the board's `spark`; nothing at
    memory factor 1. On YARN an executor's and the ApplicationMaster's overhead take what their heap
    gave up, so each container, and the executors YARN holds per node, stay the board's. On Spark's
    standalone manager a worker counts executors by their heaps, so executors keep the board's."""
    factor = _job_factor(spec)
    if factor >= 1:
        return {}
    found = {DRIVER: f"{shrunk(int(sizing.jvm_megabytes(spark.get(DRIVER, UPSTREAM_DRIVER))), SPARK_HEAP_FLOOR_MB, factor)}m"}
    if standalone:
        return found
    for memory, overhead, upstream, floor in (EXECUTOR, SPARK_AM):
        board = spark.get(memory, upstream)
        container = sizing.spark_container_mb(board, spark.get(overhead))
        heap = shrunk(int(sizing.jvm_megabytes(board)), floor, factor)
        found.update({memory: f"{heap}m", overhead: f"{container - heap}m"})
    return found


# --- What a node must hold --------------------------------------------------------------------


@dataclass(frozen=True)
class Heap:
    """One JVM: what it is, its heap on the board and the least it is given on a node."""

    what: str
    board_mb: int
    floor_mb: int

    def on_node(self, factor: float) -> int:
        return shrunk(self.board_mb, self.floor_mb, factor)

    def at_floor(self, factor: float) -> bool:
        """Whether its heap on the node is more than its share of the board's."""
        return self.on_node(factor) > self.board_mb * factor


@dataclass(frozen=True)
class Job:
    """The JVMs one job starts: its ApplicationMaster (none on Spark's standalone manager) and a task on
    the workers, whether YARN places both on one worker, and a driver on the master."""

    name: str
    task: Heap
    master: Heap | None = None
    together: bool = True
    driver: Heap | None = None


def mapreduce_job(mapred: dict[str, str], together: bool) -> Job:
    """A MapReduce job of the board's settings `mapred`: its larger task (map or reduce). A task whose
    heap comes from the ratio has a floor in proportion to its container, as the one ratio that keeps
    the smallest task's heap at its floor gives it (mapreduce_settings)."""
    _, am = _am_on_board(mapred)
    tasks = {kind: task_on_board(mapred, kind) for kind in ("map", "reduce")}
    by_ratio = {kind: container for kind, (container, _) in tasks.items()
                if sizing.xmx_mb(_task_opts(mapred, kind)) is None}
    task = max((Heap("a task", heap, math.ceil(MAPREDUCE_HEAP_FLOOR_MB * by_ratio[kind] / min(by_ratio.values()))
                     if kind in by_ratio else MAPREDUCE_HEAP_FLOOR_MB) for kind, (_, heap) in tasks.items()),
               key=lambda h: (h.board_mb, h.floor_mb))
    return Job("a MapReduce job", task, Heap("its ApplicationMaster", am, MAPREDUCE_HEAP_FLOOR_MB), together)


def spark_job(spark: dict[str, str], together: bool, standalone: bool) -> Job:
    """A Spark job of the board's settings `spark` (client mode: the driver on the master)."""
    executor = int(sizing.jvm_megabytes(spark.get(EXECUTOR[0], EXECUTOR[2])))
    driver = Heap("its driver", int(sizing.jvm_megabytes(spark.get(DRIVER, UPSTREAM_DRIVER))), SPARK_HEAP_FLOOR_MB)
    if standalone:
        return Job("a Spark job", Heap("an executor", executor, executor), driver=driver)
    am = int(sizing.jvm_megabytes(spark.get(SPARK_AM[0], SPARK_AM[2])))
    return Job("a Spark job", Heap("an executor", executor, SPARK_HEAP_FLOOR_MB),
               Heap("its ApplicationMaster", am, SPARK_AM_FLOOR_MB), together, driver)


DAEMON_NAMES = {"namenode": "the NameNode", "resourcemanager": "the ResourceManager", "historyserver": "the JobHistory server",
                "sparkmaster": "the Spark master", "datanode": "the DataNode", "nodemanager": "the NodeManager",
                "sparkworker": "the Spark worker"}


def _daemons(node: NodeSpec, standalone: bool) -> list[Heap]:
    keys = []
    if node.role == "master":
        keys += ["namenode", "sparkmaster"] if standalone else ["namenode", "resourcemanager", "historyserver"]
    if node.runs_tasks:
        keys += ["datanode", "sparkworker" if standalone else "nodemanager"]
    return [Heap(DAEMON_NAMES[key], sizing.board_daemon_heap_mb(key, node), sizing.heap_in_band(sizing.BANDS[0], key))
            for key in keys]


def loads(node: NodeSpec, jobs: tuple[Job, ...], standalone: bool = False) -> list[list[Heap]]:
    """The sets of JVMs the node may hold at once: its daemons, with each job's driver on the master
    and, on a worker, its ApplicationMaster and a task (one of them, where YARN cannot place both)."""
    daemons = _daemons(node, standalone)
    found = [daemons]
    for job in jobs:
        beside = daemons + ([job.driver] if job.driver and node.role == "master" else [])
        if not node.runs_tasks:
            found.append(beside)
        elif job.master is None or job.together:
            found.append(beside + [h for h in (job.master, job.task) if h])
        else:
            found += [beside + [job.master], beside + [job.task]]
    return found


def need_mb(heaps: list[Heap], factor: float) -> int:
    """What these JVMs hold on a node at this factor: their heaps, and the fixed memory of each JVM
    whose heap is at its floor. A heap that shrank with the node leaves its JVM's fixed memory in the
    share of the board's room it shrank with; one at its floor is the least its JVM runs with, and the
    fixed memory beside it is as large as on the board."""
    return sum(h.on_node(factor) + (JVM_OVERHEAD_MB if h.at_floor(factor) else 0) for h in heaps)


def fits(heaps: list[Heap], board_mb: int, factor: float) -> bool:
    """Whether a node given `factor` of a board of `board_mb` holds these JVMs; the board itself
    (factor 1) holds what its sizing gave it."""
    return factor >= 1 or need_mb(heaps, factor) <= board_mb * factor


def least_factor(spec: ClusterSpec, jobs: tuple[Job, ...], standalone: bool = False) -> float:
    """The smallest memory factor at which every node holds its loads, found by bisection: a node's
    memory grows with the factor by its board's RAM, what it needs by no more than the board's heaps."""
    def all_fit(factor: float) -> bool:
        return all(fits(load, sizing.board_memory_bytes(n) // 2**20, factor)
                   for n in spec.nodes for load in loads(n, jobs, standalone))
    low, high = 0.0, 1.0
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (low, middle) if all_fit(middle) else (middle, high)
    return high


def least_host_bytes(spec: ClusterSpec, factor: float) -> int:
    """The host memory that gives every node of the shape this factor of its board (cluster/spec.py)."""
    return HOST_RESERVED_BYTES + math.ceil(factor * sum(sizing.board_memory_bytes(n) for n in spec.nodes))


def check(spec: ClusterSpec, jobs: tuple[Job, ...] = (), standalone: bool = False) -> None:
    """Refuse a shape whose nodes cannot hold their daemons and these jobs' JVMs at the heaps this host
    gives them, naming the node, what it must hold and the host memory that would hold it."""
    for node in spec.nodes:
        factor = memory_factor(node)
        board_mb = sizing.board_memory_bytes(node) // 2**20
        for load in loads(node, jobs, standalone):
            if fits(load, board_mb, factor):
                continue
            held = [f"{h.what} {h.on_node(factor)} MB" + (" (its floor)" if h.at_floor(factor) else "") for h in load]
            least = f"{math.ceil(least_host_bytes(spec, least_factor(spec, jobs, standalone)) / 2**30 * 10) / 10:.1f} GiB"
            raise SbclabError(
                f"{node.name} ({node.board}) gets {node.memory_bytes // 2**20} MB, {factor:.2f} of its board's {board_mb} MB, "
                f"and needs {need_mb(load, factor)} MB for the heaps of {', '.join(held[:-1])} and {held[-1]}, with "
                f"{JVM_OVERHEAD_MB} MB beside each heap at its floor; a host of {least} gives every node what it needs.",
                f"Run this shape on a host with at least {least} of memory, or with fewer nodes.")
