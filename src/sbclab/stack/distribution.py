"""Hadoop and Spark distributions of a stack, assembled from Maven Central into the cache once per
version and verified on use.

Layout (mirrors the Apache tarballs where it matters to the launchers):
  cache/hadoop-<version>/lib/*.jar                     every jar the daemons, jobs and examples need
  cache/spark-<version>/jars/*.jar, RELEASE            Spark's launcher looks for jars/ beside RELEASE
  cache/spark-<version>/python/lib/pyspark.zip, py4j-<v>-src.zip   where Spark's launcher finds PySpark
  cache/spark-<version>/bin/spark-submit               what PySpark's driver starts its JVM with
  cache/*/MANIFEST.json                                sha256 of every file, checked before each `cluster up`
  cache/jobs/spark-<version>/sbclab-jobs-spark-<version>.jar   sbclab's jobs compiled against that Spark
  cache/classdata/spark-<version>/                      what quick-start Spark JVMs map rather than load (classdata.py)
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import atomic, paths
from ..digest import sha256
from ..errors import SbclabError
from . import classdata, versions as stacks
from .java import ensure_java, java_home, java_version
from .versions import StackVersions


def java_dir() -> Path:
    """sbclab's Maven modules, shipped in the package (a wheel holds them too): what to fetch of Hadoop and
    Spark, and the jobs' sources, which `stack fetch` builds into the cache."""
    override = os.environ.get("SBCLAB_JAVA_DIR")
    here = Path(override) if override else Path(__file__).resolve().parent.parent / "java"
    if not (here / "dist" / "hadoop" / "pom.xml").exists():
        raise SbclabError(f"sbclab's Maven modules are not at {here}.",
                          "Reinstall sbclab (pip install sbclab-*.whl, or pip install -e . in a checkout), "
                          "or set SBCLAB_JAVA_DIR to a copy of its java folder.")
    return here


@dataclass(frozen=True)
class Distribution:
    stack: StackVersions
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
        return self.hadoop_lib / f"hadoop-mapreduce-examples-{self.stack.examples_version}.jar"

    @property
    def spark_jars(self) -> Path:
        return self.spark_home / "jars"

    @property
    def pyspark_archives(self) -> list[Path]:
        """What a Python driver and its executors put on PYTHONPATH (Spark's launcher looks for these names);
        none on a stack without PySpark."""
        if self.stack.no_pyspark:
            return []
        lib = self.spark_home / "python" / "lib"
        return [lib / "pyspark.zip", lib / f"py4j-{self.stack.py4j}-src.zip"]

    def relocated(self, root: Path) -> "Distribution":
        """The same distribution copied under root (as on a board): hadoop-*, spark-*, the jobs jar."""
        return Distribution(self.stack, root / self.hadoop_home.name, root / self.spark_home.name,
                            root / self.jobs_jar.name)

    def versions(self, java: str | None = None) -> dict[str, str]:
        """What runs: the stack, its versions and the Java the nodes run it on (this host's by default)."""
        return {**self.stack.summary(), "java": java or java_version(self.stack.java),
                "sbclab_jobs_sha256": sha256(self.jobs_jar)[:16]}


def _manifest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): sha256(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "MANIFEST.json"}


def verify(home: Path) -> None:
    manifest_file = home / "MANIFEST.json"
    if not manifest_file.exists():
        raise SbclabError(f"{home} is incomplete.", "Run 'sbclab stack fetch --refresh' (with its --stack).")
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


def _defines(stack: StackVersions, name: str = "") -> list[str]:
    properties = stack.maven_properties()
    if name == "spark" and stack.spark_major < 3:
        # Spark 2's Hadoop client is the one it was released with: a Hadoop 3 client needs a newer
        # Guava than the one Spark 2 runs with, and either Hadoop speaks to the other's daemons.
        properties["hadoop.version"] = stack.spark_hadoop_client
    return [f"-D{key}={value}" for key, value in properties.items()]


