"""The stack's standard commands on a node: `hadoop`, `hdfs`, `yarn`, `mapred`, `spark-submit`, `pyspark`,
`spark-sql` and `spark-shell`, as thin launchers of the assembled distribution (a Maven-assembled stack has
no bin/).

Each launcher is a small shell script in the node's `bin` folder that starts the same Java command
line sbclab itself runs on that node (its Java, JVM flags, configuration folder and classpath), so a
user's `hdfs dfs -ls /` is what sbclab's validation runs. Subcommands are the ones a cluster's users
need; anything else is taken as a class name, as the Apache scripts do. Spark's commands ask Spark's
own launcher library for the command line through the distribution's bin/spark-submit, which
PySpark's driver also starts its JVM with.

Spark's own `spark-sql` is a Hive CLI (spark-hive-thriftserver, which Maven Central here does not
serve): this one runs sbclab's SqlShell (the jobs jar) through spark-submit, with Spark's in-memory
catalog. `spark-shell` is Spark's REPL where the stack has it (spark-repl is served for Scala 2.12,
not for the `current` stack's 2.13): elsewhere it says so and names what to use instead.
"""

import shlex
import zipfile
from pathlib import Path

from ..cluster.spec import NodeSpec
from . import config, distribution
from .daemons import Stack

COMMANDS = ("hadoop", "hdfs", "yarn", "mapred", "spark-submit", "pyspark", "spark-sql", "spark-shell")
ENV_FILE = "sbclab-env.sh"
PYSPARK_STARTUP = "pyspark-shell.py"

# command -> subcommand -> (main class, whether the subcommand's own name is passed on)
HADOOP_TOOLS: dict[str, dict[str, tuple[str, bool]]] = {
    "hadoop": {"fs": ("org.apache.hadoop.fs.FsShell", False), "jar": ("org.apache.hadoop.util.RunJar", False),
               "version": ("org.apache.hadoop.util.VersionInfo", False),
               "checknative": ("org.apache.hadoop.util.NativeLibraryChecker", False)},
    "hdfs": {"dfs": ("org.apache.hadoop.fs.FsShell", False), "dfsadmin": ("org.apache.hadoop.hdfs.tools.DFSAdmin", False),
             "fsck": ("org.apache.hadoop.hdfs.tools.DFSck", False), "getconf": ("org.apache.hadoop.hdfs.tools.GetConf", False),
             "version": ("org.apache.hadoop.util.VersionInfo", False)},
    "yarn": {"application": ("org.apache.hadoop.yarn.client.cli.ApplicationCLI", True),
             "applicationattempt": ("org.apache.hadoop.yarn.client.cli.ApplicationCLI", True),
             "container": ("org.apache.hadoop.yarn.client.cli.ApplicationCLI", True),
             "node": ("org.apache.hadoop.yarn.client.cli.NodeCLI", False),
             "logs": ("org.apache.hadoop.yarn.client.cli.LogsCLI", False),
             "queue": ("org.apache.hadoop.yarn.client.cli.QueueCLI", False),
             "top": ("org.apache.hadoop.yarn.client.cli.TopCLI", False),
             "jar": ("org.apache.hadoop.util.RunJar", False), "version": ("org.apache.hadoop.util.VersionInfo", False)},
    "mapred": {"job": ("org.apache.hadoop.mapred.JobClient", False),
               "queue": ("org.apache.hadoop.mapred.JobQueueClient", False),
               "version": ("org.apache.hadoop.util.VersionInfo", False)},
}


def bin_dir(stack: Stack, node: NodeSpec) -> Path:
    return stack.transport.node_dir(node) / "bin"


def environment(stack: Stack, node: NodeSpec) -> dict[str, str]:
    """What a shell on the node exports: the stack's variables and the launchers first on PATH."""
    env = {k: v for k, v in stack.env(node).items() if k != "PATH"}
    return {**env, "SPARK_LAUNCHER_OPTS": " ".join(config.jvm_flags(stack.spec.knobs)),
            "SBCLAB_CLUSTER": stack.spec.name, "SBCLAB_BIN": str(bin_dir(stack, node))}


def _exports(env: dict[str, str]) -> str:
    return "".join(f"export {key}={shlex.quote(value)}\n" for key, value in env.items())


def _hadoop_script(stack: Stack, node: NodeSpec, command: str) -> str:
    java = stack.java(node, "CLASS", [], add_opens=True)
    before, after = java[:java.index("CLASS")], java[java.index("CLASS") + 1:]
    tools = HADOOP_TOOLS[command]
    cases = "".join(f"  {sub}) class={cls}; {'' if keep else 'shift; '};;\n" for sub, (cls, keep) in tools.items())
    usage = f"usage: {command} {{{'|'.join(tools)}|classpath|CLASSNAME}} [ARGS...]"
    return f"""#!/bin/sh
# {command} for sbclab cluster {stack.spec.name} (stack {stack.dist.stack.name}): the Java command line sbclab runs here.
. "$(dirname "$0")/{ENV_FILE}"
[ $# -gt 0 ] || {{ echo {shlex.quote(usage)} >&2; exit 2; }}
case "$1" in
{cases}  classpath) echo {shlex.quote(java[java.index("-cp") + 1])}; exit 0;;
  -h|--help|help) echo {shlex.quote(usage)}; exit 0;;
  *) class=$1; shift;;
esac
exec {shlex.join(before)} "$class" {shlex.join(after)} "$@"
"""


