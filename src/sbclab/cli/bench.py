"""`sbclab bench`: an experiment from a file or from flags, run and resumable."""

from dataclasses import dataclass
from pathlib import Path

import click
import yaml

from .. import utf8, workloads as registry
from ..cluster import inventory, spec as cluster_spec
from ..errors import SbclabError
from ..experiments import model, plan
from ..experiments.display import ProgressDisplay
from ..analysis import estimate
from ..results.store import ResultsStore
from ..stack import versions as stack_versions
from ..units import format_duration
from ..workloads import hpl
from .options import HostKeys, Monitoring, bundle, host_key_options, monitor_options
from .values import counts, names
from .output import console, err_console, say, table
from .running import run_and_report


def _read(experiment_file: Path | None) -> dict:
    if experiment_file is None:
        return {}
    try:
        raw = yaml.safe_load(utf8.read(experiment_file)) or {}
    except (OSError, yaml.YAMLError) as err:
        raise SbclabError(f"Cannot read the experiment file {experiment_file}: {' '.join(str(err).split())}.",
                          "Give a readable YAML file; see examples/experiments/.") from err
    if not isinstance(raw, dict):
        raise SbclabError(f"{experiment_file} does not describe an experiment.", "See examples/experiments/.")
    return raw


def _variant(given: str) -> tuple[str, dict]:
    """'tuned=FILE' as a named variant: the settings of a file 'sbclab tune' wrote, or the file itself."""
    name, sep, path = given.partition("=")
    if not sep or not name.strip():
        raise click.BadParameter(f"{given!r} is not NAME=FILE (e.g. tuned=results/tuned-....yaml).",
                                 param_hint="--variant")
    if not path.strip():
        return name.strip(), {}
    raw = _read(Path(path))
    settings = raw.get("settings", raw)
    if not isinstance(settings, dict):
        raise SbclabError(f"{path} holds no job settings.", "Give a file 'sbclab tune' wrote, or a mapping of "
                          "file -> {property: value}.")
    return name.strip(), settings


def list_workloads() -> None:
    for w in registry.WORKLOADS.values():
        params = ", ".join(f"{k}={v}" for k, v in w.defaults().items())
        console.print(f"[bold]{w.name}[/bold] ({', '.join(w.engines)}): {w.description}"
                      + (f" [dim]({params})[/dim]" if params else ""))


@dataclass
class Matrix:
    """An experiment's dimensions given as flags, over those of its file."""

    workloads: str | None
    engines: str | None
    workers: list[int] | None
    sizes: str | None
    storage: str | None
    presets: str | None
    board: str | None
    repetitions: int | None
    name: str | None
    backend: str | None
    layouts: str | None
    runtimes: str | None
    stacks: str | None

    def over(self, raw: dict) -> dict:
        flags = {"workloads": names(self.workloads), "engines": names(self.engines), "workers": self.workers,
                 "sizes": names(self.sizes), "storage": names(self.storage), "presets": names(self.presets),
                 "repetitions": self.repetitions, "layouts": names(self.layouts), "runtimes": names(self.runtimes),
                 "stacks": names(self.stacks)}
        raw = {**raw, **{k: v for k, v in flags.items() if v is not None}}
        cluster = raw.get("cluster") or {}
        if not isinstance(cluster, dict):
            raise SbclabError("The experiment's cluster must be a mapping.", "See examples/experiments/.")
        raw["cluster"] = {**cluster, **{k: v for k, v in {"board": self.board, "name": self.name,
                                                          "backend": self.backend}.items() if v is not None}}
        return raw


