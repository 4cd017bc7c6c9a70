"""Files people write or carry between machines (experiments, inventories, power files, profiles, run
documents) are UTF-8 text. One saved in another encoding is refused naming the byte that gives it
away and its line, rather than decoded by the locale's guess."""

from pathlib import Path

from .errors import SbclabError


SAVE_AS_UTF8 = "Save it as UTF-8 (an editor's encoding setting, or iconv -t UTF-8)."


def read(path: Path, hint: str = SAVE_AS_UTF8) -> str:
    """The file's text. OSError is raised as reading raises it; bytes that are not UTF-8 are a
    refusal with `hint` as what to do."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise SbclabError(f"{path} is not UTF-8 text: byte 0x{data[err.start]:02x} on line {line} cannot be read.",
                          hint) from err
