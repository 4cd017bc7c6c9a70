"""k-means on points drawn around known centres: MLlib's on Spark (sbclab's KMeans job) and Lloyd's
iterations as MapReduce (KMeansMR, a job an iteration), each checked by the centres it finds
against the ones the points came from.

The size asked for is the points' text (data/blobs.py, about 9 bytes a coordinate); the points are
made here from their seed, once, and put into HDFS once per cluster. The check is a property of the
answer: every true centre has a found one within four standard errors of a group's mean (the noise
times the square root of the dimensions over the points a group has); the centres are at least ten
noises apart, so a wrong answer — two centres in one group — misses by far more than that.
"""

from typing import Any

import numpy as np

from .. import paths
from ..data import blobs
from ..errors import SbclabError
from ..results.schema import Check
from ..stack import clients
from . import inputs
from .base import Attempt, RunContext, Workload, exited, remove_output, spark_job



def tolerance(points: int, k: int, dimensions: int) -> float:
    """How far a group's mean may lie from its centre: four of its standard errors."""
    return 4 * blobs.NOISE * (dimensions * k / points) ** 0.5


def points_in_hdfs(ctx: RunContext, params: dict[str, Any], reuse: bool = True) -> dict[str, Any]:
    points, k, dimensions, seed = params["points"], params["k"], params["dimensions"], params["seed"]
    name = f"{points}-k{k}-d{dimensions}-s{seed}"
    text = blobs.write_text(paths.cache_dir() / "blobs" / f"{name}.txt", points, k, dimensions, seed)
    return inputs.local_file(ctx, f"blobs/{points}/k{k}/d{dimensions}/s{seed}", text, f"/sbclab/blobs/{name}",
                             f"{points:,} points around {k} centres",
                             {"points": points, "k": k, "dimensions": dimensions, "seed": seed}, reuse)


def checks(found: np.ndarray, points: int, k: int, dimensions: int, seed: int) -> list[Check]:
    true = blobs.centres(k, dimensions, seed)
    distances = blobs.recovered(found, true) if found.size else [float("inf")] * k
    worst, allowed = max(distances), tolerance(points, k, dimensions)
    return [Check(name="k centres found", passed=len(found) == k, detail=f"{len(found)} of {k}"),
            Check(name="every true centre recovered", passed=worst <= allowed,
                  detail=f"farthest {worst:.4f} from its true centre (at most {allowed:.4f})")]


class KMeans(Workload):
    name = "kmeans"
    description = "k-means on points around known centres (MLlib on Spark, Lloyd's iterations on MapReduce)"
    footprint_per_input_byte = 0.1  # the centres are the output; each iteration's shuffle is k sums a map

    def defaults(self) -> dict[str, Any]:
        return {"k": 4, "dimensions": 3, "iterations": 20, "seed": 0}

    def parameters(self, size_bytes: int | None, given: dict[str, Any] | None = None) -> dict[str, Any]:
        params = super().parameters(size_bytes, given)
        if size_bytes:
            params["points"] = blobs.points_for(size_bytes, int(params.get("dimensions") or 3))
        return params

    def check_parameters(self, params: dict[str, Any]) -> None:
        for name, low, high in (("k", 2, 50), ("dimensions", 1, 100), ("iterations", 1, 1000)):
            value = params.get(name)
            if not (isinstance(value, int) and low <= value <= high):
                raise SbclabError(f"k-means' {name} must be a whole number from {low} to {high}.",
                                  f"e.g. {name}: {self.defaults()[name]}.")
        try:
            blobs.centres(params["k"], params["dimensions"], params.get("seed", 0))
        except ValueError as err:
            raise SbclabError(f"k-means: {err}.", "Give fewer centres or more dimensions.") from err

    def prepare(self, ctx: RunContext, engine: str, params: dict[str, Any]) -> dict[str, Any]:
        return points_in_hdfs(ctx, params, reuse=params.get("reuse_input", True))

    def hadoop(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        args = ["org.sbclab.jobs.KMeansMR", data["path"], output, str(params["k"]), str(params["iterations"]),
                repr(tolerance(params["points"], params["k"], params["dimensions"]) / 100)]
        outcome = clients.hadoop_jar(ctx.stack, ctx.stack.dist.jobs_jar, args, ctx.job_log(run_id, "hadoop-kmeans"),
                                     "hadoop kmeans")
        return Attempt(outcome, [exited(outcome, "jobs")], {"jobs": len(outcome.job_ids)}, output=output)

    def spark(self, ctx, run_id, params, data) -> Attempt:
        version = ctx.stack.dist.stack.spark
        if not any((paths.cache_dir() / f"spark-{version}" / "jars").glob("spark-mllib_*.jar")):
            # Distributions assembled before MLlib was part of them (the Spark 4.2 one).
            raise SbclabError(f"The cached Spark {version} has no MLlib.",
                              f"Run 'sbclab stack fetch --refresh --stack {ctx.stack.dist.stack.name}'.")
        output = f"/sbclab/out/{run_id}"
        outcome, result, counters, logs = spark_job(ctx, run_id, "spark kmeans", "KMeans",
                                                    [data["path"], output, str(params["k"]),
                                                     str(params["iterations"]), str(params["seed"])])
        return Attempt(outcome, [exited(outcome, "job")], result, counters, logs, output=output)

    def validate(self, ctx, engine, run_id, params, data, attempt) -> None:
        if attempt.finished:
            log = ctx.job_log(run_id, "validate")
            # MapReduce's driver writes one file; Spark saves a folder of parts.
            saved = f"{attempt.output}/centres" + ("/part-*" if engine == "spark" else "")
            text = clients.fs_through(ctx.stack, ["-cat", saved], "cat", log)
            found = np.array([[float(x) for x in line.split(",")] for line in text.splitlines() if line.strip()])
            attempt.result["centres"] = found.round(4).tolist()
            attempt.checks += checks(found, params["points"], params["k"], params["dimensions"], params["seed"])
        remove_output(ctx, run_id, attempt)