# A Maven-assembled Spark has no bin/; PySpark's driver (the pyspark shell, a script run by python)
# starts its JVM with $SPARK_HOME/bin/spark-submit. Spark's launcher library builds the command
# line, NUL-separated after a NUL-and-newline header, its exit status last; parts are taken as
# sbclab's own client takes them (trimmed, empty ones dropped).
SPARK_SUBMIT = r"""#!/usr/bin/env bash
# spark-submit of a Spark distribution sbclab assembled from Maven Central and PyPI.
SPARK_HOME=${SPARK_HOME:-$(cd "$(dirname "$0")/.." && pwd)}
export SPARK_HOME
command=()
while IFS= read -r -d '' part; do
  part=${part#$'\n'}; part=${part%$'\n'}
  [ -n "$part" ] && command+=("$part")
done < <("${JAVA_HOME:+$JAVA_HOME/bin/}java" -Xmx128m $SPARK_LAUNCHER_OPTS -cp "$SPARK_HOME/jars/*" \
           org.apache.spark.launcher.Main org.apache.spark.deploy.SparkSubmit "$@"; printf '%d\0' $?)
status=${command[${#command[@]}-1]}
unset 'command[${#command[@]}-1]'
[ "$status" = 0 ] || exit "$status"
exec "${command[@]}"
"""


def _finish_spark(stack: StackVersions, home: Path) -> None:
    if not stack.no_pyspark:
        _add_pyspark(stack, home)
    if stack.spark_major == 1:
        _add_assembly_manifest(stack, home)
    launcher = home / "bin" / "spark-submit"
    launcher.parent.mkdir()
    launcher.write_text(SPARK_SUBMIT)
    launcher.chmod(0o755)


def _add_assembly_manifest(stack: StackVersions, home: Path) -> None:
    """Spark 1's launcher puts one assembly jar, lib/spark-assembly-*hadoop*.jar, on every driver's and
    executor's class path, where Spark 2 and later list jars/: a jar holding only a manifest whose
    Class-Path names every jar of jars/ stands in for it."""
    names = sorted(p.name for p in (home / "jars").glob("*.jar"))
    text = "Manifest-Version: 1.0\nCreated-By: sbclab\nClass-Path: " + " ".join(f"../jars/{n}" for n in names)
    # A manifest line holds at most 72 bytes; longer ones continue on lines that start with a space.
    lines = []
    for line in text.split("\n"):
        lines.append(line[:72])
        lines += [" " + line[i:i + 71] for i in range(72, len(line), 71)]
    (home / "lib").mkdir()
    with zipfile.ZipFile(home / "lib" / f"spark-assembly-{stack.spark}-hadoop{stack.spark_hadoop_client}.jar", "w") as jar:
        jar.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF", (2016, 1, 1, 0, 0, 0)), "\r\n".join(lines) + "\r\n\r\n")


def _add_pyspark(stack: StackVersions, home: Path) -> None:
    """PySpark as Spark's binary distribution lays it out (python/lib/pyspark.zip and py4j's source
    archive), taken from the pyspark release on PyPI, which is Spark's own Python at the same version:
    Maven Central holds no Python."""
    lib = home / "python" / "lib"
    lib.mkdir(parents=True)
    py4j = f"lib/py4j-{stack.py4j}-src.zip"
    with tempfile.TemporaryDirectory(dir=home.parent, prefix=".pyspark.") as download:
        log = home.parent / f"pyspark-{stack.spark}-fetch.log"
        with open(log, "w") as out:
            done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                                   "--dest", download, f"pyspark=={stack.spark}"], stdout=out, stderr=subprocess.STDOUT)
        sdists = list(Path(download).glob("pyspark-*.tar.gz"))
        if done.returncode != 0 or not sdists:
            raise SbclabError(f"pyspark {stack.spark} could not be downloaded from the Python package index.",
                              f"Read {log}; without network, fetch once on a connected machine and copy {paths.cache_dir()}.")
        found_py4j = False
        # Read as a stream: the release is mostly Spark's jars again (about 450 MB), which are skipped.
        with tarfile.open(sdists[0], "r|gz") as tar, zipfile.ZipFile(lib / "pyspark.zip", "w", zipfile.ZIP_DEFLATED) as zip_file:
            for member in tar:
                inside = member.name.partition("/")[2]
                if not member.isfile() or not (inside.startswith("pyspark/") or inside == py4j):
                    continue
                content = tar.extractfile(member).read()  # type: ignore[union-attr]
                if inside == py4j:
                    (lib / Path(py4j).name).write_bytes(content)
                    found_py4j = True
                else:
                    zip_file.writestr(zipfile.ZipInfo(inside, time.gmtime(member.mtime)[:6]), content)
        if not found_py4j:
            raise SbclabError(f"pyspark {stack.spark} does not ship py4j {stack.py4j} as the stack expects.",
                              "Correct the stack's py4j version in stack/versions.py.")


