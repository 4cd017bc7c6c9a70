"""Spark's application class-data archive: the quick-start knob's second half, after C1 only.

A Spark JVM spends much of its start-up CPU reading, parsing and verifying the same few thousand
classes out of the distribution's jars. `stack fetch` records them once per Spark version and Java: a
local Spark SQL job runs with -XX:ArchiveClassesAtExit, and every Spark JVM of a quick-start cluster on
this host (the driver, the ApplicationMaster, the executors, the standalone daemons, the launcher)
maps that archive (-XX:SharedArchiveFile) instead. On a 2-worker cluster a tiny Spark job's JVMs
took 13.4 CPU-s with it and 17.3 without (docs/notes.md, "Class-data archives"). Hadoop's JVMs are
not given one: an archive from a local MapReduce job saved a quarter of that job's CPU, and nothing
measurable of a cluster's daemons, clients and tasks, whose CPU goes to other than loading classes.

HotSpot takes an archive only where the class path it was recorded on is a prefix of the JVM's own,
and reads the Class-Path of a jar's manifest as paths relative to that jar, not as URLs. So a
classpath jar here names the distribution's jars relative to itself, and goes first on every Spark
class path (spark.driver.extraClassPath and spark.executor.extraClassPath come before the rest). A jar
that holds a log4j configuration at its root stays out of it, so that the cluster's configuration
folder, which comes after the classpath jar, is still read before it.

Dynamic archives need Java 13; an archive of another Java build is not used (nor is any on a board,
which runs its own Java). A JVM given an archive it cannot map runs without it, silently: the
archive only ever saves time.
"""

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import atomic, paths
from ..errors import SbclabError
from .java import major_at

if TYPE_CHECKING:  # distribution.py records the archives as it fetches
    from .distribution import Distribution

MIN_JAVA = 13
# HotSpot prints a warning to standard output when it cannot use an archive; a client's output is parsed.
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
CLASSPATH_JAR = "classpath.jar"
# Configuration a jar may hold at its root that must not shadow the cluster's own (a log4j file, or a
# *-site.xml; Hadoop's mapreduce-client-jobclient tests jar holds a log4j.properties).
_CONFIGURATION = ("log4j.properties", "log4j2.properties", "log4j2.xml", "log4j.xml")
_MANIFEST_WIDTH = 72


@dataclass(frozen=True)
class ClassData:
    classpath_jar: Path
    archive: Path

    def flags(self) -> list[str]:
        return [f"-XX:SharedArchiveFile={self.archive}", *QUIET]


def folder(engine_home: Path) -> Path:
    """Where an engine's classpath jar and archives live: beside, not in, its distribution, whose
    files its manifest lists."""
    return paths.cache_dir() / "classdata" / engine_home.name


