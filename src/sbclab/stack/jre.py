"""Java runtimes sbclab assembles from Debian's packages, for a stack whose Java this host's Debian
release no longer packages: the 2021 seed's Hadoop 3.1.3 and Spark 2.3.0 run on Java 8 only, and of
Debian's suites only unstable still builds OpenJDK 8 — against a newer C library than Debian 12's.

The runtime is taken with the C and C++ libraries of the same suite, through apt (the suite's index
checked against Debian's archive keyring, every package against its index) into a private folder, so
the host's packages and apt state stay as they were. Its programs are then pointed at those libraries
(ELF interpreter and run path, with patchelf); nothing else sees them, so what the JVM starts (bash,
df, the NodeManager's container scripts) runs on the host's own C library. The interpreter's path is
absolute, so a runtime is assembled for the place it lives in: the cache, which emulated and
processes-backend nodes share with this host (a container mounts it at the same path).

Layout: cache/jre-<major>-<arch>/          Debian's jre/ (bin/java, lib/...), configuration files in place
        cache/jre-<major>-<arch>/sysroot/  the suite's ld.so, libc, libstdc++, libgcc_s, zlib
        cache/jre-<major>-<arch>/MANIFEST.json, SOURCE.json (packages, versions, SHA-256 of each .deb)
"""

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import atomic, paths
from ..digest import sha256
from ..errors import SbclabError

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
MIRROR = "http://deb.debian.org/debian"
# What the C library's loader is called, and where Debian puts the libraries, by architecture.
LOADERS = {"amd64": ("ld-linux-x86-64.so.2", "x86_64-linux-gnu"), "arm64": ("ld-linux-aarch64.so.1", "aarch64-linux-gnu")}
LIBRARIES = ("libc6", "libgcc-s1", "libstdc++6", "zlib1g")
TOOLS = {"apt-get": "apt", "dpkg-deb": "dpkg", "patchelf": "patchelf"}


@dataclass(frozen=True)
class DebianRuntime:
    major: int
    suite: str
    package: str

    def home_in_package(self, arch: str) -> str:
        return f"usr/lib/jvm/java-{self.major}-openjdk-{arch}/jre"

    @property
    def config_in_package(self) -> str:
        return f"etc/java-{self.major}-openjdk"


RUNTIMES = {8: DebianRuntime(8, "sid", "openjdk-8-jre-headless")}


def host_arch() -> str:
    try:
        return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)


def home(major: int, arch: str | None = None) -> Path:
    return paths.cache_dir().resolve() / f"jre-{major}-{arch or host_arch()}"


def assembled_homes() -> list[Path]:
    """The runtimes sbclab assembled on this host, whole (their manifest written last)."""
    cache = paths.cache_dir()
    return sorted(p.resolve() for p in cache.glob("jre-*") if (p / "MANIFEST.json").exists()) if cache.is_dir() else []


def can_assemble(majors: tuple[int, ...]) -> bool:
    return any(major in RUNTIMES for major in majors)


