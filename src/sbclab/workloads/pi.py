"""Pi by Monte Carlo: Hadoop's QuasiMonteCarlo example and sbclab's Spark job of the same shape.

Defaults are the seeds' Hadoop Pi: 100 maps × 10,000 samples (their Spark Pi was the stock
SparkPi's 10,000 slices of 100,000 samples, which the reproductions of those tables run). A run is
valid when its estimate lies within six standard errors of pi for that many uniform samples,
σ = 4·sqrt(p(1−p)/n) with p = π/4 (the quasi-random Hadoop estimate is tighter than that, so the
bound holds for both).
"""

import math
import re
from typing import Any

from ..errors import SbclabError
from ..results.schema import Check
from .base import Attempt, Workload, equal, hadoop_example, spark_job

DEFAULT_MAPS = 100
DEFAULT_SAMPLES = 10_000
# The most an experiment or `sbclab run` may ask for: the seeds' SparkPi had 10,000 slices of 100,000.
MOST_MAPS = 10_000
MOST_SAMPLES_PER_MAP = 10**9
_HADOOP_RESULT = re.compile(r"Estimated value of Pi is ([0-9.]+)")


def _estimate_check(estimate: float | None, samples: int) -> Check:
    if estimate is None:
        return Check(name="estimate reported", passed=False, detail="the job printed no estimate")
    p = math.pi / 4
    bound = 6 * 4 * math.sqrt(p * (1 - p) / samples)
    return Check(name="estimate within 6 standard errors", passed=abs(estimate - math.pi) <= bound,
                 detail=f"|{estimate:.8f} - pi| = {abs(estimate - math.pi):.2e}, bound {bound:.2e}")


class Pi(Workload):
    name = "pi"
    description = "estimate pi from maps x samples random points"
    sized = False
    footprint_per_input_byte = 0.0

    def defaults(self) -> dict[str, Any]:
        return {"maps": DEFAULT_MAPS, "samples_per_map": DEFAULT_SAMPLES}

    def check_parameters(self, params: dict[str, Any]) -> None:
        for name, most in (("maps", MOST_MAPS), ("samples_per_map", MOST_SAMPLES_PER_MAP)):
            value = params.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
                raise SbclabError(f"Pi's {name} {value!r} is not a count of 1 to {most:,}.",
                                  f"Give {name} a whole number in that range, e.g. {self.defaults()[name]}.")

    def hadoop(self, ctx, run_id, params, data) -> Attempt:
        maps, per_map = params["maps"], params["samples_per_map"]
        outcome = hadoop_example(ctx, run_id, "hadoop pi", ["pi", str(maps), str(per_map)])
        match = _HADOOP_RESULT.search(outcome.output)
        estimate = float(match.group(1)) if match else None
        samples = maps * per_map
        return Attempt(outcome, [_estimate_check(estimate, samples)],
                       {"estimate": estimate, "samples": samples} if estimate else {}, parameters={"samples": samples})

    def spark(self, ctx, run_id, params, data) -> Attempt:
        maps, per_map = params["maps"], params["samples_per_map"]
        outcome, result, counters, logs = spark_job(ctx, run_id, "spark pi", "SparkPi", [str(maps), str(per_map)])
        samples = maps * per_map
        checks = [_estimate_check(result.get("estimate"), samples)]
        if result:
            checks.append(equal("samples counted", result.get("samples"), samples))
        return Attempt(outcome, checks, result, counters, logs, parameters={"samples": samples})
