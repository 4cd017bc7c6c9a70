"""TeraGen and TeraSort on both engines; every sorted output checked by Hadoop's own TeraValidate.

A TeraSort run is valid when TeraValidate reports no error rows *and* its checksum of the sorted
output equals TeraGen's checksum of the input: order alone would miss lost or duplicated rows.
The TeraSort input is made by Hadoop TeraGen once per size on a cluster and reused by later runs
of either engine; that TeraGen is stored as a run of its own.
"""

from typing import Any

from ..errors import SbclabError
from ..results.schema import Check
from . import inputs
from .base import (Attempt, RunContext, Workload, checked_on_the_master, equal, exited, hadoop_example, remove_output,
                   spark_job)

ROW_BYTES = 100
_UNSIGNED64 = 2**64
_CHECKSUM_GROUP = "org.apache.hadoop.examples.terasort.TeraGen$Counters"


def rows_for(size_bytes: int) -> int:
    rows = size_bytes // ROW_BYTES
    if rows < 1:
        raise SbclabError(f"{size_bytes} bytes is less than one 100-byte TeraGen row.", "Give a size of at least 1kB.")
    return rows


def _input_key(size_bytes: int) -> str:
    return f"/sbclab/terasort/{size_bytes}/input"


def _maps(ctx: RunContext, params: dict[str, Any]) -> int:
    """TeraGen's tasks: the parameter, else two per worker, so every worker writes."""
    return int(params.get("maps") or 2 * ctx.cluster.spec.workers)


def _hadoop_teragen(ctx: RunContext, run_id: str, rows: int, maps: int, output: str) -> tuple[Attempt, int | None]:
    ctx.hdfs(["-rm", "-r", "-f", "-skipTrash", output], ctx.job_log(run_id, "cleanup"))
    outcome = hadoop_example(ctx, run_id, "hadoop teragen", ["teragen", f"-Dmapreduce.job.maps={maps}", str(rows), output])
    checksum = outcome.counters.get(_CHECKSUM_GROUP, {}).get("CHECKSUM")
    checks = [exited(outcome, "job")]
    if outcome.exit_status == 0:
        checks += [equal("rows written", outcome.counters.get("Map-Reduce Framework", {}).get("Map output records"), rows),
                   equal("bytes written to HDFS", outcome.counters.get("File System Counters", {}).get(
                       "HDFS: Number of bytes written"), rows * ROW_BYTES),
                   Check(name="checksum reported", passed=checksum is not None, detail=str(checksum))]
    checksum = int(checksum) % _UNSIGNED64 if checksum is not None else None
    return Attempt(outcome, checks, {"rows": rows, "checksum": checksum}, parameters={"maps": maps}), checksum


def tera_input(ctx: RunContext, size_bytes: int, reuse: bool = True) -> dict[str, Any]:
    """The TeraSort input of this size: made by a stored Hadoop TeraGen run unless the cluster holds it."""
    key = _input_key(size_bytes)
    if reuse and key in inputs.known(ctx):
        return inputs.known(ctx)[key]
    inputs.forget(ctx, key)
    rows = rows_for(size_bytes)
    ctx.progress(f"Hadoop TeraGen: {rows:,} rows into {key} (TeraSort input)")
    run = ctx.measure(TeraGen(), "hadoop", {"size_bytes": size_bytes, "maps": 2 * ctx.spec.workers, "output": key})
    if not run.valid:
        raise SbclabError(f"TeraGen of {size_bytes} bytes failed, so TeraSort cannot run.",
                          f"Read run {run.run_id} and its logs in {ctx.results}.")
    return inputs.remember(ctx, key, {"path": key, "rows": rows, "bytes": rows * ROW_BYTES,
                                      "checksum": run.result["checksum"], "run_id": run.run_id})


def teravalidate(ctx: RunContext, run_id: str, output: str, expected: dict) -> tuple[list[Check], dict]:
    report = f"/sbclab/out/{run_id}-validate"
    local = ["-Dmapreduce.framework.name=local"] if checked_on_the_master(expected["bytes"]) else []
    outcome = hadoop_example(ctx, run_id, "teravalidate", ["teravalidate", *local, output, report])
    if outcome.exit_status != 0:
        return [Check(name="TeraValidate ran", passed=False, detail=f"exit status {outcome.exit_status}")], {}
    text = ctx.hdfs(["-cat", f"{report}/part-r-*"], ctx.job_log(run_id, "teravalidate")).output
    ctx.hdfs(["-rm", "-r", "-f", "-skipTrash", report], ctx.job_log(run_id, "cleanup"), check=False)
    lines = [line for line in text.splitlines() if "\t" in line and not line[:4].isdigit()]
    errors = [line for line in lines if line.startswith("error")]
    sums = [line.split("\t", 1)[1].strip() for line in lines if line.startswith("checksum")]
    output_checksum = int(sums[0], 16) % _UNSIGNED64 if sums else None
    checks = [
        Check(name="TeraValidate error rows", passed=not errors,
              detail=f"{len(errors)} error rows" + (f", first: {errors[0][:200]}" if errors else "")),
        Check(name="checksum equals TeraGen's", passed=output_checksum == expected["checksum"],
              detail=f"output {output_checksum if output_checksum is None else format(output_checksum, 'x')}, "
                     f"input {expected['checksum']:x}"),
    ]
    return checks, {"validate_wall_time_s": round(outcome.wall_time_s, 3), "validate_job_ids": outcome.job_ids,
                    "validated_on": "the master (MapReduce's local runner)" if local else "the cluster"}


