"""TestDFSIO write and read: Hadoop's own benchmark and sbclab's Spark job with the same report.

Both write (then read) `files` files of `file_bytes` each, one task per file, and report
TestDFSIO's fields: throughput (total MB over the sum of task times), average I/O rate (mean of
the per-file rates), its standard deviation and the execution time. The page cache is dropped on
every node before a read, so a read measures the medium, not memory. Defaults are the seeds': 10
files; the experiment's data size is the total over all files.
"""

import re
from typing import Any

from ..errors import SbclabError
from ..results.schema import Check
from ..stack import clients
from . import inputs
from .base import Attempt, RunContext, Workload, equal, exited, spark_job

DEFAULT_FILES = 10
MB = 2**20  # TestDFSIO's MB
_REPORT_LINE = re.compile(r"TestDFSIO: +([A-Za-z][A-Za-z &/.]*?): +([-+0-9.Ee]+) *$", re.M)
_FIELDS = {"Number of files": "files", "Total MBytes processed": "total_mbytes", "Throughput mb/sec": "throughput_mb_s",
           "Average IO rate mb/sec": "average_io_rate_mb_s", "IO rate std deviation": "io_rate_std_dev",
           "Test exec time sec": "exec_time_s"}


def _file_bytes(params: dict[str, Any]) -> int:
    per_file = params["size_bytes"] // params["files"]
    if per_file < 1:
        raise SbclabError(f"{params['size_bytes']} bytes cannot fill {params['files']} files.",
                          "Give a larger size or fewer files.")
    return per_file


def _dir(engine: str) -> str:
    return f"/sbclab/dfsio/{engine}"


def _hadoop_dfsio(ctx: RunContext, run_id: str, mode: str, files: int, file_bytes: int) -> Attempt:
    result_file = ctx.job_log(run_id, "dfsio-result")
    args = [f"-Dtest.build.data={_dir('hadoop')}", f"-{mode}", "-nrFiles", str(files), "-size", f"{file_bytes}B",
            "-resFile", str(result_file)]
    outcome = clients.hadoop_class(ctx.stack, "org.apache.hadoop.fs.TestDFSIO", args,
                                   ctx.job_log(run_id, f"hadoop-dfsio-{mode}"), f"hadoop TestDFSIO -{mode}")
    report = {_FIELDS[name]: float(value) for name, value in _REPORT_LINE.findall(outcome.output) if name in _FIELDS}
    checks = [exited(outcome, "job")]
    if outcome.exit_status == 0:
        checks.append(equal("files", int(report.get("files", -1)), files))
        checks.append(Check(name="MB processed as asked", passed=abs(report.get("total_mbytes", -1) - files * file_bytes / MB) < 0.01,
                            detail=f"{report.get('total_mbytes')} MB (expected {files * file_bytes / MB:.2f})"))
        moved = outcome.counters.get("File System Counters", {}).get(
            "HDFS: Number of bytes written" if mode == "write" else "HDFS: Number of bytes read")
        checks.append(Check(name=f"HDFS bytes {mode} cover the files", passed=(moved or 0) >= files * file_bytes,
                            detail=f"{moved} bytes (files hold {files * file_bytes})"))
    return Attempt(outcome, checks, {"mode": mode, **report, "bytes": files * file_bytes},
                   extra_logs={"dfsio-result.log": result_file})


def _spark_dfsio(ctx: RunContext, run_id: str, mode: str, files: int, file_bytes: int) -> Attempt:
    outcome, result, counters, logs = spark_job(ctx, run_id, f"spark dfsio {mode}", "Dfsio",
                                                [mode, _dir("spark"), str(files), str(file_bytes)])
    checks = [exited(outcome, "job")]
    if outcome.exit_status == 0:
        checks += [equal("files", result.get("files"), files), equal(f"bytes {mode}", result.get("bytes"), files * file_bytes)]
    return Attempt(outcome, checks, result, counters, logs)


def _run_mode(ctx: RunContext, engine: str, run_id: str, mode: str, params: dict[str, Any]) -> Attempt:
    files, file_bytes = params["files"], _file_bytes(params)
    attempt = (_hadoop_dfsio if engine == "hadoop" else _spark_dfsio)(ctx, run_id, mode, files, file_bytes)
    attempt.parameters = {"file_bytes": file_bytes}
    return attempt


def _written_key(engine: str, params: dict[str, Any]) -> str:
    return f"dfsio/{engine}/{params['files']}x{_file_bytes(params)}"


class DfsioWrite(Workload):
    name = "dfsio-write"
    description = "TestDFSIO: write files into HDFS in parallel"
    footprint_per_input_byte = 0.0

    def defaults(self) -> dict[str, Any]:
        return {"files": DEFAULT_FILES}

    def hadoop(self, ctx, run_id, params, data) -> Attempt:
        return self._write(ctx, "hadoop", run_id, params)

    def spark(self, ctx, run_id, params, data) -> Attempt:
        return self._write(ctx, "spark", run_id, params)

    def _write(self, ctx, engine, run_id, params) -> Attempt:
        inputs.forget(ctx, _written_key(engine, params))
        attempt = _run_mode(ctx, engine, run_id, "write", params)
        if all(c.passed for c in attempt.checks):
            inputs.remember(ctx, _written_key(engine, params), {"run_id": run_id})
        return attempt


class DfsioRead(Workload):
    name = "dfsio-read"
    description = "TestDFSIO: read the written files back, page cache dropped first"
    footprint_per_input_byte = 0.0

    def defaults(self) -> dict[str, Any]:
        return {"files": DEFAULT_FILES}

    def prepare(self, ctx, engine: str, params) -> dict[str, Any]:
        """The files the read reads: written by a stored write run unless the cluster holds them, then
        the page cache dropped, so the read measures the medium."""
        key = _written_key(engine, params)
        if key not in inputs.known(ctx):
            ctx.progress(f"{engine} TestDFSIO write first: the read needs its files")
            run = ctx.measure(DfsioWrite(), engine, params)
            if not run.valid:
                raise SbclabError("TestDFSIO write failed, so there is nothing to read.",
                                  f"Read run {run.run_id} in {ctx.results}.")
        return {"written_by": inputs.known(ctx)[key]["run_id"], "page_cache_dropped": ctx.drop_caches()}

    def hadoop(self, ctx, run_id, params, data) -> Attempt:
        return self._read(ctx, "hadoop", run_id, params, data)

    def spark(self, ctx, run_id, params, data) -> Attempt:
        return self._read(ctx, "spark", run_id, params, data)

    def _read(self, ctx, engine, run_id, params, data) -> Attempt:
        attempt = _run_mode(ctx, engine, run_id, "read", params)
        attempt.parameters["written_by"] = data["written_by"]
        # A read after a cache that could not be dropped may come from memory: not a medium's figure.
        attempt.checks.append(Check(name="page cache dropped before the read", passed=data["page_cache_dropped"],
                                    detail="dropped on every node" if data["page_cache_dropped"] else
                                    "this host did not allow dropping the page cache (run as root)"))
        return attempt
