"""The seeds' own stacks on real emulated nodes: the 2021 seed's Hadoop 3.1.3 and Spark 2.3.0 on the Java 8
sbclab assembles from Debian's packages (test_reproduce.py reproduces its Spark Pi table on it, and
test_containers.py runs Hajji & Tso's Spark 1.4.0 over Hadoop 2.6.4 in containers)."""

from sbclab.stack import jre

from .conftest import MECHANICS_BOARD, OVERSUBSCRIBED, measure, module_cluster


def test_the_2021_seeds_hadoop_runs_terasort_and_its_spark_wordcount_on_java_8(tmp_path):
    with module_cluster("iseed21", board=MECHANICS_BOARD, cores=OVERSUBSCRIBED, subnet="10.233.0.0/24",
                        stack="lee-oh-park-2021") as up:
        java = str(up.stack.java_home(up.spec.master))
        assert java in map(str, jre.assembled_homes())  # no Java 8 is installed here: sbclab's own
        store = tmp_path / "results"
        runs = [measure(up, store, "terasort", "hadoop", size_bytes=4 * 10**6),
                measure(up, store, "wordcount", "spark", size_bytes=4 * 10**6)]
        for run in runs:
            assert run.valid, [c for c in run.validity.checks if not c.passed]
            assert (run.versions["hadoop"], run.versions["spark"], run.versions["hadoop_examples"]) == \
                ("3.1.3", "2.3.0", "3.1.4")
            assert '"1.8.0' in run.versions["java"]
        # No module flags on Java 8 (it refuses them), none in the MapReduce ApplicationMaster's options.
        assert "yarn.app.mapreduce.am.admin-command-opts" not in runs[0].configuration["mapred-site"]