def _java_identity(java_home: Path) -> str | None:
    """A name for the Java build: an archive is valid only for the JVM that wrote it."""
    libjvm = next(iter(sorted(java_home.resolve().glob("lib/server/libjvm.so"))), None)
    major = major_at(java_home)
    if libjvm is None or major is None or major < MIN_JAVA:
        return None
    stat = libjvm.stat()
    digest = hashlib.sha256(f"{libjvm}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    return f"java-{major}-{digest}"


def archive_path(engine_home: Path, java_home: Path) -> Path | None:
    identity = _java_identity(java_home)
    return folder(engine_home) / f"{identity}.jsa" if identity else None


def of(engine_home: Path, java_home: Path) -> ClassData | None:
    """The engine's archive for this Java, if `stack fetch` made one."""
    archive = archive_path(engine_home, java_home)
    classpath_jar = folder(engine_home) / CLASSPATH_JAR
    if archive is None or not archive.is_file() or not classpath_jar.is_file():
        return None
    return ClassData(classpath_jar, archive)


def _holds_configuration(jar: Path) -> bool:
    with zipfile.ZipFile(jar) as opened:
        return any(name in _CONFIGURATION or name.endswith("-site.xml") for name in opened.namelist())


def _manifest(entries: list[str]) -> str:
    """A manifest whose Class-Path lists the entries, wrapped at the 72 bytes a manifest line may hold."""
    text = "Class-Path: " + " ".join(entries)
    lines = [text[:_MANIFEST_WIDTH - 2]]
    rest = text[_MANIFEST_WIDTH - 2:]
    while rest:
        lines.append(" " + rest[:_MANIFEST_WIDTH - 3])
        rest = rest[_MANIFEST_WIDTH - 3:]
    return "Manifest-Version: 1.0\r\n" + "\r\n".join(lines) + "\r\n\r\n"


def write_classpath_jar(jars_dir: Path, target: Path) -> Path:
    """The classpath jar of the jars in jars_dir, relative to target's folder. One already there with
    the same list is kept: an archive holds the size and time of every jar on its class path."""
    jars = [jar for jar in sorted(jars_dir.glob("*.jar")) if not _holds_configuration(jar)]
    manifest = _manifest([os.path.relpath(jar, target.parent) for jar in jars])
    if target.is_file():
        with zipfile.ZipFile(target) as existing:
            if existing.read("META-INF/MANIFEST.MF").decode() == manifest:
                return target
    with atomic.open_for_write(target) as out, zipfile.ZipFile(out, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", manifest)
    return target


def record(archive: Path, classpath_jar: Path, java_home: Path, training: list[str], env: dict[str, str],
           log: Path) -> ClassData:
    """Run the JVM options and main class of `training` (their class path the classpath jar's, first)
    with the archive recorded at its exit, check that the archive maps, then put it in place. A failed
    recording raises and leaves nothing behind."""
    java = str(java_home / "bin" / "java")
    with tempfile.TemporaryDirectory(prefix="sbclab-classdata-") as work:
        recorded = Path(work) / archive.name
        argv = [java, f"-XX:ArchiveClassesAtExit={recorded}", *QUIET, *training]
        with open(log, "w") as out:
            out.write(f"$ {' '.join(argv)}\n")
            out.flush()
            done = subprocess.run(argv, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=600)
            # -Xshare:on refuses to start on an archive it cannot map, and VerifySharedSpaces checks every
            # region's checksum: a half-written archive would bring down every JVM given it.
            check = subprocess.run([java, "-Xshare:on", f"-XX:SharedArchiveFile={recorded}", "-XX:+VerifySharedSpaces",
                                    "-cp", str(classpath_jar), "-version"], stdout=out, stderr=subprocess.STDOUT,
                                   timeout=120) if recorded.exists() else None
        if done.returncode != 0 or check is None or check.returncode != 0:
            raise SbclabError(f"Recording the class-data archive {archive.name} of {archive.parent.name} failed.",
                              f"Read {log}.")
        with open(recorded, "rb") as source, atomic.open_for_write(archive) as out:
            shutil.copyfileobj(source, out, 1 << 20)
    return ClassData(classpath_jar, archive)


# Spark SQL over a shuffle: the classes of a driver, of its scheduler and of the tasks an executor runs.
SPARK_TRAINING_SQL = "SELECT id % 7 AS k, count(*) AS n, sum(id) AS s FROM range(0, 20000, 1, 4) GROUP BY k ORDER BY k"


def record_spark(dist: "Distribution", java_home: Path, logs: Path) -> None:
    """The stack's Spark archive where missing, from a local Spark SQL job whose command line Spark's
    launcher builds as it does a driver's, with the classpath jar as the driver's class path."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "JAVA_HOME": str(java_home),
           "SPARK_HOME": str(dist.spark_home), "SPARK_SCALA_VERSION": dist.stack.scala}
    spark_archive = archive_path(dist.spark_home, java_home)
    if spark_archive is not None and not spark_archive.exists():
        classpath_jar = write_classpath_jar(dist.spark_jars, folder(dist.spark_home) / CLASSPATH_JAR)
        launcher = [str(java_home / "bin" / "java"), "-Xmx128m", "-cp", f"{dist.spark_jars}/*",
                    "org.apache.spark.launcher.Main", "org.apache.spark.deploy.SparkSubmit", "--master", "local[2]",
                    "--driver-class-path", str(classpath_jar), "--conf", "spark.ui.enabled=false",
                    "--conf", "spark.sql.shuffle.partitions=4", "--class", "org.sbclab.jobs.SqlShell",
                    str(dist.jobs_jar), "-e", SPARK_TRAINING_SQL]
        built = subprocess.run(launcher, env=env, capture_output=True, timeout=120)
        command = [part.strip() for part in built.stdout.decode().split("\0") if part.strip()]
        if built.returncode != 0 or not command:
            raise SbclabError(f"Spark's launcher could not build the command that records {dist.spark_home.name}'s "
                              "class-data archive.", "Run 'sbclab stack fetch --refresh' with the stack.")
        record(spark_archive, classpath_jar, java_home, ["-XX:TieredStopAtLevel=1", *command[1:]], env,
               logs / f"spark-{dist.stack.spark}-classdata.log")
