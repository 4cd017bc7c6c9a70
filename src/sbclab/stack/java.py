"""Finding a Java runtime a stack's Hadoop and Spark both run on (stack/versions.py says which majors):
one installed on this host, else one sbclab assembled (jre.py)."""

import os
import re
import subprocess
from functools import cache
from pathlib import Path

from ..errors import SbclabError
from . import jre

def major_of(version_text: str) -> int | None:
    """The major version in `java -version` output ("1.8.0_x" is 8, "17.0.9" is 17)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_text)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2)) if major == 1 and match.group(2) else major


def _major(java: Path) -> int | None:
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    return major_of(out)


@cache
def major_at(home: Path) -> int | None:
    """The major version of the Java at home, None where there is none."""
    return _major(home / "bin" / "java")


@cache
def java_home(majors: tuple[int, ...]) -> Path:
    """SBCLAB_JAVA_HOME, else JAVA_HOME, else the newest JDK of one of these majors under /usr/lib/jvm,
    else one sbclab assembled in its cache."""
    candidates = [os.environ.get("SBCLAB_JAVA_HOME"), os.environ.get("JAVA_HOME")]
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates += [str(p) for p in sorted(jvm.iterdir(), reverse=True) if not p.is_symlink()]
    candidates += [str(p) for p in jre.assembled_homes()]
    seen = []
    for candidate in filter(None, candidates):
        java = Path(candidate) / "bin" / "java"
        major = _major(java) if java.exists() else None
        if major in majors:
            return Path(candidate)
        seen.append(f"{candidate} ({'Java ' + str(major) if major else 'no java'})")
    wanted = " or ".join(map(str, majors))
    hint = ("Run 'sbclab stack fetch' with the stack, which assembles it from Debian's packages, or set "
            f"SBCLAB_JAVA_HOME to a Java {wanted}." if jre.can_assemble(majors) else
            f"Install one (Debian 12: apt-get install openjdk-17-jdk-headless) or set SBCLAB_JAVA_HOME to a Java {wanted}.")
    raise SbclabError(f"No Java {wanted} runtime found" + (f" (looked at {', '.join(seen)})." if seen else "."), hint)


def ensure_java(majors: tuple[int, ...], refresh: bool = False) -> Path:
    """A Java of one of these majors: one found, else one assembled where sbclab knows how (jre.py);
    refresh assembles again one that sbclab assembled."""
    assemblable = [major for major in majors if major in jre.RUNTIMES]
    try:
        found = java_home(majors)
        if not (refresh and found in jre.assembled_homes()):
            return found
    except SbclabError:
        if not assemblable:
            raise
    jre.assemble(assemblable[0], refresh=refresh)
    java_home.cache_clear()
    return java_home(majors)


def java_version(majors: tuple[int, ...]) -> str:
    out = subprocess.run([str(java_home(majors) / "bin" / "java"), "-version"], capture_output=True, text=True).stderr
    return out.splitlines()[0].strip() if out else "unknown"


def pick_java(listing: str, majors: tuple[int, ...]) -> tuple[str, str] | None:
    """(home, version line) of the newest Java of one of these majors in a listing of "<home>|<java
    -version's first line>" lines (deploy.FIND_JAVA), or None."""
    found = []
    for line in listing.splitlines():
        home, _, version = line.partition("|")
        major = major_of(version)
        if major in majors:
            found.append((major, home.strip(), version.strip()))
    if not found:
        return None
    _, home, version = max(found)
    return home, version
