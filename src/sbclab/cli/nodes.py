"""`sbclab micro` and `sbclab hpl`: the seeds' node benchmarks and Linpack, on bare nodes (no Hadoop
or Spark), as the seeds measured their boards."""

import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import click

from ..analysis import calibration_check
from ..cluster import inventory
from ..cluster.nodes import default_backend
from ..errors import SbclabError
from ..experiments import builtin, plan
from ..experiments.display import LineDisplay
from ..experiments.model import ClusterSettings
from ..results.store import ResultsStore
from ..workloads import sevenzip
from .options import ACCEPT_NEW_HOST_KEYS, INVENTORY, KNOWN_HOSTS, HostKeys, Monitoring, Shape, bundle, \
    monitor_options, shape_options
from .values import FiniteRange, counts, size
from .output import say
from .running import run_and_report
from .software import print_calibration_check


@dataclass
class Target:
    """Where node benchmarks run and are stored: the boards of an inventory, else nodes from the flags."""

    repetitions: int
    results: Path
    inventory_file: Path | None
    known_hosts: Path | None
    accept_new_host_keys: bool

    def cluster(self, shape: Shape):
        """(cluster settings, workers, storage, how to reach the boards)."""
        if self.inventory_file is None:
            return shape.settings(), shape.workers, shape.storage, None
        hosts = inventory.load(self.inventory_file)
        spec = plan.board_spec_for(hosts, name=shape.name)
        settings = ClusterSettings(name=shape.name, board=spec.board, backend="ssh", timeout_s=shape.timeout)
        return settings, spec.workers, spec.storage, HostKeys(self.known_hosts, self.accept_new_host_keys).access(hosts)


target_options = bundle(Target, [
    click.option("--repetitions", type=click.IntRange(1, 100), default=1, show_default=True),
    click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
                 show_default=True),
    INVENTORY, KNOWN_HOSTS, ACCEPT_NEW_HOST_KEYS,
], "target")


@dataclass
class Tuning:
    """How long and how large each node benchmark runs."""

    seconds: int
    power_seconds: int
    file_size: str
    netpipe_upper: int
    netpipe_perturbation: int
    netpipe_repeats: int | None
    doc_sizes: str
    step_seconds: int
    max_rate: int

    def parameters(self, node: str) -> dict[str, dict]:
        try:
            sizes_kb = [int(v) for v in self.doc_sizes.split(",") if v.strip()]
        except ValueError:
            raise SbclabError(f"--doc-sizes {self.doc_sizes} is not a list of kilobytes.",
                              "Write e.g. 1,4,10,50,70,100.") from None
        on = {"node": node}
        return {"sysbench-cpu": {**on, "seconds": self.seconds}, "storage": {**on, "seconds": self.seconds,
                                                                            "size": self.file_size},
                # 7-Zip's passes are its own length (4 s) unless --seconds is shorter.
                "7zip": {**on, "seconds": min(sevenzip.OWN_SECONDS, self.seconds)},
                "memory": {**on, "seconds": self.seconds},
                "iperf": {**on, "seconds": self.seconds}, "idle": {**on, "seconds": self.power_seconds},
                "stress": {**on, "seconds": self.power_seconds},
                "netpipe": {"upper_bytes": self.netpipe_upper, "perturbation": self.netpipe_perturbation,
                            "repeats": self.netpipe_repeats},
                "web": {"doc_sizes_kb": sizes_kb, "step_seconds": self.step_seconds, "max_rate": self.max_rate}}


tuning_options = bundle(Tuning, [
    click.option("--seconds", type=click.IntRange(1, 3600), default=10, show_default=True,
                 help="Length of each sysbench, fio and iperf3 test and mbw copy method, and the most a 7-Zip pass "
                      "takes."),
    click.option("--power-seconds", type=click.IntRange(1, 86400), default=60, show_default=True,
                 help="Idle and stress durations of the power test (the seeds used 3600)."),
    click.option("--file-size", default="100M", show_default=True, help="fio's file, as the seeds' iozone runs (100 MB)."),
    click.option("--netpipe-upper", default="8MiB", show_default=True, callback=size, help="netpipe: the largest message."),
    click.option("--netpipe-perturbation", type=click.IntRange(0, 1024), default=3, show_default=True,
                 help="netpipe: also measure this many bytes either side of each power of two (0: powers of two alone)."),
    click.option("--netpipe-repeats", type=click.IntRange(1, 10**6), default=None,
                 help="netpipe: round trips per message size (default: NetPIPE's own choice from the last size's time)."),
    click.option("--doc-sizes", default="1,4,10,50,70,100", show_default=True, help="web: document sizes in KB."),
    click.option("--step-seconds", type=click.IntRange(1, 600), default=10, show_default=True,
                 help="web: seconds at each request rate (from 100 req/s, doubling, then halving the gap to the peak)."),
    click.option("--max-rate", type=click.IntRange(100, 100000), default=5000, show_default=True,
                 help="web: highest rate tried."),
], "tuning")


@click.command("micro")
@shape_options
@click.option("--benchmarks", default="cpu,storage,network,power", show_default=True,
              help="Which of cpu (sysbench), 7zip (7-Zip's benchmark, 1 thread and all cores), memory (mbw copy "
                   "bandwidth and load latency by buffer size), storage (fio), network (iperf3), power (idle and "
                   "stress-ng), netpipe (TCP and MPI between two nodes), web (nginx capacity by document size).")
@click.option("--node", "node_name", default="all", show_default=True,
              help="Run on this node only (e.g. worker1), or on all (network: every worker with the master).")
