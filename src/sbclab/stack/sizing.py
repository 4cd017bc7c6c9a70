"""YARN's share of each worker: what containers may use without overcommitting the node.

Each worker's container memory is its RAM less a reserve for the OS, page cache floor, DataNode and
NodeManager heaps, in whole minimum allocations; its vcores are the board's cores. The scheduler's
largest allocation never exceeds the smallest worker.
"""

from .. import profiles
from ..cluster.spec import ClusterSpec, NodeSpec
from ..errors import SbclabError

WORKER_RESERVED_MB = 2048
MIN_ALLOCATION_MB = 1024
MAX_CONTAINER_MB = 8192
MAX_CONTAINER_VCORES = 4


def yarn_memory_mb(node_memory_bytes: int) -> int:
    """Container memory for a worker: its RAM less the reserve, in whole minimum allocations."""
    usable = node_memory_bytes // 2**20 - WORKER_RESERVED_MB
    whole = (usable // MIN_ALLOCATION_MB) * MIN_ALLOCATION_MB
    if whole < MIN_ALLOCATION_MB * 2:
        raise SbclabError(
            f"A worker with {node_memory_bytes / 2**30:.1f} GiB cannot hold an ApplicationMaster and a task "
            f"after {WORKER_RESERVED_MB} MB for the OS and daemons.",
            "Use fewer workers or a board profile with more RAM.")
    return whole


def yarn_share(node: NodeSpec) -> tuple[int, int]:
    """(container memory in MB, vcores) of a worker; (0, 0) for the master."""
    if node.role != "worker":
        return 0, 0
    return yarn_memory_mb(node.memory_bytes), profiles.board(node.board).cores


def largest_container(spec: ClusterSpec) -> tuple[int, int]:
    """(MB, vcores) of the largest container any worker can hold."""
    shares = [yarn_share(w) for w in spec.worker_nodes]
    return min(MAX_CONTAINER_MB, min(mb for mb, _ in shares)), min(MAX_CONTAINER_VCORES, min(v for _, v in shares))


def check(spec: ClusterSpec, where: str = "") -> None:
    """Refuse a cluster whose workers cannot hold YARN's containers, naming the node."""
    for worker in spec.worker_nodes:
        try:
            yarn_share(worker)
        except SbclabError as err:
            raise SbclabError(f"{where}{worker.name}: {err.message}", err.hint) from err


def executors_that_fit(spec: ClusterSpec, executor_mb: int, application_master_mb: int) -> int:
    """Spark executors YARN can hold at once beside one application's master, each container
    rounded up to whole minimum allocations (the capacity scheduler counts memory only)."""
    def rounded(mb: int) -> int:
        return -(-mb // MIN_ALLOCATION_MB) * MIN_ALLOCATION_MB
    shares = sorted((yarn_share(w)[0] for w in spec.worker_nodes), reverse=True)
    if not shares:
        return 0
    shares[0] -= rounded(application_master_mb)
    return sum(max(0, share) // rounded(executor_mb) for share in shares)
