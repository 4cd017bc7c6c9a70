"""What sbclab asks of a node's operating system, the same way on every kind of node: drop the page
cache, trim the data filesystem, how busy the CPUs are, what the clock says.

Each is a short shell command run through the transport, once per machine: nodes that share this
host (emulated, processes) share its page cache and /proc/stat, so one of them answers for all.
"""

import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from ..errors import SbclabError
from .spec import NodeSpec
from .transport import Transport

# As root, or through sudo without a password (a board's SSH user need not be root).
_AS_ROOT = 'if [ "$(id -u)" = 0 ]; then as_root=""; else as_root="sudo -n"; fi; '
_DROP_CACHES = _AS_ROOT + 'sync; echo 3 | $as_root tee /proc/sys/vm/drop_caches >/dev/null'
# On this host only the cluster's own filesystems are synced first (sync_filesystems): a plain sync would
# also wait for every other cluster's dirty pages, draining at their nodes' throttled speeds.
_DROP_CLEAN_PAGES = _AS_ROOT + 'echo 3 | $as_root tee /proc/sys/vm/drop_caches >/dev/null'
_FSTRIM = _AS_ROOT + 'command -v fstrim >/dev/null && $as_root fstrim "$1"'
_FSTRIM_VERBOSE = _AS_ROOT + 'command -v fstrim >/dev/null && $as_root fstrim -v "$1"'
_TRIMMED = re.compile(r"\((\d+) bytes\) trimmed")
_BUSY = 'head -n 1 /proc/stat; sleep "$1"; head -n 1 /proc/stat'


def machines(transport: Transport) -> list[NodeSpec]:
    """One node per machine: the master alone where every node is this host."""
    return [transport.spec.master] if transport.shares_host else list(transport.spec.nodes)


def _each(nodes: list[NodeSpec], work) -> list:
    with ThreadPoolExecutor(max_workers=min(16, len(nodes))) as pool:
        return list(pool.map(work, nodes))


def _succeeded(transport: Transport, node: NodeSpec, argv: list[str], timeout_s: float) -> bool:
    try:
        return transport.capture(node, argv, timeout_s=timeout_s).status == 0
    except (SbclabError, OSError):
        return False


def drop_caches(transport: Transport) -> bool:
    """Drop every machine's page cache; False where that is not allowed (not root, no sudo)."""
    script = _DROP_CACHES
    if transport.shares_host:
        sync_filesystems(transport)
        script = _DROP_CLEAN_PAGES
    return all(_each(machines(transport), lambda n: _succeeded(transport, n, ["sh", "-c", script], 600)))


def sync_filesystems(transport: Transport) -> None:
    """The dirty pages of the filesystems this cluster's nodes write on this host, written out: each
    emulated node's own (all at once, each draining at its medium's throttled speed, which on a slow
    card can take minutes after a write-heavy job), or the one holding the processes backend's nodes.
    Only the cluster's own, so another cluster on the host is neither waited for nor disturbed. Boards
    sync themselves (board_sampler.py)."""
    if not transport.shares_host:
        return
    folders = ([transport.node_disk(node) for node in transport.spec.nodes] if transport.own_filesystems
               else [transport.state.root])
    syncs = [subprocess.Popen(["sync", "-f", str(folder)]) for folder in folders]
    for proc in syncs:
        try:
            proc.wait(timeout=1800)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def fstrim_bytes(transport: Transport) -> dict[str, int]:
    """Trim each node's own data filesystem and say how many bytes each discarded: after a job on
    filesystems trimmed just before it, the blocks its deleted files held (the 2026 seed's measure
    of intermediate data). ext4 trims every free extent of a block group that saw a free, so this
    counts somewhat more than the files' own bytes, as the seed's figure did."""
    if not transport.own_filesystems:
        return {}
    nodes = list(transport.spec.nodes)

    def trimmed(node: NodeSpec) -> int | None:
        try:
            done = transport.capture(node, ["sh", "-c", _FSTRIM_VERBOSE, "sh", str(transport.node_disk(node))],
                                     timeout_s=600)
        except (SbclabError, OSError):
            return None
        found = _TRIMMED.search(done.stdout.decode(errors="replace"))
        return int(found.group(1)) if done.status == 0 and found else None
    return {n.name: b for n, b in zip(nodes, _each(nodes, trimmed)) if b is not None}


