"""Named stacks: which exist, which run here, the Java each board gets for one, and the experiment
dimension that sweeps them."""

import subprocess
import time

import pytest

from sbclab.errors import SbclabError
from sbclab.experiments import model
from sbclab.stack import deploy, versions
from sbclab.stack.java import pick_java

DEBIAN_12 = {"os_id": "debian", "os_version": "12", "os": "Debian GNU/Linux 12 (bookworm)"}
DEBIAN_13 = {"os_id": "debian", "os_version": "13", "os": "Debian GNU/Linux 13 (trixie)"}
PI_OS_13 = {"os_id": "raspbian", "os_version": "13", "os": "Raspbian GNU/Linux 13 (trixie)"}


def test_every_seeds_stack_and_the_current_one_run_here():
    assert versions.get("lee-park-2026").hadoop == "3.3.6" and versions.get("current").spark.startswith("4.")
    assert versions.get("current").scala == "2.13" and 17 in versions.get("current").java
    old = versions.get("lee-oh-park-2021")
    assert (old.hadoop, old.spark, old.scala, old.java) == ("3.1.3", "2.3.0", "2.11", (8,))
    # Java 8 has no modules; Spark 2 has no Prometheus sink; Maven Central lacks Hadoop 3.1.3's examples.
    assert not old.has_modules and versions.get("lee-park-2026").has_modules and old.spark_major == 2
    assert old.maven_properties()["hadoop.examples.version"] == "3.1.4" and old.summary()["hadoop_examples"] == "3.1.4"
    assert "hadoop_examples" not in versions.get("current").summary()
    with pytest.raises(SbclabError, match="no PySpark here: PySpark 2.3 runs on Python up to 3.7"):
        old.require_pyspark()
    versions.get("current").require_pyspark()
    # Hajji & Tso's Spark 1.4 on Hadoop 2.6: the poms' profiles for Spark 1 and Hadoop 2 are switched on.
    oldest = versions.get("hajji-tso-2016")
    assert (oldest.hadoop, oldest.spark, oldest.scala, oldest.java, oldest.spark_major) == ("2.6.4", "1.4.0", "2.10", (8,), 1)
    assert oldest.maven_properties()["spark.one"] == "true" and oldest.maven_properties()["hadoop.two"] == "true"
    assert "hadoop.two" not in old.maven_properties() and old.maven_properties()["spark.one"] == "false"
    assert oldest.no_sql and oldest.no_pyspark and not old.no_sql
    with pytest.raises(SbclabError, match="Unknown stack 'hadoop-2'") as refused:
        versions.get("hadoop-2")
    assert "lee-park-2026" in refused.value.hint and "current" in refused.value.hint


def test_a_board_gets_the_java_its_distribution_packages_for_the_stack():
    seed, current = versions.get("lee-park-2026"), versions.get("current")
    assert deploy.java_to_install(DEBIAN_12, seed) == "openjdk-17-jre-headless"
    assert deploy.java_to_install(DEBIAN_12, current) == "openjdk-17-jre-headless"
    # A freshly flashed Pi today: Raspberry Pi OS on Debian 13 packages Java 21 and 25.
    for trixie in (DEBIAN_13, PI_OS_13):
        assert deploy.java_to_install(trixie, current) == "openjdk-21-jre-headless"
        with pytest.raises(SbclabError, match="packages Java 21 or 25, and the lee-park-2026 stack runs on Java 11 or 17"):
            deploy.java_to_install(trixie, seed)
    with pytest.raises(SbclabError, match="whose Java packages sbclab does not know"):
        deploy.java_to_install({"os_id": "arch", "os": "Arch Linux"}, seed)
    # No Debian release a board runs packages Java 8: the 2021 seed's stack needs one installed or given.
    with pytest.raises(SbclabError, match="the lee-oh-park-2021 stack runs on Java 8 only"):
        deploy.java_to_install(DEBIAN_12, versions.get("lee-oh-park-2021"))


def test_an_installed_java_is_chosen_by_the_stacks_majors():
    listing = ("/usr/lib/jvm/java-17-openjdk-arm64|openjdk version \"17.0.10\" 2024-01-16\n"
               "/usr/lib/jvm/java-21-openjdk-arm64|openjdk version \"21.0.5\" 2024-10-15\n"
               "/usr/lib/jvm/java-8|java version \"1.8.0_392\"\n")
    assert pick_java(listing, (11, 17))[0].endswith("java-17-openjdk-arm64")
    assert pick_java(listing, (17, 21))[0].endswith("java-21-openjdk-arm64")
    assert pick_java(listing, (25,)) is None


def test_stacks_are_an_experiment_dimension_and_a_wrong_one_is_one_sentence():
    raw = {"workloads": ["pi"], "engines": ["spark"], "repetitions": 1}
    cells = model.cells(model.parse({**raw, "stacks": ["lee-park-2026", "current"]}))
    assert [c.stack for c in cells] == ["lee-park-2026", "current"] and len({c.shape for c in cells}) == 2
    assert [c.stack for c in model.cells(model.parse({**raw, "stacks": ["lee-oh-park-2021"]}))] == ["lee-oh-park-2021"]
    with pytest.raises(SbclabError, match="stacks: Unknown stack 'spark-1.6'"):
        model.parse({**raw, "stacks": ["spark-1.6"]})


def test_two_boards_receiving_one_file_into_a_shared_folder_both_succeed(tmp_path):
    """Boards that share a folder (NFS, or the tests' boards on one host) may be sent the same file at
    once: each writes a partial file of its own, and the second rename finds its own to rename."""
    final = tmp_path / "dist" / "jobs.jar"
    receivers = [subprocess.Popen(["sh", "-c", deploy.RECEIVE, "sh", str(final)], stdin=subprocess.PIPE)
                 for _ in range(2)]
    for receiver in receivers:
        receiver.stdin.write(b"the same bytes\n")
        receiver.stdin.flush()
    deadline = time.monotonic() + 10
    while len(list(final.parent.glob("jobs.jar.partial*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    statuses = []
    for receiver in receivers:  # the first renames its partial file before the second finishes
        receiver.stdin.close()
        statuses.append(receiver.wait(timeout=10))
    assert statuses == [0, 0]
    assert final.read_bytes() == b"the same bytes\n"
    assert not list(final.parent.glob("jobs.jar.partial*"))
