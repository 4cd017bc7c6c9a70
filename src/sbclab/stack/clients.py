"""Submitting work to a running cluster the way a user on the master node would.

Hadoop jobs go through RunJar (what `hadoop jar` runs); Spark jobs through Spark's own launcher,
which builds the driver command line (module flags, classpath) exactly as `spark-submit` does.
"""

import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
import requests

from ..errors import SbclabError
from . import config, counters as engine_counters, webhdfs
from .daemons import Stack


@dataclass
class JobOutcome:
    command: list[str]
    exit_status: int
    started_at: datetime
    finished_at: datetime
    wall_time_s: float
    log: Path
    output: str
    job_ids: list[str] = field(default_factory=list)
    counters: dict[str, dict[str, float]] = field(default_factory=dict)


def _timed(stack: Stack, argv: list[str], log: Path, label: str, timeout_s: float) -> JobOutcome:
    return timed_on(stack, stack.spec.master, argv, stack.env(stack.spec.master, client=True), log, label, timeout_s)


def timed_on(stack: Stack, node, argv: list[str], env: dict[str, str], log: Path, label: str,
             timeout_s: float, on_host: bool = False) -> JobOutcome:
    """Run a client command on a node, timed and marked in the run's recording like every job."""
    log.parent.mkdir(parents=True, exist_ok=True)
    offset = log.stat().st_size if log.exists() else 0
    marks = stack.marks
    if marks is not None:  # marked before the clock starts, so marking costs the job nothing
        marks.command_started(label)
    started_at = datetime.now(timezone.utc)
    start = time.monotonic()
    run_argv, run_env = (argv, env) if on_host else stack.command(node, argv, env)
    status = stack.transport.run(node, run_argv, run_env, log, timeout_s=timeout_s, label=label, on_host=on_host)
    wall = time.monotonic() - start
    finished_at = datetime.now(timezone.utc)
    if marks is not None:
        marks.command_finished(label, started_at, finished_at, status)
    with open(log, errors="replace") as f:
        f.seek(offset)
        output = f.read()
    return JobOutcome(argv, status, started_at, finished_at, wall, log, output)


def hadoop_jar(stack: Stack, jar: Path, args: list[str], log: Path, label: str, timeout_s: float = 7200) -> JobOutcome:
    argv = stack.java(stack.spec.master, "org.apache.hadoop.util.RunJar", [str(jar), *args], client=True)
    outcome = _timed(stack, argv, log, label, timeout_s)
    outcome.job_ids = engine_counters.hadoop_job_ids(outcome.output)
    outcome.counters = engine_counters.hadoop_counters(outcome.output)
    return outcome


def hadoop_class(stack: Stack, main_class: str, args: list[str], log: Path, label: str,
                 timeout_s: float = 7200) -> JobOutcome:
    argv = stack.java(stack.spec.master, main_class, args, client=True)
    outcome = _timed(stack, argv, log, label, timeout_s)
    outcome.job_ids = engine_counters.hadoop_job_ids(outcome.output)
    outcome.counters = engine_counters.hadoop_counters(outcome.output)
    return outcome


def fs(stack: Stack, args: list[str], log: Path, check: bool = True) -> JobOutcome:
    """`hdfs dfs ARGS` on the master; through the NameNode's REST API where it can (webhdfs.py)."""
    outcome = _namespace_change(stack, args, log)
    if outcome is None:
        outcome = _read(stack, args, log)
    if outcome is None:
        outcome = _timed(stack, stack.java(stack.spec.master, "org.apache.hadoop.fs.FsShell", args, client=True), log,
                         f"hdfs dfs {args[0]}", 600)
    if check and outcome.exit_status != 0:
        raise SbclabError(f"'hdfs dfs {' '.join(args)}' failed (exit {outcome.exit_status}).", f"Read {log}.")
    return outcome


# What `hdfs dfs -rm -r -f -skipTrash` and `-mkdir -p` do, as WebHDFS operations: changes to the
# NameNode's namespace alone. sbclab removes a job's output before and after every run, and a client
# JVM for each cost its quick-start 0.25-0.3 s of CPU on the master, a node of a fraction of a host core.
_NAMESPACE_CHANGES = {("-rm", frozenset({"-r", "-f", "-skipTrash"})): ("DELETE", "DELETE", {"recursive": "true"}),
                      ("-mkdir", frozenset({"-p"})): ("PUT", "MKDIRS", {})}


