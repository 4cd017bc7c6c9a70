"""The command line: a thin layer over the library. Every command is a function tests can call."""

import json
import shutil
import sys
from contextlib import nullcontext
from pathlib import Path

import click
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from . import __version__, atomic, profiles, suite
from .data import airline
from .cluster import calibration, inventory, lifecycle, plan
from .cluster.backends.base import check_local_programs
from .cluster import spec as cluster_spec
from .cluster.state import ClusterState
from .errors import SbclabError
from .monitor.settings import MonitorSettings
from .results import summary
from .results.store import ResultsStore
from .stack import distribution
from .units import format_size, parse_size

# Piped output (CI logs, `| tee`) keeps whole tables rather than Rich's 80-column default.
console = Console(width=None if sys.stdout.isatty() else 200)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def _say(message: str) -> None:
    err_console.print(f"[dim]sbclab:[/dim] {message}")


def _size(ctx, param, value):
    if value is None:
        return None
    try:
        return parse_size(value)
    except SbclabError as err:
        raise click.BadParameter(str(err)) from err


def cluster_options(func):
    """Options that describe a cluster's shape, shared by `cluster up` and `run`."""
    options = [
        click.option("--name", default="lab", show_default=True, help="Cluster name; several clusters can coexist."),
        click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True, help="Number of worker nodes (a master is always added)."),
        click.option("--profile", "board", default="rpi5b", show_default=True, help="Board profile of every node (see 'sbclab profiles list')."),
        click.option("--storage", default="nvme", show_default=True, help="Storage medium profile of every node."),
        click.option("--preset", type=click.Choice(cluster_spec.PRESETS), default="stock", show_default=True,
                     help="stock = upstream defaults; paper = the newest seed's Tables 9-10."),
        click.option("--backend", type=click.Choice(cluster_spec.BACKENDS), default=None,
                     help="emulated (root: namespaces + cgroups, shaped) or processes (no root, unshaped). Default: emulated when root."),
        click.option("--subnet", default="10.213.0.0/24", show_default=True, help="Private network of the emulated nodes."),
        click.option("--disk-size", callback=_size, default=None,
                     help="Size of each emulated node's filesystem, e.g. 8GiB. Default: 4GiB, more for large --size."),
        click.option("--timeout", type=float, default=180, show_default=True, help="Seconds to wait for the daemons to be ready."),
        click.option("--scale", "scale_factor", type=click.FloatRange(0, 1, min_open=True), default=None,
                     help="Fix the emulation scale factor (default: the largest this host can give). Use one value to compare different boards."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def monitor_options(func):
    """How runs are measured, shared by `run` and `bench` (an experiment file's `monitor:` is overridden)."""
    options = [
        click.option("--sample-hz", type=click.FloatRange(0.2, 10), default=None,
                     help="Samples per second on every node during runs (default 1)."),
        click.option("--no-sampling", is_flag=True, help="Run without per-node samplers (no series, power or flags)."),
        click.option("--idle-baseline", type=click.FloatRange(0, 3600), default=None,
                     help="Seconds of idle sampling before the runs, for energy above idle (default 10; 0 skips)."),
        click.option("--power-file", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
                     help="YAML: node name (or 'default') -> power source, e.g. {default: {source: rapl}}."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _monitor_settings(base: dict | None, sample_hz, no_sampling, idle_baseline, power_file) -> MonitorSettings:
    raw = dict(base or {})
    if sample_hz is not None:
        raw["hz"] = sample_hz
    if no_sampling:
        raw["enabled"] = False
    if idle_baseline is not None:
        raw["idle_baseline_s"] = idle_baseline
    if power_file:
        import yaml
        given = yaml.safe_load(power_file.read_text())
        if not isinstance(given, dict):
            raise SbclabError(f"{power_file} is not a mapping of node names to power sources.",
                              "Write e.g. 'default: {source: model}' and 'worker1: {source: http-plug, url: ..., format: shelly}'.")
        raw["power"] = given
    try:
        return MonitorSettings.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SbclabError(f"Monitoring settings: {where}: {first['msg']}.",
                          "See 'sbclab run --help' and docs/measurements.md for the power sources and their fields.") from err


def _spec(name, workers, board, storage, preset, backend, subnet, disk_size, scale_factor=None,
          data_bytes: int = 0) -> cluster_spec.ClusterSpec:
    return plan.spec_for(name=name, workers=workers, board=board, storage=storage, preset=preset, backend=backend,
                         subnet=subnet, disk_size=disk_size, scale_factor=scale_factor, data_bytes=data_bytes, say=_say)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sbclab")
def main_group():
    """Deploy Hadoop and Spark on a single-board-computer cluster (real or emulated), benchmark it, report it."""


# --- cluster ---------------------------------------------------------------------------------

# How boards' host keys are checked (cluster/remote.py), shared by every command that reaches boards.
KNOWN_HOSTS = click.option("--known-hosts", type=click.Path(dir_okay=False, path_type=Path), default=None,
                           help="The known_hosts file that host keys are checked against (default ~/.ssh/known_hosts).")
ACCEPT_NEW_HOST_KEYS = click.option("--accept-new-host-keys", is_flag=True,
                                    help="Record the key of a board never seen before (trust on first use); "
                                         "a changed key is refused always.")


def board_options(func):
    """Real boards instead of emulated nodes, and the cluster's knobs, shared by `cluster up` and `run`."""
    options = [
        click.option("--knob", "knob_names", multiple=True, metavar="NAME",
                     help="A cluster knob to apply (repeatable): crc-off (HDFS checksums off) or fstrim (trim the "
                          "nodes' filesystems before every run). See 'sbclab knobs'; recorded in every run."),
        click.option("--inventory", "inventory_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Deploy onto the boards of this YAML inventory over SSH (examples/inventory.yml) "
                          "instead of emulating nodes; the shape options are then taken from it."),
        KNOWN_HOSTS,
        ACCEPT_NEW_HOST_KEYS,
        click.option("--dist-dir", default=None,
                     help="Where Hadoop and Spark live on every board (the same path on all; copied there when "
                          "missing or different). Default: the master's data_dir/sbclab/dist."),
        click.option("--expose-web-uis", is_flag=True,
                     help="Let the web UIs and REST APIs listen on the boards' inventory addresses instead of their "
                          "loopback. Anyone who reaches those addresses can then run code on the cluster through "
                          "YARN's REST API: only on a network of your own (README, 'Real boards')."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _with_knobs(spec: cluster_spec.ClusterSpec, knob_names) -> cluster_spec.ClusterSpec:
    from .cluster import knobs
    return spec.model_copy(update={"knobs": knobs.check_cluster_knobs(knob_names)})


def _bare_nodes(name, workers, board, storage, preset, backend, subnet, disk_size, scale_factor,
                inventory_file, known_hosts, accept_new_host_keys, monitor):
    """The shape for node benchmarks: the inventory's boards (with their power sources) when one is
    given, else an emulated cluster from the flags."""
    spec, boards = _boards(name, preset, inventory_file, known_hosts, accept_new_host_keys, None, False)
    if spec is None:
        return _spec(name, workers, board, storage, preset, backend, subnet, disk_size, scale_factor), boards, monitor
    return spec, boards, suite.with_inventory_power(monitor, boards)


def _boards(name, preset, inventory_file, known_hosts, accept_new_host_keys, dist_dir, expose_web_uis):
    """(spec, boards settings) of an inventory, or (None, None) without one."""
    if inventory_file is None:
        if expose_web_uis:
            raise SbclabError("--expose-web-uis is for real boards.", "Give it with --inventory.")
        return None, None
    hosts = inventory.load(inventory_file)
    spec = cluster_spec.from_inventory(hosts, name=name, preset=preset, expose_web_uis=expose_web_uis)
    if dist_dir is not None and not dist_dir.startswith("/"):
        raise SbclabError(f"--dist-dir {dist_dir} is not an absolute path.", "Give one like /opt/sbclab.")
    return spec, lifecycle.boards_settings(hosts, known_hosts, accept_new_host_keys, dist_dir)


@main_group.group()
def cluster():
    """Bring a cluster up, see how it is, take it down."""


@cluster.command("up")
@cluster_options
@board_options
def cluster_up(name, workers, board, storage, preset, backend, subnet, disk_size, timeout, scale_factor,
               knob_names, inventory_file, known_hosts, accept_new_host_keys, dist_dir, expose_web_uis):
    """Create the nodes, start HDFS, YARN and the JobHistory server, wait until they serve.

    With --inventory: preflight the boards, install Java where missing, copy the distribution where
    it differs, render the configs, format HDFS on first use, start the daemons. A second 'up' of
    the same boards checks all of that and changes nothing."""
    spec, boards = _boards(name, preset, inventory_file, known_hosts, accept_new_host_keys, dist_dir, expose_web_uis)
    if spec is not None:
        spec = _with_knobs(spec, knob_names)
        from .cluster import doctor
        doctor.preflight(inventory.load(inventory_file), None, None, preset, Path(boards["known_hosts"]),
                         accept_new_host_keys, deploying=True, say=_say, tunnels=spec.web_uis == "loopback")
        if name in ClusterState.names():
            lifecycle.still_up(name, spec, boards, progress=_say)
            _print_status(lifecycle.status(lifecycle.attach(name)))
            return
    else:
        spec = _spec(name, workers, board, storage, preset, backend, subnet, disk_size, scale_factor)
    spec = _with_knobs(spec, knob_names)
    result = lifecycle.up(spec, timeout_s=timeout, progress=_say, boards=boards)
    _print_status(lifecycle.status(result))
    _say(f"cluster '{name}' is up in {result.state.extra['bring_up_s']:.1f} s; take it down with 'sbclab cluster down --name {name}'.")


@cluster.command("status")
@click.option("--name", default="lab", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def cluster_status(name, as_json):
    """Live DataNodes with capacity, YARN nodes with memory and vcores, and every daemon's address."""
    report = lifecycle.status(lifecycle.attach(name))
    if as_json:
        click.echo(json.dumps(report, indent=1))
    else:
        _print_status(report)
    if report["problems"]:
        sys.exit(1)


@cluster.command("down")
@click.option("--name", default="lab", show_default=True)
@click.option("--force", is_flag=True, help="Also remove what a crashed or interrupted 'up' left behind.")
@click.option("--abandoned", is_flag=True,
              help="Instead of NAME, remove every cluster a killed sbclab left behind (no process of it runs).")
@click.option("--purge", is_flag=True, help="Real boards: also delete the cluster's data and logs on them (kept by default).")
@click.option("--forget", is_flag=True,
              help="Real boards: drop this host's record of the cluster even if some boards cannot be reached "
                   "(what runs on those stays there).")
def cluster_down(name, force, abandoned, purge, forget):
    """Stop every daemon and remove the nodes: namespaces, links, cgroups, mounts, loop devices, files.

    On real boards: stop every daemon and command of the cluster; its data stays unless --purge."""
    names = lifecycle.abandoned() if abandoned else [name]
    if abandoned and not names:
        _say("no abandoned cluster on this host.")
    for each in names:
        leftovers = lifecycle.down(each, force=force or abandoned, purge=purge, forget=forget)
        if leftovers and forget:
            _say(f"cluster '{each}' forgotten; left where it was: {', '.join(leftovers)}.")
            continue
        if leftovers:
            on_boards = ClusterState.load(each).spec.backend == "ssh"
            raise SbclabError(f"Could not remove: {', '.join(leftovers)}.",
                              f"Reach those boards and run 'sbclab cluster down --name {each}' again, or add --forget "
                              "to drop this host's record of the cluster." if on_boards else
                              f"Run 'sbclab cluster down --force --name {each}' again, as root.")
        _say(f"cluster '{each}' removed.")


def _print_status(report: dict) -> None:
    scale = report["scale"]
    console.print(f"[bold]cluster {report['name']}[/bold]  backend {report['backend']}  preset {report['preset']}  "
                  f"HDFS safe mode {report.get('safemode', '?')}")
    if report["backend"] == "emulated":
        console.print(f"emulated: CPU, disk and network scaled by {scale['factor']:.3g}, memory by {scale['memory_factor']:.3g}")
    dn = Table(title="HDFS DataNodes (live)", title_justify="left")
    for col in ("datanode", "capacity", "used", "remaining"):
        dn.add_column(col)
    for row in report["datanodes"]:
        dn.add_row(row["address"], format_size(row["capacity"]), format_size(row["used"]), format_size(row["remaining"]))
    console.print(dn)
    yn = Table(title="YARN NodeManagers (running)", title_justify="left")
    for col in ("node", "state", "memory (MB)", "vcores"):
        yn.add_column(col)
    for row in report["yarn_nodes"]:
        yn.add_row(row["id"], row["state"], str(row["memory_mb"]), str(row["vcores"]))
    console.print(yn)
    ad = Table(title="Daemon addresses", title_justify="left")
    for col in ("daemon", "node", "address"):
        ad.add_column(col)
    for row in report["addresses"]:
        ad.add_row(row["daemon"], row["node"], row["address"])
    console.print(ad)
    for problem in report["problems"]:
        err_console.print(f"[red]problem:[/red] {problem}")


# --- run ----------------------------------------------------------------------------------------

@main_group.command("run")
@cluster_options
@click.option("--size", default="256MB", show_default=True, help="TeraGen/TeraSort data size, e.g. 256MB, 1GB, 2GiB.")
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=Path("results"), show_default=True,
              help="Directory the run documents and logs are written to.")
@click.option("--repetitions", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Times each benchmark runs (the seeds used 5).")
@click.option("--pi-maps", type=click.IntRange(1, 10000), default=100, show_default=True, help="Pi: maps (Spark slices).")
@click.option("--pi-samples", type=click.IntRange(1, 10**9), default=10000, show_default=True, help="Pi: samples per map.")
@monitor_options
@board_options
def run_command(name, workers, board, storage, preset, backend, subnet, disk_size, timeout, scale_factor, size, results,
                repetitions, pi_maps, pi_samples, sample_hz, no_sampling, idle_baseline, power_file,
                knob_names, inventory_file, known_hosts, accept_new_host_keys, dist_dir, expose_web_uis):
    """The main job: TeraGen → TeraSort → TeraValidate and Spark Pi on a cluster, every run stored.

    With --inventory it runs on the boards (preflighted first), using the cluster of that name if it
    is up, else deploying one for the job and stopping its daemons afterwards."""
    size_bytes = parse_size(size)
    monitor = _monitor_settings(None, sample_hz, no_sampling, idle_baseline, power_file)
    spec, boards = _boards(name, preset, inventory_file, known_hosts, accept_new_host_keys, dist_dir, expose_web_uis)
    if spec is None:
        spec = _spec(name, workers, board, storage, preset, backend, subnet, disk_size, scale_factor, size_bytes)
    spec = _with_knobs(spec, knob_names)
    options = suite.SuiteOptions(size_bytes=size_bytes, results=results, repetitions=repetitions,
                                 pi_maps=pi_maps, pi_samples=pi_samples, monitor=monitor, boards=boards)
    runs = suite.run(spec, options, progress=_say)
    _print_summary(ResultsStore(results), {r.run_id for r in runs})
    if not all(r.succeeded for r in runs):
        sys.exit(1)


MICRO = ("cpu", "storage", "network", "power", "netpipe", "web")


@main_group.command("micro")
@cluster_options
@click.option("--benchmarks", default="cpu,storage,network,power", show_default=True,
              help="Which of cpu (sysbench), storage (fio), network (iperf3), power (idle and stress-ng), "
                   "netpipe (TCP and MPI between two nodes), web (nginx capacity by document size).")
@click.option("--node", "node_name", default="all", show_default=True,
              help="Run on this node only (e.g. worker1), or on all (network: every worker with the master).")
@click.option("--seconds", type=click.IntRange(1, 3600), default=10, show_default=True,
              help="Length of each sysbench, fio and iperf3 test.")
@click.option("--power-seconds", type=click.IntRange(1, 86400), default=60, show_default=True,
              help="Idle and stress durations of the power test (the seeds used 3600).")
@click.option("--file-size", default="100M", show_default=True, help="fio's file, as the seeds' iozone runs (100 MB).")
@click.option("--netpipe-upper", default="8MiB", show_default=True, callback=_size,
              help="netpipe: the largest message.")
@click.option("--netpipe-perturbation", type=click.IntRange(0, 1024), default=3, show_default=True,
              help="netpipe: also measure this many bytes either side of each power of two (0: powers of two alone).")
@click.option("--doc-sizes", default="1,4,10,50,70,100", show_default=True, help="web: document sizes in KB.")
@click.option("--step-seconds", type=click.IntRange(1, 600), default=10, show_default=True,
              help="web: seconds at each request rate (steps of 100 req/s).")
@click.option("--max-rate", type=click.IntRange(100, 100000), default=5000, show_default=True, help="web: highest rate tried.")
@click.option("--container", type=click.Choice(["docker", "podman"]), default=None,
              help="web: also serve from a container on the same node, to report the overhead (Hajji & Tso Tables 1-2).")
@click.option("--repetitions", type=click.IntRange(1, 100), default=1, show_default=True)
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=Path("results"), show_default=True)
@click.option("--inventory", "inventory_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Benchmark the boards of this YAML inventory over SSH; the programs are installed with "
                   "apt-get where missing (mpirun runs on this host and must reach the boards, and they it).")
@KNOWN_HOSTS
@ACCEPT_NEW_HOST_KEYS
@monitor_options
def micro_command(name, workers, board, storage, preset, backend, subnet, disk_size, timeout, scale_factor, benchmarks,
                  node_name, seconds, power_seconds, file_size, netpipe_upper, netpipe_perturbation, doc_sizes,
                  step_seconds, max_rate, container, repetitions, results, inventory_file, known_hosts,
                  accept_new_host_keys, sample_hz, no_sampling, idle_baseline, power_file):
    """Per-node micro-benchmarks as stored runs: CPU by threads, storage patterns, network both ways,
    power idle and under load with temperature (the seeds' Tables 3-7)."""
    from .workloads import mpi, netpipe, nodebench, web
    from .workloads.base import RunContext
    chosen = _csv(benchmarks) or []
    unknown = [b for b in chosen if b not in MICRO]
    if unknown or not chosen:
        raise SbclabError(f"Unknown benchmark(s): {', '.join(unknown) or '(none given)'}.", f"Choose from {', '.join(MICRO)}.")
    programs = {nodebench.PROGRAMS[b]: nodebench.PROGRAMS[b] for b in chosen if b in nodebench.PROGRAMS}
    if "netpipe" in chosen:
        programs.update(netpipe.PROGRAMS)
        check_local_programs(mpi.LAUNCHER)
    if "web" in chosen:
        programs.update(web.PROGRAMS)
    if inventory_file is None:
        check_local_programs(programs)
    if container and not _runtime_answers(container):
        _say(f"[yellow]No working {container} here (not installed, or its daemon does not answer '{container} info'): "
             "--container does nothing; the native runs go ahead.[/yellow]")
        container = None
    if container:
        raise SbclabError(f"Serving from a {container} container inside an emulated node is not supported yet.",
                          "Run without --container; the native figures are what this version measures.")
    try:
        sizes_kb = [int(v) for v in _csv(doc_sizes)]
    except ValueError:
        raise SbclabError(f"--doc-sizes {doc_sizes} is not a list of kilobytes.", "Write e.g. 1,4,10,50,70,100.") from None
    spec, boards, monitor = _bare_nodes(name, workers, board, storage, preset, backend, subnet, disk_size, scale_factor,
                                        inventory_file, known_hosts, accept_new_host_keys,
                                        _monitor_settings(None, sample_hz, no_sampling, idle_baseline, power_file))
    names = [n.name for n in spec.nodes]
    if node_name != "all" and node_name not in names:
        raise SbclabError(f"There is no node '{node_name}' in this cluster.", f"Choose from {', '.join(names)}, or all.")
    store = ResultsStore(results)
    runs = []
    if boards is not None:
        suite.preflight_boards(spec, boards, None, None, _say, hadoop=False)
    with suite.nodes_for(spec, _say, boards=boards) as cluster:
        if boards is not None:
            _say(f"checking {', '.join(programs)} on the boards")
            cluster.backend.ensure_programs(programs)
        ctx = RunContext(cluster=cluster, store=store, progress=_say, monitor=monitor)
        nodes = [n for n in cluster.spec.nodes if node_name in ("all", n.name)]
        for repetition in range(1, repetitions + 1):
            for node in nodes:
                if "cpu" in chosen:
                    _say(f"sysbench cpu on {node.name}")
                    runs.append(nodebench.cpu(ctx, node, seconds=seconds, repetition=repetition))
                if "storage" in chosen:
                    _say(f"fio on {node.name}'s disk")
                    runs.append(nodebench.storage(ctx, node, size=file_size, seconds=seconds, repetition=repetition))
                if "network" in chosen and node.role == "worker":
                    _say(f"iperf3 between {node.name} and the master")
                    runs.append(nodebench.network(ctx, node, seconds=seconds, repetition=repetition))
                if "power" in chosen:
                    _say(f"{node.name} idle, then stress-ng, {power_seconds} s each")
                    runs += nodebench.power(ctx, node, seconds=power_seconds, repetition=repetition)
            workers_ = list(cluster.spec.worker_nodes)
            first = next((n for n in nodes if n.role == "worker"), workers_[0])
            if "netpipe" in chosen:
                peer = next((w for w in workers_ if w != first), cluster.spec.master)
                _say(f"NetPIPE between {first.name} and {peer.name}, TCP then MPI")
                sizes = {"upper": netpipe_upper, "perturbation": netpipe_perturbation}
                runs.append(netpipe.tcp(ctx, first, peer, repetition=repetition, **sizes))
                runs.append(netpipe.over_mpi(ctx, first, peer, repetition=repetition, **sizes))
            if "web" in chosen:
                for kb in sizes_kb:
                    _say(f"nginx on {first.name}, httperf from the master: {kb} KB documents")
                    runs.append(web.capacity(ctx, first, kb, step_seconds=step_seconds, max_rate=max_rate,
                                             repetition=repetition))
    _print_summary(store, {r.run_id for r in runs})
    if not all(r.valid for r in runs):
        sys.exit(1)


def _runtime_answers(runtime: str) -> bool:
    if not shutil.which(runtime):
        return False
    import subprocess
    try:
        return subprocess.run([runtime, "info"], capture_output=True, timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


@main_group.command("hpl")
@cluster_options
@click.option("--nodes", "node_counts", help="Worker counts to run HPL on, e.g. 1,2,4 (default 1, 2, 4, ... up to --workers).")
@click.option("--n", "problem", type=click.IntRange(1), default=None,
              help="Problem size N (default: Baun's Eq. 2 from the nodes' memory and --memory-fraction).")
@click.option("--nb", default="32", show_default=True, help="Block size NB, or 'sweep' to try 16-256 on a small N first.")
@click.option("--memory-fraction", type=click.FloatRange(0, 1, min_open=True), default=0.8, show_default=True,
              help="R of Eq. 2: the share of the nodes' memory the matrix fills.")
@click.option("--ranks-per-node", type=click.IntRange(1, 256), default=None, help="MPI ranks per node (default: the board's cores).")
@click.option("--repetitions", type=click.IntRange(1, 100), default=1, show_default=True)
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=Path("results"), show_default=True)
@click.option("--inventory", "inventory_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Run on the workers of this YAML inventory over SSH (hpcc and OpenMPI installed with apt-get "
                   "where missing); mpirun runs on this host, so the boards must reach it as it reaches them.")
@KNOWN_HOSTS
@ACCEPT_NEW_HOST_KEYS
@monitor_options
def hpl_command(name, workers, board, storage, preset, backend, subnet, disk_size, timeout, scale_factor, node_counts,
                problem, nb, memory_fraction, ranks_per_node, repetitions, results, inventory_file, known_hosts,
                accept_new_host_keys, sample_hz, no_sampling, idle_baseline, power_file):
    """High Performance Linpack (Debian's hpcc) with OpenMPI across 1, 2, 4 ... workers: Rmax, Rpeak,
    efficiency, speedup and Gflops per watt, every run stored (Baun 2016, Table 7)."""
    from .workloads import hpl, mpi
    from .workloads.base import RunContext
    check_local_programs(mpi.LAUNCHER)
    spec, boards, monitor = _bare_nodes(name, workers, board, storage, preset, backend, subnet, disk_size, scale_factor,
                                        inventory_file, known_hosts, accept_new_host_keys,
                                        _monitor_settings(None, sample_hz, no_sampling, idle_baseline, power_file))
    workers = spec.workers
    counts = [int(c) for c in _csv(node_counts)] if node_counts else [c for c in (1, 2, 4, 8, 16, 32, 64) if c <= workers]
    if any(c < 1 or c > workers for c in counts):
        raise SbclabError(f"--nodes {node_counts} asks for more workers than the cluster's {workers}.",
                          f"Give counts between 1 and {workers}, or more workers.")
    if nb != "sweep" and not nb.isdigit():
        raise SbclabError(f"--nb {nb} is not a block size.", "Give a positive integer such as 32, or 'sweep'.")
    store = ResultsStore(results)
    runs = []
    if boards is not None:
        suite.preflight_boards(spec, boards, None, None, _say, hadoop=False)
    # Bare nodes: HPL needs MPI and the nodes' memory, not Hadoop's daemons.
    with suite.nodes_for(spec, _say, boards=boards) as cluster:
        if boards is not None:
            _say("checking hpcc and OpenMPI on the boards")
            cluster.backend.ensure_programs({"hpcc": "hpcc", **mpi.ON_NODES})
        ctx = RunContext(cluster=cluster, store=store, progress=_say, monitor=monitor)
        all_workers = list(cluster.spec.worker_nodes)
        block = int(nb) if nb != "sweep" else None
        if block is None:
            trials = []
            for candidate in hpl.BAUN_NB_SWEEP:
                small = min(problem or 10**9, hpl.problem_size(min(w.memory_bytes for w in all_workers) / 2**30,
                                                                len(all_workers), memory_fraction, candidate) // 4)
                small = max(candidate, small // candidate * candidate)
                _say(f"NB sweep: N = {small}, NB = {candidate}")
                trial = hpl.run(ctx, all_workers, n=small, nb=candidate, ranks_per_node=ranks_per_node)
                runs.append(trial)
                if trial.valid:
                    trials.append((trial.result["rmax_gflops"], candidate))
            if not trials:
                raise SbclabError("No NB of the sweep gave a valid HPL run.", f"Read the hpcc logs under {results}/logs.")
            block = max(trials)[1]
            _say(f"NB = {block} gave the most Gflops")
        for count in counts:
            for repetition in range(1, repetitions + 1):
                _say(f"HPL on {count} worker(s), repetition {repetition}")
                runs.append(hpl.run(ctx, all_workers[:count], n=problem, nb=block, fraction=memory_fraction,
                                    ranks_per_node=ranks_per_node, repetition=repetition))
    _print_summary(store, {r.run_id for r in runs})
    if not all(r.valid for r in runs):
        sys.exit(1)


def _csv(value):
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@main_group.command("bench")
@click.argument("experiment_file", required=False, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--workloads", help="Comma-separated, e.g. wordcount,terasort (see 'sbclab bench --list').")
@click.option("--engines", help="hadoop, spark or both (comma-separated).")
@click.option("--workers", "workers_", help="Worker counts, e.g. 1,2,4.")
@click.option("--sizes", help="Data sizes, e.g. 64MB,256MB.")
@click.option("--storage", help="Storage profiles, e.g. nvme,microsd.")
@click.option("--presets", help="stock, paper or both.")
@click.option("--profile", "board", help="Board profile of every node.")
@click.option("--repetitions", type=click.IntRange(1, 1000), help="Runs per cell (default 5).")
@click.option("--name", help="Cluster name.")
@click.option("--backend", type=click.Choice(cluster_spec.BACKENDS), default=None)
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=Path("results"), show_default=True,
              help="Results directory; cells already stored there and valid are skipped.")
@click.option("--dry-run", is_flag=True, help="Check the experiment and print its cells without running anything.")
@click.option("--list", "list_workloads", is_flag=True, help="List the workloads and their parameters.")
@click.option("--inventory", "inventory_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Run on the boards of this YAML inventory over SSH: a cell with N workers uses the master and "
                   "the first N workers; board and storage come from the inventory.")
@KNOWN_HOSTS
@ACCEPT_NEW_HOST_KEYS
@click.option("--dist-dir", default=None, help="Where Hadoop and Spark live on every board (see 'cluster up --help').")
@monitor_options
def bench_command(experiment_file, workloads, engines, workers_, sizes, storage, presets, board, repetitions, name,
                  backend, results, dry_run, list_workloads, inventory_file, known_hosts, accept_new_host_keys, dist_dir,
                  sample_hz, no_sampling, idle_baseline, power_file):
    """Run an experiment: engines x workloads x workers x sizes x storage x presets x repetitions."""
    from .experiments import display as progress_display, model, runner
    from .workloads import WORKLOADS
    if list_workloads:
        for w in WORKLOADS.values():
            params = ", ".join(f"{k}={v}" for k, v in w.defaults().items())
            console.print(f"[bold]{w.name}[/bold]: {w.description}" + (f" [dim]({params})[/dim]" if params else ""))
        return
    raw = {}
    if experiment_file:
        import yaml
        raw = yaml.safe_load(experiment_file.read_text()) or {}
        if not isinstance(raw, dict):
            raise SbclabError(f"{experiment_file} does not describe an experiment.", "See examples/experiments/.")
    given = {"workloads": _csv(workloads), "engines": _csv(engines),
             "workers": [int(w) for w in _csv(workers_)] if workers_ else None,
             "sizes": _csv(sizes), "storage": _csv(storage), "presets": _csv(presets), "repetitions": repetitions}
    raw.update({k: v for k, v in given.items() if v is not None})
    cluster = dict(raw.get("cluster") or {})
    cluster.update({k: v for k, v in {"board": board, "name": name, "backend": backend}.items() if v is not None})
    boards = None
    if inventory_file is not None:
        hosts = inventory.load(inventory_file)
        first = cluster_spec.from_inventory(hosts.first_workers(1))
        cluster.setdefault("board", first.board)
        raw.setdefault("storage", [first.storage])
        cluster["backend"] = "ssh"
        boards = lifecycle.boards_settings(hosts, known_hosts, accept_new_host_keys, dist_dir)
    raw["cluster"] = cluster
    monitor = _monitor_settings(raw.get("monitor"), sample_hz, no_sampling, idle_baseline, power_file)
    if boards is not None:
        monitor = suite.with_inventory_power(monitor, boards)
    raw["monitor"] = monitor.model_dump(exclude_defaults=True)
    if "workloads" not in raw:
        raise SbclabError("No workloads given.", "Give an experiment file or --workloads (see 'sbclab bench --list').")
    experiment = model.parse(raw, str(experiment_file or "the command line"))
    found = runner.prepare(experiment, results, say=_say, boards=boards)
    if dry_run:
        table = Table(title=f"{experiment.name}: {len(found.cells)} cells, {len(found.todo)} to run", title_justify="left")
        for col in ("cell", "key", "state"):
            table.add_column(col)
        for cell in found.cells:
            table.add_row(cell.label(), cell.key, "stored" if cell.key in found.done else "to run")
        console.print(table)
        return
    display = progress_display.ProgressDisplay(err_console)
    stored = runner.execute(found, results, display)
    if stored:
        _print_summary(ResultsStore(results), {r.run_id for r in stored})
    bad = [r for r in stored if not r.valid]
    if bad:
        err_console.print(f"[yellow]{len(bad)} run(s) failed or invalid; they are stored, excluded from statistics, "
                          f"and run again when the experiment is re-run.[/yellow]")
        sys.exit(1)


def _print_summary(store: ResultsStore, only: set[str] | None = None) -> None:
    runs = [r for r in store.runs() if only is None or r.run_id in only]
    console.print(summary.table(runs, title=f"Runs stored in {store.root}"))
    note = summary.caption(runs)
    if note:
        console.print(f"[yellow]{note}[/yellow]")


# --- results, stack, profiles --------------------------------------------------------------

@main_group.group()
def results():
    """Read stored runs."""


@results.command("summary")
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
def results_summary(results_dir):
    """The summary table of every run stored in RESULTS_DIR."""
    _print_summary(ResultsStore(results_dir))


@results.command("show")
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.argument("run_id")
def results_show(results_dir, run_id):
    """One run's measurements: per-node figures, intermediate data, phases, power, health flags."""
    store = ResultsStore(results_dir)
    found = store.runs_matching({run_id})
    if not found:
        raise SbclabError(f"No run {run_id} in {results_dir}.", f"See 'sbclab results summary {results_dir}' for run ids.")
    run = found[0]
    console.print(summary.table([run], title=f"{run.workload} on {run.engine}"))
    for table in summary.measurement_tables(run):
        console.print(table)
    for note in summary.measurement_notes(run):
        console.print(note)
    caption = summary.caption([run])
    if caption:
        console.print(f"[yellow]{caption}[/yellow]")


def _costs(kwh_price, currency, switch_usd, psu_usd):
    from .analysis.derived import Costs
    given = {k: v for k, v in (("kwh_price", kwh_price), ("currency", currency), ("switch_usd", switch_usd),
                               ("psu_usd", psu_usd)) if v is not None}
    return Costs(**given)


def cost_options(f):
    for option in reversed([
        click.option("--kwh-price", type=click.FloatRange(0), help="Price of one kWh for the yearly energy cost (default 0.25, Baun's Eq. 1)."),
        click.option("--currency", help="Currency of --kwh-price (default EUR)."),
        click.option("--switch-usd", type=click.FloatRange(0), help="Price of the cluster's switch in USD (default 20)."),
        click.option("--psu-usd", type=click.FloatRange(0), help="Price of one power supply in USD (default 12)."),
    ]):
        f = option(f)
    return f


@main_group.command("report")
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Where to write report.html, report.json, summary.md and tables/*.csv (default RESULTS_DIR/report).")
@cost_options
def report_command(results_dir, out, kwh_price, currency, switch_usd, psu_usd):
    """The report of every run in RESULTS_DIR: statistics, verdicts, plots, the seeds side by side."""
    from .report import build, html
    report = build.build(results_dir, _costs(kwh_price, currency, switch_usd, psu_usd))
    written = html.write(report, out or Path(results_dir) / "report")
    for warning in report.warnings[:5]:
        _say(f"[yellow]{warning}[/yellow]")
    if len(report.warnings) > 5:
        _say(f"... and {len(report.warnings) - 5} more warnings in the report")
    for kind, path in written.items():
        console.print(f"{kind:12} {path}")


@main_group.command("doctor")
@click.option("--inventory", "inventory_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The boards, as a YAML inventory (examples/inventory.yml).")
@click.option("--workload", default="terasort", show_default=True, help="The workload whose disk need is checked.")
@click.option("--size", "size_bytes", default="1GB", show_default=True, callback=_size,
              help="Its data size: each worker needs its share of the input's replicas, intermediate data and output.")
@KNOWN_HOSTS
@ACCEPT_NEW_HOST_KEYS
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def doctor_command(inventory_file, workload, size_bytes, known_hosts, accept_new_host_keys, as_json):
    """Preflight of the boards in an inventory: reachable, Java, free space, RAM, clocks, hostname,
    governor, and on Pis throttling, temperature, power supply, fstrim and PCIe. Exits 1 on a blocker."""
    from .cluster import doctor, inventory, remote
    hosts = inventory.load(inventory_file)
    need = doctor.need_per_node(workload, size_bytes, len(hosts.workers))
    findings = doctor.examine(hosts, need, known_hosts or remote.DEFAULT_KNOWN_HOSTS, accept_new_host_keys)
    blocking = doctor.blockers(findings)
    if as_json:
        click.echo(json.dumps({"findings": doctor.as_dicts(findings), "blockers": len(blocking)}, indent=2))
    else:
        table = Table(title=f"Preflight of {inventory_file} ({workload} at {format_size(size_bytes)})", title_justify="left")
        for column in ("node", "check", "result", "finding", "fix"):
            table.add_column(column, overflow="fold")
        colour = {"ok": "green", "warning": "yellow", "blocker": "red"}
        for f in findings:
            table.add_row(f.node, f.check, f"[{colour[f.severity]}]{f.severity}[/]", f.finding, f.fix)
        console.print(table)
        console.print(f"{len(blocking)} blocker(s)" if blocking else "no blockers")
    if blocking:
        sys.exit(1)


@main_group.group("knobs", invoke_without_command=True)
@click.pass_context
def knobs_group(ctx):
    """The Raspberry Pi knobs the seeds turned: what each changes, where, and its risk. None is applied
    unless asked for: cluster knobs with --knob on 'cluster up' and 'run', firmware knobs with 'knobs apply'."""
    if ctx.invoked_subcommand is not None:
        return
    from .cluster import knobs
    table = Table(title="Pi knobs (documented; applied only when asked)", title_justify="left")
    for column in ("knob", "what", "change", "where", "reboot", "applied by", "source", "risk"):
        table.add_column(column, overflow="fold")
    for k in knobs.KNOBS:
        how = ("--knob" if k.name in knobs.CLUSTER_KNOBS else "knobs apply" if k.name in knobs.BOARD_KNOBS
               else "always (the master is a node of its own)")
        table.add_row(k.name, k.what, k.change, k.where, "yes" if k.reboot else "no", how, k.source, k.risk)
    console.print(table)


@knobs_group.command("apply")
@click.argument("knob_name", metavar="KNOB", type=click.Choice(["pcie-gen3", "overclock"]))
@click.option("--inventory", "inventory_file", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The boards, as a YAML inventory (examples/inventory.yml).")
@click.option("--hosts", default=None, help="Only these hosts of the inventory, comma-separated (default: all).")
@click.option("--revert", is_flag=True, help="Remove the knob's lines instead (the rest of config.txt is kept as it is).")
@KNOWN_HOSTS
def knobs_apply_command(knob_name, inventory_file, hosts, revert, known_hosts):
    """Write a firmware knob into each Raspberry Pi 5's config.txt (between sbclab's marker comments,
    the original kept as config.txt.sbclab-backup); it takes effect at the next boot. Runs record the
    knobs found on the boards at 'cluster up', marked when a board was not rebooted since."""
    from .cluster import knobs, remote
    inv = inventory.load(inventory_file)
    chosen = list(inv.hosts)
    if hosts:
        names = [h.strip() for h in hosts.split(",") if h.strip()]
        chosen = [inv.host(n) for n in names]
    connections = remote.connect(chosen, known_hosts or remote.DEFAULT_KNOWN_HOSTS)
    try:
        reachable = [c for c in connections.values() if isinstance(c, remote.Connection)]
        done = remote.in_parallel(reachable, lambda c: knobs.apply_on_board(c, knob_name, revert), lambda c: c.host.name)
    finally:
        for conn in connections.values():
            if isinstance(conn, remote.Connection):
                conn.close()
    table = Table(title=f"{'Reverting' if revert else 'Applying'} {knob_name}", title_justify="left")
    table.add_column("host")
    table.add_column("result", overflow="fold")
    failed = 0
    for host in chosen:
        got = connections[host.name] if isinstance(connections[host.name], SbclabError) else done[host.name]
        if isinstance(got, SbclabError):
            failed += 1
            table.add_row(host.name, f"[red]{got.message}[/red] {got.hint or ''}")
        else:
            table.add_row(host.name, got)
    console.print(table)
    if failed:
        sys.exit(1)


@main_group.command("compare")
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
def compare_command(results_dir):
    """Each cell of RESULTS_DIR beside the seeds' published cell with the same workload, engine, size,
    workers, board and medium; cells without one get the nearest published cells, said to be nearest."""
    from .analysis import reference
    from .report import build
    report = build.build(results_dir)
    table = Table(title="Your cells next to the published results (ratio = yours / published; above 1: slower)",
                  title_justify="left")
    for column in ("cell", "yours (s)", "published", "source", "ratio", "match"):
        table.add_column(column)
    for f in report.figures:
        k = f.cell.key
        ours = f.wall_time.mean if f.wall_time else None
        label = k.label() + (" [emulated]" if f.cell.emulated else "")
        exact = reference.matches(k.workload, k.engine, k.size_bytes or None, k.workers, k.board, k.storage)
        found = exact or reference.nearest(k.workload, k.engine, k.size_bytes or None, k.workers, k.board, k.storage)
        if not found:
            table.add_row(label, _fmt(ours), "—", "no published result for this workload and engine", "", "")
        for p in found:
            where = ", ".join(f"{d} {p.dimensions[d]}" for d in ("size", "workers", "board", "storage") if d in p.dimensions)
            table.add_row(label, _fmt(ours), f"{p.printed} {p.unit}", f"{p.source} ({where})",
                          _fmt(ours / p.seconds if ours and p.seconds else None, "{:.2f}"),
                          "same cell" if exact else "nearest, not the same")
    console.print(table)
    if report.emulated:
        console.print("[yellow]Your results are emulated: the ratios compare the emulation with real boards.[/yellow]")


def _fmt(value, fmt="{:.1f}"):
    return "—" if value is None else fmt.format(value)


@main_group.command("query")
@click.argument("sql")
@click.option("--results", "results_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="The results directory to query.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
def query_command(sql, results_dir, fmt):
    """SQL (DuckDB) over the stored runs: tables runs, nodes and published.

    \b
    Examples:
      sbclab query "SELECT workload, engine, count(*) AS n, avg(wall_time_s) FROM runs GROUP BY ALL"
      sbclab query "SELECT run_id, node, cpu_busy_pct_mean FROM nodes WHERE node <> 'master'"
      sbclab query "SELECT * FROM published WHERE workload = 'terasort' AND workers = 4"
      sbclab query "DESCRIBE runs"
    """
    import csv as csv_module
    from .analysis import query
    from .results.store import load_runs
    columns, rows = query.run_sql(load_runs(results_dir), sql)
    if fmt == "json":
        click.echo(json.dumps([dict(zip(columns, r)) for r in rows], indent=1, default=str))
    elif fmt == "csv":
        writer = csv_module.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
    else:
        table = Table()
        for column in columns:
            table.add_column(column)
        for row in rows:
            table.add_row(*("" if v is None else str(v) for v in row))
        console.print(table)


@main_group.group()
def stack():
    """The Hadoop and Spark distributions sbclab deploys."""


@stack.command("fetch")
@click.option("--refresh", is_flag=True, help="Fetch again even if the cache looks complete.")
def stack_fetch(refresh):
    """Assemble Hadoop and Spark from Maven Central into the cache (once), build sbclab's Spark jobs."""
    dist = distribution.fetch(refresh=refresh)
    distribution.installed()
    for key, value in dist.versions().items():
        console.print(f"{key}: {value}")
    console.print(f"hadoop: {dist.hadoop_home}\nspark: {dist.spark_home}\njobs: {dist.jobs_jar}")


@main_group.group("profiles")
def profiles_group():
    """Board and storage profiles."""


@profiles_group.command("list")
def profiles_list():
    """Every board and storage profile (shipped and the user's), one line each."""
    boards = Table(title="Boards", title_justify="left")
    for col in ("name", "description", "cores", "GHz", "RAM GiB", "idle W", "load W", "NIC Mb/s", "USD", "media"):
        boards.add_column(col)
    for b in profiles.boards().values():
        boards.add_row(b.name, b.description, str(b.cores), f"{b.clock_ghz:g}", f"{b.ram_gib:g}", _opt(b.idle_watts),
                       _opt(b.load_watts), f"{b.nic_mbps:g}", f"{b.price_usd:g}", ", ".join(b.storage_interfaces))
    console.print(boards)
    media = Table(title="Storage (sequential MB/s at the largest record size, 4 KB IOPS; per board measured in)",
                  title_justify="left")
    for col in ("name", "interface", "board", "read MB/s", "write MB/s", "read IOPS", "write IOPS"):
        media.add_column(col)
    for s in profiles.storages().values():
        for board_name, f in s.on_board.items():
            media.add_row(s.name, s.interface, board_name, f"{f.seq_read:g}", f"{f.seq_write:g}", f"{f.read_iops:.0f}",
                          f"{f.write_iops:.0f}")
    console.print(media)
    console.print(f"Aliases: {', '.join(f'{k} = {v}' for k, v in profiles.STORAGE_ALIASES.items())}. "
                  f"Add your own as YAML files in {profiles.user_dir()}/boards/ or {profiles.user_dir()}/storage/.")


def _opt(value) -> str:
    return "-" if value is None else f"{value:g}"


@profiles_group.command("show")
@click.argument("name")
def profiles_show(name):
    """One profile, every figure with its source."""
    import yaml
    if name in profiles.boards():
        kind, profile = "board", profiles.board(name)
    else:
        kind, profile = "storage", profiles.storage(name)
    data = profile.model_dump(exclude_none=True, exclude_defaults=False)
    sources = data.pop("sources", {})
    console.print(f"[bold]{kind} {profile.name}[/bold]")
    console.print(yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip())
    if sources:
        console.print("[bold]sources[/bold]")
        for field, source in sources.items():
            console.print(f"  {field}: {source}")


@main_group.command("calibrate")
@click.option("--force", is_flag=True, help="Measure again even if this host's figures are cached.")
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True,
              help="Cluster size the shaping table is computed for.")
def calibrate_command(force, workers):
    """Measure this host (sysbench, fio, iperf3) and show the shaping of each profile's emulated nodes."""
    host = calibration.current(progress=_say, remeasure=force)
    console.print(f"host {host.cpu_model}, {host.cores} cores, kernel {host.kernel}, measured {host.measured_at:%Y-%m-%d %H:%M} UTC")
    console.print("sysbench events/s per core: " + ", ".join(f"--cpu-max-prime={p}: {v[1]:.6g}" for p, v in host.sysbench.items()))
    console.print(f"disk ({host.disk_path}): read {host.disk.seq_read_mb_s:.0f} MB/s, write {host.disk.seq_write_mb_s:.0f} MB/s, "
                  f"4K IOPS read {host.disk.rand_read_iops:.0f}, write {host.disk.rand_write_iops:.0f}; "
                  f"veth link {host.veth_mbps or 0:.0f} Mb/s")
    table = Table(title=f"Shaping of one node in a cluster of master + {workers} workers", title_justify="left")
    for col in ("board", "storage", "factor", "limited by", "host cores per board core", "CPU quota (cores)",
                "disk read/write MB/s", "IOPS r/w", "link Mb/s", "memory GiB"):
        table.add_column(col)
    for b in profiles.boards().values():
        for s in profiles.storages().values():
            if s.interface not in b.storage_interfaces or not (s.measured_on(b.io_like or b.name)):
                continue
            try:
                shaped = cluster_spec.build(backend="emulated", board=b.name, storage=s.name, workers=workers,
                                            calibration=host)
            except SbclabError as err:
                table.add_row(b.name, s.name, "-", err.message)
                continue
            n = shaped.worker_nodes[0]
            table.add_row(b.name, s.name, f"{shaped.scale.factor:.3g}", shaped.scale.limited_by, f"{shaped.scale.core_speed:.3g}",
                          f"{n.cpu_cores:.3g}", f"{n.disk_read_bytes_s / 1e6:.3g}/{n.disk_write_bytes_s / 1e6:.3g}",
                          f"{n.disk_read_iops:.0f}/{n.disk_write_iops:.0f}", f"{n.link_mbit_s:.3g}", f"{n.memory_bytes / 2**30:.2f}")
    console.print(table)


@main_group.group("data")
def data_group():
    """Input data for the workloads."""


@data_group.command("generate")
@click.option("--bytes", "size", callback=_size, required=True, help="How much to write, e.g. 1GB; whole lines only.")
@click.option("--seed", type=int, default=0, show_default=True, help="The same seed gives the same bytes.")
@click.option("--first-variant", type=click.IntRange(0), default=0, show_default=True,
              help="Where in the sequence of block variants to start (parts written in parallel use disjoint ranges).")
@click.option("--block-bytes", callback=_size, default=None,
              help="Rows rendered once and rewritten per copy (default 32MiB); part of what makes the output.")
@click.option("--source", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="A real airline CSV (e.g. 2006.csv) to append to itself instead of generating rows.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File to write (default: standard output).")
@click.option("--header", is_flag=True, help="Start with the ASA column names (the seeds' inputs did not strip it).")
def data_generate(size, seed, first_variant, block_bytes, source, output, header):
    """Airline-schema CSV (the 29 ASA Data Expo columns), deterministic for a seed."""
    with (atomic.open_for_write(output) if output else nullcontext(sys.stdout.buffer)) as out:
        if header:
            out.write((airline.HEADER + "\n").encode())
            size -= len(airline.HEADER) + 1
        if source:
            airline.append_source(source, out, size)
        else:
            airline.AirlineGenerator(seed=seed, block_bytes=block_bytes or airline.DEFAULT_BLOCK_BYTES).write(
                out, size, first_variant)


def main() -> None:
    try:
        main_group(standalone_mode=False)
    except SbclabError as err:
        err_console.print(f"[red]error:[/red] {err.message}")
        if err.hint:
            err_console.print(err.hint)
        sys.exit(2)
    except click.exceptions.Abort:
        err_console.print("interrupted; everything sbclab started was stopped and removed.")
        sys.exit(130)
    except KeyboardInterrupt:
        err_console.print("interrupted; everything sbclab started was stopped and removed.")
        sys.exit(130)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)


if __name__ == "__main__":
    main()