def assemble(major: int, refresh: bool = False) -> Path:
    """The Java runtime of this major in the cache, assembled from Debian's packages when missing."""
    runtime = RUNTIMES.get(major)
    if runtime is None:
        raise SbclabError(f"sbclab cannot assemble a Java {major} runtime.",
                          "Install one and set SBCLAB_JAVA_HOME to it.")
    arch = host_arch()
    if arch not in LOADERS:
        raise SbclabError(f"sbclab assembles Java {major} for amd64 and arm64 hosts, not {arch}.",
                          f"Install a Java {major} runtime and set SBCLAB_JAVA_HOME to it.")
    target = home(major, arch)
    if (target / "MANIFEST.json").exists() and not refresh:
        return target
    missing = [package for tool, package in TOOLS.items() if shutil.which(tool) is None]
    missing += [] if Path(KEYRING).exists() else ["debian-archive-keyring"]
    if missing:
        raise SbclabError(f"Assembling Java {major} from Debian's packages needs {', '.join(missing)}.",
                          f"Run 'make setup' (or apt-get install {' '.join(missing)}).")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".jre-{major}."))
    try:
        debs = _download(runtime, arch, staging / "apt")
        unpacked = staging / "unpacked"
        for deb in debs.values():
            subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True, capture_output=True)
        built = staging / "jre"
        shutil.copytree(unpacked / runtime.home_in_package(arch), built, symlinks=True)
        _resolve_config_links(built, unpacked / runtime.config_in_package, runtime)
        loader, triplet = LOADERS[arch]
        sysroot = built / "sysroot"
        sysroot.mkdir()
        for library in sorted((unpacked / "usr" / "lib" / triplet).iterdir()):
            if library.is_file() or library.is_symlink():
                shutil.copy2(library, sysroot / library.name, follow_symlinks=False)
        _point_at_sysroot(built, target / "sysroot", loader)
        atomic.write_text(built / "SOURCE.json", json.dumps(
            {"suite": runtime.suite, "mirror": MIRROR, "arch": arch,
             "packages": {name: {"file": deb.name, "sha256": sha256(deb)} for name, deb in debs.items()}}, indent=1))
        manifest = {str(p.relative_to(built)): sha256(p) for p in sorted(built.rglob("*"))
                    if p.is_file() and not p.is_symlink()}
        atomic.write_text(built / "MANIFEST.json", json.dumps({"files": manifest}, indent=1))
        if target.exists():
            shutil.rmtree(target)
        built.rename(target)
    except subprocess.CalledProcessError as failed:
        raise SbclabError(f"Assembling Java {major} from Debian {runtime.suite} failed: "
                          f"{' '.join(map(str, failed.cmd[:2]))} said {_last_line(failed)}",
                          "Check that deb.debian.org is reachable, or set SBCLAB_JAVA_HOME to a Java "
                          f"{major} runtime.") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _download(runtime: DebianRuntime, arch: str, root: Path) -> dict[str, Path]:
    """The runtime's and the libraries' packages from the suite, with apt's own checks, in a state
    folder of their own (the host's sources, lists and status are not read or touched)."""
    for folder in ("etc/apt.conf.d", "etc/preferences.d", "etc/sources.list.d", "state/lists/partial",
                   "cache/archives/partial", "debs"):
        (root / folder).mkdir(parents=True)
    (root / "etc" / "sources.list").write_text(f"deb [signed-by={KEYRING}] {MIRROR} {runtime.suite} main\n")
    options = [f"-oDir::Etc={root / 'etc'}", f"-oDir::State={root / 'state'}", f"-oDir::Cache={root / 'cache'}",
               "-oDir::State::status=/dev/null", f"-oAPT::Architecture={arch}", "-oAcquire::Languages=none",
               "-oAPT::Sandbox::User=root", "-qq"]
    subprocess.run(["apt-get", *options, "update"], check=True, capture_output=True, text=True)
    packages = [runtime.package, *LIBRARIES]
    subprocess.run(["apt-get", *options, "download", *packages], check=True, capture_output=True, text=True,
                   cwd=root / "debs")
    found = {}
    for package in packages:
        debs = sorted((root / "debs").glob(f"{package}_*.deb"))
        if not debs:
            raise SbclabError(f"apt did not download {package} from Debian {runtime.suite}.",
                              "Check that deb.debian.org is reachable.")
        found[package] = debs[0]
    return found


def _resolve_config_links(jre: Path, config: Path, runtime: DebianRuntime) -> None:
    """Debian keeps the runtime's configuration in /etc/java-N-openjdk, linked from jre/lib: those
    links are replaced by the files of the package; links out of the package (the system's CA
    store) are dropped, as a cluster on its own network fetches nothing over TLS."""
    prefix = f"/{runtime.config_in_package}/"
    for link in [p for p in jre.rglob("*") if p.is_symlink()]:
        pointed = os.readlink(link)
        if not pointed.startswith("/"):
            continue
        link.unlink()
        source = config / pointed.removeprefix(prefix) if pointed.startswith(prefix) else None
        if source is not None and source.is_file():
            shutil.copy2(source, link)


def _point_at_sysroot(jre: Path, final_sysroot: Path, loader: str) -> None:
    """Every program of the runtime loads through the suite's loader, and every program and library
    looks in the suite's libraries first (their run path; the host's follow, for what the suite did
    not bring)."""
    for path in sorted(jre.rglob("*")):
        if path.is_symlink() or not path.is_file() or not _is_elf(path):
            continue
        if path.parent.name == "sysroot":
            # The suite's C++ runtime needs the suite's libgcc_s, which the host's loader cache would
            # otherwise supply; the loader and the C library are left as built.
            if not path.name.startswith(("ld-linux", "libc.so")):
                subprocess.run(["patchelf", "--set-rpath", "$ORIGIN", str(path)], check=True, capture_output=True)
            continue
        program = subprocess.run(["patchelf", "--print-interpreter", str(path)], capture_output=True).returncode == 0
        own = subprocess.run(["patchelf", "--print-rpath", str(path)], capture_output=True, text=True).stdout.strip()
        argv = ["patchelf", "--set-rpath", ":".join(filter(None, [str(final_sysroot), own, "$ORIGIN"]))]
        if program:
            argv += ["--set-interpreter", str(final_sysroot / loader)]
        subprocess.run([*argv, str(path)], check=True, capture_output=True)


def _is_elf(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def _last_line(failed: subprocess.CalledProcessError) -> str:
    text = (failed.stderr or failed.stdout or "")
    text = text.decode(errors="replace") if isinstance(text, bytes) else text
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else f"exit status {failed.returncode}"
