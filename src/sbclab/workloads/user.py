"""The user's own job as a workload: a JAR (Hadoop or Spark), a PySpark script or a shell command run
on the master, declared in an experiment file (`jobs:`) and measured like the built-in jobs.

    jobs:
      delay-by-carrier:
        pyspark: examples/jobs/delay_by_carrier.py
        args: ["{input}", "{output}"]
        input: airline                      # generated at each size; or {local: FILE} or {command: "..."}
        validate: python3 examples/jobs/check_delay_by_carrier.py {input} {output}

Arguments, commands and the validation may use {input} (the input's HDFS path), {output} (an HDFS
folder of the run's own, removed after validation), {size_bytes} and {run_id}. Commands run on the
master with the stack's commands (hdfs, spark-submit, pyspark ...) on the PATH. A job is valid when
it exits 0 within its timeout, wrote nothing in HDFS outside its output folder (and the places Hadoop
and Spark stage jobs in), and its validation command, if any, exits 0.
"""

import os
import shlex
import string
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import SbclabError
from ..results.schema import Check
from ..stack import clients, counters as engine_counters, launchers
from . import inputs
from .base import Attempt, RunContext, Workload, exited, spark_counters, submitted

PLACEHOLDERS = {"input", "output", "size_bytes", "run_id"}
HDFS_BEFORE = "hdfs_before"  # carried from prepare to validate with the input
# Where the engines themselves write while a job runs (staging, job history, aggregated logs).
ENGINE_PLACES = ("/tmp/", "/user/", "/mr-history/", "/spark-history/")


class LocalInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    local: Path = Field(description="a file or folder on this host, put into HDFS once")


class CommandInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(description="run once on the master to fill {input} in HDFS")


class UserJobSpec(BaseModel):
    """One job of the user's, as an experiment file declares it."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    pyspark: Path | None = Field(None, description="a PySpark script, submitted with spark-submit")
    jar: Path | None = Field(None, description="a JAR: Hadoop's `hadoop jar` or Spark's spark-submit (engine)")
    main_class: str | None = Field(None, description="the JAR's main class (else its manifest's)")
    command: str | None = Field(None, description="a shell command on the master")
    engine: Literal["hadoop", "spark"] | None = Field(None, description="what a JAR or command runs on")
    args: list[str] = []
    input: Literal["airline"] | LocalInput | CommandInput | None = None
    validate_with: str | None = Field(None, alias="validate", description="a command whose exit status decides validity")
    timeout_s: float = Field(3600, gt=0)

    @model_validator(mode="after")
    def _consistent(self):
        kinds = [k for k in ("pyspark", "jar", "command") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("give exactly one of pyspark, jar or command")
        if self.pyspark is not None:
            if self.engine == "hadoop":
                raise ValueError("a PySpark script runs on spark")
        elif self.engine is None:
            raise ValueError(f"say which engine the {kinds[0]} runs on: engine: hadoop or engine: spark")
        if self.jar is not None and self.engine == "spark" and not self.main_class:
            raise ValueError("a Spark JAR needs its main_class")
        for path in (self.pyspark, self.jar, self.input.local if isinstance(self.input, LocalInput) else None):
            if path is not None and not Path(path).exists():
                raise ValueError(f"{path} does not exist (paths are read from the directory sbclab runs in)")
        texts = [*self.args, self.command or "", self.validate_with or "",
                 self.input.command if isinstance(self.input, CommandInput) else ""]
        for text in texts:
            used = {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}
            if used - PLACEHOLDERS:
                raise ValueError(f"unknown placeholder(s) {', '.join(sorted(used - PLACEHOLDERS))} in '{text}'; "
                                 f"use {', '.join('{' + p + '}' for p in sorted(PLACEHOLDERS))}")
        return self

    @property
    def kind(self) -> str:
        return "pyspark" if self.pyspark else "jar" if self.jar else "command"


def _values(data: dict[str, Any], params: dict[str, Any], output: str, run_id: str) -> dict[str, Any]:
    """What the placeholders of a job's arguments and commands stand for in one run."""
    return {"input": data.get("path", ""), "output": output, "size_bytes": params.get("size_bytes") or "", "run_id": run_id}


def _fill(text: str, values: dict[str, Any]) -> str:
    return text.format_map(values)


def _listing(ctx: RunContext, run_id: str, name: str) -> dict[str, str]:
    """Every file in HDFS outside the engines' own places: path -> size and modification time."""
    text = clients.fs_through(ctx.stack, ["-ls", "-R", "/"], "cat", ctx.job_log(run_id, name))
    files = {}
    for line in text.splitlines():
        fields = line.split(None, 7)
        if len(fields) == 8 and not fields[0].startswith("d") and not fields[7].startswith(ENGINE_PLACES):
            files[fields[7]] = f"{fields[4]} {fields[5]} {fields[6]}"
    return files