def _assemble(stack: StackVersions, name: str, pom: Path, home: Path, jars_subdir: str,
              extra_files: dict[str, str], finish: Callable[[StackVersions, Path], None] | None = None) -> None:
    """Copy a pom's runtime dependencies at the stack's versions into home/jars_subdir (and what
    finish adds), then publish home atomically."""
    home.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=home.parent, prefix=f".{name}."))
    try:
        log = home.parent / f"{home.name}-fetch.log"  # one a distribution: stacks are fetched side by side
        _mvn(["-f", str(pom), "dependency:copy-dependencies", "-DincludeScope=runtime", *_defines(stack, name),
              f"-DoutputDirectory={staging / jars_subdir}"], log)
        for file_name, text in extra_files.items():
            (staging / file_name).write_text(text)
        if finish is not None:
            finish(stack, staging)
        atomic.write_text(staging / "MANIFEST.json", json.dumps({"files": _manifest(staging)}, indent=1))
        if home.exists():
            shutil.rmtree(home)
        staging.rename(home)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _jobs_jar(stack: StackVersions) -> Path:
    """sbclab's jobs compiled against the stack's Spark (Scala 2.12 and 2.13 builds do not mix); the
    name says which, so a board holding two stacks keeps both."""
    name = f"sbclab-jobs-spark-{stack.spark}"
    return paths.cache_dir() / "jobs" / f"spark-{stack.spark}" / f"{name}.jar"


def build_jobs(stack: StackVersions, refresh: bool = False) -> Path:
    """Build sbclab's jobs jar for the stack when missing or older than its sources."""
    module = java_dir() / "jobs"
    jar = _jobs_jar(stack)
    sources = [p for p in (module / "src").rglob("*") if p.is_file()] + [module / "pom.xml"]
    with _alone(jar):
        if refresh or not jar.exists() or max(p.stat().st_mtime for p in sources) > jar.stat().st_mtime:
            jar.parent.mkdir(parents=True, exist_ok=True)
            _mvn(["-q", "-f", str(module / "pom.xml"), "package", "-DskipTests", *_defines(stack),
                  f"-Djobs.build.directory={jar.parent / 'build'}", f"-Djobs.final.name={jar.stem}"],
                 paths.cache_dir() / f"jobs-build-spark-{stack.spark}.log")
            (jar.parent / "build" / jar.name).replace(jar)
            shutil.rmtree(jar.parent / "build", ignore_errors=True)
    return jar


def _homes(stack: StackVersions) -> tuple[Path, Path]:
    cache = paths.cache_dir()
    return cache / f"hadoop-{stack.hadoop}", cache / f"spark-{stack.spark}"


def fetch(stack_name: str = stacks.DEFAULT, refresh: bool = False) -> Distribution:
    """Make sure the stack's distributions are in the cache and intact; fetch what is missing."""
    stack = stacks.get(stack_name)
    # The Java first: the jobs are built for it, and a stack whose Java this host lacks is assembled one.
    ensure_java(stack.java, refresh)
    return _fetch_parts(stack, refresh)