def _spark_submit_script(stack: Stack) -> str:
    return f"""#!/bin/sh
# spark-submit for sbclab cluster {stack.spec.name} (stack {stack.dist.stack.name}): the distribution's own.
. "$(dirname "$0")/{ENV_FILE}"
exec "$SPARK_HOME/bin/spark-submit" "$@"
"""


def _refusal(stack: Stack, command: str, why: str, instead: str) -> str:
    """A launcher for a command the cluster's stack does not have: one sentence, and what to use."""
    said = (f"{command} is not in the {stack.dist.stack.name} stack: {why}. {instead}, "
            "or a cluster of a stack that has it (sbclab stack list).")
    return f"#!/bin/sh\necho {shlex.quote(said)} >&2\nexit 1\n"


def _pyspark_script(stack: Stack) -> str:
    if stack.dist.stack.no_pyspark:
        return _refusal(stack, "pyspark", stack.dist.stack.no_pyspark, "Use spark-shell or spark-sql")
    path = ":".join(str(archive) for archive in stack.dist.pyspark_archives)
    return f"""#!/bin/sh
# pyspark for sbclab cluster {stack.spec.name}: Python's shell with a SparkContext (sc) and a SparkSession (spark)
# on the cluster, started through spark-submit as Spark's own script does.
. "$(dirname "$0")/{ENV_FILE}"
export PYTHONPATH={shlex.quote(path)}${{PYTHONPATH:+:$PYTHONPATH}}
export PYTHONSTARTUP="$(dirname "$0")/{PYSPARK_STARTUP}"
export PYSPARK_DRIVER_PYTHON=${{PYSPARK_DRIVER_PYTHON:-python3}}
exec "$(dirname "$0")/spark-submit" pyspark-shell-main --name PySparkShell "$@"
"""


# spark-submit's options a spark-sql user may give; everything else is SqlShell's (-e, -f).
SUBMIT_OPTIONS = ("--conf", "--master", "--name", "--queue", "--driver-memory", "--executor-memory", "--executor-cores",
                  "--num-executors", "--jars", "--files")


def _spark_sql_script(stack: Stack) -> str:
    if stack.dist.stack.no_sql:
        return _refusal(stack, "spark-sql", stack.dist.stack.no_sql, "Use spark-shell or spark-submit")
    return f"""#!/usr/bin/env bash
# spark-sql for sbclab cluster {stack.spec.name}: Spark SQL statements (-e, -f, or a prompt) through spark-submit,
# answered by sbclab's SqlShell with Spark's in-memory catalog (tables and views last for the session).
. "$(dirname "$0")/{ENV_FILE}"
submit=(); shell=()
while [ $# -gt 0 ]; do
  case "$1" in
    {'|'.join(SUBMIT_OPTIONS)}) submit+=("$1" "$2"); shift 2;;
    *) shell+=("$1"); shift;;
  esac
done
# Warnings and errors only, as Spark's own shells start (a --conf spark.log.level given wins: it comes later).
exec "$(dirname "$0")/spark-submit" --class org.sbclab.jobs.SqlShell --name spark-sql --conf spark.log.level=WARN \
  "${{submit[@]}}" {shlex.quote(str(stack.dist.jobs_jar))} "${{shell[@]}}"
"""


def _spark_shell_script(stack: Stack) -> str:
    if stack.dist.stack.no_repl:
        return _refusal(stack, "spark-shell", stack.dist.stack.no_repl, "Use pyspark or spark-sql")
    return f"""#!/bin/sh
# spark-shell for sbclab cluster {stack.spec.name}: Spark's REPL with `sc` and `spark`, through spark-submit as
# Spark's own script starts it.
. "$(dirname "$0")/{ENV_FILE}"
# Scala's compiler finds the Scala library on the JVM's class path only when told to.
export SPARK_SUBMIT_OPTS="${{SPARK_SUBMIT_OPTS:-}} -Dscala.usejavacp=true"
exec "$(dirname "$0")/spark-submit" --class org.apache.spark.repl.Main --name "Spark shell" "$@"
"""


def _pyspark_startup(stack: Stack, local_spark_home: Path) -> str:
    """pyspark/shell.py of the stack's PySpark, read from this host's copy of its archive."""
    with zipfile.ZipFile(local_spark_home / "python" / "lib" / "pyspark.zip") as archive:
        return archive.read("pyspark/shell.py").decode()


def install(stack: Stack, node: NodeSpec) -> Path:
    """Write (again) the node's launchers; the folder to put first on PATH."""
    local_spark_home = distribution.installed(stack.dist.stack.name, check=False).spark_home
    folder = bin_dir(stack, node)
    files = {command: _hadoop_script(stack, node, command) for command in HADOOP_TOOLS}
    files["spark-submit"] = _spark_submit_script(stack)
    files["pyspark"] = _pyspark_script(stack)
    files["spark-sql"] = _spark_sql_script(stack)
    files["spark-shell"] = _spark_shell_script(stack)
    files[PYSPARK_STARTUP] = _pyspark_startup(stack, local_spark_home)
    files[ENV_FILE] = (f"# The environment of sbclab cluster {stack.spec.name}'s commands on {node.name}.\n"
                       + _exports(environment(stack, node)) + f'case ":$PATH:" in *":{folder}:"*) ;; '
                       f'*) export PATH={shlex.quote(str(folder))}:"$PATH";; esac\n')
    stack.transport.make_dirs(node, [folder])
    stack.transport.put(node, folder, files)
    done = stack.transport.capture(node, ["chmod", "755", *(str(folder / name) for name in COMMANDS)], timeout_s=30)
    if done.status != 0:
        raise OSError(f"chmod of the launchers in {folder} failed: {done.stderr.decode(errors='replace').strip()}")
    return folder
