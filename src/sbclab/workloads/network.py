"""iperf3 between a worker and the master, both directions: the seeds' Tables 5 and 9."""

from typing import Any

from ..cluster import tools
from ..results.schema import Check
from .base import Attempt, NodeBenchmark, RunContext, timed


class Iperf(NodeBenchmark):
    name = "iperf"
    description = "iperf3 TCP throughput between a worker and the master, both ways"
    programs = ("iperf3",)
    roles = ("worker",)

    def defaults(self) -> dict[str, Any]:
        return {**super().defaults(), "seconds": 10}

    def expand(self, params, nodes):
        return [{**p, "peer": "master"} for p in super().expand(params, nodes)]

    def node(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        transport, seconds = ctx.transport, params["seconds"]
        worker, master = ctx.spec.node(params["node"]), ctx.spec.master
        here = ctx.cluster.state.root / "iperf"

        def serving(node):
            return lambda argv: tools.ServingOnNode(transport, node, argv, here / f"server-{node.name}.log", "iperf3 -s")

        def body():
            to_master = tools.iperf3_mbps(serving(master), tools.on_node(transport, worker), master.address, seconds)
            from_master = tools.iperf3_mbps(serving(worker), tools.on_node(transport, master), worker.address, seconds)
            result = {"to_master_mbit_s": round(to_master, 1), "from_master_mbit_s": round(from_master, 1),
                      "link_mbit_s": round(worker.link_mbit_s, 1)}
            return result, [Check(name="both directions measured", passed=to_master > 0 and from_master > 0,
                                  detail=f"{to_master:.0f} / {from_master:.0f} Mbit/s")]
        return timed(ctx, run_id, self.name, worker, ["iperf3", "-c", master.address, "-t", str(seconds)], body)