def _done(stack: Stack, label: str, command: list[str], output: str, log: Path, started_at: datetime,
          start: float) -> JobOutcome:
    """A command WebHDFS answered, marked in the run's recording as the JVM's would have been."""
    finished_at = datetime.now(timezone.utc)
    # Marked once done, so that a NameNode handing the command back to FsShell leaves no mark of it: the
    # marks' own times lag by the milliseconds it took, the command's times are its own.
    if stack.marks is not None:
        stack.marks.command_started(label)
        stack.marks.command_finished(label, started_at, finished_at, 0)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as f:
        f.write(output)
    return JobOutcome(command, 0, started_at, finished_at, time.monotonic() - start, log, output)


def _namespace_change(stack: Stack, args: list[str], log: Path) -> JobOutcome | None:
    """The change through WebHDFS, or None where FsShell must make it: other flags, relative paths,
    globs (which only FsShell expands), or a NameNode that did not answer as WebHDFS does (FsShell
    then says what is wrong)."""
    flags = frozenset(a for a in args[1:] if a.startswith("-"))
    paths = [a for a in args[1:] if not a.startswith("-")]
    change = _NAMESPACE_CHANGES.get((args[0], flags)) if args else None
    if change is None or not paths or not all(webhdfs.plain(p) for p in paths):
        return None
    method, op, extra = change
    started_at, start = datetime.now(timezone.utc), time.monotonic()
    lines = []
    try:
        for path in paths:
            answer = webhdfs.ask(stack, method, path, op, **extra)
            if answer.status_code != 200 or not isinstance(answer.json().get("boolean"), bool):
                return None
            lines.append(f"WebHDFS {op} {path}: {answer.json()['boolean']}")
    except (requests.RequestException, ValueError):
        return None
    return _done(stack, f"hdfs dfs {args[0]}", ["webhdfs", op, *paths], "".join(f"{line}\n" for line in lines),
                 log, started_at, start)


def _reading(stack: Stack, args: list[str]) -> tuple[str, list[str]] | None:
    """What `-cat PATTERN` or `-du -s PATH` reads through WebHDFS ("cat" and the files, "du" and the
    path), or None where FsShell must: other commands or flags, several paths, a glob it alone expands,
    a folder to cat, or file contents behind DataNode ports this host does not reach."""
    try:
        if len(args) == 2 and args[0] == "-cat" and webhdfs.data_here(stack):
            return "cat", webhdfs.files(stack, args[1])
        if len(args) == 3 and args[:2] == ["-du", "-s"] and webhdfs.plain(args[2]):
            return "du", [args[2]]
    except webhdfs.NotHere:
        pass
    return None


def _read(stack: Stack, args: list[str], log: Path) -> JobOutcome | None:
    reading = _reading(stack, args)
    if reading is None:
        return None
    what, paths = reading
    started_at, start = datetime.now(timezone.utc), time.monotonic()
    try:
        output = (webhdfs.du(stack, paths[0]) if what == "du"
                  else b"".join(chunk for path in paths for chunk in webhdfs.read(stack, path)).decode(errors="replace"))
    except (webhdfs.NotHere, requests.RequestException):
        return None
    return _done(stack, f"hdfs dfs {args[0]}", ["webhdfs", what, *paths], output, log, started_at, start)


def fs_through(stack: Stack, fs_args: list[str], shell_tail: str, log: Path, timeout_s: float = 7200) -> str:
    """`hdfs dfs FS_ARGS | SHELL_TAIL`; the tail's standard output.

    Validation reads job output this way, through tools independent of the engines (wc, grep, awk):
    on this host from WebHDFS where it reads the files, else on the master from FsShell."""
    reading = _reading(stack, fs_args)
    if reading is not None:
        text = _through_here(stack, *reading, shell_tail, log, timeout_s)
        if text is not None:
            return text
    master = stack.spec.master
    result = stack.layout(master).disk / "tmp" / f"fs-through.{time.monotonic_ns()}.out"
    fs_cmd = shlex.join(stack.java(master, "org.apache.hadoop.fs.FsShell", fs_args))
    script = f"set -o pipefail; {fs_cmd} | {{ {shell_tail}; }} > {shlex.quote(str(result))}"
    try:
        status = stack.transport.run(master, *stack.command(master, ["bash", "-c", script], stack.env(master)), log,
                                     timeout_s=timeout_s, label=f"hdfs dfs {fs_args[0]} | {shell_tail.split()[0]}")
        if status != 0:
            raise SbclabError(f"Reading {' '.join(fs_args[1:])} from HDFS through '{shell_tail}' failed "
                              f"(exit {status}).", f"Read {log}.")
        return stack.transport.read_text(master, result) or ""
    finally:
        stack.transport.remove(master, result)