def fstrim(transport: Transport) -> list[str]:
    """Trim each node's own data filesystem; the names of the nodes trimmed. Nodes without a
    filesystem of their own, without fstrim, or whose medium takes no discards are left out."""
    if not transport.own_filesystems:
        return []
    nodes = list(transport.spec.nodes)
    done = _each(nodes, lambda n: _succeeded(transport, n, ["sh", "-c", _FSTRIM, "sh", str(transport.node_disk(n))],
                                               600))
    return [n.name for n, ok in zip(nodes, done) if ok]


def cpu_busy_percent(before: str, after: str) -> float:
    """CPU use between two `cpu` lines of /proc/stat: everything but idle, iowait and steal (time a
    hypervisor took, when the machine is a virtual one)."""
    a, b = ([int(x) for x in line.split()[1:]] for line in (before, after))
    total = sum(b[:8]) - sum(a[:8])  # guest time is inside user already
    resting = sum(b[i] - a[i] for i in (3, 4, 7) if i < len(a) and i < len(b))
    return 100.0 * (total - resting) / total if total > 0 else 0.0


def busy_percent(transport: Transport, window_s: float) -> float:
    """The busiest machine's CPU use over a window; one that does not answer counts as busy.

    Nodes with a cgroup of their own are each a machine: their use is their processes' CPU time
    against their quota, whatever else this host is doing (another cluster, a build), which the
    host's /proc/stat would count as theirs."""
    groups = {node.name: transport.memory_group(node) for node in transport.spec.nodes}
    if all(groups.values()):
        return _cgroups_busy_percent(transport, groups, window_s)

    def busy(node):
        try:
            lines = transport.capture(node, ["sh", "-c", _BUSY, "sh", f"{window_s:g}"],
                                      timeout_s=window_s + 30).stdout.decode().splitlines()
        except (SbclabError, OSError):
            return 100.0
        return cpu_busy_percent(lines[0], lines[1]) if len(lines) == 2 else 100.0
    return max(_each(machines(transport), busy))


def _cgroups_busy_percent(transport: Transport, groups: dict, window_s: float) -> float:
    before = {name: group.cpu_usage_ns() for name, group in groups.items()}
    start = time.monotonic()
    time.sleep(window_s)
    after = {name: group.cpu_usage_ns() for name, group in groups.items()}
    elapsed_ns = (time.monotonic() - start) * 1e9
    shares = []
    for node in transport.spec.nodes:
        a, b = before[node.name], after[node.name]
        if a is None or b is None or node.cpu_cores <= 0:
            return 100.0  # a node whose use cannot be read counts as busy
        shares.append(100.0 * (b - a) / (elapsed_ns * node.cpu_cores))
    return max(shares)


def disk_space(transport: Transport, nodes: list[NodeSpec]) -> dict[str, tuple[int, int] | None]:
    """Per node, its data disk's (size, free) bytes; None where it did not answer."""
    def space(node):
        try:
            done = transport.capture(node, ["df", "-P", "-B1", str(transport.node_disk(node))], timeout_s=30)
            fields = done.stdout.decode().splitlines()[1].split()
            return int(fields[1]), int(fields[3])
        except (SbclabError, OSError, ValueError, IndexError):
            return None
    return dict(zip([n.name for n in nodes], _each(nodes, space)))


def node_time(transport: Transport, node: NodeSpec) -> float | None:
    """The node's clock (seconds since the epoch), or None when it does not answer."""
    try:
        done = transport.capture(node, ["date", "+%s.%N"], timeout_s=20)
        return float(done.stdout.decode().strip().splitlines()[-1])
    except (SbclabError, OSError, ValueError, IndexError):
        return None
