"""Hardware profiles: boards and storage media, shipped as data and extendable by the user."""

from functools import cache
from importlib import resources
from pathlib import Path

import yaml
from pydantic import ValidationError

from ..errors import SbclabError
from .model import Board, MediumOnBoard, Storage

__all__ = ["Board", "Storage", "MediumOnBoard", "board", "storage", "boards", "storages"]


def _load(kind: str, model):
    text = resources.files(__package__).joinpath("data", f"{kind}.yaml").read_text()
    raw = yaml.safe_load(text)
    try:
        return {name: model(name=name, **fields) for name, fields in raw.items()}
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise SbclabError(f"The shipped {kind} profile data is invalid at '{field}': {first['msg']}.",
                          "Reinstall sbclab.") from err


@cache
def boards() -> dict[str, Board]:
    return _load("boards", Board)


@cache
def storages() -> dict[str, Storage]:
    return _load("storage", Storage)


def board(name: str) -> Board:
    known = boards()
    if name not in known:
        raise SbclabError(f"Unknown board profile '{name}'.", f"Choose one of: {', '.join(sorted(known))}.")
    return known[name]


def storage(name: str) -> Storage:
    known = storages()
    if name not in known:
        raise SbclabError(f"Unknown storage profile '{name}'.", f"Choose one of: {', '.join(sorted(known))}.")
    return known[name]
