"""What each node runs, as a run records it: OS release, kernel and its page size, CPU governor,
NUMA nodes (a Pi 5's firmware can emulate several, which moves HPL by about a quarter) and, on a
Raspberry Pi, its firmware. Read once when the cluster comes up; an emulated node reports this host."""

from .remote import in_parallel
from .spec import NodeSpec
from .transport import Transport

FACTS = r'''
. /etc/os-release 2>/dev/null; echo "os=${PRETTY_NAME:-unknown}"; echo "os_id=$ID"; echo "os_version=$VERSION_ID"
echo "kernel=$(uname -r)"
echo "machine=$(uname -m)"
echo "page_size=$(getconf PAGESIZE 2>/dev/null)"
echo "governor=$(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null)"
if command -v python3 >/dev/null 2>&1; then echo "python=$(python3 --version 2>&1)"; fi
echo "numa_nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)"
if command -v vcgencmd >/dev/null 2>&1; then echo "firmware=$(vcgencmd version 2>/dev/null | tr '\n' ' ')"; fi
'''


def parse(text: str) -> dict[str, str]:
    facts = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and value.strip():
            facts[key.strip()] = " ".join(value.split())
    return facts


def of_node(transport: Transport, node: NodeSpec) -> dict[str, str]:
    done = transport.capture(node, ["sh", "-c", FACTS], timeout_s=30)
    return parse(done.stdout.decode(errors="replace")) if done.status == 0 else {}


def of_cluster(transport: Transport) -> dict[str, dict[str, str]]:
    """Each node's facts; a node that cannot tell records none rather than stopping the cluster."""
    found = in_parallel(list(transport.spec.nodes), lambda node: of_node(transport, node), lambda node: node.name)
    return {name: facts if isinstance(facts, dict) else {} for name, facts in found.items()}
