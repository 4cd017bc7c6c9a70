"""On boards, Hadoop's and Spark's daemons listen on the LAN with simple authentication: anyone who
reaches an RPC port can read HDFS or run code as the cluster's user. So by default each board lets
only the cluster's own nodes and this host open connections to the daemons' ports: one nftables table
per cluster, set at `cluster up` before the daemons start and removed at `down` (recorded first, so
`down --force` removes it whatever happened). The `open-ports` knob leaves the ports open.

The ports are the daemons' fixed ones (config.PORTS, the ResourceManager's 8030-8033) and the
ephemeral range, where the NodeManagers' RPC, Spark's drivers, executors and block managers listen
on ports chosen at start; a board's own outgoing connections get their replies there as established
traffic, which the rule does not touch. SSH and anything else on the board stay as they were.
Emulated clusters need none of it: their nodes live on a private bridge of this host."""

import ipaddress

from ..cluster import faultrecords
from ..cluster.remote import address_towards, resolved_ipv4
from ..cluster.spec import ClusterSpec
from ..cluster.transport import Transport
from ..errors import SbclabError
from . import config

KNOB = "open-ports"
RM_RPC = range(8030, 8034)
EPHEMERAL = "32768-60999"

_APPLY = r'''
if [ "$(id -u)" = 0 ]; then as_root=""; else as_root="sudo -n"; fi
command -v nft >/dev/null || [ -x /usr/sbin/nft ] || { echo "no nft (Debian: apt install nftables)"; exit 3; }
printf '%s\n' "$1" | $as_root env PATH="$PATH:/usr/sbin:/sbin" nft -f -
'''
_REMOVE = r'''
if [ "$(id -u)" = 0 ]; then as_root=""; else as_root="sudo -n"; fi
$as_root env PATH="$PATH:/usr/sbin:/sbin" nft delete table inet "$1" 2>/dev/null; true
'''


def table(spec: ClusterSpec) -> str:
    return f"sbclab_{spec.name}"  # cluster names are lower-case letters and digits


def rules(spec: ClusterSpec, allowed: list[str]) -> str:
    """The nftables table of one board: new TCP connections to the daemons' ports from anyone but the
    cluster's nodes and this host are dropped."""
    ports = sorted({p for node in spec.nodes for p in (config.port(spec, node, name) for name in config.PORTS)}
                   | set(RM_RPC))
    v4 = sorted({a for a in allowed if ipaddress.ip_address(a).version == 4})
    v6 = sorted({a for a in allowed if ipaddress.ip_address(a).version == 6})
    lines = [f"table inet {table(spec)} {{", "  chain input {",
             "    type filter hook input priority 0; policy accept;", "    iif lo accept"]
    if v4:
        lines.append(f"    ip saddr {{ {', '.join(v4)} }} accept")
    if v6:
        lines.append(f"    ip6 saddr {{ {', '.join(v6)} }} accept")
    lines += [f"    tcp dport {{ {', '.join(map(str, ports))}, {EPHEMERAL} }} ct state new drop", "  }", "}"]
    # Replaced whole if it is there (a board re-deployed after a crash): deleted first, then added.
    return f"table inet {table(spec)} {{}}\ndelete table inet {table(spec)}\n" + "\n".join(lines)


def close_ports(transport: Transport, spec: ClusterSpec, progress=lambda message: None) -> None:
    """Each board's daemon ports kept to the cluster; the undoing recorded before it is applied."""
    if KNOB in spec.knobs:
        progress("daemon ports left open to the LAN (knob open-ports)")
        return
    boards = [_ipv4(n.address) for n in spec.nodes]
    allowed = [*boards, address_towards(boards[0])]
    script = rules(spec, allowed)
    progress(f"keeping the daemons' ports to the cluster's nodes and this host (nftables table {table(spec)})")
    for node in spec.nodes:
        faultrecords.record_lasting(transport, node.name, f"nftables table {table(spec)}",
                                    heal=[["sh", "-c", _REMOVE, "sh", table(spec)]])
        done = transport.capture(node, ["sh", "-c", _APPLY, "sh", script], timeout_s=60)
        if done.status != 0:
            said = (done.stdout + done.stderr).decode(errors="replace").strip()[-300:]
            raise SbclabError(f"Restricting the daemons' ports on {node.name} failed: {said}.",
                              "Install nftables on the board (apt install nftables) with root or password-less sudo, "
                              f"or leave the ports open with --knob {KNOB}.")


def _ipv4(address: str) -> str:
    """A board's address as the packets carry it (an inventory may name boards by host name)."""
    try:
        ipaddress.ip_address(address)
        return address
    except ValueError:
        return resolved_ipv4(address)
