"""Which boards to build a cluster of for a job: `sbclab plan`.

From the stored runs of a results directory and the seeds' published times, a model of the job's
time in node count and data size is fitted per board and medium (analysis/planning.py), and every
(board, medium, node count) is predicted: the fewest nodes that meet the deadline, with the
prediction's 95 % interval, the cluster's price and the job's energy, ranked. A board with no timed
cell of its own borrows the model of a measured board, its times divided by how much faster the
profiles' sysbench says its cores are, and says so. `--validate` shows how far the model is to be
trusted: fitted on part of the cells, it predicts the rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__, profiles
from ..analysis import planning, reference, tasks
from ..analysis.estimate import board_speed_ratio
from ..analysis.planning import Model, Observation, Prediction, Validation
from ..errors import SbclabError
from ..results.schema import RunRecord
from ..results.store import ResultsStore
from ..stack import sizing
from ..units import format_size, parse_size

WORKLOADS_WITH_INPUT = {"wordcount", "grep", "terasort", "sort", "teragen"}
MAP_MB = tasks.MAP_MB
DFSIO_FILES = 10  # the seeds' TestDFSIO tables: ten files of each size


def slots_per_node(board: str) -> int:
    """Tasks one worker of `board` runs at once: YARN's map-sized containers on it, at most one a core
    (the same rule for both engines: Spark's executors get the containers YARN offers)."""
    found = profiles.board(board)
    try:
        containers = sizing.worker_memory(int(found.ram_gib * 2**30)).containers_mb
    except SbclabError:
        return 1  # a board too small for YARN runs one task at a time (Spark standalone)
    return max(1, min(found.cores, containers // MAP_MB))


def task_count(workload: str, size: float, block_bytes: int = tasks.SEEDS_BLOCK_SIZE) -> int:
    """A job's tasks on the seeds' 128 MiB blocks: Pi's maps are its size; TestDFSIO's files."""
    if workload == "pi":
        return max(1, int(size))
    if workload.startswith("dfsio"):
        return DFSIO_FILES
    return max(1, math.ceil(size / block_bytes))


def _published_size(p: reference.Published) -> float | None:
    workload = p.dimensions.get("workload")
    if workload == "pi":
        return float(p.parameters.get("maps") or 0) or None
    if p.size_bytes is None:
        return None
    if p.size_meaning == "per-file":
        return float(p.size_bytes * int(p.parameters.get("files") or DFSIO_FILES))
    return float(p.size_bytes)


def published_observations() -> list[Observation]:
    """The seeds' wall times of cluster jobs that name their board, medium and worker count, each cell
    once (the 2021 seed's Table 20 repeats Table 14's RPi 4B column)."""
    found = []
    for p, sources in reference.once(reference.wall_times()):
        d = p.dimensions
        if not (d.get("engine") and d.get("board") and d.get("storage") and d.get("workers")):
            continue
        size = _published_size(p)
        if not size or d["board"] not in profiles.boards():
            continue
        found.append(Observation(d["workload"], d["engine"], d["board"], d["storage"], int(d["workers"]), size,
                                 task_count(d["workload"], size), slots_per_node(d["board"]), float(p.seconds),
                                 " + ".join(sources)))
    return found


def run_observation(run: RunRecord) -> Observation | None:
    """A stored run as a timed cell in board terms: on a cluster emulated at scale f, T seconds are
    T * f board-seconds of the same input (everything there runs f times slower), as estimate.py takes
    them; the run's own task count and slots."""
    if not run.headline or run.wall_time_s <= 0 or run.engine not in ("hadoop", "spark"):
        return None
    factor = run.scale.factor if run.cluster.emulated else 1.0
    if run.workload == "pi":
        size = float(run.parameters.get("maps") or 0)
    else:
        size = float(run.parameters.get("size_bytes") or 0)
    count = tasks.of_run(run) or (task_count(run.workload, size) if size else None)
    nodes = run.cluster.task_nodes
    per_node = [min(n.yarn_vcores or 1, max(1, (n.yarn_memory_mb or MAP_MB) // MAP_MB)) for n in nodes]
    if not size or not count or not per_node:
        return None
    return Observation(run.workload, run.engine, run.cluster.board, run.cluster.storage, run.cluster.workers, size,
                       count, min(per_node), run.wall_time_s * factor, run.run_id)


def stored_observations(results: Path | None) -> tuple[list[Observation], int]:
    """The results directory's timed cells, and how many of its runs could not serve as one."""
    if results is None:
        return [], 0
    runs = ResultsStore(results).runs()
    found = [o for o in (run_observation(r) for r in runs) if o is not None]
    return found, len(runs) - len(found)


@dataclass(frozen=True)
class Option:
    """One way to build the cluster: its board, medium and the fewest nodes that meet the deadline."""

    board: str
    storage: str
    workers: int | None  # None: no node count up to the limit meets it
    predicted: Prediction | None
    price_usd: float | None
    price_complete: bool
    energy_wh: float | None
    model: Model
    sure: bool  # the interval's top meets the deadline too

    @property
    def meets(self) -> bool:
        return self.workers is not None


@dataclass
class Answer:
    workload: str
    engine: str
    size: float
    deadline_s: float
    max_workers: int
    options: list[Option]
    unmodelled: list[str] = field(default_factory=list)
    stored_cells: int = 0
    unusable_runs: int = 0

    def document(self) -> dict:
        """The plan as data with where every prediction comes from (sbclab version, the cells it rests on)."""
        return {"sbclab": __version__, "question": {"workload": self.workload, "engine": self.engine,
                                                    "size": self.size, "deadline_s": self.deadline_s,
                                                    "max_workers": self.max_workers},
                "stored_cells": self.stored_cells, "unusable_runs": self.unusable_runs,
                "unmodelled": self.unmodelled,
                "options": [{"board": o.board, "storage": o.storage, "workers": o.workers,
                             "seconds": o.predicted and o.predicted.seconds, "low": o.predicted and o.predicted.low,
                             "high": o.predicted and o.predicted.high, "sure": o.sure,
                             "price_usd": o.price_usd, "price_complete": o.price_complete, "energy_wh": o.energy_wh,
                             "model": {"fixed_s": o.model.fixed, "per_unit_s": o.model.per_unit,
                                       "contention": o.model.contention, "log_spread": o.model.log_spread,
                                       "note": o.model.note, "rests_on": o.model.sources}}
                            for o in self.options]}


def cluster_price(board: str, storage: str, workers: int, prices: dict[str, float]) -> tuple[float, bool]:
    """Workers and a master of the same board, each with its medium; False where the medium's price is
    unknown (left out of the sum, never guessed: --price NAME=USD gives it)."""
    board_price = prices.get(board, profiles.board(board).price_usd)
    medium = profiles.storages().get(storage)
    medium_price = prices.get(storage, medium.price_usd if medium else None)
    return (workers + 1) * (board_price + (medium_price or 0.0)), medium_price is not None


def job_energy_wh(board: str, workers: int, seconds: float, watts: dict[str, float]) -> float | None:
    """The workers at their loaded watts and the master at idle for the job's time."""
    found = profiles.board(board)
    load = watts.get(board, found.load_watts)
    idle = found.idle_watts or load
    if load is None:
        return None
    return (workers * load + (idle or 0.0)) * seconds / 3600


def _carried_models(models: dict, workload: str, engine: str, boards: list[str], storages: list[str] | None):
    """Models for boards with no cells of their own, from a measured board on the same medium."""
    found = {}
    measured = [m for (w, e, _, _), m in models.items() if (w, e) == (workload, engine) and not m.note]
    for board in boards:
        for model in measured:
            _, _, theirs, storage = model.key
            if theirs == board or (storages and storage not in storages):
                continue
            key = (workload, engine, board, storage)
            if key in models or key in found or not profiles.storages().get(storage):
                continue
            ratio = board_speed_ratio(theirs, board)
            if ratio:
                found[key] = model.carried(ratio, key, f"{theirs}'s model with times / {ratio:.2f} (sysbench, one "
                                                       f"core; assumes the job is CPU-bound)")
    return found


def answer(workload: str, engine: str, size: float, deadline_s: float, *, results: Path | None = None,
           boards: list[str] | None = None, storages: list[str] | None = None, max_workers: int = 16,
           prices: dict[str, float] | None = None, watts: dict[str, float] | None = None) -> Answer:
    prices, watts = prices or {}, watts or {}
    stored, unusable = stored_observations(results)
    cells = [o for o in published_observations() + stored if (o.workload, o.engine) == (workload, engine)]
    models = planning.fit_all(cells)
    unmodelled = sorted({"/".join(o.key[2:]) for o in cells} - {"/".join(k[2:]) for k in models})
    known_boards = boards or sorted(profiles.boards())
    models.update(_carried_models(models, workload, engine, known_boards, storages))
    count = task_count(workload, size)
    options = []
    for key, model in sorted(models.items()):
        _, _, board, storage = key
        if (boards and board not in boards) or (storages and storage not in storages):
            continue
        slots = slots_per_node(board)
        chosen = None
        for n in range(1, max_workers + 1):
            predicted = model.predict(n, size, count, slots)
            if predicted.seconds <= deadline_s:
                chosen = (n, predicted)
                break
        if chosen is None:
            best = model.predict(max_workers, size, count, slots)
            options.append(Option(board, storage, None, best, None, False, None, model, False))
            continue
        n, predicted = chosen
        sure = not math.isnan(predicted.high) and predicted.high <= deadline_s
        price, complete = cluster_price(board, storage, n, prices)
        options.append(Option(board, storage, n, predicted, price, complete,
                              job_energy_wh(board, n, predicted.seconds, watts), model, sure))
    options.sort(key=lambda o: (not o.meets, not o.sure, math.inf if o.price_usd is None else o.price_usd,
                                math.inf if o.energy_wh is None else o.energy_wh))
    return Answer(workload, engine, size, deadline_s, max_workers, options, unmodelled, len(stored), unusable)


def validations(results: Path | None, workloads: set[str] | None = None) -> list[Validation]:
    """The model's error where the truth is known: the seeds' cells on more than four workers predicted
    from their cells on one to four (the 2026 seed's 8-node cells, the 2021 seed's 5-node ones), and,
    for the stored runs, each group's largest worker count predicted from the smaller ones (else its
    largest size from the smaller sizes). `workloads` keeps only those."""
    seeds = [o for o in published_observations() if workloads is None or o.workload in workloads]
    found = [planning.held_out("the seeds' 5- and 8-worker cells from their 1-4-worker cells", seeds,
                               lambda o: o.workers > 4)]
    stored, _ = stored_observations(results)
    stored = [o for o in stored if workloads is None or o.workload in workloads]
    if stored:
        largest: dict[tuple, int] = {}
        for o in stored:
            largest[o.key] = max(largest.get(o.key, 0), o.workers)
        by_workers = {k for k, n in largest.items() if len({o.workers for o in stored if o.key == k}) > 1}
        biggest: dict[tuple, float] = {}
        for o in stored:
            biggest[o.key] = max(biggest.get(o.key, 0.0), o.size)

        def held(o: Observation) -> bool:
            if o.key in by_workers:
                return o.workers == largest[o.key]
            return o.size == biggest[o.key]
        found.append(planning.held_out(f"stored runs in {results}: each group's largest worker count (else "
                                       f"size) from the rest", stored, held))
    return found


def parse_question(workload: str, size_text: str | None, maps: int | None) -> float:
    """The job's size in the model's terms: bytes of input, or Pi's maps."""
    if workload == "pi":
        return float(maps or 100)
    if size_text is None:
        raise SbclabError(f"A plan for {workload} needs the input's size.", "Give --size, e.g. --size 20GB.")
    return float(parse_size(size_text))


def describe_size(workload: str, size: float) -> str:
    return f"{int(size)} maps" if workload == "pi" else format_size(size)
