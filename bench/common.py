"""What the TeraSort benchmarks share: their arguments and a 2-worker cluster of this host's default backend."""

import argparse

from sbclab.cluster import calibration, lifecycle, spec
from sbclab.cluster.backends import default_backend


def terasort_arguments(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--size", default="64MB")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--backend", default=default_backend())
    return parser


def bench_cluster(backend: str) -> lifecycle.Cluster:
    """Master + 2 workers named 'bench'; the caller takes it down with lifecycle.down('bench', force=True)."""
    return lifecycle.up(spec.build(name="bench", backend=backend, workers=2, disk_bytes=4 * 2**30,
                                   calibration=calibration.current() if backend == "emulated" else None))
