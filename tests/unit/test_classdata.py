"""Spark's class-data archive (stack/classdata.py): the classpath jar HotSpot reads, recording and
checking an archive with this host's Java, and where a cluster's configuration gives it."""

import os
import zipfile
from pathlib import Path

import pytest

from sbclab.cluster import spec as cluster_spec
from sbclab.errors import SbclabError
from sbclab.stack import classdata, config, versions
from sbclab.stack.distribution import Distribution
from sbclab.stack.java import java_home

HELLO = 'public class Hello { public static void main(String[] a) { System.out.println("hello"); } }\n'


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SBCLAB_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / "cache"


def _jar(path: Path, names: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as out:
        for name in names:
            out.writestr(name, "x")
    return path


def _manifest_entries(jar: Path) -> tuple[list[str], list[str]]:
    lines = zipfile.ZipFile(jar).read("META-INF/MANIFEST.MF").decode().split("\r\n")
    joined = "".join(line[1:] if line.startswith(" ") else line for line in lines)
    return lines, joined.split("Class-Path: ", 1)[1].split()


def test_the_classpath_jar_names_the_jars_relative_to_itself_and_leaves_out_configuration(tmp_path):
    """HotSpot reads Class-Path entries as paths relative to the jar (a file: URL would be a missing file
    to it); a jar holding a log4j configuration at its root would shadow the cluster's, which comes later."""
    jars = tmp_path / "spark" / "jars"
    long_name = "a-jar-whose-name-is-longer-than-a-manifest-line-may-be-on-its-own-" * 2 + "1.0.jar"
    for name in ("core.jar", long_name):
        _jar(jars / name, ["org/x/A.class"])
    _jar(jars / "tests.jar", ["log4j.properties", "org/y/B.class"])
    target = classdata.write_classpath_jar(jars, tmp_path / "classdata" / "spark" / "classpath.jar")

    lines, entries = _manifest_entries(target)
    assert entries == ["../../spark/jars/" + long_name, "../../spark/jars/core.jar"]
    assert all(len(line.encode()) <= 72 for line in lines)
    assert all((target.parent / entry).resolve().is_file() for entry in entries)


def test_the_classpath_jar_is_kept_while_its_list_holds_and_rewritten_when_it_changes(tmp_path):
    """An archive holds the size and time of every jar on its class path, the classpath jar's too."""
    jars = tmp_path / "jars"
    _jar(jars / "a.jar", ["A.class"])
    target = classdata.write_classpath_jar(jars, tmp_path / "cd" / "classpath.jar")
    os.utime(target, ns=(1, 1))
    classdata.write_classpath_jar(jars, target)
    assert target.stat().st_mtime_ns == 1
    _jar(jars / "b.jar", ["B.class"])
    classdata.write_classpath_jar(jars, target)
    assert target.stat().st_mtime_ns != 1 and _manifest_entries(target)[1] == ["../jars/a.jar", "../jars/b.jar"]


def _host_java() -> Path:
    return java_home(versions.get(versions.DEFAULT).java)


def test_an_archive_is_recorded_checked_and_found_for_this_java(cache, tmp_path):
    jars = _jar(tmp_path / "engine" / "jars" / "a.jar", ["A.class"]).parent
    engine = jars.parent
    java = _host_java()
    assert classdata.of(engine, java) is None
    archive = classdata.archive_path(engine, java)
    classpath_jar = classdata.write_classpath_jar(jars, classdata.folder(engine) / classdata.CLASSPATH_JAR)
    (tmp_path / "Hello.java").write_text(HELLO)
    found = classdata.record(archive, classpath_jar, java, ["-cp", str(classpath_jar), str(tmp_path / "Hello.java")],
                             dict(os.environ), tmp_path / "record.log")
    assert found == classdata.of(engine, java) and archive.is_file()
    assert found.flags()[0] == f"-XX:SharedArchiveFile={archive}" and set(classdata.QUIET) <= set(found.flags())
    assert sorted(p.name for p in archive.parent.iterdir()) == sorted([classdata.CLASSPATH_JAR, archive.name])


def test_a_failed_recording_says_where_to_read_and_leaves_no_archive(cache, tmp_path):
    jars = _jar(tmp_path / "engine" / "jars" / "a.jar", ["A.class"]).parent
    java = _host_java()
    archive = classdata.archive_path(jars.parent, java)
    classpath_jar = classdata.write_classpath_jar(jars, classdata.folder(jars.parent) / classdata.CLASSPATH_JAR)
    with pytest.raises(SbclabError) as raised:
        classdata.record(archive, classpath_jar, java, ["-cp", str(classpath_jar), "no.such.Main"], dict(os.environ),
                         tmp_path / "record.log")
    assert "record.log" in raised.value.hint
    assert not archive.exists() and not list(archive.parent.glob(".*"))


def test_no_archive_for_a_java_without_dynamic_archives(cache, tmp_path, monkeypatch):
    monkeypatch.setattr(classdata, "major_at", lambda home: 11)
    assert classdata.archive_path(tmp_path / "spark", _host_java()) is None
    assert classdata.of(tmp_path / "spark", _host_java()) is None


def _settings(backend: str, knobs: tuple[str, ...], found) -> dict[str, str]:
    built = cluster_spec.build(name="cd", backend="processes", workers=2)
    shaped = built.model_copy(update={"knobs": knobs, "backend": backend})
    dist = Distribution(versions.get(versions.DEFAULT), Path("/h"), Path("/s"), Path("/j.jar"))
    return config._class_data_settings(shaped, dist, {"spark-defaults": {
        "spark.driver.extraJavaOptions": config.QUICK_START}}).get("spark-defaults", {})


def test_a_quick_start_clusters_spark_jvms_are_given_the_archive_with_the_classpath_jar_first(monkeypatch):
    found = classdata.ClassData(Path("/c/classpath.jar"), Path("/c/java-17-x.jsa"))
    monkeypatch.setattr(classdata, "of", lambda home, java: found)
    given = _settings("processes", ("quick-start",), found)
    assert given["spark.driver.extraJavaOptions"].startswith(config.QUICK_START + " -XX:SharedArchiveFile=/c/java-17-x.jsa")
    assert all("-XX:SharedArchiveFile=/c/java-17-x.jsa" in given[key] for key in config.SPARK_OPTS)
    assert given["spark.driver.extraClassPath"] == given["spark.executor.extraClassPath"] == "/c/classpath.jar"
    assert _settings("processes", (), found) == {}, "without the knob, Spark's JVMs start as upstream's do"
    assert _settings("ssh", ("quick-start",), found) == {}, "a board runs its own Java, not the one recorded with"
    monkeypatch.setattr(classdata, "of", lambda home, java: None)
    assert _settings("processes", ("quick-start",), None) == {}, "no archive recorded: nothing to give"
