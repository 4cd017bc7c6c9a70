"""The record of everything a cluster created on this host, kept so it can always be removed.

Each resource is written to the state file *before* it is created; removal tolerates resources
that never came to exist. That way `cluster down --force` cleans up after a crash or a SIGKILL at
any point of `cluster up`.

The layers above keep their own records beside it in the cluster's folder (the stack's in
stack.json, the data sets in datasets.json); they go with the folder when the cluster is removed.
"""

import json
import os
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import atomic, paths
from ..errors import SbclabError
from . import reaper
from .inventory import BoardAccess
from .spec import ClusterSpec

# 2: typed `info` instead of free-form `extra`; nodes without YARN's share (the stack sizes that).
STATE_VERSION = 2


class Owner(BaseModel):
    """The sbclab process that made the cluster, told apart from a later one with the same pid."""

    pid: int
    create_time: float = Field(description="seconds after the host booted (reaper.started), or since the epoch "
                                           "in a record an earlier sbclab wrote")


class ClusterInfo(BaseModel):
    """What the cluster layer knows of a cluster besides its spec and resources."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    owner: Owner | None = None
    temporary: bool = Field(False, description="lives only as long as the sbclab that made it (a run's own cluster)")
    nodes_only: bool = Field(False, description="nodes without Hadoop or Spark (node benchmarks)")
    purge: bool = Field(False, description="boards: remove the cluster's data and logs when it goes")
    boards: BoardAccess | None = None
    board_knobs: dict[str, list[str]] = Field(default_factory=dict,
                                             description="firmware knobs found on each board when it was prepared")


class ClusterState:
    def __init__(self, path: Path, spec: ClusterSpec, resources: list[dict[str, Any]] | None = None,
                 phase: str = "creating", info: ClusterInfo | None = None):
        self.path = path
        self.spec = spec
        self.resources = resources or []
        self.phase = phase
        self.info = info or ClusterInfo()

    @property
    def root(self) -> Path:
        return self.path.parent

    @classmethod
    def create(cls, spec: ClusterSpec, info: ClusterInfo | None = None) -> "ClusterState":
        path = paths.cluster_dir(spec.name) / "state.json"
        if path.exists():
            raise SbclabError(
                f"A cluster named '{spec.name}' is already up or was not torn down.",
                f"Run 'sbclab cluster status --name {spec.name}', or 'sbclab cluster down --force --name {spec.name}' to remove it.")
        # Who made it, so a cluster whose maker was killed mid-way can be told from one in use.
        me = os.getpid()
        info = (info or ClusterInfo()).model_copy(update={"owner": Owner(pid=me, create_time=reaper.started(me))})
        state = cls(path, spec, info=info)
        state.save()
        return state

    @classmethod
    def load(cls, name: str) -> "ClusterState":
        path = paths.cluster_dir(name) / "state.json"
        if not path.exists():
            raise SbclabError(f"No cluster named '{name}' is up.",
                              "Start one with 'sbclab cluster up'.")
        try:
            raw = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise SbclabError(f"The state file {path} cannot be read ({err}).",
                              f"Delete {path.parent} by hand once nothing of the cluster runs.") from err
        if raw.get("version") != STATE_VERSION:
            raise SbclabError(f"The state file {path} has version {raw.get('version')}, this sbclab reads {STATE_VERSION}.",
                              f"Remove the cluster with the sbclab that made it, or delete {path.parent} by hand.")
        try:
            return cls(path, ClusterSpec.model_validate(raw["spec"]), raw["resources"], raw["phase"],
                       ClusterInfo.model_validate(raw.get("info", {})))
        except (KeyError, ValidationError) as err:
            raise SbclabError(f"The state file {path} is damaged ({err}).",
                              f"Delete {path.parent} by hand once nothing of the cluster runs.") from err

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
                "resources": self.resources, "info": self.info.model_dump(mode="json")}, indent=1))

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Note a resource about to be created; call before creating it."""
        entry = {"kind": kind, **fields}
        with self._lock:
            self.resources.append(entry)
            self.save()
        return entry

    def update(self, entry: dict[str, Any], **fields: Any) -> None:
        """Change a recorded entry in place and save it."""
        with self._lock:
            entry.update(fields)
            self.save()

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
