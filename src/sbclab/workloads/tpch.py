"""TPC-H on Spark SQL: six of its queries over tables generated into HDFS, each answer checked
against DuckDB's on the same data on this host.

The size asked for is the tables' bytes: the scale factor whose TBL files hold about that much
(data/tpch.py). The tables are generated once per cluster and scale factor, each streamed from
tpchgen-cli straight into HDFS from a worker (the tables spread over the workers); the
reference reads the same generator's files on this host, so an answer that differs is the engine's,
not the data's. Each query's seconds are the run's result, beside the Spark stages of its job
("TPC-H Qn" in the event log).
"""

import json
import math
from pathlib import Path
from typing import Any

from .. import paths
from ..cluster.transport import Job
from ..data import tpch
from ..errors import SbclabError
from ..results.schema import Check
from ..stack import clients
from . import inputs
from .base import Attempt, RunContext, Workload, exited, pyspark_job, remove_output

RELATIVE_TOLERANCE = 1e-6  # Spark's averages of decimals keep six places; DuckDB's are doubles


def _queries(text: Any) -> list[int]:
    numbers = [int(q) for q in str(text).replace(" ", "").split(",") if q] if not isinstance(text, list) else text
    unknown = [q for q in numbers if q not in tpch.QUERIES]
    if not numbers or unknown:
        raise SbclabError(f"TPC-H queries {text!r}: sbclab runs {', '.join(map(str, tpch.QUERIES))}.",
                          "Give some of them, e.g. queries: 1,6.")
    return numbers


def tables_in_hdfs(ctx: RunContext, scale: float, reuse: bool = True) -> dict[str, Any]:
    """Every TPC-H table at this scale factor in HDFS, one folder each, made once per cluster."""
    key = f"tpch/{scale:g}"
    if reuse and key in inputs.known(ctx):
        return inputs.known(ctx)[key]
    path = f"/sbclab/tpch/sf{scale:g}"
    log = ctx.job_log(f"input-tpch-{scale:g}", "generate")
    ctx.hdfs(["-rm", "-r", "-f", "-skipTrash", path], log)
    ctx.hdfs(["-mkdir", "-p", *(f"{path}/{table}" for table in tpch.TABLES)], log)
    workers = ctx.spec.worker_nodes
    ctx.progress(f"generating TPC-H at scale factor {scale:g} into {path} on {len(workers)} workers")
    jobs = []
    for i, table in enumerate(tpch.TABLES):
        worker = workers[i % len(workers)]
        put = clients.put_command(ctx.stack, worker, f"{path}/{table}/{table}.tbl")
        jobs.append(Job(worker, put, ctx.stack.env(worker), log, f"generate {table}",
                        feed=tpch.generate_command(table, scale)))
    statuses = ctx.transport.run_all(jobs, timeout_s=24 * 3600)
    if any(statuses):
        raise SbclabError(f"Generating TPC-H failed for {sum(1 for s in statuses if s)} table(s).", f"Read {log}.")
    stored = int(clients.fs_through(ctx.stack, ["-du", "-s", path], "awk '{print $1}'", log).strip() or 0)
    return inputs.remember(ctx, key, {"path": path, "bytes": stored, "scale_factor": scale,
                                      "source": "tpchgen-cli"})


def reference_answers(scale: float, queries: list[int]) -> dict[int, list[list[Any]]]:
    """DuckDB's answers on the same generator's tables at this scale factor, read on this host."""
    import duckdb  # the reference engine, needed only when a TPC-H run is checked

    folder = tpch.generate_files(paths.cache_dir() / "tpch" / f"sf{scale:g}", scale)
    with duckdb.connect() as con:
        for table in tpch.TABLES:
            # A view cannot take prepared parameters: the path is sbclab's own cache, quoted as SQL text.
            source = str(folder / f"{table}.tbl").replace("'", "''")
            columns = ", ".join(f"'{name}': '{kind}'" for name, kind in tpch.duckdb_columns(table).items())
            con.execute(f"create view {table} as select * from read_csv('{source}', delim='|', header=false, "
                        f"columns={{{columns}}})")
        return {q: [[_plain(v) for v in row] for row in con.execute(tpch.QUERIES[q]).fetchall()] for q in queries}


