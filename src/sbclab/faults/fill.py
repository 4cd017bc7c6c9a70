"""Fill a worker's data disk to a level with one file, removed when the run ends: a card that fills
with logs or a neighbour's data. HDFS stops placing blocks on a DataNode whose free space falls below
its reserve, and YARN marks a NodeManager unhealthy past its disk checker's threshold (90 % by
default), so the job runs on fewer nodes, or fails."""

from ..cluster import faultrecords
from ..errors import SbclabError
from .base import Applied, FaultSpec, sh

name = "fill-disk"
lasting = False
FILLER = "sbclab-fault-filler"

# fallocate where the filesystem has it, else written out (slower, same result).
_FILL = r'''
disk=$1; level=$2; file="$disk/$3"
set -- $(df -P -B1 "$disk" | awk 'NR==2 {print $2, $3}')
need=$(awk -v s="$1" -v u="$2" -v l="$level" 'BEGIN { n = s * l / 100 - u; printf "%d", (n > 0 ? n : 0) }')
[ "$need" -gt 0 ] || { echo 0; exit 0; }
fallocate -l "$need" "$file" 2>/dev/null || dd if=/dev/zero of="$file" bs=1M count=$((need / 1048576)) status=none || exit 1
echo "$need"
'''


def check(spec: FaultSpec) -> None:
    if spec.level_pct is None:
        raise ValueError("fill-disk needs level_pct, how full the node's data disk is made")
    if spec.for_s is not None or spec.process or spec.loss_pct:
        raise ValueError("fill-disk takes node, at_s and level_pct only (the file goes when the run ends)")


def unsupported(backend: str) -> str | None:
    if backend == "processes":
        return "the processes backend's nodes share this host's disk, which the fault would fill"
    return None


def apply(cluster, spec: FaultSpec, node_name: str) -> Applied:
    transport = cluster.transport
    node = transport.spec.node(node_name)
    disk = str(transport.node_disk(node))
    with faultrecords.applying(transport, node_name, name, target=disk,
                               heal=[["rm", "-f", "--", f"{disk}/{FILLER}"]]) as entry:
        done = transport.capture(node, sh(_FILL, disk, f"{spec.level_pct:g}", FILLER), timeout_s=600)
        if done.status != 0:
            raise SbclabError(f"Filling {node_name}'s disk failed: {done.stderr.decode(errors='replace').strip()[:300]}.",
                              "Check the node's disk with 'sbclab cluster shell'.")
    written = int(done.stdout.decode().strip() or 0)
    return Applied(f"{written / 2**20:,.0f} MiB written to {disk}, now {spec.level_pct:g} % full", entry)
