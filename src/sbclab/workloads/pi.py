"""Pi by Monte Carlo: Hadoop's QuasiMonteCarlo example and sbclab's Spark job of the same shape.

Defaults are the seeds': 100 maps (slices) × 10,000 samples. A run is valid when its estimate lies
within six standard errors of pi for that many uniform samples, σ = 4·sqrt(p(1−p)/n) with p = π/4
(the quasi-random Hadoop estimate is tighter than that, so the bound holds for both).
"""

import json
import math
import re

from ..results.schema import Check, RunRecord
from ..stack import clients
from .base import RunContext, new_id

DEFAULT_MAPS = 100
DEFAULT_SAMPLES = 10_000
_SPARK_RESULT = re.compile(r"SBCLAB_RESULT (\{.*\})")
_HADOOP_RESULT = re.compile(r"Estimated value of Pi is ([0-9.]+)")


def _estimate_check(estimate: float | None, samples: int) -> Check:
    if estimate is None:
        return Check(name="estimate reported", passed=False, detail="the job printed no estimate")
    p = math.pi / 4
    bound = 6 * 4 * math.sqrt(p * (1 - p) / samples)
    return Check(name="estimate within 6 standard errors", passed=abs(estimate - math.pi) <= bound,
                 detail=f"|{estimate:.8f} - pi| = {abs(estimate - math.pi):.2e}, bound {bound:.2e}")


def spark_pi(ctx: RunContext, slices: int = DEFAULT_MAPS, samples_per_slice: int = DEFAULT_SAMPLES,
             repetition: int = 1) -> RunRecord:
    run_id = new_id("spark", "pi")
    log = ctx.job_log(run_id, "spark-pi")
    ctx.progress(f"Spark Pi on YARN: {slices} slices x {samples_per_slice:,} samples")
    outcome = clients.spark_submit(ctx.stack, "org.sbclab.jobs.SparkPi", ctx.stack.dist.jobs_jar,
                                   [str(slices), str(samples_per_slice)], log, "spark pi")
    match = _SPARK_RESULT.search(outcome.output)
    result = json.loads(match.group(1)) if match else {}
    samples = slices * samples_per_slice
    checks = [_estimate_check(result.get("estimate"), samples)]
    if match:
        checks.append(Check(name="samples counted", passed=result["samples"] == samples,
                            detail=f"{result['samples']} of {samples}"))
    events_dir = ctx.stack.layout(ctx.cluster.spec.master).spark_events
    counters, extra_logs = {}, {}
    for app in outcome.job_ids:
        event_log = events_dir / app
        if event_log.exists():
            from ..stack.counters import spark_event_metrics
            counters = spark_event_metrics(event_log)
            extra_logs[f"spark-events/{app}"] = event_log
    return ctx.store_run(run_id=run_id, workload="pi", engine="spark", repetition=repetition,
                         parameters={"maps": slices, "samples_per_map": samples_per_slice, "samples": samples},
                         outcome=outcome, checks=checks, result=result, counters=counters, extra_logs=extra_logs)


def hadoop_pi(ctx: RunContext, maps: int = DEFAULT_MAPS, samples_per_map: int = DEFAULT_SAMPLES,
              repetition: int = 1) -> RunRecord:
    run_id = new_id("hadoop", "pi")
    log = ctx.job_log(run_id, "hadoop-pi")
    ctx.progress(f"Hadoop Pi: {maps} maps x {samples_per_map:,} samples")
    outcome = clients.hadoop_jar(ctx.stack, ctx.stack.dist.examples_jar, ["pi", str(maps), str(samples_per_map)],
                                 log, "hadoop pi")
    match = _HADOOP_RESULT.search(outcome.output)
    estimate = float(match.group(1)) if match else None
    samples = maps * samples_per_map
    return ctx.store_run(run_id=run_id, workload="pi", engine="hadoop", repetition=repetition,
                         parameters={"maps": maps, "samples_per_map": samples_per_map, "samples": samples},
                         outcome=outcome, checks=[_estimate_check(estimate, samples)],
                         result={"estimate": estimate, "samples": samples} if estimate else {})
