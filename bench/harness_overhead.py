"""Harness overhead: TeraSort through sbclab vs the same job submitted by hand, alternating, on one cluster.

"By hand" is what a user on the master node types: `hadoop jar hadoop-mapreduce-examples.jar
terasort IN OUT` and then `hdfs dfs -rm -r OUT` so the next run can write OUT again, run in the
master's namespaces and cgroup. The sbclab path is the TeraSort workload without TeraValidate
(the hand path does not validate either): recording, job submission, counter parsing, log keeping,
the JobHistory's phases, the run document and the same output removal. Target: ratio <= 1.03.

Two figures, both from this one run:
- the ratio of the mean times, with the 95 % interval from the pairs. On a shared host the job's
  own spread (which node gets the ApplicationMaster, other tenants) is several times larger than
  3 %, so a handful of pairs bounds the overhead only loosely;
- the overhead from its parts: what sbclab spends around the job (its total less the job's own
  wall time and less the output's removal, timed on the hand path), and the samplers' share of
  the nodes' CPU during the job (they run inside the nodes' limits: the most they can take from
  a job that is CPU-bound throughout).
"""

import math
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from scipy import stats

from common import bench_cluster, runner, terasort_arguments, terasort_input, terasort_run

from sbclab.cluster import nodes
from sbclab.results.schema import RunRecord
from sbclab.stack import lifecycle
from sbclab.units import parse_size

TARGET = 1.03


def by_hand(cluster: lifecycle.Cluster, size_bytes: int, round_no: int, log: Path) -> tuple[float, float]:
    """The job's and the removal's wall times."""
    stack, master = cluster.stack, cluster.spec.master
    out_dir = f"/sbclab/terasort/{size_bytes}/by-hand-{round_no}"
    commands = [
        stack.java(master, "org.apache.hadoop.util.RunJar",
                   [str(stack.dist.examples_jar), "terasort", f"/sbclab/terasort/{size_bytes}/input", out_dir]),
        stack.java(master, "org.apache.hadoop.fs.FsShell", ["-rm", "-r", "-f", "-skipTrash", out_dir]),
    ]
    walls = []
    with open(log, "ab") as out:
        for argv in commands:
            start = time.monotonic()
            # Being "on the master": its namespaces, host name and cgroup, nothing of sbclab's bookkeeping.
            on_master, join = cluster.transport.launch(master, argv)
            subprocess.run(on_master, env=stack.env(master), stdout=out, stderr=subprocess.STDOUT,
                           preexec_fn=join, check=True)
            walls.append(time.monotonic() - start)
    return walls[0], walls[1]


def interval(through_sbclab: list[float], hand: list[float]) -> str:
    """The 95 % interval of the ratio from the pairs' differences."""
    if len(hand) < 2:
        return ""
    differences = [s - h for s, h in zip(through_sbclab, hand)]
    half = stats.t.ppf(0.975, len(differences) - 1) * statistics.stdev(differences) / math.sqrt(len(differences))
    base = statistics.mean(hand)
    mean = statistics.mean(differences)
    return f", 95 % interval {1 + (mean - half) / base:.3f}-{1 + (mean + half) / base:.3f}"


def sampler_share(run: RunRecord) -> float:
    """The samplers' CPU as a share of the nodes' CPU, the mean over the nodes."""
    shares = [node.sampler_cpu_pct / 100 / node.cpu_capacity_cores for node in run.measurements.nodes.values()
              if node.sampler_cpu_pct is not None and node.cpu_capacity_cores]
    return statistics.mean(shares) if shares else 0.0


def main() -> None:
    parser = terasort_arguments(__doc__)
    args = parser.parse_args()
    size_bytes = parse_size(args.size)
    work = Path(tempfile.mkdtemp(prefix="sbclab-bench-"))
    cluster = bench_cluster(args.backend)
    try:
        on = runner(cluster, work / "results")
        terasort_input(on, size_bytes)
        through_sbclab, jobs, shares, hand, hand_jobs, removals = [], [], [], [], [], []
        print(f"backend {args.backend}, TeraSort {args.size}, {args.pairs} alternating pairs")

        def measured() -> None:
            start = time.monotonic()
            run = terasort_run(on, size_bytes)
            through_sbclab.append(time.monotonic() - start)
            assert run.exit_status == 0, run.logs
            jobs.append(run.wall_time_s)
            shares.append(sampler_share(run))

        def typed(round_no: int) -> None:
            job, removal = by_hand(cluster, size_bytes, round_no, work / "by-hand.log")
            hand.append(job + removal)
            hand_jobs.append(job)
            removals.append(removal)

        for round_no in range(1, args.pairs + 1):
            # Which goes first alternates, so whatever one run leaves for the next falls on both sides.
            if round_no % 2:
                measured()
                typed(round_no)
            else:
                typed(round_no)
                measured()
            print(f"pair {round_no}: sbclab {through_sbclab[-1]:.1f} s (job {jobs[-1]:.1f} s), "
                  f"by hand {hand[-1]:.1f} s (job {hand_jobs[-1]:.1f} s, removal {removals[-1]:.1f} s)")
        base = statistics.mean(hand)
        ratio = statistics.mean(through_sbclab) / base
        print(f"sbclab mean {statistics.mean(through_sbclab):.1f} s (sd {statistics.pstdev(through_sbclab):.1f}), "
              f"by hand mean {base:.1f} s (sd {statistics.pstdev(hand):.1f})")
        print(f"harness overhead ratio sbclab/by-hand = {ratio:.3f} (target <= {TARGET}){interval(through_sbclab, hand)}")
        print(f"the job alone: sbclab/by-hand = {statistics.mean(jobs) / statistics.mean(hand_jobs):.3f}"
              f"{interval(jobs, hand_jobs)}")
        around = statistics.mean(t - j for t, j in zip(through_sbclab, jobs)) - statistics.mean(removals)
        share = statistics.mean(shares)
        print(f"sbclab's own time around the job (less the removal both pay): {around:.1f} s = "
              f"{around / base:.3f} of the job by hand; samplers' share of the nodes' CPU: {share:.4f}")
        print(f"harness overhead from its parts = {1 + around / base + share:.3f} (target <= {TARGET})")
    finally:
        nodes.down("bench", force=True)


if __name__ == "__main__":
    main()
