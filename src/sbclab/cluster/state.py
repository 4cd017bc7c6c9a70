"""The record of everything a cluster created on this host, kept so it can always be removed.

Each resource is written to the state file *before* it is created; removal tolerates resources
that never came to exist. That way `cluster down --force` cleans up after a crash or a SIGKILL at
any point of `cluster up`.
"""

import json
import threading
from pathlib import Path
from typing import Any

import psutil

from .. import atomic, paths
from ..errors import SbclabError
from .spec import ClusterSpec

STATE_VERSION = 1


class ClusterState:
    def __init__(self, path: Path, spec: ClusterSpec, resources: list[dict[str, Any]] | None = None,
                 phase: str = "creating", extra: dict[str, Any] | None = None):
        self.path = path
        self.spec = spec
        self.resources = resources or []
        self.phase = phase
        self.extra = extra or {}

    @property
    def root(self) -> Path:
        return self.path.parent

    @classmethod
    def create(cls, spec: ClusterSpec) -> "ClusterState":
        path = paths.cluster_dir(spec.name) / "state.json"
        if path.exists():
            raise SbclabError(
                f"A cluster named '{spec.name}' is already up or was not torn down.",
                f"Run 'sbclab cluster status --name {spec.name}', or 'sbclab cluster down --force --name {spec.name}' to remove it.")
        # Who made it, so a cluster whose maker was killed mid-way can be told from one in use.
        me = psutil.Process()
        state = cls(path, spec, extra={"owner": {"pid": me.pid, "create_time": me.create_time()}})
        state.save()
        return state

    @classmethod
    def load(cls, name: str) -> "ClusterState":
        path = paths.cluster_dir(name) / "state.json"
        if not path.exists():
            raise SbclabError(f"No cluster named '{name}' is up.",
                              "Start one with 'sbclab cluster up'.")
        raw = json.loads(path.read_text())
        if raw.get("version") != STATE_VERSION:
            raise SbclabError(f"The state file {path} has version {raw.get('version')}, this sbclab reads {STATE_VERSION}.",
                              f"Remove the cluster with the sbclab that made it, or delete {path.parent} by hand.")
        return cls(path, ClusterSpec.model_validate(raw["spec"]), raw["resources"], raw["phase"],
                   raw.get("extra", {}))

    @staticmethod
    def names() -> list[str]:
        root = paths.clusters_dir()
        return sorted(p.parent.name for p in root.glob("*/state.json")) if root.exists() else []

    # Jobs submitted together (the concurrent mix) record and forget their processes from several threads.
    _lock = threading.RLock()

    def save(self) -> None:
        with self._lock:
            atomic.write_text(self.path, json.dumps({
                "version": STATE_VERSION, "phase": self.phase, "spec": self.spec.model_dump(mode="json"),
                "resources": self.resources, "extra": self.extra}, indent=1))

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Note a resource about to be created; call before creating it."""
        entry = {"kind": kind, **fields}
        with self._lock:
            self.resources.append(entry)
            self.save()
        return entry

    def forget(self, entry: dict[str, Any]) -> None:
        with self._lock:
            if entry in self.resources:
                self.resources.remove(entry)
                self.save()

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.resources if r["kind"] == kind]

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        self.save()

    def remove_file(self) -> None:
        self.path.unlink(missing_ok=True)
