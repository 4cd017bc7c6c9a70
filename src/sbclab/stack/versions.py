"""Stacks: named sets of versions (Hadoop, Spark, Scala, the Java they run on) assembled from Maven
Central and deployed together. A cluster runs one stack; every run records it.

Which Java each stack runs on was measured here (docs/notes.md, "Stacks"), not taken from release notes.
"""

from dataclasses import dataclass

from ..errors import SbclabError
from ..earlier import FIRST_STACK


@dataclass(frozen=True)
class StackVersions:
    name: str
    hadoop: str
    spark: str
    scala: str
    # The Hadoop client Spark was released with: its YARN web-proxy jar is taken at that version.
    spark_hadoop_client: str
    java: tuple[int, ...]  # Java majors both engines run on, oldest first
    description: str
    # PySpark: the py4j its pyspark ships (Spark's launcher names the archive by it) and the oldest
    # Python it runs on, from the pyspark release's own setup.py.
    py4j: str = ""
    python: tuple[int, int] = (3, 8)
    # Why the stack has no spark-shell (Spark's REPL, spark-repl, is not on Maven Central here), or None.
    no_repl: str | None = None
    # Hadoop's MapReduce examples (TeraGen, TeraSort, WordCount, Grep, Pi) where Maven Central lacks the
    # stack's own release of them: the nearest release of the same line.
    hadoop_examples: str = ""
    # Why the stack has no PySpark here (its release does not run on the Python of this host's Debian), or None.
    no_pyspark: str | None = None
    # Why the stack has no spark-sql (sbclab's SqlShell needs Spark 2's SparkSession), or None.
    no_sql: str | None = None

    @property
    def examples_version(self) -> str:
        return self.hadoop_examples or self.hadoop

    @property
    def has_modules(self) -> bool:
        """Whether every Java the stack runs on has modules (9 and later), and so takes --add-opens."""
        return self.java[0] >= 9

    @property
    def spark_major(self) -> int:
        return int(self.spark.split(".")[0])

    @property
    def compile_release(self) -> int:
        """The class-file release sbclab's jobs are compiled for: the stack's oldest Java."""
        return self.java[0]

    def maven_properties(self) -> dict[str, str]:
        """What the java/ poms are given to assemble or compile against this stack."""
        return {"hadoop.version": self.hadoop, "spark.version": self.spark, "scala.binary.version": self.scala,
                "hadoop.client.version": self.spark_hadoop_client, "hadoop.examples.version": self.examples_version,
                "maven.compiler.release": str(self.compile_release), "spark.repl": str(self.no_repl is None).lower(),
                "spark.guava": str(self.spark_major < 3).lower(), "spark.one": str(self.spark_major == 1).lower(),
                **({"hadoop.two": "true"} if self.hadoop.startswith("2.") else {})}

    def require_pyspark(self) -> None:
        if self.no_pyspark:
            raise SbclabError(f"The {self.name} stack has no PySpark here: {self.no_pyspark}.",
                              f"Run the job in Java or Scala, or on another stack ({', '.join(runnable())}).")

    @property
    def repl_jar(self) -> str:
        return f"spark-repl_{self.scala}-{self.spark}.jar"

    def summary(self) -> dict[str, str]:
        return {"stack": self.name, "hadoop": self.hadoop, "spark": self.spark, "scala": self.scala,
                **({"hadoop_examples": self.hadoop_examples} if self.hadoop_examples else {})}


STACKS = {s.name: s for s in (
    StackVersions("lee-park-2026", hadoop="3.3.6", spark="3.5.0", scala="2.12", spark_hadoop_client="3.3.4",
                  java=(11, 17), py4j="0.10.9.7", python=(3, 8), description="the 2026 seed's versions (Hadoop 3.3.6, Spark 3.5.0), for reproducing it"),
    StackVersions("current", hadoop="3.4.2", spark="4.2.0", scala="2.13", spark_hadoop_client="3.5.0",
                  java=(17, 21), py4j="0.10.9.9", python=(3, 10), description="the newest Hadoop 3 and Spark 4 that Maven Central holds whole "
                  "(Hadoop 3.4.3 and 3.5.0 lack their MapReduce examples there)",
                  no_repl="Maven Central here serves no spark-repl_2.13 at 4.2.0, Spark's REPL"),
    StackVersions("lee-oh-park-2021", hadoop="3.1.3", spark="2.3.0", scala="2.11", spark_hadoop_client="2.6.5",
                  java=(8,), hadoop_examples="3.1.4",
                  no_pyspark="PySpark 2.3 runs on Python up to 3.7, and Debian 12 has 3.11",
                  description="the 2021 seed's versions (Hadoop 3.1.3, Spark 2.3.0), on Java 8 from Debian unstable "
                  "(Hadoop's examples of 3.1.4: Maven Central has none of 3.1.3)"),
    StackVersions("hajji-tso-2016", hadoop="2.6.4", spark="1.4.0", scala="2.10", spark_hadoop_client="2.6.0",
                  java=(8,), description="Hajji & Tso's versions (Spark 1.4.0 on Hadoop 2.6.4), on Java 8 from Debian unstable",
                  no_pyspark="PySpark 1.4 predates Python 3.8, and Debian 12 has 3.11",
                  no_sql="sbclab's spark-sql answers through Spark 2's SparkSession, which Spark 1.4 does not have"),
)}
# The stack of clusters recorded before stacks had names, and of cells keyed before stacks were a dimension.
FIRST = FIRST_STACK
DEFAULT = "current"


def runnable() -> list[str]:
    """The stacks that run here: every one, those on Java 8 with the runtime sbclab assembles (jre.py)."""
    return list(STACKS)


def get(name: str) -> StackVersions:
    """A named stack, or one sentence saying which there are."""
    found = STACKS.get(name)
    if found is None:
        raise SbclabError(f"Unknown stack '{name}'.", f"Choose one of: {', '.join(runnable())} ('sbclab stack list').")
    return found


def check(name: str) -> None:
    get(name)
