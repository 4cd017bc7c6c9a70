"""PageRank on a generated graph: a MapReduce job an iteration (sbclab's PageRankMR) or Spark's RDDs
(pyspark_jobs/pagerank.py), every node's rank checked against a power iteration on this host.

The size asked for is the adjacency text's bytes (data/graph.py: about 17 bytes a node); the graph
is made here from its seed, once, and put into HDFS once per cluster. Both engines and the reference
compute the same thing — rank = (1 - d) / N + d * the in-links' shares, from 1 / N, for a fixed number
of iterations — so they must agree to rounding.
"""

from typing import Any

import numpy as np

from .. import paths
from ..data import graph
from ..errors import SbclabError
from ..results.schema import Check
from ..stack import clients
from . import inputs
from .base import Attempt, RunContext, Workload, exited, pyspark_job, remove_output

RELATIVE_TOLERANCE = 1e-9  # the engines add the shares in another order than numpy does


def graph_in_hdfs(ctx: RunContext, nodes: int, seed: int, reuse: bool = True) -> dict[str, Any]:
    text = graph.write_text(paths.cache_dir() / "graphs" / f"pagerank-{nodes}-s{seed}.txt", nodes, seed)
    return inputs.local_file(ctx, f"graph/{nodes}/s{seed}", text, f"/sbclab/graph/{nodes}-s{seed}",
                             f"a graph of {nodes:,} nodes", {"nodes": nodes, "seed": seed}, reuse)


def compare(got: dict[int, float], want: np.ndarray) -> list[Check]:
    missing = len(want) - len(got)
    worst = max((abs(got[i] - want[i]) / want[i] for i in got if 0 <= i < len(want)), default=float("inf"))
    return [Check(name="every node ranked once", passed=missing == 0 and all(0 <= i < len(want) for i in got),
                  detail=f"{len(got)} ranked of {len(want)}"),
            Check(name="ranks = power iteration's", passed=worst <= RELATIVE_TOLERANCE,
                  detail=f"largest relative difference {worst:.2e} (at most {RELATIVE_TOLERANCE:g})"),
            Check(name="ranks sum to 1", passed=abs(sum(got.values()) - 1.0) <= 1e-9,
                  detail=f"{sum(got.values()):.12f}")]


class PageRank(Workload):
    name = "pagerank"
    description = "PageRank on a generated heavy-tailed graph, checked against a power iteration on the master"
    footprint_per_input_byte = 3.0  # every iteration writes the ranks and links again

    def defaults(self) -> dict[str, Any]:
        return {"iterations": 10, "damping": 0.85, "seed": 0}

    def parameters(self, size_bytes: int | None, given: dict[str, Any] | None = None) -> dict[str, Any]:
        params = super().parameters(size_bytes, given)
        if size_bytes:
            params["nodes"] = graph.nodes_for(size_bytes)
        return params

    def check_parameters(self, params: dict[str, Any]) -> None:
        if not (isinstance(params.get("iterations"), int) and 1 <= params["iterations"] <= 100):
            raise SbclabError("PageRank's iterations must be a whole number from 1 to 100.", "e.g. iterations: 10.")
        if not (isinstance(params.get("damping"), (int, float)) and 0 < params["damping"] < 1):
            raise SbclabError("PageRank's damping must be between 0 and 1.", "The usual one is 0.85.")

    def prepare(self, ctx: RunContext, engine: str, params: dict[str, Any]) -> dict[str, Any]:
        return graph_in_hdfs(ctx, params["nodes"], params["seed"], reuse=params.get("reuse_input", True))

    def hadoop(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        args = ["org.sbclab.jobs.PageRankMR", data["path"], output, str(params["iterations"]), str(data["nodes"]),
                repr(float(params["damping"])), str(ctx.reducers(params))]
        outcome = clients.hadoop_jar(ctx.stack, ctx.stack.dist.jobs_jar, args, ctx.job_log(run_id, "hadoop-pagerank"),
                                     "hadoop pagerank")
        return Attempt(outcome, [exited(outcome, "jobs")], {"iterations": params["iterations"]}, output=output)

    def spark(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        outcome, result, counters, logs = pyspark_job(
            ctx, run_id, "spark pagerank", "pagerank.py",
            [data["path"], output, str(params["iterations"]), repr(float(params["damping"])), str(ctx.reducers(params))])
        return Attempt(outcome, [exited(outcome, "job")], result, counters, logs, output=output)

    def validate(self, ctx, engine, run_id, params, data, attempt) -> None:
        if attempt.finished:
            log = ctx.job_log(run_id, "validate")
            text = clients.fs_through(ctx.stack, ["-cat", f"{attempt.output}/part-*"], "cut -f1,2", log)
            got = {}
            for line in text.splitlines():
                node, rank = line.split("\t")
                got[int(node)] = float(rank)
            links = graph.adjacency(data["nodes"], data["seed"])
            attempt.checks += compare(got, graph.pagerank(links, params["iterations"], float(params["damping"])))
        remove_output(ctx, run_id, attempt)
