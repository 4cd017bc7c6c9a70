"""A remote shell into a node of a running cluster, by its address or name: what OpenMPI's launcher
(and anything else written for ssh) calls to start a command on another node.

    python -m sbclab.cluster.node_shell ADDRESS COMMAND...

Like ssh, the words of the command are joined and run by the node's shell; the cluster is named by
SBCLAB_CLUSTER. On an emulated cluster the command enters the node's network namespace and cgroup;
on real boards it runs over SSH, tied to this process's connection (ssh.py TIED).
"""

import os
import sys

from ..errors import SbclabError
from .nodes import transport_for
from .state import ClusterState


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not os.environ.get("SBCLAB_CLUSTER"):
        print("usage: SBCLAB_CLUSTER=NAME python -m sbclab.cluster.node_shell ADDRESS COMMAND...", file=sys.stderr)
        return 2
    try:
        state = ClusterState.load(os.environ["SBCLAB_CLUSTER"])
    except SbclabError as err:
        print(f"node_shell: {err}", file=sys.stderr)
        return 255
    target = argv[0].split("@")[-1]
    node = next((n for n in state.spec.nodes if target in (n.address, n.name)), None)
    if node is None:
        print(f"node_shell: no node {target} in cluster {state.spec.name}", file=sys.stderr)
        return 255
    transport = transport_for(state)
    try:
        return transport.attach(node, " ".join(argv[1:]))
    except SbclabError as err:
        print(f"node_shell: {err}", file=sys.stderr)
        return 255
    finally:
        transport.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
