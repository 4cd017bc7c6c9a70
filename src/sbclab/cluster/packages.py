"""The programs sbclab runs on nodes and on this host, and the Debian packages that bring them.

Debian and Raspberry Pi OS only: a program missing on a board is installed with apt-get (as root
or through sudo without a password); on this host, whose nodes share its programs, a missing one
is named with its package before anything starts.
"""

import shutil

from ..errors import SbclabError
from .remote import in_parallel, raise_first
from .spec import NodeSpec
from .transport import Transport

PACKAGES = {
    "sysbench": "sysbench", "fio": "fio", "iperf3": "iperf3", "stress-ng": "stress-ng",
    "hpcc": "hpcc", "mpirun": "openmpi-bin", "orted": "openmpi-bin",
    "NPtcp": "netpipe-tcp", "NPopenmpi": "netpipe-openmpi",
    "nginx": "nginx-light", "httperf": "httperf", "7zz": "7zip", "mbw": "mbw",
}
# Looked up on the PATH commands get (nginx is in /usr/sbin, off a plain user's login PATH).
NODE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

INSTALL = r'''
command -v apt-get >/dev/null || { echo "no apt-get on this board"; exit 3; }
if [ "$(id -u)" = 0 ]; then as_root=""; else as_root="sudo -n"; fi
DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y --no-install-recommends "$@" 2>&1 | tail -n 5
'''


def package_of(program: str) -> str:
    return PACKAGES.get(program, program)


def check_here(programs) -> None:
    """Every program on this host, or one sentence naming the missing ones and their packages."""
    missing = [p for p in dict.fromkeys(programs) if not shutil.which(p)]
    if missing:
        packages = sorted({package_of(p) for p in missing})
        raise SbclabError(f"Missing on this host: {', '.join(missing)}.",
                          f"Install the Debian packages (apt-get install {' '.join(packages)}), or run 'make setup'.")


def _present(transport: Transport, node: NodeSpec, program: str) -> bool:
    lookup = ["env", f"PATH={NODE_PATH}", "sh", "-c", 'command -v "$1"', "sh", program]
    return transport.capture(node, lookup, timeout_s=60).status == 0


def install(transport: Transport, node: NodeSpec, packages: list[str]) -> str:
    """apt-get install on one node; the tail of its output."""
    done = transport.capture(node, ["sh", "-c", INSTALL, "sh", *packages], timeout_s=1800)
    return (done.stdout or done.stderr).decode(errors="replace").strip()[-300:]


def ensure(transport: Transport, programs) -> None:
    """Every program runnable on every node: on this host's nodes checked, on boards installed where
    missing."""
    programs = sorted(dict.fromkeys(programs))
    if not programs:
        return
    if transport.shares_host:
        check_here(programs)
        return

    def one(node: NodeSpec) -> None:
        missing = [p for p in programs if not _present(transport, node, p)]
        if not missing:
            return
        packages = sorted({package_of(p) for p in missing})
        said = install(transport, node, packages)
        still = [p for p in missing if not _present(transport, node, p)]
        if still:
            raise SbclabError(f"{', '.join(still)} missing on {node.name}, and installing {' '.join(packages)} did not "
                              f"bring them ({said or 'no output'}).",
                              f"Install them on {node.name} (sudo apt-get install {' '.join(packages)}), then run again.")
    raise_first(in_parallel(list(transport.spec.nodes), one, lambda node: node.name), "Installing the benchmark programs")
