"""Logistic regression on two Gaussian classes either side of a known hyperplane: MLlib's (L-BFGS) on
Spark (sbclab's LogisticRegression job) and Newton's method as MapReduce (LogisticRegressionMR, a job
an iteration), each checked by the model it finds against the hyperplane the points came from.

The size asked for is the points' text (data/classes.py, about 9 bytes a coordinate and 2 a label);
the points are made here from their seed, once, and put into HDFS once per cluster. The checks are
properties of the answer. A fitted model's weights scatter about the true ones with a standard error
of 1/sqrt(n·v) in every coordinate (v: the log-likelihood's curvature a point, from the classes), so
its normal lies within an angle of four standard errors in each of the d coordinates of the true
normal (the weights are s long), and its hyperplane within four of the true one's place; the model's
accuracy on the classes — computed exactly, not on a sample — must be at least that of a hyperplane
off by both. A wrong answer (a direction 30° off, an intercept ignored, the labels swapped) misses
by far more.
"""

import math
from typing import Any

import numpy as np

from .. import paths
from ..data import classes
from ..errors import SbclabError
from ..results.schema import Check
from ..stack import clients
from . import inputs
from .base import Attempt, RunContext, Workload, exited, remove_output, spark_job

STANDARD_ERRORS = 4
# Beyond this the direction check could pass a model of little use: a random normal in 3 dimensions is
# within 30° of a given one 7 % of the time.
WIDEST_ANGLE = math.radians(30)


def standard_error(points: int, truth: classes.Classes) -> float:
    """A fitted weight's standard error, 1/sqrt(n·v): the inverse of the log-likelihood's curvature
    along a coordinate of unit variance (Fisher's information), over n points."""
    return 1 / math.sqrt(points * truth.curvature)


def allowed_angle(points: int, truth: classes.Classes) -> float:
    """How far (radians) the normal found may point from the true one: four standard errors in each
    coordinate, over the weights' length s."""
    return STANDARD_ERRORS * math.sqrt(truth.dimensions) * standard_error(points, truth) / truth.separation


def least_accuracy(points: int, truth: classes.Classes) -> float:
    """The accuracy on the classes of a hyperplane turned by the allowed angle θ and moved by four
    standard errors δ from the true one: each class's centre is cos θ·(s/2 ∓ δ) from it."""
    angle = min(allowed_angle(points, truth), math.pi / 2)
    moved = STANDARD_ERRORS * standard_error(points, truth) / truth.separation
    half, turned = truth.separation / 2, math.cos(angle)
    return (classes.normal_cdf(turned * (half - moved)) + classes.normal_cdf(turned * (half + moved))) / 2


def fewest_points(dimensions: int, separation: float) -> int:
    """The points that place the normal within WIDEST_ANGLE: n ≥ (4·sqrt(d)/(s·θ))² / v."""
    truth = classes.truth(dimensions, separation)
    return math.ceil((STANDARD_ERRORS * math.sqrt(dimensions) / (separation * WIDEST_ANGLE)) ** 2 / truth.curvature)


def points_in_hdfs(ctx: RunContext, params: dict[str, Any], reuse: bool = True) -> dict[str, Any]:
    points, dimensions, separation, seed = params["points"], params["dimensions"], params["separation"], params["seed"]
    name = f"{points}-d{dimensions}-s{separation:g}-seed{seed}"
    text = classes.write_text(paths.cache_dir() / "classes" / f"{name}.txt", points, dimensions, separation, seed)
    return inputs.local_file(ctx, f"classes/{points}/d{dimensions}/s{separation:g}/seed{seed}", text,
                             f"/sbclab/classes/{name}", f"{points:,} labelled points of two classes",
                             {"points": points, "dimensions": dimensions, "separation": separation, "seed": seed},
                             reuse)


def checks(model: np.ndarray, points: int, truth: classes.Classes) -> list[Check]:
    """model: the intercept, then the weights."""
    complete = model.shape == (truth.dimensions + 1,) and bool(np.isfinite(model).all())
    checked = [Check(name="a weight a dimension and an intercept", passed=complete,
                     detail=f"{model.size} finite of {truth.dimensions + 1}" if complete else
                     f"{model.size} numbers ({int(np.isfinite(model).sum())} finite) for {truth.dimensions + 1}")]
    if not complete:
        return checked + [Check(name="normal near the true one", passed=False, detail="no model"),
                          Check(name="accuracy near the Bayes accuracy", passed=False, detail="no model")]
    intercept, weights = float(model[0]), model[1:]
    angle, allowed = math.acos(max(-1.0, min(1.0, classes.cosine(weights, truth)))), allowed_angle(points, truth)
    accuracy, least = classes.accuracy(weights, intercept, truth), least_accuracy(points, truth)
    return checked + [
        Check(name="normal near the true one", passed=angle <= allowed,
              detail=f"{math.degrees(angle):.3f}° from it (at most {math.degrees(allowed):.3f}°)"),
        Check(name="accuracy near the Bayes accuracy", passed=accuracy >= least,
              detail=f"{accuracy:.5f} on the classes (Bayes {truth.bayes_accuracy:.5f}, at least {least:.5f})")]


