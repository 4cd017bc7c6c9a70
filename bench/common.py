"""What the TeraSort benchmarks share: their arguments, a 2-worker cluster of this host's default
backend, and TeraSort run down the same path every sbclab command uses."""

import argparse
from pathlib import Path

from sbclab import workloads
from sbclab.cluster import calibration, spec
from sbclab.cluster.nodes import default_backend
from sbclab.experiments.document import Provenance
from sbclab.experiments.orchestrator import Runner
from sbclab.monitor.settings import MonitorSettings
from sbclab.results.schema import RunRecord
from sbclab.results.store import ResultsStore
from sbclab.stack import lifecycle
from sbclab.workloads import terasort
from sbclab.workloads.base import new_id


def terasort_arguments(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--size", default="64MB")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--backend", default=default_backend())
    return parser


def bench_cluster(backend: str) -> lifecycle.Cluster:
    """Master + 2 workers named 'bench'; the caller takes it down with nodes.down('bench', force=True)."""
    return lifecycle.up(spec.build(name="bench", backend=backend, workers=2, disk_bytes=4 * 2**30,
                                   calibration=calibration.current() if backend == "emulated" else None))


def runner(cluster: lifecycle.Cluster, results: Path, monitor: MonitorSettings | None = None) -> Runner:
    return Runner(cluster, ResultsStore(results), monitor or MonitorSettings(idle_baseline_s=0),
                  Provenance(new_id("exp", "bench")))


def terasort_input(on: Runner, size_bytes: int) -> None:
    terasort.tera_input(on.context(), size_bytes)


def terasort_run(on: Runner, size_bytes: int) -> RunRecord:
    """Hadoop TeraSort without TeraValidate (the hand path does not validate either): submission,
    recording, counters, logs, the run document, the output's removal."""
    sort = workloads.get("terasort")
    return on.measure(sort, "hadoop", sort.parameters(size_bytes, {"validate": False}))
