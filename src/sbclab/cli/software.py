"""What sbclab works with: `sbclab stack fetch`, `profiles list|show` and `calibrate`."""

from pathlib import Path

import click
import yaml

from .. import profiles
from ..analysis import calibration_check
from ..cluster import calibration, spec as cluster_spec
from ..errors import SbclabError
from ..results.store import ResultsStore
from ..stack import distribution, versions as stack_versions
from .output import console, say, table


@click.group("stack")
def stack_group():
    """The Hadoop and Spark distributions sbclab deploys."""


@stack_group.command("fetch")
@click.option("--stack", "names", default="all", show_default=True,
              help="Which stacks, comma-separated ('sbclab stack list'); all = every stack that runs here.")
@click.option("--refresh", is_flag=True, help="Fetch again even if the cache looks complete.")
def stack_fetch(names, refresh):
    """Assemble each stack's Hadoop and Spark from Maven Central into the cache (once per version) and
    build sbclab's jobs against it."""
    chosen = stack_versions.runnable() if names == "all" else list(dict.fromkeys(n.strip() for n in names.split(",") if n.strip()))
    for name in chosen:
        stack_versions.check(name)
    say(f"stack{'s' if len(chosen) > 1 else ''} {', '.join(chosen)}: fetching what the cache lacks"
        f"{', side by side' if len(chosen) > 1 else ''}")
    for dist in distribution.fetch_all(chosen, refresh=refresh, say=say):
        distribution.installed(dist.stack.name)
        console.print(", ".join(f"{key} {value}" for key, value in dist.versions().items()))
        console.print(f"  hadoop: {dist.hadoop_home}\n  spark: {dist.spark_home}\n  jobs: {dist.jobs_jar}")


@stack_group.command("list")
def stack_list():
    """Every named stack: its versions, the Java it runs on, whether it is fetched."""
    rows = []
    for stack in stack_versions.STACKS.values():
        try:
            distribution.require_fetched(distribution.installed(stack.name, check=False))
            state = "fetched"
        except SbclabError:
            state = "not fetched ('sbclab stack fetch')"
        rows.append([stack.name + (" (default)" if stack.name == stack_versions.DEFAULT else ""), stack.hadoop,
                     f"{stack.spark} (Scala {stack.scala})", ", ".join(map(str, stack.java)), stack.description, state])
    console.print(table("Stacks", ["name", "Hadoop", "Spark", "Java", "what", "here"], rows))


@click.group("profiles")
def profiles_group():
    """Board and storage profiles."""


def _opt(value) -> str:
    return "-" if value is None else f"{value:g}"


@profiles_group.command("list")
def profiles_list():
    """Every board and storage profile (shipped and the user's), one line each."""
    console.print(table("Boards", ["name", "description", "cores", "GHz", "RAM GiB", "idle W", "load W", "NIC Mb/s",
                                   "USD", "media"],
                        [[b.name, b.description, str(b.cores), f"{b.clock_ghz:g}", f"{b.ram_gib:g}", _opt(b.idle_watts),
                          _opt(b.load_watts), f"{b.nic_mbps:g}", f"{b.price_usd:g}", ", ".join(b.storage_interfaces)]
                         for b in profiles.boards().values()]))
    console.print(table("Storage (sequential MB/s at the largest record size, 4 KB IOPS; per board measured in)",
                        ["name", "interface", "board", "read MB/s", "write MB/s", "read IOPS", "write IOPS"],
                        [[s.name, s.interface, board_name, f"{f.seq_read:g}", f"{f.seq_write:g}", f"{f.read_iops:.0f}",
                          f"{f.write_iops:.0f}"]
                         for s in profiles.storages().values() for board_name, f in s.on_board.items()]))
    console.print(f"Aliases: {', '.join(f'{k} = {v}' for k, v in profiles.STORAGE_ALIASES.items())}. "
                  f"Add your own as YAML files in {profiles.user_dir()}/boards/ or {profiles.user_dir()}/storage/.")


@profiles_group.command("show")
@click.argument("name")
def profiles_show(name):
    """One profile, every figure with its source."""
    if name in profiles.boards():
        kind, profile = "board", profiles.board(name)
    else:
        kind, profile = "storage", profiles.storage(name)
    data = profile.model_dump(exclude_none=True, exclude_defaults=False)
    sources = data.pop("sources", {})
    data.pop("derived", None)
    console.print(f"[bold]{kind} {profile.name}[/bold]")
    console.print(yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip())
    if sources:
        console.print("[bold]sources[/bold]")
        for field, source in sources.items():
            console.print(f"  {field}: {source}")
    if profile.derived:
        console.print("[bold]derived (no seed prints these figures)[/bold]")
        for field, found in profile.derived.items():
            console.print(f"  {field}: {found.source}")
            console.print(f"    how far off: {found.uncertainty}")


