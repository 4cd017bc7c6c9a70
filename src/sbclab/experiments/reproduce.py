"""The seeds' tables and figures as built-in experiments (reproductions.yaml), and what this host
can run of each: worker counts it cannot hold are refused with the reason, and on an emulated
cluster the seed's data sizes are scaled down by the experiment's one scale factor, so a run takes
about as long here as the seed's took on its boards and the ratios between sizes are kept."""

import copy
import functools
import math
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from .. import workloads as registry
from ..cluster import calibration
from ..cluster.nodes import default_backend
from ..errors import SbclabError
from ..stack import lifecycle, versions as stack_versions
from ..units import format_size, parse_size
from . import plan
from .model import ClusterSettings, Experiment, parse

CLUSTER_NAME = "repro"
MIN_SIZE = 2**20  # also HDFS's smallest block (dfs.namenode.fs-limits.min-block-size)
SEEDS_BLOCK_SIZE = 128 * 2**20  # HDFS's default, which the seeds kept
CHECKSUM_CHUNK = 512  # dfs.bytes-per-checksum: a block size is a multiple of it


@dataclass(frozen=True)
class Table:
    seed: str
    key: str
    description: str
    runs: str  # here | boards | cannot
    reason: str = ""
    reference: str | None = None
    experiment: dict[str, Any] | None = None
    boards: tuple[str, ...] = ()
    layout: dict[str, Any] | None = None
    shapes: tuple[str, ...] = ()
    circular: bool = False
    # What differs for one board of the table (the 2021 seed's desktop ran as one node, master and worker).
    per_board: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return {"here": "runs here", "boards": "needs boards", "cannot": "cannot yet"}[self.runs]


@dataclass(frozen=True)
class Seed:
    key: str
    names: tuple[str, ...]
    citation: str
    board: str
    tables: dict[str, Table]
    # The seed's own versions, which its cells run on (recorded in every run).
    stack: str = stack_versions.FIRST


@functools.lru_cache(maxsize=1)
def seeds() -> dict[str, Seed]:
    raw = yaml.safe_load(resources.files(__package__).joinpath("reproductions.yaml").read_text())
    found = {}
    for key, seed in raw.items():
        tables = {name: Table(seed=key, key=name, description=t["description"], runs=t["runs"],
                              reason=t.get("reason", ""), reference=t.get("reference"),
                              experiment=t.get("experiment"), boards=tuple(t.get("boards", ())),
                              layout=t.get("layout"), shapes=tuple(t.get("shapes", ())),
                              circular=bool(t.get("circular")), per_board=dict(t.get("per_board") or {}))
                  for name, t in seed["tables"].items()}
        found[key] = Seed(key, tuple(str(n) for n in seed["names"]), seed["citation"], seed["board"], tables,
                          seed.get("stack", stack_versions.FIRST))
    return found


def seed(name: str) -> Seed:
    for found in seeds().values():
        if name.lower() in found.names:
            return found
    raise SbclabError(f"Unknown seed '{name}'.",
                      f"Choose one of: {', '.join(s.names[0] for s in seeds().values())} "
                      "(see 'sbclab reproduce --list').")


def tables(found: Seed, names: tuple[str, ...]) -> list[Table]:
    """The tables asked for (`table16`, `Table 16`, `16`), or all of the seed's."""
    if not names:
        return list(found.tables.values())
    chosen = []
    for name in names:
        key = name.lower().replace(" ", "")
        key = key if key in found.tables else f"table{key}"
        if key not in found.tables:
            raise SbclabError(f"{found.names[0]} has no table or figure '{name}'.",
                              f"Choose from: {', '.join(found.tables)}.")
        chosen.append(found.tables[key])
    return chosen


@dataclass
class Planned:
    """What of one table this host runs: its experiments (one per board) and what was changed or left out."""

    table: Table
    experiments: list[Experiment] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    sizes: dict[int, int] = field(default_factory=dict)  # the seed's size -> the size it runs at here
    work: float = 1.0
    parameters: dict[str, Any] = field(default_factory=dict)  # the workloads' parameters as run
    scale: float | None = None  # the one emulation scale factor of the table's runs (None: not emulated)


def _host_refusal(raw: dict[str, Any], workers: int, backend: str) -> str | None:
    """Why this host cannot hold `workers` workers of the experiment's board, or None."""
    cluster = raw.get("cluster", {})
    storage = (raw.get("storage") or ["nvme"])[0]
    try:
        spec = plan.spec_for(name=cluster.get("name", CLUSTER_NAME), workers=workers, board=cluster["board"],
                             storage=storage, backend=backend, subnet=cluster.get("subnet", ClusterSettings().subnet),
                             layout=(raw.get("layouts") or ["separate-master"])[0],
                             master_board=cluster.get("master_board"), master_storage=cluster.get("master_storage"))
        choices = plan.choices_for(preset=(raw.get("presets") or ["paper"])[0],
                                   stack=(raw.get("stacks") or [stack_versions.FIRST])[0],
                                   spark_manager=cluster.get("spark_manager", "yarn"))
        if plan.needs_stack(parse(raw)):
            lifecycle.check(spec, choices, plan.needed_engines([(w, e) for w in raw.get("workloads", [])
                                                                for e in raw.get("engines", [])],
                                                               standalone=choices.spark_manager == "standalone"))
    except SbclabError as err:
        return err.message
    return None