def _plain(value: Any) -> Any:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if value.__class__.__name__ == "Decimal":
        return float(value)
    return value


def same_rows(got: list[list[Any]], want: list[list[Any]]) -> str | None:
    """None when the rows agree (numbers to RELATIVE_TOLERANCE), else where they first differ."""
    if len(got) != len(want):
        return f"{len(got)} rows, DuckDB {len(want)}"
    for i, (a, b) in enumerate(zip(got, want)):
        if len(a) != len(b):
            return f"row {i + 1}: {len(a)} columns, DuckDB {len(b)}"
        for j, (x, y) in enumerate(zip(a, b)):
            numbers = isinstance(x, (int, float)) and isinstance(y, (int, float))
            if numbers and not math.isclose(x, y, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-6):
                return f"row {i + 1} column {j + 1}: {x} against DuckDB's {y}"
            if not numbers and x != y:
                return f"row {i + 1} column {j + 1}: {x!r} against DuckDB's {y!r}"
    return None


class Tpch(Workload):
    name = "tpch"
    description = "TPC-H queries 1, 3, 5, 6, 9, 18 on Spark SQL over generated tables, checked against DuckDB"
    engines = ("spark",)
    footprint_per_input_byte = 0.2  # the queries' shuffles; their answers are a few rows

    def defaults(self) -> dict[str, Any]:
        return {"queries": ",".join(map(str, tpch.DEFAULT_QUERIES))}

    def parameters(self, size_bytes: int | None, given: dict[str, Any] | None = None) -> dict[str, Any]:
        params = super().parameters(size_bytes, given)
        if size_bytes:
            params["scale_factor"] = tpch.scale_factor(size_bytes)
        return params

    def check_parameters(self, params: dict[str, Any]) -> None:
        _queries(params.get("queries"))

    def prepare(self, ctx: RunContext, engine: str, params: dict[str, Any]) -> dict[str, Any]:
        return tables_in_hdfs(ctx, params["scale_factor"], reuse=params.get("reuse_input", True))

    def spark(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        queries = _queries(params["queries"])
        given = {"tables": {t: tpch.spark_schema(t) for t in tpch.TABLES},
                 "queries": {str(q): tpch.QUERIES[q] for q in queries}}
        master = ctx.spec.master
        folder = ctx.stack.layout(master).disk / "tmp" / "pyspark-jobs"
        ctx.transport.make_dirs(master, [folder])
        ctx.transport.put(master, folder, {f"tpch-{run_id}.json": json.dumps(given)})
        outcome, result, counters, logs = pyspark_job(ctx, run_id, "spark tpch", "tpch.py",
                                                      [data["path"], output, str(folder / f"tpch-{run_id}.json")])
        ctx.transport.remove(master, folder / f"tpch-{run_id}.json")
        return Attempt(outcome, [exited(outcome, "job")], result, counters, logs,
                       parameters={"scale_factor": params["scale_factor"]}, output=output)

    def validate(self, ctx, engine, run_id, params, data, attempt) -> None:
        if attempt.finished:
            log = ctx.job_log(run_id, "validate")
            queries = _queries(params["queries"])
            want = reference_answers(params["scale_factor"], queries)
            for q in queries:
                text = clients.fs_through(ctx.stack, ["-cat", f"{attempt.output}/q{q}/part-*"], "cat", log)
                got = [json.loads(line) for line in text.splitlines() if line.strip()]
                differs = same_rows(got, want[q])
                attempt.checks.append(Check(name=f"Q{q} = DuckDB's answer", passed=differs is None,
                                            detail=differs or f"{len(got)} rows agree"))
        remove_output(ctx, run_id, attempt)
