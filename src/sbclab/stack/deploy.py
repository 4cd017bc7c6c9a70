"""Putting the stack on real boards: a Java each, the distribution where it differs, the folders.

Deploying is idempotent: Java is installed only where no supported Java answers, the distribution
is copied only where its manifests differ (as one tar stream, unpacked beside its final place and
renamed over it, so a board never holds half of one under the real name), and a second `up`
changes nothing and says what differs.
"""

import hashlib
import os
from pathlib import Path

from ..cluster import packages, systems
from ..cluster.remote import in_parallel, raise_first
from ..cluster.spec import NodeSpec
from ..cluster.transport import Transport
from ..digest import sha256
from ..errors import SbclabError
from .distribution import Distribution
from .java import major_of, pick_java
from .record import JavaOnNode, StackRecord
from .versions import StackVersions

# The OpenJDK majors each distribution packages (Raspberry Pi OS follows Debian's numbering).
PACKAGED_JAVA = {("debian", "11"): (11, 17), ("debian", "12"): (17,), ("debian", "13"): (21, 25),
                 ("raspbian", "11"): (11, 17), ("raspbian", "12"): (17,), ("raspbian", "13"): (21, 25),
                 ("ubuntu", "22.04"): (11, 17, 21), ("ubuntu", "24.04"): (17, 21, 25)}

# Java homes a board offers, one per line: "<home>|<first line of java -version>".
FIND_JAVA = r'''
for d in "$JAVA_HOME" /usr/lib/jvm/*; do
  [ -n "$d" ] && [ -x "$d/bin/java" ] || continue
  [ -L "$d" ] && continue
  printf '%s|%s\n' "$d" "$("$d/bin/java" -version 2>&1 | head -n 1)"
done
'''

# A folder from a tar stream on stdin: unpacked beside its final place, then renamed over it.
UNPACK = r'''
set -e
final="$1"; parent=$(dirname "$final"); partial="$final.partial.$$"
mkdir -p "$parent" "$partial"
tar -xf - -C "$partial"
rm -rf "$final"
mv "$partial/$(basename "$final")" "$final"
rmdir "$partial"
'''

# A file from stdin, written beside its final place and renamed over it. The partial file is the
# shell's own: boards that share a folder (NFS, or the tests' boards on one host) may receive the same
# file at once, and a shared one was renamed away from under the second.
RECEIVE = 'mkdir -p "$(dirname "$1")" && cat > "$1.partial.$$" && mv "$1.partial.$$" "$1"'


def dist_dir_default(master_data_dir: str) -> str:
    return f"{master_data_dir}/sbclab/dist"


def _each(transport: Transport, work) -> dict[str, object]:
    return in_parallel(list(transport.spec.nodes), work, lambda node: node.name)


def find_java(transport: Transport, node: NodeSpec, majors: tuple[int, ...]) -> tuple[str, str] | None:
    return pick_java(transport.capture(node, ["sh", "-c", FIND_JAVA]).stdout.decode(errors="replace"), majors)


def java_to_install(system: dict[str, str], stack: StackVersions) -> str:
    """The OpenJDK package of the board's distribution (its facts, cluster/systems.py) the stack runs
    on (the newest such major), or one sentence saying why there is none."""
    packaged = PACKAGED_JAVA.get((system.get("os_id", ""), system.get("os_version", "")))
    wanted = _majors(stack.java)
    if packaged is None:
        raise SbclabError(f"runs {system.get('os', 'an unknown system')}, whose Java packages sbclab does not "
                          f"know, and has no Java {wanted} installed",
                          f"Install a Java {wanted} on it, then run 'cluster up' again.")
    fits = [major for major in packaged if major in stack.java]
    if not fits:
        raise SbclabError(f"runs {system.get('os')}, which packages Java {_majors(packaged)}, and the "
                          f"{stack.name} stack runs on Java {wanted} only",
                          f"Install a Java {wanted} on it yourself, or choose a stack that runs on Java "
                          f"{_majors(packaged)} ('sbclab stack list').")
    return f"openjdk-{max(fits)}-jre-headless"


