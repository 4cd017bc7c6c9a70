"""Fidelity of the emulator: micro-benchmarks inside emulated nodes against the profile's figures × scale.

For rpi5b + NVMe (gen 3), rpi5b + microSD (PRO Plus) and rpi4b + microSD (PRO Plus), one node each
at one common scale factor (so the three are comparable): sysbench CPU at 1 and 4 threads, fio
sequential read/write at 16 MB records and random 4 KB read/write IOPS (direct I/O, the seeds'
iozone patterns), and iperf3 from a second node of the same profile. Prints expected (profile ×
scale), measured and their ratio; the target is 0.85-1.15 for every figure.
"""

import argparse

from sbclab import profiles
from sbclab.cluster import calibration, cgroups, nodes, spec, tools

CASES = [("rpi5b", "nvme-p31-gen3"), ("rpi5b", "microsd-pro-plus"), ("rpi4b", "microsd-pro-plus")]
LOW, HIGH = 0.85, 1.15
KINDS = ("cpu", "disk", "network")


def measure_case(board: str, storage: str, factor: float, subnet: str, seconds: int,
                 file_size: str = "128M", kinds: tuple[str, ...] = KINDS) -> list[tuple[str, float, float]]:
    b = profiles.board(board)
    medium = profiles.storage(storage).figures_on(board)
    host = calibration.current(progress=print)
    # One worker so that two nodes exist for iperf3; shaping is per node, so the factor is what matters.
    shaped = spec.build(name="fid", backend="emulated", board=board, storage=storage, workers=1, subnet=subnet,
                        disk_bytes=2 * 2**30, calibration=host, scale_factor=factor)
    rows = []
    with nodes.bare(shaped) as transport:
        node, peer = shaped.worker_nodes[0], shaped.master
        on = tools.on_node(transport, node)
        disk = transport.node_disk(node) / "fio"
        transport.make_dirs(node, [disk])

        def fio(rw, block_size):
            return tools.fio_job(on, disk, f"{rw}-{block_size}", rw, block_size, file_size, seconds)
        for threads in (1, 4) if "cpu" in kinds else ():
            rows.append((f"sysbench {threads} thread(s), events/s", b.sysbench_events(threads) * factor,
                         tools.sysbench_cpu(on, b.sysbench.max_prime, threads, seconds)))
        if "disk" in kinds:
            rows.append(("fio seq write 16M, MB/s", medium.seq_write * factor, fio("write", "16m")["mb_s"]))
            rows.append(("fio seq read 16M, MB/s", medium.seq_read * factor, fio("read", "16m")["mb_s"]))
            rows.append(("fio rand write 4K, IOPS", medium.write_iops * factor, fio("randwrite", "4k")["iops"]))
            rows.append(("fio rand read 4K, IOPS", medium.read_iops * factor, fio("randread", "4k")["iops"]))
        if "network" not in kinds:
            return rows
        expected_net = (b.network_mbps or b.nic_mbps) * factor
        serving = lambda argv: tools.ServingOnNode(transport, peer, argv, transport.node_dir(peer) / "iperf.log",  # noqa: E731
                                                   "iperf3 -s")
        rows.append(("iperf3, Mb/s", expected_net, tools.iperf3_mbps(serving, on, peer.address, seconds)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=5, help="Duration of each measurement.")
    parser.add_argument("--file-size", default="128M",
                        help="fio's file per pattern, laid out first at the node's write speed (smaller on a slow host).")
    parser.add_argument("--only", action="append", choices=KINDS,
                        help="Measure only these figures (repeatable); the disk's take most of the time.")
    args = parser.parse_args()
    host = calibration.current(progress=print)
    # The common factor: the smallest any case needs, computed for a 3-node cluster like the demo's.
    factor = min(spec.build(backend="emulated", board=b, storage=s, workers=2, calibration=host).scale.factor
                 for b, s in CASES)
    print(f"common scale factor {factor:.4g} (host {host.cpu_model}, {host.cores} cores, cgroup v{cgroups.version()})")
    outside = 0
    for i, (board, storage) in enumerate(CASES):
        print(f"\n{board} + {storage}")
        print(f"  {'figure':<32} {'profile x scale':>16} {'measured':>12} {'ratio':>7}")
        for name, expected, measured in measure_case(board, storage, factor, f"10.21{5 + i}.0.0/24", args.seconds,
                                                     args.file_size, tuple(args.only or KINDS)):
            ratio = measured / expected
            flag = "" if LOW <= ratio <= HIGH else "  outside 0.85-1.15"
            outside += bool(flag)
            print(f"  {name:<32} {expected:>16.1f} {measured:>12.1f} {ratio:>7.2f}{flag}")
    print(f"\n{outside} figure(s) outside {LOW}-{HIGH}")


if __name__ == "__main__":
    main()