def figures(model: np.ndarray, points: int, truth: classes.Classes, seed: int) -> dict[str, Any]:
    """What a run keeps of the model beside its checks, and of the truth to read it by."""
    kept: dict[str, Any] = {"true_intercept": round(truth.intercept, 6),
                            "true_weights": truth.weights.round(6).tolist(),
                            "bayes_accuracy": round(truth.bayes_accuracy, 6)}
    if model.shape == (truth.dimensions + 1,) and np.isfinite(model).all():
        intercept, weights = float(model[0]), model[1:]
        loss, right = classes.on_points(weights, intercept, truth, points, seed)
        kept.update(intercept=round(intercept, 6), weights=weights.round(6).tolist(),
                    cosine=round(classes.cosine(weights, truth), 8),
                    accuracy=round(classes.accuracy(weights, intercept, truth), 6),
                    loss=round(loss, 6), training_accuracy=round(right, 6))
    return kept


def without_mllib(ctx: RunContext) -> SbclabError | None:
    version = ctx.stack.dist.stack.spark
    if any((paths.cache_dir() / f"spark-{version}" / "jars").glob("spark-mllib_*.jar")):
        return None
    # Distributions assembled before MLlib was part of them (the Spark 4.2 one).
    return SbclabError(f"The cached Spark {version} has no MLlib.",
                       f"Run 'sbclab stack fetch --refresh --stack {ctx.stack.dist.stack.name}'.")


class LogisticRegression(Workload):
    name = "logreg"
    description = ("logistic regression on two Gaussian classes about a known hyperplane "
                   "(MLlib on Spark, Newton's method on MapReduce)")
    footprint_per_input_byte = 0.1  # the model is the output; each iteration's shuffle is one sum a map

    def defaults(self) -> dict[str, Any]:
        return {"dimensions": 4, "separation": 3.0, "iterations": 20, "seed": 0}

    def parameters(self, size_bytes: int | None, given: dict[str, Any] | None = None) -> dict[str, Any]:
        params = super().parameters(size_bytes, given)
        if size_bytes:
            params["points"] = classes.points_for(size_bytes, int(params.get("dimensions") or 4))
        return params

    def check_parameters(self, params: dict[str, Any]) -> None:
        for name, low, high in (("dimensions", 1, 100), ("iterations", 1, 1000)):
            value = params.get(name)
            if not (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
                raise SbclabError(f"Logistic regression's {name} must be a whole number from {low} to {high}.",
                                  f"e.g. {name}: {self.defaults()[name]}.")
        separation = params.get("separation")
        if not (isinstance(separation, (int, float)) and not isinstance(separation, bool) and 1 <= separation <= 4):
            raise SbclabError("Logistic regression's separation (the classes' centres apart, in noise's standard "
                              "deviations) must be from 1 to 4.",
                              "e.g. separation: 3.0 (closer classes overlap too much to place a hyperplane; "
                              "farther ones can separate, and then no best model exists).")
        if not isinstance(params.get("seed", 0), int):
            raise SbclabError("Logistic regression's seed must be a whole number.", "e.g. seed: 0.")
        if params.get("points"):
            needed = fewest_points(params["dimensions"], float(separation))
            if params["points"] < needed:
                bytes_needed = needed * (classes.BYTES_PER_COORDINATE * params["dimensions"] + classes.BYTES_PER_LABEL)
                # The size is in the message: an experiment file's refusal shows the message alone.
                raise SbclabError(
                    f"Logistic regression: {params['points']:,} points cannot place a hyperplane in "
                    f"{params['dimensions']} dimensions to within {math.degrees(WIDEST_ANGLE):.0f}°; that takes "
                    f"{needed:,} points, a size of at least {bytes_needed:,} bytes.",
                    "Give that size, fewer dimensions or a wider separation.")

    def prepare(self, ctx: RunContext, engine: str, params: dict[str, Any]) -> dict[str, Any]:
        return points_in_hdfs(ctx, params, reuse=params.get("reuse_input", True))

    def hadoop(self, ctx, run_id, params, data) -> Attempt:
        output = f"/sbclab/out/{run_id}"
        truth = classes.truth(params["dimensions"], params["separation"], params["seed"])
        # A step a hundredth of the weights' standard error changes nothing the checks can see.
        args = ["org.sbclab.jobs.LogisticRegressionMR", data["path"], output, str(params["iterations"]),
                repr(standard_error(params["points"], truth) / 100)]
        outcome = clients.hadoop_jar(ctx.stack, ctx.stack.dist.jobs_jar, args, ctx.job_log(run_id, "hadoop-logreg"),
                                     "hadoop logreg")
        return Attempt(outcome, [exited(outcome, "jobs")], {"jobs": len(outcome.job_ids)}, output=output)

    def spark(self, ctx, run_id, params, data) -> Attempt:
        if (missing := without_mllib(ctx)) is not None:
            raise missing
        output = f"/sbclab/out/{run_id}"
        outcome, result, counters, logs = spark_job(ctx, run_id, "spark logreg", "LogisticRegression",
                                                    [data["path"], output, str(params["iterations"])])
        return Attempt(outcome, [exited(outcome, "job")], result, counters, logs, output=output)

    def validate(self, ctx, engine, run_id, params, data, attempt) -> None:
        if attempt.finished:
            log = ctx.job_log(run_id, "validate")
            # MapReduce's driver writes one file; Spark saves a folder of parts.
            saved = f"{attempt.output}/model" + ("/part-*" if engine == "spark" else "")
            text = clients.fs_through(ctx.stack, ["-cat", saved], "cat", log)
            lines = [line for line in text.splitlines() if line.strip()]
            model = np.array([float(x) for x in lines[0].split(",")]) if len(lines) == 1 else np.array([])
            truth = classes.truth(params["dimensions"], params["separation"], params["seed"])
            attempt.result.update(figures(model, params["points"], truth, params["seed"]))
            attempt.checks += checks(model, params["points"], truth)
        remove_output(ctx, run_id, attempt)
