"""Nodes as plain processes on this host: no root, no shaping, results labelled accordingly.

Every node listens on 127.0.0.1 with its own block of ports (stack/config.py) and has its own
directories.
"""

import shutil
import socket
from pathlib import Path

from ...errors import SbclabError
from ..spec import NodeSpec
from .base import Backend


class ProcessesBackend(Backend):
    name = "processes"
    shaped = False

    def node_disk(self, node: NodeSpec) -> Path:
        return self.node_dir(node) / "disk"

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

    def check_port_free(self, node: NodeSpec, port: int, daemon: str) -> None:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((node.address, port))
            except OSError as err:
                raise SbclabError(
                    f"Port {port} on {node.address} ({node.name}, {daemon}) is in use: {err.strerror}.",
                    "Stop whatever holds it (see 'ss -ltnp'), or remove an old cluster with 'sbclab cluster down --force'.") from err

    def on_node(self, node: NodeSpec, argv: list[str]):
        return argv, None

    def destroy(self) -> list[str]:
        leftovers = [f"process {p.pid}" for p in self.stop_processes()]
        for entry in reversed(list(self.state.resources)):
            if entry["kind"] == "directory":
                shutil.rmtree(entry["path"], ignore_errors=True)
            self.state.forget(entry)
        return leftovers
