"""Sort: Hadoop's RandomWriter + Sort examples, and sbclab's Spark sortByKey over the same input.

The input (binary SequenceFiles of random keys and values) is written once per size by RandomWriter
and reused. sbclab's SortCheck job reads input and output and compares record counts, bytes and an
order-independent checksum, and counts out-of-order records: within every output file for Hadoop
(hash-partitioned reducers each sort their share) and across files too for Spark (range partitioned).
"""

from typing import Any

from ..errors import SbclabError
from ..results.schema import Check
from . import inputs
from .base import (Attempt, RunContext, Workload, checked_on_the_master, equal, exited, hadoop_example, new_id,
                   remove_output, spark_job)


def _check(ctx: RunContext, run_id: str, path: str, on_the_master: bool, total_order: bool) -> dict[str, Any]:
    outcome, result, _, _ = spark_job(ctx, run_id, "sortcheck", "SortCheck", [path, str(total_order).lower()],
                                      on_the_master=on_the_master)
    if outcome.exit_status != 0 or not result:
        raise SbclabError(f"SortCheck of {path} failed (exit {outcome.exit_status}).", f"Read {outcome.log}.")
    return result


def random_input(ctx: RunContext, size_bytes: int, reuse: bool = True) -> dict[str, Any]:
    key = f"/sbclab/sort/{size_bytes}/input"
    if reuse and key in inputs.known(ctx):
        return inputs.known(ctx)[key]
    inputs.forget(ctx, key)
    run_id = new_id("input", "randomwriter")
    maps = 2 * ctx.cluster.spec.workers
    ctx.hdfs(["-rm", "-r", "-f", "-skipTrash", key], ctx.job_log(run_id, "cleanup"))
    if ctx.cluster.choices.spark_manager == "standalone":
        # No YARN to run MapReduce: Spark writes records of randomwriter's shape (java/jobs RandomWriter).
        ctx.progress(f"Spark RandomWriter: {size_bytes:,} bytes into {key} (Sort input)")
        outcome, _, _, _ = spark_job(ctx, run_id, "randomwriter", "RandomWriter", [str(size_bytes), key, str(maps)])
    else:
        ctx.progress(f"Hadoop RandomWriter: {size_bytes:,} bytes into {key} (Sort input)")
        outcome = hadoop_example(ctx, run_id, "randomwriter", [
            "randomwriter", f"-Dmapreduce.randomwriter.totalbytes={size_bytes}",
            f"-Dmapreduce.randomwriter.bytespermap={max(1, size_bytes // maps)}", key])
    if outcome.exit_status != 0:
        raise SbclabError(f"RandomWriter of {size_bytes} bytes failed, so Sort cannot run.", f"Read {outcome.log}.")
    summary = _check(ctx, run_id, key, checked_on_the_master(size_bytes), total_order=False)
    return inputs.remember(ctx, key, {"path": key, "records": summary["records"], "bytes": summary["bytes"],
                                      "checksum": summary["checksum"], "writer_log": str(outcome.log)})


class Sort(Workload):
    name = "sort"
    description = "sort RandomWriter's binary records by key"
    footprint_per_input_byte = 4.0
    mapreduce_around = True  # Hadoop RandomWriter makes its input

    def defaults(self) -> dict[str, Any]:
        return {"reducers": None}

    def prepare(self, ctx, engine: str, params) -> dict[str, Any]:
        return random_input(ctx, params["size_bytes"], reuse=params.get("reuse_input", True))

    def _validate(self, ctx, run_id, output, data, total_order: bool) -> tuple[list[Check], dict]:
        local = checked_on_the_master(data["bytes"])
        found = _check(ctx, run_id, output, local, total_order)
        checks = [equal("records", found["records"], data["records"]), equal("bytes", found["bytes"], data["bytes"]),
                  equal("checksum of records", found["checksum"], data["checksum"]),
                  equal("records out of order within files", found["unordered_pairs"], 0)]
        if total_order:
            checks.append(equal("files out of order", found["boundary_violations"], 0))
        return checks, {"records": found["records"], "bytes": found["bytes"],
                        "validated_on": "the master (Spark's local mode)" if local else "the cluster"}

    def hadoop(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        reducers = ctx.reducers(params)
        outcome = hadoop_example(ctx, run_id, "hadoop sort", ["sort", "-r", str(reducers), data["path"], output])
        return Attempt(outcome, [exited(outcome, "job")], {},
                       parameters={"reducers": reducers, "input_records": data["records"]}, output=output)

    def spark(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        reducers = ctx.reducers(params)
        outcome, result, counters, logs = spark_job(ctx, run_id, "spark sort", "Sort", [data["path"], output, str(reducers)])
        return Attempt(outcome, [exited(outcome, "job")], result, counters, logs,
                       parameters={"reducers": reducers, "input_records": data["records"]}, output=output)

    def validate(self, ctx, engine, run_id, params, data, attempt) -> None:
        if attempt.finished:
            # Hadoop's hash-partitioned reducers each sort their share; Spark's output is in one order.
            more, figures = self._validate(ctx, run_id, attempt.output, data, total_order=engine == "spark")
            attempt.checks += more
            if engine == "hadoop":
                attempt.result.update(figures)
        remove_output(ctx, run_id, attempt)
