"""High Performance Linpack across the cluster, as Baun ran it: HPL from the HPC Challenge suite
(Debian's hpcc) under OpenMPI, one rank per core of each worker.

The input follows Baun (2016):
- Eq. 2: N = sqrt(M · 2^30 · nodes / 8) · R, M the memory of one node in GiB, R the share of it the
  matrix may fill (0.8 by default), N rounded down to a multiple of NB;
- P × Q the near-square grid of all ranks with Q ≥ P;
- Rpeak = clock × cores × double-precision operations per cycle (from the board profile, stated);
  efficiency = Rmax / Rpeak; Green500 metric = Rmax / average W.
A run whose residual check does not pass is invalid, whatever its Gflops.
"""

import math
import re
from dataclasses import dataclass
from typing import Any

from .. import profiles
from ..errors import SbclabError
from . import inputs, mpi
from .base import Attempt, RunContext, Workload, equal, exited

DEFAULT_MEMORY_FRACTION = 0.8
DEFAULT_NB = 32  # what Baun settled on for the Pi; `--nb sweep` tries BAUN_NB_SWEEP on a small N
BAUN_NB_SWEEP = (16, 32, 64, 128, 256)


def problem_size(memory_gib_per_node: float, nodes: int, fraction: float = DEFAULT_MEMORY_FRACTION,
                 nb: int = DEFAULT_NB) -> int:
    """Baun's Eq. 2, rounded down to a multiple of NB."""
    if not 0 < fraction <= 1:
        raise SbclabError(f"A memory fraction of {fraction} is not a share of memory.", "Give R between 0 and 1, e.g. 0.8.")
    if memory_gib_per_node <= 0 or nodes < 1 or nb < 1:
        raise SbclabError("HPL needs at least one node with memory and a positive block size NB.",
                          "Check the node count, the nodes' memory and --nb.")
    n = math.sqrt(memory_gib_per_node * 2**30 * nodes / 8) * fraction
    return int(n // nb) * nb


def grid(ranks: int) -> tuple[int, int]:
    """P × Q = ranks, as square as it gets, Q ≥ P."""
    p = max(d for d in range(1, int(math.isqrt(ranks)) + 1) if ranks % d == 0)
    return p, ranks // p


def matrix_bytes(n: int) -> int:
    return 8 * n * n


def check_fits(n: int, memory_bytes_per_node: int, nodes: int) -> None:
    """Refuse before starting a problem whose matrix alone does not fit in the nodes' memory."""
    need, have = matrix_bytes(n), memory_bytes_per_node * nodes
    if need > 0.95 * have:
        largest = problem_size(memory_bytes_per_node / 2**30, nodes, 0.9)
        raise SbclabError(
            f"HPL with N = {n:,} needs {need / 2**30:.1f} GiB for its matrix; the {nodes} node(s) have "
            f"{have / 2**30:.1f} GiB together.",
            f"Give a smaller N (at most about {largest:,}) or a smaller --memory-fraction.")


def input_file(n: int, nb: int, p: int, q: int) -> str:
    """hpccinf.txt: HPL.dat's format plus the PTRANS lines hpcc reads after it."""
    return f"""HPLinpack benchmark input file
sbclab: Baun (2016) Eq. 2 problem size
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
{n}          Ns
1            # of NBs
{nb}         NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
{p}          Ps
{q}          Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
"""


@dataclass(frozen=True)
class HplResult:
    n: int
    nb: int
    p: int
    q: int
    seconds: float
    gflops: float
    residual: float | None
    passed: bool


_ROW = re.compile(r"^W[RC]\S*\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.eE+-]+)\s+([\d.eE+-]+)\s*$", re.M)
_RESIDUAL = re.compile(r"^\|\|Ax-b\|\|_oo/\(eps.*?=\s*([\d.eE+-]+)\s*\.+\s*(PASSED|FAILED)", re.M)


def parse_output(text: str) -> HplResult:
    """The HPL section of hpccoutf.txt: the result row and its residual check."""
    section = text.split("Begin of HPL section", 1)[-1].split("End of HPL section", 1)[0] if "HPL section" in text else text
    row = _ROW.search(section)
    if not row:
        raise SbclabError("hpcc wrote no HPL result row.", "Read hpccoutf.txt in the run's logs: HPL did not finish.")
    residual = _RESIDUAL.search(section)
    n, nb, p, q = (int(row.group(i)) for i in range(1, 5))
    return HplResult(n, nb, p, q, float(row.group(5)), float(row.group(6)),
                     float(residual.group(1)) if residual else None,
                     bool(residual) and residual.group(2) == "PASSED")


def rpeak_gflops(clock_ghz: float, cores: int, flops_per_cycle: float, nodes: int) -> float:
    """Baun: Rpeak [Gflops] = clock [GHz] × cores × operations per cycle, for all nodes."""
    return clock_ghz * cores * flops_per_cycle * nodes


def _as_list(value) -> list:
    """A parameter given once or as a list (a sweep)."""
    return value if isinstance(value, list) else [value]


class Hpl(Workload):
    """HPL on the first `nodes` workers, one rank per core (engine 'mpi'). `nb: sweep` first tries
    each block size of Baun's sweep on a quarter of the problem, each trial stored as a run, and
    keeps the fastest for this cluster."""

    name = "hpl"
    description = "High Performance Linpack (hpcc) with OpenMPI across the workers: Rmax, efficiency, Gflops/W"
    engines = ("mpi",)
    sized = False
    needs_stack = False
    programs = ("hpcc", mpi.DAEMON)
    host_programs = (mpi.LAUNCHER,)
    footprint_per_input_byte = 0.0

    def defaults(self) -> dict[str, Any]:
        return {"nodes": None, "n": None, "nb": DEFAULT_NB, "memory_fraction": DEFAULT_MEMORY_FRACTION,
                "ranks_per_node": None}

    def check_parameters(self, params: dict[str, Any]) -> None:
        nb = params.get("nb")
        if nb != "sweep" and not (isinstance(nb, int) and nb > 0):
            raise SbclabError(f"nb {nb!r} is not a block size.", "Give a positive integer such as 32, or 'sweep'.")
        given = params.get("memory_fraction")
        for fraction in _as_list(given) or [given]:  # an empty list is refused as no share at all
            if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
                raise SbclabError(f"A memory fraction of {fraction} is not a share of memory.",
                                  "Give R between 0 and 1, e.g. 0.8, or a list of them (Baun's 0.7 to 0.95).")

    def expand(self, params, nodes):
        """One run per worker count (the `nodes` asked for, else 1, 2, 4 ... up to every worker) and
        memory share (Baun's Table 7 sweeps both)."""
        workers = sum(1 for _, role in nodes if role == "worker")
        counts = params.get("nodes") or [c for c in (1, 2, 4, 8, 16, 32, 64) if c <= workers]
        counts = _as_list(counts)
        for count in counts:
            if not isinstance(count, int) or not 1 <= count <= workers:
                raise SbclabError(f"HPL on {count} node(s) asks for more workers than the cluster's {workers}.",
                                  f"Give counts between 1 and {workers}, or more workers.")
        return [{**params, "nodes": count, "memory_fraction": fraction}
                for fraction in _as_list(params["memory_fraction"]) for count in counts]

    def prepare(self, ctx: RunContext, engine: str, params: dict[str, Any]) -> dict[str, Any]:
        """The nodes reachable for MPI with hpcc on them, and the block size: given, or the sweep's best."""
        workers = ctx.spec.worker_nodes[:params["nodes"]]
        mpi.preflight(ctx, workers, "hpcc", "Debian's hpcc", ctx.job_log("mpi-preflight", "hpl"))
        if params["nb"] != "sweep":
            return {"nb": params["nb"]}
        key = f"hpl-nb/{params['memory_fraction']}/{params.get('n')}"
        known = inputs.known(ctx)
        if key in known:
            return {"nb": known[key]["nb"]}
        every = ctx.spec.worker_nodes
        trials = []
        for candidate in BAUN_NB_SWEEP:
            small = min(params.get("n") or 10**9, problem_size(min(w.memory_bytes for w in every) / 2**30, len(every),
                                                               params["memory_fraction"], candidate) // 4)
            small = max(candidate, small // candidate * candidate)
            ctx.progress(f"NB sweep: N = {small}, NB = {candidate}")
            trial = ctx.measure(self, engine, {**params, "nodes": len(every), "n": small, "nb": candidate})
            if trial.valid:
                trials.append((trial.result["rmax_gflops"], candidate))
        if not trials:
            raise SbclabError("No NB of the sweep gave a valid HPL run.", f"Read the hpcc logs under {ctx.results}/logs.")
        best = max(trials)[1]
        ctx.progress(f"NB = {best} gave the most Gflops")
        inputs.remember(ctx, key, {"nb": best, "trials": [[nb, g] for g, nb in trials]})
        return {"nb": best}

    def mpi(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        workers = ctx.spec.worker_nodes[:params["nodes"]]
        nb = data.get("nb", params["nb"])
        fraction = params["memory_fraction"]
        board = profiles.board(workers[0].board)
        ranks_per_node = params.get("ranks_per_node") or board.cores
        memory = min(w.memory_bytes for w in workers)
        n = params.get("n") or problem_size(memory / 2**30, len(workers), fraction, nb)
        if n < nb:
            raise SbclabError(f"N = {n} is smaller than the block size NB = {nb}.", "Give a larger N or a smaller --nb.")
        check_fits(n, memory, len(workers))
        p, q = grid(ranks_per_node * len(workers))
        log = ctx.job_log(run_id, "hpl")
        folder = mpi.Folder(ctx, workers, run_id, {"hpccinf.txt": input_file(n, nb, p, q)})
        try:
            outcome, period = mpi.mpirun(ctx, workers, ranks_per_node, ["hpcc"], folder.path, log, "hpl", 7200)
        finally:
            files = folder.collect("hpccoutf.txt", "hpccinf.txt")
        output = files["hpccoutf.txt"]
        checks = [exited(outcome, "mpirun hpcc")]
        result: dict = {}
        try:
            found = parse_output(output.read_text()) if output.exists() else None
        except SbclabError:
            found = None
        if found is None:
            checks.append(equal("HPL result row written", False, True))
        else:
            checks.append(equal("residual check", "PASSED" if found.passed else "FAILED", "PASSED"))
            checks.append(equal("problem as asked", (found.n, found.nb, found.p, found.q), (n, nb, p, q)))
            peak = (rpeak_gflops(board.clock_ghz, board.cores, board.flops_per_cycle, len(workers))
                    if board.flops_per_cycle else None)
            result = {"rmax_gflops": found.gflops, "hpl_seconds": found.seconds, "residual": found.residual,
                      "rpeak_gflops": peak,
                      "rpeak_basis": (f"{board.clock_ghz} GHz x {board.cores} cores x {board.flops_per_cycle:g} "
                                      f"flops/cycle x {len(workers)} nodes") if peak
                      else "the board profile has no flops_per_cycle"}
            if peak:
                # An emulated node has the board's speed times the scale factor, so its peak is scaled too.
                scaled = peak * (ctx.spec.scale.factor if ctx.spec.backend == "emulated" else 1.0)
                result["rpeak_here_gflops"] = round(scaled, 4)
                result["efficiency"] = round(found.gflops / scaled, 4)
        parameters = {"n": n, "nb": nb, "p": p, "q": q, "nodes": len(workers), "ranks_per_node": ranks_per_node,
                      "memory_fraction": fraction, "n_from": "given" if params.get("n") else "Eq. 2",
                      "hosts": [w.name for w in workers],
                      # On emulated nodes: the CPU period the ranks ran under (cgroups.polling_period_us).
                      "cpu_period_us": period}
        return Attempt(outcome, checks, result, extra_logs=files, parameters=parameters)