matrix_options = bundle(Matrix, [
    click.option("--workloads", help="Comma-separated, e.g. wordcount,terasort (see 'sbclab bench --list')."),
    click.option("--engines", help="hadoop, spark or both (comma-separated); node and mpi for node benchmarks."),
    click.option("--workers", callback=counts, help="Worker counts, e.g. 1,2,4."),
    click.option("--sizes", help="Data sizes, e.g. 64MB,256MB."),
    click.option("--storage", help="Storage profiles, e.g. nvme,microsd."),
    click.option("--presets", help="stock, paper or both."),
    click.option("--profile", "board", help="Board profile of every node."),
    click.option("--repetitions", type=click.IntRange(1, 1000), help="Runs per cell (default 5)."),
    click.option("--name", help="Cluster name."),
    click.option("--backend", type=click.Choice(cluster_spec.BACKENDS), default=None),
    click.option("--layouts", help=f"Where the master's daemons run, comma-separated: {', '.join(cluster_spec.LAYOUTS)}."),
    click.option("--runtimes", help="native, container or both: the nodes' processes directly or in OCI containers."),
    click.option("--stacks", help="Named Hadoop and Spark versions, comma-separated (see 'sbclab stack list')."),
], "matrix")


def show_shapes(found: plan.Plan) -> None:
    """Each cluster shape with the scale it runs at and what limits that scale."""
    rows = []
    for shape, spec in found.specs.items():
        storage, preset, workers, layout, runtime, stack = shape
        own = found.own_scales.get(shape, spec.scale)
        emulated = spec.backend == "emulated"
        setup = " ".join(v for v in (layout, runtime, stack) if v not in ("separate-master", "native", stack_versions.FIRST))
        rows.append([f"{workers} x {spec.board}/{spec.storage}" + (f" {setup}" if setup else ""), preset,
                     f"{spec.scale.factor:.4g}" if emulated else "1 (real nodes)" if spec.backend == "ssh" else "-",
                     f"{spec.scale.memory_factor:.3g}" if emulated else "-",
                     f"{own.factor:.4g} ({own.limited_by})" if emulated else "-"])
    console.print(table("cluster shapes", ["workers", "preset", "scale factor", "memory factor",
                                           "largest on its own (limited by)"], rows))
    if found.shared_scale is not None:
        shared = found.shared_scale
        console.print(f"one scale for the whole experiment: {shared.factor:.4g} (memory {shared.memory_factor:.3g}), "
                      f"the largest every shape can have, set by {shared.set_by}; give cluster.scale to fix another.")


def _estimated_parameters(cell, spec) -> dict:
    """The cell's parameters, with HPL's problem size worked out as the run will (Eq. 2 on its nodes' memory)."""
    if cell.workload != "hpl" or cell.parameters.get("n"):
        return cell.parameters
    nb = cell.parameters.get("nb")
    nodes = int(cell.parameters.get("nodes") or cell.workers)
    memory = min(n.memory_bytes for n in spec.worker_nodes)
    n = hpl.problem_size(memory / 2**30, nodes, cell.parameters.get("memory_fraction") or hpl.DEFAULT_MEMORY_FRACTION,
                         nb if isinstance(nb, int) else hpl.DEFAULT_NB)
    return {**cell.parameters, "n": n}


def show_estimate(found: plan.Plan, results: Path) -> float:
    """Each cell still to run with its estimated time and where the estimate comes from, and the total
    (returned, in seconds)."""
    planned = [estimate.Planned(c.workload, c.engine, c.size_bytes, c.workers, c.board,
                                _estimated_parameters(c, found.specs[c.shape]),
                                found.specs[c.shape].scale.factor if found.specs[c.shape].backend == "emulated" else 1.0,
                                c.label()) for c in found.todo]
    store = ResultsStore(results)
    stored = list(store.runs()) if store.runs_dir.exists() else []
    names = {c.workload for c in found.todo}
    like = {name: stand_in for name in names if (stand_in := registry.get(name).estimated_like)}
    defaults = {name: registry.get(name).defaults() for name in names | set(like.values())}
    estimated = estimate.estimate(planned, stored, defaults, like)
    gap = estimate.between_runs(stored)
    console.print(table(f"estimate: {len(planned)} run(s) to do", ["cell", "scale", "estimate", "from"],
                        [[e.run.label, f"{e.run.scale_factor:.4g}", format_duration(e.seconds), e.source]
                         for e in estimated], fold=True))
    known = [e.seconds for e in estimated if e.seconds is not None]
    total = sum(known) + (gap.seconds * len(planned) if gap else 0)
    unknown = len(estimated) - len(known)
    console.print(f"total: about {format_duration(total)} for {len(known)} run(s)"
                  + (f" and {unknown} without an estimate" if unknown else "")
                  + (f", with {format_duration(gap.seconds)} between runs ({gap.source})" if gap else
                     ", not counting the time between runs (no stored runs to take it from)")
                  + f"; plus bringing up {len({c.shape for c in found.todo})} cluster shape(s).")
    return total


