"""Hardware profiles: boards and storage media, shipped as data and extendable by the user.

Shipped profiles live in data/boards.yaml and data/storage.yaml. A user adds one as a file,
$SBCLAB_HOME/profiles/boards/NAME.yaml or $SBCLAB_HOME/profiles/storage/NAME.yaml, holding the same
fields as a shipped entry; it is validated when loaded and every error names the file and field.
"""

import re
from functools import cache
from importlib import resources
from pathlib import Path

import yaml
from pydantic import ValidationError

from .. import paths, utf8
from ..errors import SbclabError
from .model import Board, MediumOnBoard, Storage

__all__ = ["Board", "Storage", "MediumOnBoard", "board", "storage", "boards", "storages", "check_pair",
           "user_dir"]

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
_KINDS = {"boards": Board, "storage": Storage}


def user_dir() -> Path:
    return paths.home() / "profiles"


def _describe(err: ValidationError) -> str:
    first = err.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "(top level)"
    message = first["msg"].removeprefix("Value error, ")
    more = len(err.errors()) - 1
    return f"field '{field}': {message}" + (f" (and {more} more)" if more else "")


def _validate(kind: str, name: str, fields, origin: str):
    if not _NAME.match(name):
        raise SbclabError(f"{origin}: '{name}' is not a usable profile name.",
                          "Use lower-case letters, digits and '-', e.g. mypi5-16gb.")
    if not isinstance(fields, dict):
        raise SbclabError(f"{origin}: profile '{name}' must be a mapping of fields.",
                          "Copy a shipped entry (sbclab profiles show rpi5b) and edit it.")
    try:
        return _KINDS[kind](name=name, **{k: v for k, v in fields.items() if k != "name"})
    except ValidationError as err:
        raise SbclabError(f"{origin}: {kind} profile '{name}' is invalid at {_describe(err)}.",
                          f"Fix that field; 'sbclab profiles show {'rpi5b' if kind == 'boards' else 'nvme-p31-gen2'}' "
                          "shows a valid entry.") from err


def _read_yaml(text: str, origin: str):
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise SbclabError(f"{origin} is not valid YAML: {err}.", "Fix the file's syntax.") from err


@cache
def _load(kind: str) -> dict:
    shipped_file = resources.files(__package__).joinpath("data", f"{kind}.yaml")
    raw = _read_yaml(shipped_file.read_text(), f"shipped {kind}.yaml")
    profiles = {name: _validate(kind, name, fields, f"shipped {kind}.yaml") for name, fields in raw.items()}
    folder = user_dir() / kind
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        name = path.stem
        if name in profiles:
            raise SbclabError(f"{path}: a shipped {kind} profile is already called '{name}'.",
                              "Rename the file (e.g. add a suffix such as -mine).")
        profiles[name] = _validate(kind, name, _read_yaml(utf8.read(path), str(path)), str(path))
        if kind == "storage":
            _check_slots(profiles[name], str(path))
    return profiles


def _check_slots(medium: Storage, origin: str) -> None:
    """A medium's figures can only have been measured in boards that take its interface."""
    for board_name in medium.on_board:
        known = boards().get(board_name)
        if known and medium.interface not in known.storage_interfaces:
            raise SbclabError(f"{origin}: field 'on_board.{board_name}': a {medium.interface} medium cannot be attached "
                              f"to {board_name}, which takes {', '.join(known.storage_interfaces)}.",
                              "Remove that entry or correct the medium's interface.")


def boards() -> dict[str, Board]:
    return _load("boards")


def storages() -> dict[str, Storage]:
    return _load("storage")


def reload() -> None:
    """Forget loaded profiles (after a user profile file changed)."""
    _load.cache_clear()


def board(name: str) -> Board:
    known = boards()
    if name not in known:
        raise SbclabError(f"Unknown board profile '{name}'.", f"Choose one of: {', '.join(sorted(known))}.")
    return known[name]


def storage(name: str) -> Storage:
    name = resolve_storage(name)
    known = storages()
    if name not in known:
        raise SbclabError(f"Unknown storage profile '{name}'.",
                          f"Choose one of: {', '.join(sorted([*known, *STORAGE_ALIASES]))}.")
    return known[name]


# Short names for the media of the newest seed, as its text calls them.
STORAGE_ALIASES = {"nvme": "nvme-p31-gen3", "microsd": "microsd-pro-plus"}


def resolve_storage(name: str) -> str:
    return STORAGE_ALIASES.get(name, name)


def check_pair(board_name: str, storage_name: str) -> tuple[Board, Storage]:
    """The board and medium, refused when the board has no slot for that kind of medium."""
    b, s = board(board_name), storage(storage_name)
    if s.interface not in b.storage_interfaces:
        fits = sorted(n for n, m in storages().items() if m.interface in b.storage_interfaces)
        raise SbclabError(f"{s.description} ({s.interface}) cannot be attached to {b.name}, which takes "
                          f"{', '.join(b.storage_interfaces)}.", f"Choose one of: {', '.join(fits)}.")
    return b, s