def fetch_all(stack_names: list[str], refresh: bool = False,
              say: Callable[[str], None] = lambda message: None) -> list[Distribution]:
    """Several stacks fetched side by side: most of a fetch waits on Maven Central and the Python package
    index (four stacks one after another took 3.5 minutes on a fresh machine). The Javas come first, one
    at a time, since two stacks may share one that sbclab assembles. Maven's local repository is shared;
    its downloads lock each file, but a stack whose fetch failed beside the others is fetched again alone
    before its failure counts."""
    chosen = [stacks.get(name) for name in stack_names]
    for java in dict.fromkeys(stack.java for stack in chosen):
        ensure_java(java, refresh)
    with ThreadPoolExecutor(max_workers=max(1, len(chosen)), thread_name_prefix="stack-fetch") as pool:
        futures = [pool.submit(_fetch_parts, stack, refresh) for stack in chosen]
        wait(futures)
    fetched = []
    for stack, future in zip(chosen, futures):
        if future.exception() is None:
            fetched.append(future.result())
            continue
        failure = future.exception()
        say(f"stack {stack.name}: fetching it again alone ({getattr(failure, 'message', None) or failure})")
        fetched.append(_fetch_parts(stack, refresh))
    return fetched


def _fetch_parts(stack: StackVersions, refresh: bool) -> Distribution:
    """The stack's Hadoop, Spark and jobs jar, its Java already in place."""
    hadoop_home, spark_home = _homes(stack)
    wanted = [
        ("hadoop", java_dir() / "dist" / "hadoop" / "pom.xml", hadoop_home, "lib", {}, None, ["MANIFEST.json"]),
        ("spark", java_dir() / "dist" / "spark" / "pom.xml", spark_home, "jars",
         {"RELEASE": f"Spark {stack.spark} (Scala {stack.scala}) assembled by sbclab from Maven Central and PyPI\n"},
         _finish_spark, ["bin/spark-submit", *([] if stack.no_repl else [f"jars/{stack.repl_jar}"])]),
    ]
    for name, pom, home, subdir, extra, finish, parts in wanted:
        with _alone(home):
            if refresh or not (home / "MANIFEST.json").exists() or not all((home / part).exists() for part in parts):
                # An archive holds the size and time of every jar it was recorded from.
                shutil.rmtree(classdata.folder(home), ignore_errors=True)
                _assemble(stack, name, pom, home, subdir, extra, finish)
    dist = Distribution(stack, hadoop_home, spark_home, build_jobs(stack, refresh))
    with _alone(classdata.folder(spark_home)):
        classdata.record_spark(dist, java_home(stack.java), paths.cache_dir())
    return dist


_guard = threading.Lock()
_being_built: dict[Path, threading.Lock] = {}


def _alone(part: Path) -> threading.Lock:
    """The lock a cached part is made under: stacks fetched side by side may share a version."""
    with _guard:
        return _being_built.setdefault(part, threading.Lock())


def installed(stack_name: str = stacks.DEFAULT, check: bool = True) -> Distribution:
    """The stack's cached distributions, verified; an error says how to fetch them when they are missing."""
    stack = stacks.get(stack_name)
    dist = Distribution(stack, *_homes(stack), _jobs_jar(stack))
    if check:
        require_fetched(dist)
        for home in (dist.hadoop_home, dist.spark_home):
            verify(home)
    return dist


def require_fetched(dist: Distribution) -> None:
    """Every part of the stack is in the cache (not checked against the manifests: see installed)."""
    for part in (dist.hadoop_home / "MANIFEST.json", dist.spark_home / "MANIFEST.json", *dist.pyspark_archives,
                 dist.jobs_jar):
        if not part.exists():
            raise SbclabError(f"The {dist.stack.name} stack is not fetched ({part} is missing).",
                              f"Run 'sbclab stack fetch --stack {dist.stack.name}'.")