def _majors(majors: tuple[int, ...]) -> str:
    return " or ".join(map(str, majors))


def ensure_java(transport: Transport, node: NodeSpec, stack: StackVersions, jdk: Path | None = None,
                root: Path | None = None, log: Path = Path("/dev/null")) -> tuple[tuple[str, str], list[str]]:
    """(home, version) of a Java the stack runs on: one the board has, else its distribution's
    package, else the JDK given from this host (copied under root)."""
    java = find_java(transport, node, stack.java)
    if java is not None:
        return java, []
    try:
        package = java_to_install(systems.of_node(transport, node), stack)
    except SbclabError as err:
        if jdk is not None:
            return ship_jdk(transport, node, stack, jdk, root, log)
        raise SbclabError(f"{node.name} {err.message}", f"{err.hint} Or give a JDK from this host: --jdk PATH.") from err
    said = packages.install(transport, node, [package])
    java = find_java(transport, node, stack.java)
    if java is None:
        if jdk is not None:
            return ship_jdk(transport, node, stack, jdk, root, log)
        raise SbclabError(f"no Java {_majors(stack.java)} on {node.name}, and installing {package} did not give one "
                          f"({said or 'no output'}).",
                          f"Install it on {node.name} (sudo apt-get install {package}), let its user run sudo "
                          "without a password, or give a JDK from this host (--jdk PATH); then run 'cluster up' again.")
    return java, [f"installed {package}"]


def jdk_digest(jdk: Path) -> str:
    """The SHA-256 of a JDK tarball, or of a folder's files (each path with its digest)."""
    if jdk.is_file():
        return sha256(jdk)
    digest = hashlib.sha256()
    # Links followed, as the copy follows them: Debian's JDK links its conf/ and cacerts into /etc.
    files = sorted(Path(folder, name) for folder, _, names in os.walk(jdk, followlinks=True) for name in names)
    for path in files:
        if path.is_file():
            digest.update(f"{path.relative_to(jdk)}\0{sha256(path)}\n".encode())
    return digest.hexdigest()


# A JDK from a tar stream on stdin ($2: tar's options), kept with its digest ($3) so that it is copied once.
RECEIVE_JDK = r'''
set -e
final="$1"; partial="$final.partial.$$"
rm -rf "$partial"; mkdir -p "$partial"
tar $2 -C "$partial"
[ -x "$partial/bin/java" ] || { echo "no bin/java in it" >&2; rm -rf "$partial"; exit 3; }
printf '%s' "$3" > "$partial/.sbclab-sha256"
rm -rf "$final"; mv "$partial" "$final"
'''


def ship_jdk(transport: Transport, node: NodeSpec, stack: StackVersions, jdk: Path, root: Path | None,
             log: Path) -> tuple[tuple[str, str], list[str]]:
    """The JDK given from this host on the board (once per digest), checked to run there and to be a
    Java the stack runs on."""
    if root is None:
        raise SbclabError("a JDK can only be copied to boards.", "Give --jdk with --inventory.")
    digest = jdk_digest(jdk)
    there = root / f"jdk-{digest[:16]}"
    if jdk.is_dir():
        # A link to nothing (Debian's JDK links lib/src.zip to a package seldom installed) is left out:
        # GNU tar says so and exits 1 ("some files differ"), which is no failure here.
        feed = ["sh", "-c", 'tar -h -C "$0" -cf - . ; status=$?; [ "$status" -le 1 ] || exit "$status"', str(jdk)]
        options = "-xf -"
    else:
        compression = "z" if jdk.name.endswith((".tar.gz", ".tgz")) else "J" if jdk.name.endswith(".tar.xz") else ""
        feed, options = ["cat", "--", str(jdk)], f"-x{compression}f - --strip-components=1"
    present = transport.capture(node, ["cat", str(there / ".sbclab-sha256")]).stdout.decode(errors="replace")
    status = 0 if present == digest else transport.run(
        node, ["sh", "-c", RECEIVE_JDK, "sh", str(there), options, digest], {}, log, timeout_s=3600,
        label=f"copy {jdk.name}", feed=feed)
    if status != 0:
        raise SbclabError(f"copying the JDK {jdk} to {there} on {node.name} failed (exit {status}).",
                          f"Give a folder holding bin/java, or a .tar.gz/.tar.xz of one (as Adoptium ships them); read {log}.")
    version = transport.capture(node, [str(there / "bin" / "java"), "-version"])
    line = (version.stderr.decode(errors="replace").strip().splitlines() or [""])[0]
    major = major_of(line)
    if version.status != 0 or major not in stack.java:
        found = f"Java {major}" if major else f"a JDK that does not run there ({line or 'exit ' + str(version.status)})"
        raise SbclabError(f"the JDK {jdk} is {found} on {node.name}; the {stack.name} stack runs on Java {_majors(stack.java)}.",
                          f"Give a Java {_majors(stack.java)} JDK built for {node.name}'s CPU (uname -m there).")
    copied = [] if present == digest else [f"copied JDK {jdk.name} (sha256 {digest[:12]})"]
    return (str(there), line), copied