@click.command("bench")
@click.argument("experiment_file", required=False, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@matrix_options
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), default=Path("results"), show_default=True,
              help="Results directory; cells already stored there and valid are skipped.")
@click.option("--dry-run", is_flag=True, help="Check the experiment and print its cells without running anything.")
@click.option("--estimate", is_flag=True, help="Print how long each cell and the whole experiment will take, from "
              "the stored runs in --results and the seeds' published times, without running anything.")
@click.option("--list", "list_only", is_flag=True, help="List the workloads and their parameters.")
@click.option("--inventory", "inventory_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Run on the boards of this YAML inventory over SSH: a cell with N workers uses the master and "
                   "the first N workers; board and storage come from the inventory.")
@host_key_options
@click.option("--dist-dir", default=None, help="Where Hadoop and Spark live on every board (see 'cluster up --help').")
@click.option("--variant", "variant_files", multiple=True, metavar="NAME=FILE",
              help="Job settings to compare on one cluster, from a file 'sbclab tune' wrote (its settings) or a "
                   "mapping of file -> properties; 'NAME=' runs the cluster's own settings (repeatable).")
@monitor_options
def bench_command(experiment_file, matrix: Matrix, results, dry_run, estimate, list_only, inventory_file,
                  keys: HostKeys, dist_dir, variant_files, monitoring: Monitoring):
    """Run an experiment: engines x workloads x workers x sizes x storage x presets x repetitions."""
    if list_only:
        list_workloads()
        return
    raw = matrix.over(_read(experiment_file))
    if variant_files:
        raw["variants"] = {**(raw.get("variants") or {}), **dict(_variant(v) for v in variant_files)}
    access = None
    if inventory_file is not None:
        hosts = inventory.load(inventory_file)
        first = plan.board_spec_for(hosts, name="lab", workers=1)
        raw["cluster"].setdefault("board", first.board)
        raw.setdefault("storage", [first.storage])
        raw["cluster"]["backend"] = "ssh"
        access = keys.access(hosts)
    base = raw.get("monitor")
    if base is not None and not isinstance(base, dict):
        raise SbclabError(f"{experiment_file}: monitor must be a mapping.", "See docs/measurements.md.")
    raw["monitor"] = monitoring.settings(base).model_dump(exclude_defaults=True)
    if "workloads" not in raw:
        raise SbclabError("No workloads given.", "Give an experiment file or --workloads (see 'sbclab bench --list').")
    experiment = model.parse(raw, str(experiment_file or "the command line"))
    if dry_run or estimate:
        found = plan.prepare(experiment, results, say=say, boards=access)
        if dry_run:
            console.print(table(f"{experiment.name}: {len(found.cells)} cells, {len(found.todo)} to run",
                                ["cell", "key", "state"],
                                [[c.label(), c.key, "stored" if c.key in found.done else "to run"]
                                 for c in found.cells]))
        show_shapes(found)
        if estimate:
            show_estimate(found, results)
        return
    run_and_report(experiment, results, ProgressDisplay(err_console), access, dist_dir, purge_boards=True)
