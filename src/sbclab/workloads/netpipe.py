"""NetPIPE between two nodes, over plain TCP (NPtcp) and over MPI (NPmpi): latency and throughput
by message size, the two curves Baun compares (2016, Fig. 3). Debian's netpipe-tcp and
netpipe-openmpi provide the programs."""

import subprocess
import time

from ..cluster.spec import NodeSpec
from ..results.schema import Check, RunRecord
from . import mpi
from .base import RunContext, exited
from .nodebench import measured_run

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


def tcp(ctx: RunContext, sender: NodeSpec, receiver: NodeSpec, upper: int = DEFAULT_UPPER, repetition: int = 1,
        perturbation: int = DEFAULT_PERTURBATION) -> RunRecord:
    """NPtcp from sender to a receiver on the other node; sizes as over_mpi (both ends must agree)."""
    sizes = ["-u", str(upper), "-p", str(perturbation)]
    backend = ctx.cluster.backend
    s_prefix, s_pre = backend.on_node(sender, [])
    # NPtcp writes its curve on the sender; each end works in its node's own folder (on the board
    # itself for real boards), and the curve is fetched from there.
    remote = {node.name: backend.node_dir(node) / "netpipe" for node in (sender, receiver)}
    for node in (sender, receiver):
        backend.make_dirs(node, [remote[node.name]])
    out = remote[sender.name] / f"tcp-{sender.name}-{receiver.name}.out"
    here = ctx.cluster.state.root / "netpipe"

    def body():
        backend.remove(sender, out)
        with backend.serving(receiver, ["NPtcp", *sizes], {"PATH": "/usr/bin:/bin"},
                             here / f"tcp-{receiver.name}-receiver.log", "NPtcp receiver", cwd=remote[receiver.name]):
            time.sleep(0.5)  # NPtcp has no readiness signal; the client retries its connect briefly too
            client = subprocess.run([*s_prefix, "NPtcp", "-h", receiver.address, *sizes, "-o", str(out)],
                                    capture_output=True, text=True, preexec_fn=s_pre, timeout=1800)
        curve = backend.fetch(sender, out, here / out.name)
        points = parse(curve.read_text()) if curve is not None else []
        checks = [Check(name="NPtcp finished", passed=client.returncode == 0, detail=(client.stderr or "")[-300:]),
                  Check(name="message sizes measured", passed=len(points) > 10, detail=f"{len(points)} sizes")]
        return summary(points), checks
    return measured_run(ctx, "netpipe", sender, {"transport": "tcp", "peer": receiver.name, "upper_bytes": upper,
                                                "perturbation": perturbation}, body,
                        ["NPtcp", "-h", receiver.address, *sizes], repetition)


def over_mpi(ctx: RunContext, a: NodeSpec, b: NodeSpec, upper: int = DEFAULT_UPPER, repetition: int = 1,
             perturbation: int = DEFAULT_PERTURBATION) -> RunRecord:
    """NPopenmpi with one rank on each node, launched like HPL. NetPIPE measures each power of two and
    `perturbation` bytes either side of it (its -p); 0 measures the powers of two alone."""
    from .base import new_id
    run_id = new_id("mpi", "netpipe")
    log = ctx.job_log(run_id, "netpipe")
    mpi.preflight(ctx, [a, b], "NPopenmpi", "Debian's netpipe-openmpi", log)
    folder = mpi.Folder(ctx, [a, b], run_id, {})
    try:
        with ctx.recording(run_id) as recorded:
            outcome, period = mpi.mpirun(ctx, [a, b], 1, ["NPopenmpi", "-u", str(upper), "-p", str(perturbation),
                                                          "-o", str(folder.path / "np.out")],
                                         folder.path, log, "netpipe mpi", timeout_s=1800)
    finally:
        curve = folder.collect("np.out")["np.out"]
    points = parse(curve.read_text()) if curve.exists() else []
    checks = [exited(outcome, "mpirun NPopenmpi"),
              Check(name="message sizes measured", passed=len(points) > 10, detail=f"{len(points)} sizes")]
    return ctx.store_run(run_id=run_id, workload="netpipe", engine="mpi", repetition=repetition,
                         parameters={"transport": "mpi", "node": a.name, "peer": b.name, "upper_bytes": upper,
                                     "perturbation": perturbation,
                                     "cpu_period_us": period},
                         outcome=outcome, checks=checks, result=summary(points),
                         extra_logs={"np.out": curve}, recording=recorded.raw)


# What the nodes need, with the Debian packages that bring it (mpirun on this host: mpi.LAUNCHER).
PROGRAMS = {"NPtcp": "netpipe-tcp", "NPopenmpi": "netpipe-openmpi", **mpi.ON_NODES}
