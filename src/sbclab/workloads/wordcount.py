"""WordCount over the airline text: Hadoop's example job and sbclab's Spark job, same tokenisation.

Valid when every input token was counted: Hadoop's map output records (one per token) and the sum of
the counts in the output equal the tokens `wc -w` finds in the input; Spark's token and total
counts likewise. Inputs up to `full_check_bytes` are also compared word by word with Python's count.
"""

from collections import Counter
from typing import Any

from ..results.schema import Check
from ..stack import clients
from . import inputs
from .base import Attempt, RunContext, Workload, equal, exited, hadoop_example, pyspark_job, remove_output, spark_job

FULL_CHECK_BYTES = 16 * 2**20


class WordCount(Workload):
    name = "wordcount"
    description = "count every white-space separated word of the airline text"
    footprint_per_input_byte = 5.0  # Hadoop WordCount wrote about 4x its input as intermediate data

    def defaults(self) -> dict[str, Any]:
        return {"seed": 0, "source": None, "reducers": None, "full_check_bytes": FULL_CHECK_BYTES}

    def prepare(self, ctx: RunContext, engine: str, params: dict[str, Any]) -> dict[str, Any]:
        return inputs.airline_text(ctx, params["size_bytes"], params["seed"], params["source"],
                                   reuse=params.get("reuse_input", True))

    def _output_checks(self, ctx: RunContext, run_id: str, output: str, data: dict, params: dict) -> list[Check]:
        log = ctx.job_log(run_id, "validate")
        if data["bytes"] > params.get("full_check_bytes", FULL_CHECK_BYTES):
            total = clients.fs_through(ctx.stack, ["-cat", f"{output}/part-*"], "awk -F'\\t' '{s += $2} END {print s + 0}'", log)
            return [equal("sum of output counts = input tokens (wc -w)", int(float(total)), data["tokens"])]
        # Small enough to read here: the output once (each read is a JVM's start), then both checks.
        got = Counter()
        for line in clients.fs_through(ctx.stack, ["-cat", f"{output}/part-*"], "cat", log).splitlines():
            word, _, count = line.rpartition("\t")
            got[word] += int(count)
        want = Counter(clients.fs_through(ctx.stack, ["-cat", f"{data['path']}/part-*"], "cat", log).split())
        differing = sum(1 for w in want.keys() | got.keys() if want[w] != got[w])
        return [equal("sum of output counts = input tokens (wc -w)", sum(got.values()), data["tokens"]),
                Check(name="every word's count equals Python's count", passed=differing == 0,
                      detail=f"{differing} of {len(want)} words differ")]

    def hadoop(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        reducers = ctx.reducers(params)
        outcome = hadoop_example(ctx, run_id, "hadoop wordcount",
                                 ["wordcount", f"-Dmapreduce.job.reduces={reducers}", data["path"], output])
        checks = [exited(outcome, "job")]
        if outcome.exit_status == 0:
            mapped = outcome.counters.get("Map-Reduce Framework", {}).get("Map output records")
            checks.append(equal("map output records = input tokens (wc -w)", mapped, data["tokens"]))
        return Attempt(outcome, checks, {"input_tokens": data["tokens"]}, parameters={"reducers": reducers},
                       output=output)

    def spark(self, ctx, run_id, params, data) -> Attempt:
        return self._spark_counted(run_id, data, ctx.reducers(params), lambda output, reducers: spark_job(
            ctx, run_id, "spark wordcount", "WordCount", [data["path"], output, str(reducers)]))

    def _spark_counted(self, run_id, data, reducers: int, submit) -> Attempt:
        """A Spark WordCount submitted by `submit(output, reducers)`, checked on the counts it reports."""
        output = f"/sbclab/out/{run_id}"
        outcome, result, counters, logs = submit(output, reducers)
        checks = [exited(outcome, "job")]
        if outcome.exit_status == 0:
            checks.append(equal("tokens read = input tokens (wc -w)", result.get("tokens"), data["tokens"]))
            checks.append(equal("total of counts written = input tokens", result.get("total_count"), data["tokens"]))
        return Attempt(outcome, checks, {**result, "input_tokens": data["tokens"]}, counters, logs,
                       parameters={"reducers": reducers}, output=output)

    def validate(self, ctx, engine, run_id, params, data, attempt) -> None:
        if attempt.finished:
            attempt.checks += self._output_checks(ctx, run_id, attempt.output, data, params)
        remove_output(ctx, run_id, attempt)


class PySparkWordCount(WordCount):
    """The same WordCount with its functions in Python (pyspark_jobs/wordcount.py): beside the JVM job
    on the same input, what Python costs on a board (workers forked per executor, rows pickled)."""

    name = "wordcount-py"
    description = "WordCount in PySpark, the JVM job's tokens and output with Python functions"
    engines = ("spark",)

    def spark(self, ctx, run_id, params, data) -> Attempt:
        return self._spark_counted(run_id, data, ctx.reducers(params), lambda output, reducers: pyspark_job(
            ctx, run_id, "pyspark wordcount", "wordcount.py", [data["path"], output, str(reducers)]))
