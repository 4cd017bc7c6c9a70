"""Writing files so a crash leaves either the old content or the new, never half of one."""

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


def write_text(path: Path, text: str) -> None:
    """Write via a temporary file in the same directory, fsync it, rename it, fsync the directory."""
    with open_for_write(path, "w") as out:
        out.write(text)


@contextmanager
def open_for_write(path: Path, mode: str = "wb"):
    """A file that appears at `path`, complete, only when the block ends without an exception."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _sync_dir(path)


def _sync_dir(path: Path) -> None:
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
