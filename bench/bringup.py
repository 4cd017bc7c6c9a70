"""Bring-up and teardown of master + 2 workers, with leftovers counted before and after.

Targets (issue 2): bring-up to "HDFS out of safe mode, all NodeManagers registered" <= 60 s on a
2-core host; teardown <= 15 s with zero leftovers. Prints figures measured in this run.
"""

import argparse
import time

from sbclab.cluster import calibration, nodes, spec
from sbclab.cluster.nodes import default_backend
from sbclab.stack import lifecycle

BRING_UP_TARGET_S = 60.0
TEARDOWN_TARGET_S = 15.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--backend", default=default_backend())
    args = parser.parse_args()
    print(f"backend {args.backend}, master + 2 x rpi5b/nvme, {args.rounds} rounds")
    print(f"{'round':>5} {'bring-up s':>11} {'teardown s':>11}  leftovers before -> after")
    ups, downs = [], []
    for round_no in range(1, args.rounds + 1):
        before = nodes.leftovers_on_host()
        cluster_spec = spec.build(name="bench", backend=args.backend, workers=2, disk_bytes=2 * 2**30,
                                  calibration=calibration.current() if args.backend == "emulated" else None)
        start = time.monotonic()
        lifecycle.up(cluster_spec)
        up_s = time.monotonic() - start
        start = time.monotonic()
        failed = nodes.down("bench")
        down_s = time.monotonic() - start
        after = nodes.leftovers_on_host()
        ups.append(up_s)
        downs.append(down_s)
        print(f"{round_no:>5} {up_s:>11.1f} {down_s:>11.1f}  {sum(before.values())} -> {sum(after.values())} {after}"
              + (f" not removed: {failed}" if failed else ""))
    mean_up, mean_down = sum(ups) / len(ups), sum(downs) / len(downs)
    print(f"bring-up: mean {mean_up:.1f} s, target {BRING_UP_TARGET_S:.0f} s, target/measured {BRING_UP_TARGET_S / mean_up:.2f}")
    print(f"teardown: mean {mean_down:.1f} s, target {TEARDOWN_TARGET_S:.0f} s, target/measured {TEARDOWN_TARGET_S / mean_down:.2f}")


if __name__ == "__main__":
    main()
