"""Data sizes as users write them: 256MB, 1GB, 2GiB.

Decimal prefixes (kB, MB, GB, TB) are powers of 1000 and binary ones (KiB, MiB, GiB, TiB) powers
of 1024, as in IEC 80000-13; the seeds' "1 GB" inputs are read as 10^9 bytes.
"""

import re

from .errors import SbclabError

_FACTORS = {
    "": 1, "B": 1,
    "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
    "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
# More data than any cluster of boards, or this host's emulation of one, could hold: a size above it
# is a slip of the keyboard, refused before anything is planned for it.
MOST_BYTES = 10**15  # 1 PB


def parse_size(text: str) -> int:
    """Bytes in a size such as '256MB', '1GB', '2GiB' or '1048576'."""
    match = _SIZE.match(str(text))
    unit = match.group(2).upper() if match else None
    if not match or unit not in _FACTORS:
        raise SbclabError(
            f"'{text}' is not a data size.",
            "Write a number and a unit, for example 256MB, 1GB or 2GiB (MB/GB are powers of 1000, MiB/GiB of 1024).",
        )
    value = float(match.group(1)) * _FACTORS[unit]
    if value <= 0:
        raise SbclabError(f"'{text}' is not a positive size.", "Give a size above zero, for example 256MB.")
    return int(bounded(value, text))


def bounded(n_bytes: float, written) -> float:
    """A size in bytes as given, refused above what any cluster could hold (MOST_BYTES)."""
    if n_bytes > MOST_BYTES:
        shown = str(written) if len(str(written)) <= 30 else f"{str(written)[:12]}...{str(written)[-6:]}"
        raise SbclabError(f"'{shown}' is more data than any cluster sbclab runs could hold (1 PB at most).",
                          "Give a size such as 256MB or 10GB; 1000TB is the largest.")
    return n_bytes


def format_size(n_bytes: float) -> str:
    """A short human form in decimal units, the way the seeds quote sizes."""
    for unit, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if abs(n_bytes) >= factor:
            return f"{n_bytes / factor:.3g} {unit}"
    return f"{int(n_bytes)} B"


def format_duration(seconds: float | None) -> str:
    """A duration the way a person plans by: 45 s, 12 min, 3.5 h, 2.1 days; '?' when unknown."""
    if seconds is None:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
