"""TeraGen → TeraSort → TeraValidate on Hadoop MapReduce, the upstream example jobs.

A TeraSort run is valid when TeraValidate reports no error rows *and* its checksum of the sorted
output equals TeraGen's checksum of the input: order alone would miss lost or duplicated rows.
TeraGen input is generated once per size on a cluster and reused by later repetitions.
"""

from ..errors import SbclabError
from ..results.schema import Check, RunRecord
from ..stack import clients
from .base import RunContext, new_id

ROW_BYTES = 100
_UNSIGNED64 = 2**64
_CHECKSUM_GROUP = "org.apache.hadoop.examples.terasort.TeraGen$Counters"


def rows_for(size_bytes: int) -> int:
    rows = size_bytes // ROW_BYTES
    if rows < 1:
        raise SbclabError(f"{size_bytes} bytes is less than one 100-byte TeraGen row.", "Give a size of at least 1kB.")
    return rows


def _root(size_bytes: int) -> str:
    return f"/sbclab/terasort/{size_bytes}"


def _datasets(ctx: RunContext) -> dict:
    return ctx.cluster.state.extra.setdefault("datasets", {})


def teragen(ctx: RunContext, size_bytes: int, repetition: int = 1, reuse: bool = True) -> RunRecord | None:
    """Generate the input for this size, unless the cluster already holds it; return the run, if any."""
    input_dir = f"{_root(size_bytes)}/input"
    known = _datasets(ctx).get(input_dir)
    if reuse and known:
        return None
    rows = rows_for(size_bytes)
    run_id = new_id("hadoop", "teragen")
    log = ctx.job_log(run_id, "teragen")
    clients.fs(ctx.stack, ["-rm", "-r", "-f", "-skipTrash", input_dir], log)
    ctx.progress(f"Hadoop TeraGen: {rows:,} rows into {input_dir}")
    outcome = clients.hadoop_jar(ctx.stack, ctx.stack.dist.examples_jar, ["teragen", str(rows), input_dir], log, "teragen")
    checksum = outcome.counters.get(_CHECKSUM_GROUP, {}).get("CHECKSUM")
    written = outcome.counters.get("Map-Reduce Framework", {}).get("Map output records")
    checks = [Check(name="rows written", passed=written == rows, detail=f"{written} of {rows} rows")]
    if checksum is None:
        checks.append(Check(name="checksum reported", passed=False, detail="TeraGen printed no CHECKSUM counter"))
    run = ctx.store_run(run_id=run_id, workload="teragen", engine="hadoop", repetition=repetition,
                        parameters={"size_bytes": size_bytes, "rows": rows, "output": input_dir},
                        outcome=outcome, checks=checks,
                        result={"rows": rows, "checksum": checksum})
    if run.succeeded and checksum is not None:
        _datasets(ctx)[input_dir] = {"rows": rows, "checksum": int(checksum) % _UNSIGNED64, "run_id": run_id}
        ctx.cluster.state.save()
    return run


def _validate(ctx: RunContext, run_id: str, output_dir: str, report_dir: str, expected: dict) -> tuple[list[Check], dict, str]:
    log = ctx.job_log(run_id, "teravalidate")
    outcome = clients.hadoop_jar(ctx.stack, ctx.stack.dist.examples_jar, ["teravalidate", output_dir, report_dir], log,
                                 "teravalidate")
    if outcome.exit_status != 0:
        return [Check(name="TeraValidate ran", passed=False, detail=f"exit status {outcome.exit_status}")], {}, str(log)
    report = clients.fs(ctx.stack, ["-cat", f"{report_dir}/part-r-*"], log).output
    lines = [line for line in report.splitlines() if "\t" in line and not line[:4].isdigit()]
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
    return checks, {"validate_wall_time_s": round(outcome.wall_time_s, 3), "validate_job_ids": outcome.job_ids}, str(log)


def terasort(ctx: RunContext, size_bytes: int, repetition: int = 1, validate: bool = True) -> RunRecord:
    """Sort the size's TeraGen input; validate unless told not to (the overhead benchmark times the sort alone)."""
    input_dir = f"{_root(size_bytes)}/input"
    if input_dir not in _datasets(ctx):
        gen = teragen(ctx, size_bytes, repetition)
        if gen is None or not gen.succeeded:
            raise SbclabError(f"TeraGen of {size_bytes} bytes failed, so TeraSort cannot run.",
                              f"Read the TeraGen run's logs in {ctx.store.root}.")
    expected = _datasets(ctx)[input_dir]
    run_id = new_id("hadoop", "terasort")
    output_dir = f"{_root(size_bytes)}/output-{run_id}"
    report_dir = f"{_root(size_bytes)}/validate-{run_id}"
    log = ctx.job_log(run_id, "terasort")
    ctx.progress(f"Hadoop TeraSort: {input_dir} → {output_dir}")
    outcome = clients.hadoop_jar(ctx.stack, ctx.stack.dist.examples_jar, ["terasort", input_dir, output_dir], log,
                                 "terasort")
    result: dict = {"rows": expected["rows"]}
    checks = []
    validate_log = None
    if outcome.exit_status == 0:
        out_records = outcome.counters.get("Map-Reduce Framework", {}).get("Reduce output records")
        checks.append(Check(name="rows sorted", passed=out_records == expected["rows"],
                            detail=f"{out_records} of {expected['rows']} rows"))
        if validate:
            ctx.progress("Hadoop TeraValidate")
            more_checks, extra, validate_log = _validate(ctx, run_id, output_dir, report_dir, expected)
            checks += more_checks
            result.update(extra)
    clients.fs(ctx.stack, ["-rm", "-r", "-f", "-skipTrash", output_dir, report_dir], log, check=False)
    return ctx.store_run(run_id=run_id, workload="terasort", engine="hadoop", repetition=repetition,
                         parameters={"size_bytes": size_bytes, "rows": expected["rows"], "input": input_dir,
                                     "input_run_id": expected["run_id"]},
                         outcome=outcome, checks=checks, result=result,
                         extra_logs={"teravalidate.log": validate_log} if validate_log else None)
