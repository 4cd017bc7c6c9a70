"""Hadoop and Spark distributions, assembled from Maven Central into the cache once and verified on use.

Layout (mirrors the Apache tarballs where it matters to the launchers):
  cache/hadoop-3.3.6/lib/*.jar          every jar the daemons, jobs and examples need
  cache/spark-3.5.0/jars/*.jar, RELEASE  Spark's launcher looks for jars/ beside RELEASE
  cache/*/MANIFEST.json                 sha256 of every file, checked before each `cluster up`
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import atomic, paths
from ..errors import SbclabError
from .java import java_version

HADOOP_VERSION = "3.3.6"
SPARK_VERSION = "3.5.0"
SCALA_BINARY = "2.12"


def java_dir() -> Path:
    """The project's Maven modules (the repository's java/ folder)."""
    override = os.environ.get("SBCLAB_JAVA_DIR")
    here = Path(override) if override else Path(__file__).resolve().parents[3] / "java"
    if not (here / "dist" / "hadoop" / "pom.xml").exists():
        raise SbclabError(f"sbclab's Maven modules are not at {here}.",
                          "Run sbclab from its source checkout (pip install -e .) or set SBCLAB_JAVA_DIR.")
    return here


@dataclass(frozen=True)
class Distribution:
    hadoop_home: Path
    spark_home: Path
    jobs_jar: Path

    @property
    def hadoop_lib(self) -> Path:
        return self.hadoop_home / "lib"

    @property
    def hadoop_classpath(self) -> str:
        return str(self.hadoop_lib / "*")

    @property
    def examples_jar(self) -> Path:
        return self.hadoop_lib / f"hadoop-mapreduce-examples-{HADOOP_VERSION}.jar"

    @property
    def spark_jars(self) -> Path:
        return self.spark_home / "jars"

    def relocated(self, root: Path) -> "Distribution":
        """The same distribution copied under root (as on a board): hadoop-*, spark-*, the jobs jar."""
        return Distribution(root / self.hadoop_home.name, root / self.spark_home.name, root / self.jobs_jar.name)

    def versions(self, java: str | None = None) -> dict[str, str]:
        """What runs: the distribution's versions and the Java the nodes run it on (this host's by default)."""
        return {"hadoop": HADOOP_VERSION, "spark": SPARK_VERSION, "scala": SCALA_BINARY,
                "java": java or java_version(), "sbclab_jobs_sha256": sha256(self.jobs_jar)[:16]}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _manifest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): sha256(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "MANIFEST.json"}


def verify(home: Path) -> None:
    manifest_file = home / "MANIFEST.json"
    if not manifest_file.exists():
        raise SbclabError(f"{home} is incomplete.", "Run 'sbclab stack fetch --refresh'.")
    expected = json.loads(manifest_file.read_text())["files"]
    actual = _manifest(home)
    if actual != expected:
        changed = sorted(set(expected.items()) ^ set(actual.items()))[:3]
        raise SbclabError(f"The cached distribution in {home} does not match its manifest ({changed[0][0]} differs).",
                          "Run 'sbclab stack fetch --refresh' to fetch it again.")


def _mvn(args: list[str], log: Path) -> None:
    if shutil.which("mvn") is None:
        raise SbclabError("Maven (mvn) is needed to fetch Hadoop and Spark from Maven Central.",
                          "Run 'make setup', or install maven.")
    with open(log, "w") as out:
        done = subprocess.run(["mvn", "-B", "-C", *args], stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise SbclabError(f"Maven failed ({' '.join(args[:2])}).",
                          f"Read {log}; without network, fetch once on a connected machine and copy {paths.cache_dir()}.")


def _assemble(name: str, pom: Path, home: Path, jars_subdir: str, extra_files: dict[str, str]) -> None:
    """Copy a pom's runtime dependencies into home/jars_subdir, then publish home atomically."""
    home.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=home.parent, prefix=f".{name}."))
    try:
        log = home.parent / f"{name}-fetch.log"
        _mvn(["-f", str(pom), "dependency:copy-dependencies", "-DincludeScope=runtime",
              f"-DoutputDirectory={staging / jars_subdir}"], log)
        for file_name, text in extra_files.items():
            (staging / file_name).write_text(text)
        atomic.write_text(staging / "MANIFEST.json", json.dumps({"files": _manifest(staging)}, indent=1))
        if home.exists():
            shutil.rmtree(home)
        staging.rename(home)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def build_jobs(refresh: bool = False) -> Path:
    """Build sbclab's Spark jobs jar when missing or older than its sources."""
    module = java_dir() / "jobs"
    jar = module / "target" / "sbclab-jobs.jar"
    sources = [p for p in (module / "src").rglob("*") if p.is_file()] + [module / "pom.xml"]
    if refresh or not jar.exists() or max(p.stat().st_mtime for p in sources) > jar.stat().st_mtime:
        paths.cache_dir().mkdir(parents=True, exist_ok=True)
        _mvn(["-q", "-f", str(module / "pom.xml"), "package", "-DskipTests"], paths.cache_dir() / "jobs-build.log")
    return jar


def fetch(refresh: bool = False) -> Distribution:
    """Make sure both distributions are in the cache and intact; fetch what is missing."""
    cache = paths.cache_dir()
    hadoop_home = cache / f"hadoop-{HADOOP_VERSION}"
    spark_home = cache / f"spark-{SPARK_VERSION}"
    wanted = [
        ("hadoop", java_dir() / "dist" / "hadoop" / "pom.xml", hadoop_home, "lib", {}),
        ("spark", java_dir() / "dist" / "spark" / "pom.xml", spark_home, "jars",
         {"RELEASE": f"Spark {SPARK_VERSION} (Scala {SCALA_BINARY}) assembled by sbclab from Maven Central\n"}),
    ]
    for name, pom, home, subdir, extra in wanted:
        if refresh or not (home / "MANIFEST.json").exists():
            _assemble(name, pom, home, subdir, extra)
    return Distribution(hadoop_home, spark_home, build_jobs(refresh))


def installed(check: bool = True) -> Distribution:
    """The cached distributions, verified; an error says how to fetch them when they are missing."""
    cache = paths.cache_dir()
    dist = Distribution(cache / f"hadoop-{HADOOP_VERSION}", cache / f"spark-{SPARK_VERSION}",
                        java_dir() / "jobs" / "target" / "sbclab-jobs.jar")
    if check:
        for home in (dist.hadoop_home, dist.spark_home):
            verify(home)
        if not dist.jobs_jar.exists():
            raise SbclabError(f"The Spark jobs jar {dist.jobs_jar} is not built.", "Run 'sbclab stack fetch'.")
    return dist
