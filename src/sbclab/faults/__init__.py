"""Faults applied during runs (a nemesis): the kinds, by the name an experiment gives them.

A new kind is one module beside these with `name`, `lasting`, `check`, `unsupported` and `apply`
(base.FaultKind), and a line here."""

from ..errors import SbclabError
from . import fill, kill, partition, pause, slow_disk
from .base import FaultKind, FaultSpec

KINDS: dict[str, FaultKind] = {m.name: m for m in (kill, pause, partition, fill, slow_disk)}


def get(name: str) -> FaultKind:
    try:
        return KINDS[name]
    except KeyError:
        raise SbclabError(f"Unknown fault '{name}'.", f"Choose from {', '.join(KINDS)}.") from None


def check(spec: FaultSpec) -> None:
    """The declaration complete for its kind (ValueError, one sentence, where it is not)."""
    if spec.kind not in KINDS:
        raise ValueError(f"unknown fault '{spec.kind}'; choose from {', '.join(KINDS)}")
    KINDS[spec.kind].check(spec)
