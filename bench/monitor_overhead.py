"""The cost of measuring: the samplers' own CPU use, and TeraSort with sampling vs without.

1. Samplers at 1 Hz on an idle cluster for --idle-seconds, then during the sampled TeraSorts:
   each sampler's CPU time over its life, in % of one host core and of one board core (a board
   core is worth `core_speed` host cores). Target: <= 0.5 % of one core per node.
2. TeraSort (no TeraValidate) on the same cluster, alternating sampled and unsampled runs.
   Target: mean sampled / mean unsampled <= 1.02.
Prints the figures measured in this one run; asserts nothing.
"""

import statistics
import tempfile
import time
from pathlib import Path

from common import bench_cluster, runner, terasort_arguments, terasort_input, terasort_run

from sbclab.cluster import nodes
from sbclab.monitor.recorder import Recorder
from sbclab.monitor.settings import MonitorSettings
from sbclab.units import parse_size

CPU_TARGET_PCT = 0.5
RATIO_TARGET = 1.02


def idle_cost(cluster, seconds: float) -> dict[str, float]:
    recorder = Recorder(cluster.transport, "bench-idle", MonitorSettings(hz=1, margin_s=0))
    recorder.start()
    time.sleep(seconds)
    raw = recorder.stop()
    return {name: node["sampler_cpu_pct"] for name, node in raw.nodes.items()}


def main() -> None:
    parser = terasort_arguments(__doc__)
    parser.add_argument("--idle-seconds", type=float, default=60)
    args = parser.parse_args()
    size_bytes = parse_size(args.size)
    work = Path(tempfile.mkdtemp(prefix="sbclab-bench-"))
    cluster = bench_cluster(args.backend)
    try:
        core_speed = cluster.spec.scale.core_speed
        idle = idle_cost(cluster, args.idle_seconds)
        print(f"backend {args.backend}; sampler CPU at 1 Hz, idle cluster, {args.idle_seconds:g} s:")
        for name, pct in idle.items():
            print(f"  {name}: {pct:.3f} % of one host core = {pct / core_speed:.3f} % of one board core "
                  f"(target <= {CPU_TARGET_PCT} %)")
        sampled = runner(cluster, work / "results", MonitorSettings(hz=1, idle_baseline_s=0))
        unsampled = runner(cluster, work / "results", MonitorSettings(enabled=False))
        terasort_input(unsampled, size_bytes)
        with_sampling, without, busy_cost = [], [], []
        print(f"TeraSort {args.size}, {args.pairs} alternating pairs (wall time of the job as stored)")
        for pair in range(1, args.pairs + 1):
            # Which goes first alternates, so whatever one run leaves for the next falls on both sides.
            if pair % 2:
                on = terasort_run(sampled, size_bytes)
                off = terasort_run(unsampled, size_bytes)
            else:
                off = terasort_run(unsampled, size_bytes)
                on = terasort_run(sampled, size_bytes)
            assert on.exit_status == 0 and off.exit_status == 0, (on.logs, off.logs)
            with_sampling.append(on.wall_time_s)
            without.append(off.wall_time_s)
            busy_cost += [n.sampler_cpu_pct for n in on.measurements.nodes.values() if n.sampler_cpu_pct is not None]
            print(f"pair {pair}: sampled {on.wall_time_s:.1f} s, unsampled {off.wall_time_s:.1f} s")
        ratio = statistics.mean(with_sampling) / statistics.mean(without)
        pair_ratios = [a / b for a, b in zip(with_sampling, without)]
        print(f"per-pair ratios {', '.join(f'{r:.3f}' for r in pair_ratios)}; median {statistics.median(pair_ratios):.3f}")
        print(f"sampled mean {statistics.mean(with_sampling):.1f} s (sd {statistics.pstdev(with_sampling):.1f}), "
              f"unsampled mean {statistics.mean(without):.1f} s (sd {statistics.pstdev(without):.1f})")
        print(f"sampling overhead ratio sampled/unsampled = {ratio:.3f} (target <= {RATIO_TARGET})")
        print(f"sampler CPU during TeraSort: mean {statistics.mean(busy_cost):.3f} %, max {max(busy_cost):.3f} % of one "
              f"host core per node ({max(busy_cost) / core_speed:.3f} % of one board core)")
    finally:
        nodes.down("bench", force=True)


if __name__ == "__main__":
    main()
