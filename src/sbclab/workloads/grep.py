"""Grep over the airline text: Hadoop's example (counts every match) and sbclab's Spark job, which
keeps the matching lines, as the 2026 seed describes its Spark Grep.

Independent counts come from GNU grep over the stored input (extended regular expressions; keep
patterns to the part of the syntax Java and POSIX share): `grep -o | wc -l` for Hadoop's count of
matches, `grep -c` for Spark's matching lines.
"""

from typing import Any

from ..stack import clients, counters as engine_counters
from . import inputs
from .base import Attempt, RunContext, Workload, equal, exited, hadoop_example, remove_output, spark_job

# An airport code: 5.1 % of the lines of 64 MiB generated with seed 0 contain it.
DEFAULT_PATTERN = "ORD"


def _independent_counts(ctx: RunContext, run_id: str, data: dict, pattern: str) -> dict[str, int]:
    key = f"grep:{pattern}"
    if key not in data:
        log = ctx.job_log(run_id, "validate")
        quoted = pattern.replace("'", "'\\''")
        lines = clients.fs_through(ctx.stack, ["-cat", f"{data['path']}/part-*"], f"grep -c -E -- '{quoted}' || true", log)
        matches = clients.fs_through(ctx.stack, ["-cat", f"{data['path']}/part-*"],
                                     f"{{ grep -o -E -- '{quoted}' || true; }} | wc -l", log)
        # Kept with the data set, so it is counted once.
        inputs.annotate(ctx, data, key, {"lines": int(lines.strip() or 0), "matches": int(matches.strip() or 0)})
    return data[key]


class Grep(Workload):
    name = "grep"
    description = "find a regular expression in the airline text"
    footprint_per_input_byte = 0.5
    # One scan of the text and a small output, as WordCount's map side; the seeds printed no Grep time.
    estimated_like = "wordcount"

    def defaults(self) -> dict[str, Any]:
        return {"seed": 0, "source": None, "pattern": DEFAULT_PATTERN}

    def prepare(self, ctx: RunContext, engine: str, params: dict[str, Any]) -> dict[str, Any]:
        return inputs.airline_text(ctx, params["size_bytes"], params["seed"], params["source"],
                                   reuse=params.get("reuse_input", True))

    def hadoop(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        outcome = hadoop_example(ctx, run_id, "hadoop grep", ["grep", data["path"], output, params["pattern"]])
        result: dict[str, Any] = {}
        if outcome.exit_status == 0:
            search = (engine_counters.hadoop_job_counters(outcome.output) or [{}])[0]  # the sort job reads its output
            result["input_lines"] = search.get("Map-Reduce Framework", {}).get("Map input records")
        return Attempt(outcome, [exited(outcome, "jobs")], result, output=output)

    def spark(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        outcome, result, counters, logs = spark_job(ctx, run_id, "spark grep", "Grep",
                                                    [data["path"], output, params["pattern"]])
        return Attempt(outcome, [exited(outcome, "job")], result, counters, logs, output=output)

    def validate(self, ctx, engine, run_id, params, data, attempt) -> None:
        if attempt.finished:
            log = ctx.job_log(run_id, "validate")
            want = _independent_counts(ctx, run_id, data, params["pattern"])
            if engine == "hadoop":
                total = clients.fs_through(ctx.stack, ["-cat", f"{attempt.output}/part-*"],
                                           "awk -F'\\t' '{s += $1} END {print s + 0}'", log)
                attempt.result["matches"] = int(float(total))
                attempt.checks += [equal("matches counted = GNU grep's count", attempt.result["matches"], want["matches"]),
                                   equal("input lines read = wc -l", attempt.result.get("input_lines"), data["lines"])]
            else:
                saved = int(clients.fs_through(ctx.stack, ["-cat", f"{attempt.output}/part-*"], "wc -l", log).strip())
                attempt.checks += [
                    equal("input lines read = wc -l", attempt.result.get("input_lines"), data["lines"]),
                    equal("matching lines = GNU grep -c", attempt.result.get("matched_lines"), want["lines"]),
                    equal("lines saved = GNU grep -c", saved, want["lines"])]
        remove_output(ctx, run_id, attempt)
