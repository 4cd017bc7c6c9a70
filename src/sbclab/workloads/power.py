"""A node idle, then under stress-ng on every core, for the same time (the seeds used an hour): two
runs whose measurements hold the energy, average watts (with their source) and temperatures. The
seeds' Table 3 (2026), Table 10 (2021), Baun's Table 6."""

import time
from typing import Any

from .. import profiles
from ..results.schema import Check
from .base import Attempt, NodeBenchmark, RunContext, timed


class Idle(NodeBenchmark):
    name = "idle"
    description = "a node with nothing running, for the power drawn at rest"

    def defaults(self) -> dict[str, Any]:
        return {**super().defaults(), "seconds": 60}

    def node(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        seconds = params["seconds"]

        def body():
            time.sleep(seconds)
            return {"seconds": seconds}, [Check(name="idle for the duration", passed=True, detail=f"{seconds} s")]
        return timed(ctx, run_id, self.name, ctx.spec.node(params["node"]), ["sleep", str(seconds)], body)


class Stress(NodeBenchmark):
    name = "stress"
    description = "stress-ng on every core of a node, for the power drawn under full load"
    programs = ("stress-ng",)

    def defaults(self) -> dict[str, Any]:
        return {**super().defaults(), "seconds": 60}

    def node(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        node, seconds = ctx.spec.node(params["node"]), params["seconds"]
        cores = profiles.board(node.board).cores
        argv = ["stress-ng", "--cpu", str(cores), "--timeout", f"{seconds}s", "--metrics-brief"]

        def body():
            done = ctx.transport.capture(node, argv, timeout_s=seconds + 120)
            return ({"seconds": seconds, "workers": cores},
                    [Check(name="stress-ng finished", passed=done.status == 0,
                           detail=done.stderr.decode(errors="replace")[-300:])])
        attempt = timed(ctx, run_id, self.name, node, argv[:-1], body)
        attempt.parameters["cpu_workers"] = cores
        return attempt
