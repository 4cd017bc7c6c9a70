"""Cut a worker off from the other nodes (or drop a share of its packets to and from them) for for_s: a
switch port or Wi-Fi link that drops, a flaky cable. Packet filters on the node itself (iptables,
its nf_tables backend on current systems) drop what goes to or comes from the other nodes'
addresses; this host keeps reaching it (its shell, its samplers). A kernel without netem cannot
delay packets, so delay is not offered; loss and cut-off need only the packet filter."""

from ..cluster import faultrecords
from ..errors import SbclabError
from .base import Applied, FaultSpec, sh

name = "partition"
lasting = True
CHAIN = "sbclab-fault"

_APPLY = r'''
chain=$1; loss=$2; shift 2
iptables -N "$chain" 2>/dev/null || iptables -F "$chain" || exit 1
for a in "$@"; do
  if [ "$loss" = 100 ]; then sample=""; else sample="-m statistic --mode random --probability $loss"; fi
  iptables -A "$chain" -s "$a" $sample -j DROP && iptables -A "$chain" -d "$a" $sample -j DROP || exit 1
done
iptables -I INPUT -j "$chain" && iptables -I OUTPUT -j "$chain"
'''
_HEAL = r'''
chain=$1
while iptables -D INPUT -j "$chain" 2>/dev/null; do :; done
while iptables -D OUTPUT -j "$chain" 2>/dev/null; do :; done
iptables -F "$chain" 2>/dev/null; iptables -X "$chain" 2>/dev/null; true
'''


def check(spec: FaultSpec) -> None:
    if spec.for_s is None:
        raise ValueError("a partition needs for_s, how long the node stays cut off")
    if spec.process or spec.level_pct:
        raise ValueError("a partition takes node, at_s, for_s and loss_pct only")


def unsupported(backend: str) -> str | None:
    if backend == "processes":
        return "every node of the processes backend has this host's address, so none can be cut off from the others"
    return None


def apply(cluster, spec: FaultSpec, node_name: str) -> Applied:
    transport = cluster.transport
    node = transport.spec.node(node_name)
    others = [n.address for n in transport.spec.nodes if n.name != node_name]
    loss = spec.loss_pct or 100.0
    probability = "100" if loss >= 100 else f"{loss / 100:.4f}"
    with faultrecords.applying(transport, node_name, name, target=f"{loss:g} % of packets to and from "
                               f"{', '.join(others)}", heal=[sh(_HEAL, CHAIN)]) as entry:
        done = transport.capture(node, sh(_APPLY, CHAIN, probability, *others))
        if done.status != 0:
            raise SbclabError(f"Cutting {node_name} off failed: {done.stderr.decode(errors='replace').strip()[:300]}.",
                              "The node needs iptables (Debian: apt install iptables) and root.")
    what = "cut off from" if loss >= 100 else f"dropping {loss:g} % of its packets to and from"
    return Applied(f"{node_name} {what} {', '.join(others)}", entry)
