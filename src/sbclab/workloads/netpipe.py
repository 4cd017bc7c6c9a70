"""NetPIPE between two nodes, over plain TCP (NPtcp, engine 'node') and over MPI (NPopenmpi, engine
'mpi'): latency and throughput by message size, the two curves Baun compares (2016, Fig. 3).
Debian's netpipe-tcp and netpipe-openmpi provide the programs."""

import time
from typing import Any

from ..cluster import tools
from ..results.schema import Check
from . import mpi
from .base import Attempt, RunContext, Workload, exited, timed

DEFAULT_UPPER = 8 * 2**20  # the largest message, bytes
DEFAULT_PERTURBATION = 3  # NetPIPE's own default: sizes 3 bytes either side of each power of two


def parse(text: str) -> list[tuple[int, float, float]]:
    """np.out: one line per message size: bytes, Mbit/s, seconds one way."""
    points = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            try:
                points.append((int(fields[0]), float(fields[1]), float(fields[2])))
            except ValueError:
                continue
    return points


def summary(points: list[tuple[int, float, float]]) -> dict:
    if not points:
        return {}
    small = min(points, key=lambda p: p[0])
    peak = max(points, key=lambda p: p[1])
    return {"latency_us": round(small[2] * 1e6, 2), "peak_mbit_s": round(peak[1], 2), "peak_at_bytes": peak[0],
            "points": [[b, round(m, 3), round(s * 1e6, 3)] for b, m, s in points]}


def _sizes(params: dict[str, Any]) -> list[str]:
    """The message sizes and repeats, the same for both ends (they must agree)."""
    repeats = ["-n", str(params["repeats"])] if params.get("repeats") else []
    return ["-u", str(params["upper_bytes"]), "-p", str(params["perturbation"]), *repeats]


class NetPipe(Workload):
    """Between the first worker and the next one (the master on one worker); `upper` is the largest
    message, and NetPIPE measures each power of two and `perturbation` bytes either side of it
    (0: the powers of two alone). `repeats` fixes how many round trips each size takes (NetPIPE's
    -n); by default NetPIPE picks them from the last size's time, which on a throttled node can
    send one size thousands of times."""

    name = "netpipe"
    description = "NetPIPE latency and throughput by message size between two nodes, over TCP and over MPI"
    engines = ("node", "mpi")
    sized = False
    needs_stack = False
    programs = ("NPtcp", "NPopenmpi", mpi.DAEMON)
    host_programs = (mpi.LAUNCHER,)
    footprint_per_input_byte = 0.0

    def defaults(self) -> dict[str, Any]:
        return {"node": "all", "peer": None, "upper_bytes": DEFAULT_UPPER, "perturbation": DEFAULT_PERTURBATION,
                "repeats": None}

    def expand(self, params, nodes):
        workers = [name for name, role in nodes if role == "worker"]
        node = workers[0] if params.get("node", "all") == "all" else params["node"]
        peer = params.get("peer") or next((w for w in workers if w != node), "master")
        return [{**params, "node": node, "peer": peer}]

    def node(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        """NPtcp from the node to a receiver on its peer; NPtcp writes its curve on the sender."""
        transport = ctx.transport
        sender, receiver = ctx.spec.node(params["node"]), ctx.spec.node(params["peer"])
        sizes = _sizes(params)
        # Each end works in its node's own folder (on the board itself for real boards).
        remote = {node.name: transport.node_dir(node) / "netpipe" for node in (sender, receiver)}
        for node in (sender, receiver):
            transport.make_dirs(node, [remote[node.name]])
        out = remote[sender.name] / f"tcp-{sender.name}-{receiver.name}.out"
        here = ctx.cluster.state.root / "netpipe"

        def body():
            transport.remove(sender, out)
            with tools.ServingOnNode(transport, receiver, ["NPtcp", *sizes], here / f"tcp-{receiver.name}-receiver.log",
                                     "NPtcp receiver", cwd=remote[receiver.name], env={"PATH": "/usr/bin:/bin"}):
                time.sleep(0.5)  # NPtcp has no readiness signal; the client retries its connect briefly too
                client = transport.capture(sender, ["NPtcp", "-h", receiver.address, *sizes, "-o", str(out)],
                                           timeout_s=1800)
            curve = transport.get(sender, out, here / out.name)
            points = parse(curve.read_text()) if curve is not None else []
            checks = [Check(name="NPtcp finished", passed=client.status == 0,
                            detail=client.stderr.decode(errors="replace")[-300:]),
                      Check(name="message sizes measured", passed=len(points) > 10, detail=f"{len(points)} sizes")]
            return summary(points), checks
        attempt = timed(ctx, run_id, self.name, sender, ["NPtcp", "-h", receiver.address, *sizes], body)
        attempt.parameters["transport"] = "tcp"
        return attempt

    def prepare(self, ctx: RunContext, engine: str, params: dict[str, Any]) -> dict[str, Any]:
        if engine == "mpi":
            nodes = [ctx.spec.node(params["node"]), ctx.spec.node(params["peer"])]
            mpi.preflight(ctx, nodes, "NPopenmpi", "Debian's netpipe-openmpi", ctx.job_log("mpi-preflight", "netpipe"))
        return {}

    def mpi(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        """NPopenmpi with one rank on each node, launched like HPL."""
        a, b = ctx.spec.node(params["node"]), ctx.spec.node(params["peer"])
        log = ctx.job_log(run_id, "netpipe")
        folder = mpi.Folder(ctx, [a, b], run_id, {})
        try:
            outcome, period = mpi.mpirun(ctx, [a, b], 1, ["NPopenmpi", *_sizes(params), "-o", str(folder.path / "np.out")],
                                         folder.path, log, "netpipe mpi", timeout_s=1800)
        finally:
            curve = folder.collect("np.out")["np.out"]
        points = parse(curve.read_text()) if curve.exists() else []
        checks = [exited(outcome, "mpirun NPopenmpi"),
                  Check(name="message sizes measured", passed=len(points) > 10, detail=f"{len(points)} sizes")]
        return Attempt(outcome, checks, summary(points), extra_logs={"np.out": curve},
                       parameters={"transport": "mpi", "cpu_period_us": period})