@click.command("calibrate")
@click.option("--force", is_flag=True, help="Measure again even if this host's figures are cached.")
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True,
              help="Cluster size the shaping table is computed for.")
@click.option("--check", is_flag=True,
              help="Measure nothing: judge the stored runs of 'sbclab micro --benchmarks cpu,7zip,memory' on emulated "
                   "nodes against their boards' published 7-Zip and memory figures times the run's factor.")
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=Path("results"),
              show_default=True, help="With --check: the results directory whose runs are judged.")
def calibrate_command(force, workers, check, results):
    """Measure this host (sysbench, fio, iperf3) and show the shaping of each profile's emulated nodes;
    with --check, whether that shaping holds for 7-Zip and the memory too."""
    if check:
        if not results.is_dir():
            raise SbclabError(f"There is no results directory {results}.",
                              "Give the one 'sbclab micro' wrote to (--results), or run 'sbclab micro --benchmarks "
                              "cpu,7zip,memory' first.")
        runs = [r for r in ResultsStore(results).runs() if r.workload in calibration_check.WORKLOADS]
        if not print_calibration_check(runs):
            raise SbclabError(f"No valid emulated run in {results} has a figure a board publishes.",
                              "Run 'sbclab micro --benchmarks cpu,7zip,memory --repetitions 3' on an emulated cluster of "
                              "a board with 7-Zip or memory figures ('sbclab profiles show BOARD').")
        return
    host = calibration.current(progress=say, remeasure=force)
    console.print(f"host {host.cpu_model}, {host.cores} cores, kernel {host.kernel}, "
                  f"measured {host.measured_at:%Y-%m-%d %H:%M} UTC")
    console.print("sysbench events/s per core: " + ", ".join(f"--cpu-max-prime={p}: {v[1]:.6g}"
                                                           for p, v in host.sysbench.items()))
    console.print(f"disk ({host.disk_path}): read {host.disk.seq_read_mb_s:.0f} MB/s, write {host.disk.seq_write_mb_s:.0f} "
                  f"MB/s, 4K IOPS read {host.disk.rand_read_iops:.0f}, write {host.disk.rand_write_iops:.0f}; "
                  f"veth link {host.veth_mbps or 0:.0f} Mb/s")
    rows = []
    for r in cluster_spec.shaping(host, workers):
        if "refused" in r:
            rows.append([r["board"], r["storage"], "-", r["refused"], "", "", "", "", "", "", ""])
            continue
        rows.append([r["board"], r["storage"], f"{r['factor']:.3g}", r["limited_by"], f"{r['core_speed']:.3g}",
                     f"{r['cpu_cores']:.3g}", f"{r['disk_read_mb_s']:.3g}/{r['disk_write_mb_s']:.3g}",
                     f"{r['read_iops']:.0f}/{r['write_iops']:.0f}", f"{r['link_mbit_s']:.3g}", f"{r['memory_gib']:.2f}",
                     f"{r['dirty_mb']:.0f}"])
    console.print(table(f"Shaping of one node in a cluster of master + {workers} workers",
                        ["board", "storage", "factor", "limited by", "host cores per board core", "CPU quota (cores)",
                         "disk read/write MB/s", "IOPS r/w", "link Mb/s", "memory GiB",
                         "dirty MB"], rows))


def print_calibration_check(runs) -> bool:
    """The calibration check of these runs as a table, with its test; False when nothing compares."""
    rows = calibration_check.compare(runs)
    for reason in calibration_check.missing(runs):
        say(f"[yellow]{reason}[/yellow]")
    if not rows:
        return False
    shown = calibration_check.figure_text
    console.print(table("Calibration check: emulated nodes against their boards' published figures x the factor",
                        ["board", "node", "figure", "published", "factor", "target", "measured", "speed / target",
                         "verdict", "why"],
                        [[c.board, c.node, c.figure, f"{shown(c.published)} {c.unit}", f"{c.factor:.3g}", shown(c.target),
                          shown(c.measured.value) + (f" [{shown(c.measured.ci_low)}-{shown(c.measured.ci_high)}]"
                                                     if c.measured.ci_low is not None else ""),
                          c.ratio.text(), c.verdict, c.detail] for c in rows], fold=True))
    low, high = calibration_check.band()
    console.print(f"speed / target: the node's speed over the scaled board's (latency: the target over the measured), "
                  f"1 where sysbench's calibration holds; a verdict holds inside {low:.2f}-{high:.2f}, margin "
                  f"{calibration_check.MARGIN_WHY}.")
    return True
