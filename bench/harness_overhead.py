"""Harness overhead: TeraSort through sbclab vs the same job submitted by hand, alternating, on one cluster.

"By hand" is what a user on the master node types: `hadoop jar hadoop-mapreduce-examples.jar
terasort IN OUT` and then `hdfs dfs -rm -r OUT` so the next run can write OUT again, run in the
master's namespaces and cgroup. The sbclab path is the TeraSort workload without TeraValidate
(the hand path does not validate either): job submission, counter parsing, log keeping, the run
document and the same output removal. Target (issue 2): ratio <= 1.03.
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
from sbclab.stack import lifecycle
from sbclab.units import parse_size

TARGET = 1.03


def by_hand(cluster: lifecycle.Cluster, size_bytes: int, round_no: int, log: Path) -> float:
    stack, master = cluster.stack, cluster.spec.master
    out_dir = f"/sbclab/terasort/{size_bytes}/by-hand-{round_no}"
    commands = [
        stack.java(master, "org.apache.hadoop.util.RunJar",
                   [str(stack.dist.examples_jar), "terasort", f"/sbclab/terasort/{size_bytes}/input", out_dir]),
        stack.java(master, "org.apache.hadoop.fs.FsShell", ["-rm", "-r", "-f", "-skipTrash", out_dir]),
    ]
    start = time.monotonic()
    with open(log, "ab") as out:
        for argv in commands:
            # Being "on the master": its namespaces, host name and cgroup, nothing of sbclab's bookkeeping.
            on_master, join = cluster.transport.launch(master, argv)
            subprocess.run(on_master, env=stack.env(master), stdout=out, stderr=subprocess.STDOUT,
                           preexec_fn=join, check=True)
    return time.monotonic() - start


def interval(through_sbclab: list[float], hand: list[float]) -> str:
    """The 95 % interval of the ratio from the pairs' differences: on shared hosts the job's own
    spread can be larger than the harness's cost, and the ratio alone would hide that."""
    if len(hand) < 2:
        return ""
    differences = [s - h for s, h in zip(through_sbclab, hand)]
    half = stats.t.ppf(0.975, len(differences) - 1) * statistics.stdev(differences) / math.sqrt(len(differences))
    base = statistics.mean(hand)
    mean = statistics.mean(differences)
    return f", 95 % interval {1 + (mean - half) / base:.3f}-{1 + (mean + half) / base:.3f}"


def main() -> None:
    parser = terasort_arguments(__doc__)
    args = parser.parse_args()
    size_bytes = parse_size(args.size)
    work = Path(tempfile.mkdtemp(prefix="sbclab-bench-"))
    cluster = bench_cluster(args.backend)
    try:
        on = runner(cluster, work / "results")
        terasort_input(on, size_bytes)
        through_sbclab, hand, outside = [], [], []
        print(f"backend {args.backend}, TeraSort {args.size}, {args.pairs} alternating pairs")
        for round_no in range(1, args.pairs + 1):
            start = time.monotonic()
            run = terasort_run(on, size_bytes)
            through_sbclab.append(time.monotonic() - start)
            assert run.exit_status == 0, run.logs
            # What sbclab spends around the job: recording, marks, history, removal, the document.
            outside.append(through_sbclab[-1] - run.wall_time_s)
            hand.append(by_hand(cluster, size_bytes, round_no, work / "by-hand.log"))
            print(f"pair {round_no}: sbclab {through_sbclab[-1]:.1f} s (job {run.wall_time_s:.1f} s, "
                  f"around it {outside[-1]:.1f} s), by hand {hand[-1]:.1f} s")
        ratio = statistics.mean(through_sbclab) / statistics.mean(hand)
        print(f"sbclab mean {statistics.mean(through_sbclab):.1f} s (sd {statistics.pstdev(through_sbclab):.1f}), "
              f"by hand mean {statistics.mean(hand):.1f} s (sd {statistics.pstdev(hand):.1f})")
        print(f"harness overhead ratio sbclab/by-hand = {ratio:.3f} (target <= {TARGET}){interval(through_sbclab, hand)}")
        print(f"sbclab's own time around the job: mean {statistics.mean(outside):.1f} s "
              f"= {statistics.mean(outside) / statistics.mean(hand):.3f} of the job by hand")
    finally:
        nodes.down("bench", force=True)


if __name__ == "__main__":
    main()
