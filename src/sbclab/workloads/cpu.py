"""sysbench CPU on a node at each thread count: the 2026 seed's Table 4 (events/s at 1, 2, 4, 8 and
16 threads, --cpu-max-prime=2000), Lee, Oh & Park 2021 Table 10, Baun 2016 Table 3."""

from typing import Any

from ..cluster import tools
from ..results.schema import Check
from .base import Attempt, NodeBenchmark, RunContext, timed

THREADS = (1, 2, 4, 8, 16)


class SysbenchCpu(NodeBenchmark):
    name = "sysbench-cpu"
    description = "sysbench CPU events per second on a node, by threads"
    programs = ("sysbench",)

    def defaults(self) -> dict[str, Any]:
        return {**super().defaults(), "threads": list(THREADS), "max_prime": 2000, "seconds": 10}

    def node(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        node = ctx.spec.node(params["node"])
        run = tools.on_node(ctx.transport, node)

        def body():
            figures = {str(t): round(tools.sysbench_cpu(run, params["max_prime"], t, params["seconds"]), 2)
                       for t in params["threads"]}
            return {"events_per_s": figures}, [Check(name="events counted", passed=all(v > 0 for v in figures.values()),
                                                     detail=", ".join(f"{t} threads: {v}" for t, v in figures.items()))]
        return timed(ctx, run_id, self.name, node, ["sysbench", "cpu", f"--cpu-max-prime={params['max_prime']}",
                                                    "--threads=N", f"--time={params['seconds']}", "run"], body)
