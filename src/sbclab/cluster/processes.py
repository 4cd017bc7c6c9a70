"""Nodes as plain processes on this host: no root, no shaping, results labelled accordingly.

Every node listens on 127.0.0.1 with its own block of ports (stack/config.py) and has its own
directories.
"""

import os
import shutil
from pathlib import Path

from ..errors import SbclabError
from . import reaper
from .local import LocalTransport, sbclab_owner
from .spec import NodeSpec


class ProcessesTransport(LocalTransport):
    name = "processes"
    shaped = False
    own_filesystems = False

    def node_disk(self, node: NodeSpec) -> Path:
        return self.node_dir(node) / "disk"

    def launch(self, node: NodeSpec, argv: list[str], enter="node"):
        return argv, None

    def attach(self, node: NodeSpec, command: str) -> int:
        """This process, about to become the node's command, recorded as one of the cluster's: with no
        namespace or cgroup to hold it, `cluster down` stops it by that record. It owns itself, so once it
        has ended the next sbclab on the cluster forgets it (stop_orphans, as this one does first)."""
        self.stop_orphans()
        self.state.record("process", node=node.name, pid=os.getpid(), create_time=reaper.started(os.getpid()),
                          label=f"shell on {node.name}", **sbclab_owner())
        return super().attach(node, command)

    def container_runtimes(self) -> tuple[str, ...]:
        return ()  # a container here would be a container of this host, not of a node

    def create_nodes(self) -> None:
        root = self.state.root
        root.mkdir(parents=True, exist_ok=True)
        need = sum(n.disk_bytes for n in self.spec.nodes)
        free = shutil.disk_usage(root).free
        if free < need:
            raise SbclabError(
                f"Not enough free disk under {root}: {need / 2**30:.1f} GiB wanted for node data, {free / 2**30:.1f} GiB free.",
                "Free space, give a smaller --disk-size, or set SBCLAB_HOME to a larger disk.")
        for node in self.spec.nodes:
            self.state.record("directory", path=str(self.node_dir(node)))
            self.node_disk(node).mkdir(parents=True, exist_ok=True)

    def destroy(self) -> list[str]:
        leftovers = [f"process {p.pid}" for p in self.stop_processes()]
        for entry in reversed(list(self.state.resources)):
            if entry["kind"] == "directory":
                shutil.rmtree(entry["path"], ignore_errors=True)
            self.state.forget(entry)
        return leftovers