class UserJob(Workload):
    """A job of the user's, through the one run path: prepared input, timed job, counters, validation."""

    def __init__(self, name: str, spec: UserJobSpec):
        self.name = name
        self.spec = spec
        self.description = spec.description or f"the user's {spec.kind} {spec.pyspark or spec.jar or spec.command}"
        self.engines = ("spark",) if spec.pyspark else (spec.engine or "spark",)
        self.sized = spec.input == "airline"
        # Unknown until it runs: room for an output and intermediate data as large as its input, as Grep needs.
        self.footprint_per_input_byte = 2.0

    def prepare(self, ctx: RunContext, engine: str, params: dict[str, Any]) -> dict[str, Any]:
        """The input, and what HDFS holds before the job (taken here, outside the run's recording)."""
        data = self._input(ctx, params)
        return {**data, HDFS_BEFORE: _listing(ctx, f"input-{self.name}", "hdfs-before")}

    def _input(self, ctx: RunContext, params: dict[str, Any]) -> dict[str, Any]:
        given = self.spec.input
        if given == "airline":
            return inputs.airline_text(ctx, params["size_bytes"], reuse=params.get("reuse_input", True))
        path = f"/sbclab/user/{self.name}/input"
        if given is None:
            return {"path": ""}
        key = f"user/{self.name}/{given.model_dump_json()}"
        if key in inputs.known(ctx):
            return inputs.known(ctx)[key]
        log = ctx.job_log(f"input-{self.name}", "prepare")
        ctx.hdfs(["-rm", "-r", "-f", "-skipTrash", path], log)
        ctx.hdfs(["-mkdir", "-p", str(Path(path).parent)], log)
        if isinstance(given, LocalInput):
            ctx.progress(f"putting {given.local} into HDFS at {path}")
            ctx.hdfs(["-put", str(Path(given.local).resolve()), path], log)
        else:
            ctx.progress(f"preparing the input of {self.name}: {given.command}")
            done = self._on_master(ctx, _fill(given.command, {"input": path, "output": "", "size_bytes": "",
                                                              "run_id": ""}), log, "prepare input", self.spec.timeout_s)
            if done.exit_status != 0:
                raise SbclabError(f"The input command of {self.name} failed (exit {done.exit_status}).", f"Read {log}.")
        return inputs.remember(ctx, key, {"path": path})

    def _on_master(self, ctx: RunContext, command: str, log: Path, label: str, timeout_s: float) -> clients.JobOutcome:
        """A shell command on the master with the stack's environment and commands."""
        master = ctx.spec.master
        folder = launchers.install(ctx.stack, master)
        script = f". {shlex.quote(str(folder / launchers.ENV_FILE))} && {command}"
        if ctx.transport.shares_host:  # the experiment's relative paths, as they were read
            script = f"cd {shlex.quote(os.getcwd())} && {script}"
        return clients.timed_on(ctx.stack, master, *ctx.stack.command(master, ["bash", "-c", script],
                                                                          ctx.stack.env(master)), log, label, timeout_s)

    def run_job(self, ctx: RunContext, engine: str, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        values = _values(data, params, output, run_id)
        args = [_fill(a, values) for a in self.spec.args]
        label, spec = f"user job {self.name}", self.spec
        log = ctx.job_log(run_id, label.replace(" ", "-"))
        counters, logs, result = None, {}, {}
        if (spec.pyspark or spec.jar) and not ctx.transport.shares_host:
            raise SbclabError(f"{self.name}: {spec.pyspark or spec.jar} is on this host, and the master is a board.",
                              "Copy it to the board and declare a command job (spark-submit or hadoop jar PATH ...).")
        if spec.pyspark:
            ctx.stack.dist.stack.require_pyspark()
        if spec.pyspark or (spec.jar and engine == "spark"):
            outcome, result, counters, logs = submitted(ctx, run_id, label, spec.main_class if spec.jar else None,
                                                        Path(spec.pyspark or spec.jar).resolve(), args, None,
                                                        timeout_s=spec.timeout_s)
        elif spec.jar:
            outcome = clients.hadoop_jar(ctx.stack, Path(spec.jar).resolve(),
                                         [*([spec.main_class] if spec.main_class else []), *args], log, label,
                                         timeout_s=spec.timeout_s)
        else:
            outcome = self._on_master(ctx, _fill(spec.command or "", values), log, label, spec.timeout_s)
            if engine == "hadoop":
                outcome.job_ids = engine_counters.hadoop_job_ids(outcome.output)
                outcome.counters = engine_counters.hadoop_counters(outcome.output)
            else:
                outcome.job_ids = engine_counters.spark_application_ids(outcome.output)
                counters, logs = spark_counters(ctx, outcome, log)
        return Attempt(outcome, [exited(outcome, "job")], result, counters, logs, parameters={"kind": spec.kind},
                       output=output)

    def validate(self, ctx, engine, run_id, params, data, attempt) -> None:
        before = data.get(HDFS_BEFORE)
        if before is not None:
            after = _listing(ctx, run_id, "hdfs-after")
            output = f"{attempt.output}/"
            outside = sorted(p for p in set(before.items()) ^ set(after.items()) if not p[0].startswith(output))
            attempt.checks.append(Check(name="wrote nothing in HDFS outside its output folder", passed=not outside,
                                        detail=", ".join(sorted({p for p, _ in outside})[:5]) or "nothing outside"))
        if attempt.finished and self.spec.validate_with:
            values = _values(data, params, attempt.output, run_id)
            log = ctx.job_log(run_id, "validate")
            done = self._on_master(ctx, _fill(self.spec.validate_with, values), log, f"validate {self.name}",
                                   self.spec.timeout_s)
            tail = (done.output.strip().splitlines() or [""])[-1][:300]
            attempt.checks.append(Check(name=f"validation command exits 0: {self.spec.validate_with}",
                                        passed=done.exit_status == 0, detail=f"exit {done.exit_status}; {tail}"))
        if attempt.output:
            ctx.hdfs(["-rm", "-r", "-f", "-skipTrash", attempt.output], ctx.job_log(run_id, "cleanup"), check=False)