def _through_here(stack: Stack, what: str, paths: list[str], shell_tail: str, log: Path,
                  timeout_s: float) -> str | None:
    """The files' bytes through the tail, run here with the master's environment; None where WebHDFS
    stopped answering before the first byte (FsShell then reads, and says what is wrong)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as errors, tempfile.TemporaryFile() as out:
        tail = subprocess.Popen(["bash", "-c", shell_tail], stdin=subprocess.PIPE, stdout=out, stderr=errors,
                                env=stack.env(stack.spec.master))
        sent = False
        try:
            if what == "du":
                tail.stdin.write(webhdfs.du(stack, paths[0]).encode())
            else:
                for path in paths:
                    for chunk in webhdfs.read(stack, path):
                        sent = True
                        tail.stdin.write(chunk)
        except (webhdfs.NotHere, requests.RequestException) as e:
            tail.kill()
            tail.wait()
            if not sent:
                return None
            raise SbclabError(f"Reading {' '.join(paths)} from HDFS through WebHDFS failed midway: {e}.",
                              "Run 'sbclab cluster status' to see whether a DataNode is down.") from None
        except BrokenPipeError:
            pass  # the tail had read all it wanted (grep -q, head)
        finally:
            try:
                tail.stdin.close()
            except BrokenPipeError:
                pass
        try:
            status = tail.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            tail.kill()
            tail.wait()
            raise SbclabError(f"'{shell_tail}' over {' '.join(paths)} did not finish within {timeout_s:.0f} s.",
                              f"Read {log}.") from None
        if status != 0:
            raise SbclabError(f"Reading {' '.join(paths)} from HDFS through '{shell_tail}' failed (exit {status}).",
                              f"Read {log}.")
        out.seek(0)
        return out.read().decode(errors="replace")


def put_command(stack: Stack, node, path: str) -> list[str]:
    """What `node` runs to write its standard input to HDFS file PATH (replacing it): `hdfs dfs -put`,
    or on a node of this host, whose web ports the cluster listens on, WebHDFS without a JVM."""
    put = stack.java(node, "org.apache.hadoop.fs.FsShell", ["-put", "-f", "-", path])
    if stack.spec.backend != "ssh" and webhdfs.data_here(stack):
        return webhdfs.put_argv(stack, path, sys.executable, put)
    return put


def spark_submit_command(stack: Stack, main_class: str | None, resource: Path, args: list[str],
                         conf: dict[str, str] | None = None) -> list[str]:
    """The driver command line Spark's launcher builds for `spark-submit [--class main_class] resource
    args`: a jar and its main class, or a Python script (main_class None)."""
    master = stack.spec.master
    env = stack.env(master, client=True)
    submit = ["org.apache.spark.deploy.SparkSubmit", *(["--class", main_class] if main_class else [])]
    for key, value in (conf or {}).items():
        submit += ["--conf", f"{key}={value}"]
    found = stack.spark_class_data(master)
    launcher = [env["JAVA_HOME"] + "/bin/java", *config.jvm_flags(stack.spec.knobs), "-Xmx128m",
                *(found.flags() if found else []),
                "-cp", f"{found.classpath_jar}:{stack.dist.spark_jars}/*" if found else f"{stack.dist.spark_jars}/*",
                "org.apache.spark.launcher.Main", *submit, str(resource), *args]
    done = stack.transport.capture(master, launcher, env, timeout_s=120)
    command = [part.strip() for part in done.stdout.decode().split("\0") if part.strip()]
    if done.status != 0 or not command:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise SbclabError(f"Spark's launcher could not build the spark-submit command: {lines[-1] if lines else 'no output'}.",
                          "Run 'sbclab stack fetch --refresh' to restore the Spark distribution.")
    return command


def spark_submit(stack: Stack, main_class: str | None, resource: Path, args: list[str], log: Path, label: str,
                 conf: dict[str, str] | None = None, timeout_s: float = 7200) -> JobOutcome:
    command = spark_submit_command(stack, main_class, resource, args, conf)
    outcome = _timed(stack, command, log, label, timeout_s)
    outcome.job_ids = engine_counters.spark_application_ids(outcome.output)
    return outcome
