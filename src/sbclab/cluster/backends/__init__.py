"""How sbclab makes nodes: emulated (namespaces + cgroups, shaped) or processes (plain, no root)."""

import os

from ..spec import ClusterSpec
from .base import Backend


def default_backend() -> str:
    return "emulated" if os.geteuid() == 0 else "processes"


def for_state(state) -> Backend:
    if state.spec.backend == "emulated":
        from .emulated import EmulatedBackend
        return EmulatedBackend(state)
    from .processes import ProcessesBackend
    return ProcessesBackend(state)


__all__ = ["Backend", "ClusterSpec", "default_backend", "for_state"]
