"""Finding a Java runtime Hadoop 3.3.6 and Spark 3.5 both run on (11 or 17; Hadoop fails on 21+)."""

import os
import re
import subprocess
from functools import cache
from pathlib import Path

from ..errors import SbclabError

SUPPORTED = (11, 17)


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
def java_home() -> Path:
    """SBCLAB_JAVA_HOME, else JAVA_HOME, else the newest supported JDK under /usr/lib/jvm."""
    candidates = [os.environ.get("SBCLAB_JAVA_HOME"), os.environ.get("JAVA_HOME")]
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates += [str(p) for p in sorted(jvm.iterdir(), reverse=True) if not p.is_symlink()]
    seen = []
    for candidate in filter(None, candidates):
        java = Path(candidate) / "bin" / "java"
        major = _major(java) if java.exists() else None
        if major in SUPPORTED:
            return Path(candidate)
        seen.append(f"{candidate} ({'Java ' + str(major) if major else 'no java'})")
    raise SbclabError(
        "No Java 11 or 17 runtime found" + (f" (looked at {', '.join(seen)})." if seen else "."),
        "Install one (Debian: apt-get install openjdk-17-jdk-headless) or set SBCLAB_JAVA_HOME.")


def java_version() -> str:
    out = subprocess.run([str(java_home() / "bin" / "java"), "-version"], capture_output=True, text=True).stderr
    return out.splitlines()[0].strip() if out else "unknown"


def pick_java(listing: str) -> tuple[str, str] | None:
    """(home, version line) of the newest supported Java in a listing of "<home>|<java -version's
    first line>" lines (deploy.FIND_JAVA), or None."""
    found = []
    for line in listing.splitlines():
        home, _, version = line.partition("|")
        major = major_of(version)
        if major in SUPPORTED:
            found.append((major, home.strip(), version.strip()))
    if not found:
        return None
    _, home, version = max(found)
    return home, version