@tuning_options
@click.option("--container", type=click.Choice(["docker", "podman"]), default=None,
              help="web: also serve from a container on the same node (its runtime's default bridge, the port "
                   "published on the node's address), to report the overhead (Hajji & Tso, Fig. 4). Emulated "
                   "nodes use podman.")
@target_options
@monitor_options
def micro_command(shape: Shape, benchmarks, node_name, tuning: Tuning, container, target: Target,
                  monitoring: Monitoring):
    """Per-node micro-benchmarks as stored runs: CPU by threads, storage patterns, network both ways,
    power idle and under load with temperature (the seeds' Tables 3-7); 7-Zip and the memory, set beside
    the boards' published figures on emulated nodes (the calibration check)."""
    chosen = [b.strip() for b in benchmarks.split(",") if b.strip()]
    unknown = [b for b in chosen if b not in builtin.MICRO]
    if unknown or not chosen:
        raise SbclabError(f"Unknown benchmark(s): {', '.join(unknown) or '(none given)'}.",
                          f"Choose from {', '.join(builtin.MICRO)}.")
    settings, workers, storage, access = target.cluster(shape)
    if container and "web" in chosen:
        reason = _no_containers(container, shape, access)
        if reason:
            say(f"[yellow]--container: {reason}; the native runs go ahead.[/yellow]")
            container = None
    names = [n for n, _ in _node_names(access, workers)]
    if node_name != "all" and node_name not in names:
        raise SbclabError(f"There is no node '{node_name}' in this cluster.", f"Choose from {', '.join(names)}, or all.")
    parameters = tuning.parameters(node_name)
    # The web cells in a container are a runtime of the experiment (its cells and the cluster they run
    # on say so); the other benchmarks run natively once, in an experiment of their own.
    groups = [[b for b in chosen if b != "web"], ["web"]] if container and "web" in chosen else [chosen]
    failed, started = False, datetime.now(timezone.utc)
    for group in (g for g in groups if g):
        experiment = builtin.micro(settings, storage, workers, group, parameters, target.repetitions,
                                   monitoring.settings())
        if group == ["web"] and container:
            experiment = experiment.model_copy(update={"runtimes": ["native", "container"]})
        try:
            run_and_report(experiment, target.results, LineDisplay(say), access)
        except SystemExit as stopped:
            failed = failed or bool(stopped.code)
    if {"7zip", "memory"} & set(chosen):
        # What emulated nodes measured beside their boards' published figures: whether sysbench's shaping holds.
        made = [r for r in ResultsStore(target.results).runs()
                if r.started_at >= started and r.workload in calibration_check.WORKLOADS and r.cluster.emulated]
        if made:
            print_calibration_check(made)
    if failed:
        sys.exit(1)


def _node_names(access, workers: int) -> list[tuple[str, str]]:
    if access is None:
        return [("master", "master"), *((f"worker{i}", "worker") for i in range(1, workers + 1))]
    return [(h.name, h.role) for h in access.inventory.hosts]


def _no_containers(asked: str, shape: Shape, access) -> str | None:
    """Why the web cells cannot run in a container here, in a few words; None when they can."""
    reason = plan.why_no_containers("ssh" if access is not None else shape.backend or default_backend())
    if reason is None and asked == "docker":
        say("emulated nodes run their containers with podman: docker's daemon would start them outside the "
            "node's network namespace and cgroup")
    return reason


@click.command("hpl")
@shape_options
@click.option("--nodes", "node_counts", callback=counts,
              help="Worker counts to run HPL on, e.g. 1,2,4 (default 1, 2, 4, ... up to --workers).")
@click.option("--n", "problem", type=click.IntRange(1), default=None,
              help="Problem size N (default: Baun's Eq. 2 from the nodes' memory and --memory-fraction).")
@click.option("--nb", default="32", show_default=True, help="Block size NB, or 'sweep' to try 16-256 on a small N first.")
@click.option("--memory-fraction", type=FiniteRange(0, 1, min_open=True), default=0.8, show_default=True,
              help="R of Eq. 2: the share of the nodes' memory the matrix fills.")
@click.option("--ranks-per-node", type=click.IntRange(1, 256), default=None,
              help="MPI ranks per node (default: the board's cores).")
@target_options
@monitor_options
def hpl_command(shape: Shape, node_counts, problem, nb, memory_fraction, ranks_per_node, target: Target,
                monitoring: Monitoring):
    """High Performance Linpack (Debian's hpcc) with OpenMPI across 1, 2, 4 ... workers: Rmax, Rpeak,
    efficiency, speedup and Gflops per watt, every run stored (Baun 2016, Table 7)."""
    if nb != "sweep" and not nb.isdigit():
        raise SbclabError(f"--nb {nb} is not a block size.", "Give a positive integer such as 32, or 'sweep'.")
    settings, workers, storage, access = target.cluster(shape)
    if node_counts and any(c < 1 or c > workers for c in node_counts):
        raise SbclabError(f"--nodes {','.join(map(str, node_counts))} asks for more workers than the cluster's "
                          f"{workers}.", f"Give counts between 1 and {workers}, or more workers.")
    parameters = {"nodes": node_counts, "n": problem, "nb": nb if nb == "sweep" else int(nb),
                  "memory_fraction": memory_fraction, "ranks_per_node": ranks_per_node}
    experiment = builtin.hpl(settings, storage, workers, parameters, target.repetitions, monitoring.settings())
    run_and_report(experiment, target.results, LineDisplay(say), access)