def plan_table(table: Table, seed_: Seed, *, repetitions: int, sizes: list[int] | None, backend: str | None,
               on_boards: bool, board: str | None = None, workers: list[int] | None = None,
               storage: list[str] | None = None, work: float = 1.0, monitor: dict[str, Any] | None = None,
               cluster: dict[str, str] | None = None, engines: list[str] | None = None,
               runtimes: list[str] | None = None) -> Planned:
    """The table's experiments as this host can run them. `work` < 1 runs that share of the seed's work
    inside each task (Pi's samples per map, the data in each HDFS block), keeping the seed's task
    counts so its waves and speedups keep their shape; `monitor`
    holds monitoring settings given over the table's own (the idle baseline, power sources); `cluster` the
    clusters' name and subnet (two reproductions side by side need their own)."""
    planned = Planned(table, work=work)
    if (cluster or {}).get("knobs"):
        planned.notes.append(f"cluster knobs {', '.join(cluster['knobs'])}: not the seed's settings (recorded in every run)")
    if table.runs != "here" and not (on_boards and table.runs == "boards"):
        planned.refused.append(table.reason or table.status)
        return planned
    backend = "ssh" if on_boards else (backend or default_backend())
    raws = []
    for board_name in (table.boards or (board or seed_.board,)):
        # A copy: the table's experiment is the cached seed data, shared by tables that name the same runs.
        raw = {**copy.deepcopy(table.experiment), "name": f"{seed_.names[0]} {table.key}",
               "cluster": {**(table.experiment or {}).get("cluster", {}), "name": CLUSTER_NAME, "board": board_name,
                           **({} if on_boards else {"backend": backend}), **(cluster or {})},
               "repetitions": repetitions, "stacks": [seed_.stack]}
        raw.update(copy.deepcopy(table.per_board.get(board_name, {})))
        if monitor:
            raw["monitor"] = {**raw.get("monitor", {}), **monitor}
        if workers:
            raw["workers"] = workers
        if runtimes:
            raw.setdefault("runtimes", ["native"])
        refusal = (_keep(raw, "engines", engines, "runs") or _keep(raw, "storage", storage, "runs it on")
                   or _keep(raw, "runtimes", runtimes, "runs"))
        if refusal:
            planned.refused.append(f"{board_name}: {refusal}")
            continue
        _one_board_each(raw)
        if work != 1.0:
            _scale_work(raw, work, planned)
        if not on_boards:
            kept = []
            for count in raw.get("workers", [2]):
                refusal = _host_refusal(raw, count, backend)
                if refusal:
                    planned.refused.append(f"{count} workers of {board_name}: {refusal}")
                else:
                    kept.append(count)
            if not kept:
                continue
            raw["workers"] = kept
        raws.append(raw)
    if backend == "emulated" and len(raws) > 1:
        # Boards set side by side run at one scale, so their ratio is the boards' and not the emulation's.
        common = math.floor(min(_shared_factor(raw) for raw in raws) * 1e4) / 1e4  # as the limit is checked
        for raw in raws:
            raw["cluster"]["scale"] = common
        planned.notes.append(f"every board emulated at one scale factor, {common:.4g}")
        planned.scale = common
    elif backend == "emulated" and raws:
        planned.scale = _shared_factor(raws[0])
    for raw in raws:
        if raw.get("sizes") and raw["sizes"] != [1]:
            seeds_sizes = [parse_size(s) if isinstance(s, str) else int(s) for s in raw["sizes"]]
            given = sizes
            if given and set(given) <= set(seeds_sizes):
                # Some of the seed's own sizes: a share of the table, scaled as the whole table would be.
                seeds_sizes, given = [s for s in seeds_sizes if s in given], None
                planned.notes.append("the seed's sizes " + ", ".join(format_size(s) for s in seeds_sizes) + " only")
            # TestDFSIO: the 2026 seed printed the size of each of its files; sbclab's size is the total.
            files = (raw.get("parameters", {}).get(raw["workloads"][0], {}).get("files", 1)
                     if (table.layout or {}).get("size") == "per-file" else 1)
            totals = [s * files for s in seeds_sizes]
            if given:
                ran = given
            else:
                factor = _shared_factor(raw) if backend == "emulated" else 1.0
                shrink = factor * work
                ran = [max(MIN_SIZE, int(t * shrink) // MIN_SIZE * MIN_SIZE) for t in totals]
                if shrink != 1.0:
                    # The block size scaled with the data, so a job has as many map tasks (and waves per
                    # node) as the seed's had at its size.
                    block = max(MIN_SIZE, int(SEEDS_BLOCK_SIZE * shrink) // CHECKSUM_CHUNK * CHECKSUM_CHUNK)
                    raw["cluster"]["settings"] = {"hdfs-site": {"dfs.blocksize": str(block)}}
                    raw["cluster"]["data_scale"] = min(1.0, shrink)
                    why = " and ".join(w for w in (f"the emulation's factor {factor:.4g}" if factor != 1.0 else "",
                                                   f"--work {work:g}" if work != 1.0 else "") if w)
                    planned.notes.append(f"the seed's sizes scaled by {why}: "
                                         + ", ".join(f"{format_size(a)} -> {format_size(b)}" for a, b in zip(totals, ran))
                                         + f"; the HDFS block size with them: {format_size(SEEDS_BLOCK_SIZE)} -> "
                                           f"{format_size(block)}")
                    differ = [(a, b) for a, b in zip(totals, ran)
                            if math.ceil(a / SEEDS_BLOCK_SIZE) != math.ceil(b / block)]
                    if differ:
                        why = (f"the block would be below HDFS's smallest ({format_size(MIN_SIZE)}): give a larger "
                               "--work" if block == MIN_SIZE else "the sizes run are whole MiB")
                        planned.notes.append(
                            "the seed's task counts are not kept: "
                            + ", ".join(f"{format_size(a)} has {math.ceil(b / block)} task(s) here, "
                                        f"{math.ceil(a / SEEDS_BLOCK_SIZE)} in the seed" for a, b in differ)
                            + f" ({why})")
            raw["sizes"] = ran
            planned.sizes = dict(zip(seeds_sizes, ran))
        planned.parameters = raw.get("parameters", {})
        planned.experiments.append(parse(raw, f"{seed_.names[0]} {table.key}"))
    planned.notes = list(dict.fromkeys(planned.notes))
    return planned


def _keep(raw: dict[str, Any], dimension: str, asked: list[str] | None, verb: str) -> str | None:
    """Only the values asked for of one of the experiment's dimensions (engines, media, runtimes); why not, where
    it has none of them."""
    if not asked:
        return None
    kept = [v for v in raw.get(dimension, []) if v in asked]
    if not kept:
        return f"the table {verb} {', '.join(raw.get(dimension, []))}, not {', '.join(asked)}"
    raw[dimension] = kept
    return None


def _one_board_each(raw: dict[str, Any]) -> None:
    """A node table gives one board's figure: its benchmarks run on the first worker, not on every node."""
    parameters = raw["parameters"] = {k: dict(v) for k, v in raw.get("parameters", {}).items()}
    for name in raw.get("workloads", []):
        if registry.get(name).engines == ("node",):
            parameters.setdefault(name, {}).setdefault("node", "worker1")


def on_this_host(table: Table, seed_: Seed) -> tuple[str, str]:
    """(status, why) of a table on this host's default backend: a table the emulator can run may still
    need more nodes than this host holds (the 2026 seed's 8-worker tables)."""
    if table.runs != "here":
        return table.status, table.reason
    if default_backend() == "emulated" and calibration.usable() is None:
        # A listing measures nothing: shaping nodes to a board needs this host's figures first.
        return table.status, "whether this host holds it is known once 'sbclab calibrate' has measured the host"
    planned = plan_table(table, seed_, repetitions=1, sizes=None, backend=None, on_boards=False)
    if not planned.experiments:
        return "not on this host", "; ".join(dict.fromkeys(planned.refused))
    if planned.refused:
        return "here in part", "not " + "; not ".join(dict.fromkeys(planned.refused))
    return table.status, ""


def _scale_work(raw: dict[str, Any], work: float, planned: Planned) -> None:
    """A share of the seed's work inside each of its tasks: Pi's samples per map (its maps, and with
    them its waves, stay the seed's), shorter timed node benchmarks."""
    parameters = raw["parameters"]
    for name in raw.get("workloads", []):
        given = parameters.setdefault(name, {})
        full = registry.get(name).parameters(None, given)
        if name == "pi" and isinstance(full.get("samples_per_map"), int):
            given["maps"] = full["maps"]
            given["samples_per_map"] = max(1, round(full["samples_per_map"] * work))
            planned.notes.append(f"{name}: the seed's {full['maps']} maps of {given['samples_per_map']:,} samples each "
                                 f"instead of {full['samples_per_map']:,} (--work {work:g}): its tasks and waves are "
                                 "the seed's, each task's work a share; a map's time is mostly its JVM's start-up")
        shortest = registry.get(name).shortest_timed_s
        for timed in ("seconds", "step_seconds"):  # a benchmark's time, or each step's of a ramp
            if isinstance(full.get(timed), (int, float)):
                given[timed] = min(full[timed], max(shortest, round(full[timed] * work)))
                if given[timed] != full[timed]:
                    floor = f", its shortest" if given[timed] == shortest and shortest > 1 else ""
                    planned.notes.append(f"{name}: measured for {given[timed]} s{floor} instead of {full[timed]} s "
                                         f"{'a step ' if timed == 'step_seconds' else ''}(--work {work:g}); its "
                                         "rates are the same, their spread wider")


def _shared_factor(raw: dict[str, Any]) -> float:
    """The one scale factor the experiment's shapes run at on this host."""
    found = plan.prepare(parse({**raw, "sizes": [MIN_SIZE]}), "/nonexistent")
    return min(spec.scale.factor for spec in found.specs.values())
