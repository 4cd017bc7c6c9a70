"""How sbclab makes nodes: emulated (namespaces + cgroups, shaped) or processes (plain, no root)."""

import os

from ..spec import ClusterSpec
from .base import Backend


def default_backend() -> str:
    """emulated when this host can shape nodes (root and cgroups), else processes, saying why."""
    if os.geteuid() != 0:
        return "processes"
    from .. import cgroups
    from ...errors import SbclabError
    try:
        cgroups.version()
    except SbclabError:
        return "processes"
    return "emulated"


def for_state(state) -> Backend:
    if state.spec.backend == "ssh":
        from .ssh import SshBackend
        return SshBackend(state)
    if state.spec.backend == "emulated":
        from .emulated import EmulatedBackend
        return EmulatedBackend(state)
    from .processes import ProcessesBackend
    return ProcessesBackend(state)


__all__ = ["Backend", "ClusterSpec", "default_backend", "for_state"]