def _parts(local: Distribution) -> list[tuple[Path, str]]:
    """Each part of the distribution with the file whose digest stands for it."""
    return [(local.hadoop_home, "MANIFEST.json"), (local.spark_home, "MANIFEST.json"), (local.jobs_jar, "")]


def stale(transport: Transport, node: NodeSpec, local: Distribution, root: Path) -> list[Path]:
    """The parts of this host's distribution (Hadoop, Spark by manifest; the jobs jar) the board lacks."""
    out = []
    for part, digest_of in _parts(local):
        there = root / part.name
        have = transport.capture(node, ["sha256sum", "--", str(there / digest_of if digest_of else there)])
        if have.stdout.decode().split(" ")[0] != sha256(part / digest_of if digest_of else part):
            out.append(part)
    return out


def ship(transport: Transport, node: NodeSpec, local: Distribution, root: Path, log: Path) -> list[str]:
    """Copy what differs from this host's cache; a folder goes as one tar stream, unpacked aside."""
    changed = []
    for part in stale(transport, node, local, root):
        there = root / part.name
        if part.is_file():
            argv, feed = ["sh", "-c", RECEIVE, "sh", str(there)], ["cat", "--", str(part)]
        else:
            argv, feed = ["sh", "-c", UNPACK, "sh", str(there)], ["tar", "-C", str(part.parent), "-cf", "-", part.name]
        status = transport.run(node, argv, {}, log, timeout_s=3600, label=f"copy {part.name}", feed=feed)
        if status != 0:
            raise SbclabError(f"copying {part.name} to {there} failed (exit {status}).",
                              f"Check free space under {root} on {node.name} ('df -h'); read {log}.")
        changed.append(f"copied {part.name}")
    return changed


def to_boards(transport: Transport, record: StackRecord, local: Distribution, log_dir: Path,
              jdk: Path | None = None) -> None:
    """Java and the distribution on every board, in parallel; recorded in the stack's record."""
    root = Path(record.dist_dir)

    def one(node):
        log = log_dir / f"deploy-{node.name}.log"
        java, changed = ensure_java(transport, node, local.stack, jdk, root, log.with_name(f"java-{node.name}.log"))
        changed += ship(transport, node, local, root, log)
        return JavaOnNode(home=java[0], version=java[1]), changed
    done = _each(transport, one)
    raise_first(done, "Deploying")
    record.java = {name: got[0] for name, got in done.items()}
    record.deploy = {name: got[1] for name, got in done.items()}


def differences(transport: Transport, record: StackRecord, local: Distribution) -> list[str]:
    """What differs on the boards from what to_boards would leave there (nothing is changed)."""
    root = Path(record.dist_dir)

    def one(node):
        differs = [f"{part.name} on {node.name}" for part in stale(transport, node, local, root)]
        java = record.java.get(node.name)
        if java is None or transport.capture(node, ["test", "-x", f"{java.home}/bin/java"]).status != 0:
            differs.append(f"Java on {node.name}")
        return differs
    found = _each(transport, one)
    raise_first(found, "Checking the deployment")
    return [d for got in found.values() for d in got]