class TeraGen(Workload):
    name = "teragen"
    description = "write 100-byte TeraSort records into HDFS"
    footprint_per_input_byte = 0.0  # its output is the size itself

    def defaults(self) -> dict[str, Any]:
        return {"maps": None}

    def check_parameters(self, params: dict[str, Any]) -> None:
        rows_for(params["size_bytes"])

    def hadoop(self, ctx, run_id, params, data) -> Attempt:
        output = params.get("output")
        if output:
            # The TeraSort input: written where later runs find it, and kept.
            attempt, _ = _hadoop_teragen(ctx, run_id, rows_for(params["size_bytes"]), _maps(ctx, params), output)
            attempt.parameters["rows"] = rows_for(params["size_bytes"])
            attempt.notes.append("generated as TeraSort input, kept for later runs")
            return attempt
        attempt, _ = _hadoop_teragen(ctx, run_id, rows_for(params["size_bytes"]), _maps(ctx, params),
                                     f"/sbclab/out/{run_id}")
        attempt.output = f"/sbclab/out/{run_id}"
        return attempt

    def validate(self, ctx, engine, run_id, params, data, attempt) -> None:
        remove_output(ctx, run_id, attempt)

    def spark(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        rows, maps = rows_for(params["size_bytes"]), _maps(ctx, params)
        outcome, result, counters, logs = spark_job(ctx, run_id, "spark teragen", "TeraGen",
                                                    [str(rows), output, str(maps)], needs_examples=True)
        checks = [exited(outcome, "job")]
        if outcome.exit_status == 0:
            stored = ctx.hdfs(["-du", "-s", output], ctx.job_log(run_id, "validate")).output.split()
            checks += [equal("rows written", result.get("rows"), rows),
                       equal("bytes stored in HDFS", int(stored[0]) if stored else None, rows * ROW_BYTES),
                       Check(name="checksum reported", passed="checksum" in result, detail=str(result.get("checksum")))]
        if "checksum" in result:
            result["checksum"] = int(result["checksum"]) % _UNSIGNED64
        return Attempt(outcome, checks, result, counters, logs, parameters={"maps": maps, "rows": rows}, output=output)


class TeraSort(Workload):
    name = "terasort"
    description = "sort TeraGen's records; validated by TeraValidate"
    mapreduce_around = True  # Hadoop TeraGen makes its input, TeraValidate checks it
    footprint_per_input_byte = 5.0  # input in HDFS, about 4x intermediate data, the output

    def defaults(self) -> dict[str, Any]:
        return {"reducers": None, "validate": True}

    def check_parameters(self, params: dict[str, Any]) -> None:
        rows_for(params["size_bytes"])

    def prepare(self, ctx, engine: str, params) -> dict[str, Any]:
        return tera_input(ctx, params["size_bytes"], reuse=params.get("reuse_input", True))

    def hadoop(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        reducers = ctx.reducers(params)
        outcome = hadoop_example(ctx, run_id, "hadoop terasort",
                                 ["terasort", f"-Dmapreduce.job.reduces={reducers}", data["path"], output])
        sorted_rows = outcome.counters.get("Map-Reduce Framework", {}).get("Reduce output records")
        return Attempt(outcome, self._sorted(outcome, sorted_rows, data), {"rows": data["rows"]},
                       parameters={"reducers": reducers, "rows": data["rows"]}, output=output)

    def spark(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        reducers = ctx.reducers(params)
        outcome, result, counters, logs = spark_job(ctx, run_id, "spark terasort", "TeraSort",
                                                    [data["path"], output, str(reducers)], needs_examples=True)
        return Attempt(outcome, self._sorted(outcome, result.get("rows"), data), {"rows": data["rows"], **result},
                       counters, logs, parameters={"reducers": reducers, "rows": data["rows"]}, output=output)

    @staticmethod
    def _sorted(outcome, sorted_rows, data) -> list[Check]:
        checks = [exited(outcome, "job")]
        if outcome.exit_status == 0:
            checks.append(equal("rows sorted", sorted_rows, data["rows"]))
        return checks

    def validate(self, ctx, engine, run_id, params, data, attempt) -> None:
        if attempt.finished and params.get("validate", True):
            ctx.progress("TeraValidate")
            more, extra = teravalidate(ctx, run_id, attempt.output, data)
            attempt.checks += more
            attempt.result.update(extra)
        remove_output(ctx, run_id, attempt)
