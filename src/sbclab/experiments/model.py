"""An experiment: engines × workloads × worker counts × data sizes × storage × presets × repetitions.

An experiment file (YAML) and `sbclab bench` flags both become an `Experiment`. It expands into
cells, one per run, each with a key that does not depend on when or where it ran, so a results
directory tells which cells are done and a re-run does only the rest.
"""

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from .. import workloads as registry
from ..cluster import spec as cluster_spec
from ..errors import SbclabError
from ..monitor.settings import MonitorSettings
from ..units import format_size, parse_size


# Sizes are written as in the CLI: 64MB, 2GiB, or a number of bytes.
Size = Annotated[int, BeforeValidator(lambda v: parse_size(v) if isinstance(v, str) else v)]


class BetweenRuns(BaseModel):
    model_config = ConfigDict(extra="forbid")

    drop_caches: bool = True
    fstrim: bool = True
    idle_cpu_percent: float = Field(20.0, gt=0, le=100)
    idle_timeout_s: float = Field(60.0, ge=0)


class ClusterSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "bench"
    board: str = "rpi5b"
    backend: Literal["emulated", "processes", "ssh"] | None = None
    subnet: str = "10.214.0.0/24"
    disk_size: Size | None = Field(None, description="per node; default from the data sizes")
    scale: float | None = Field(None, gt=0, le=1)
    timeout_s: float = 240


class Concurrent(BaseModel):
    """The 2026 seed's mix: several jobs submitted together, then the same one after another."""

    model_config = ConfigDict(extra="forbid")

    engine: Literal["hadoop", "spark"] = "spark"
    workloads: list[str] = ["wordcount", "terasort", "grep", "pi"]
    size: Size
    repetitions: int = Field(1, ge=1, le=100)


class Experiment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "experiment"
    description: str = ""
    cluster: ClusterSettings = ClusterSettings()
    engines: list[Literal["hadoop", "spark"]] = ["hadoop", "spark"]
    workloads: list[str]
    workers: list[int] = [2]
    sizes: list[Size] = [64 * 10**6]
    storage: list[str] = ["nvme"]
    presets: list[Literal["stock", "paper"]] = ["paper"]
    repetitions: int = Field(5, ge=1, le=1000)
    parameters: dict[str, dict[str, Any]] = {}
    between_runs: BetweenRuns = BetweenRuns()
    monitor: MonitorSettings = MonitorSettings()
    concurrent: Concurrent | None = None

    @field_validator("workers")
    @classmethod
    def _workers(cls, value):
        for n in value:
            if not 1 <= n <= 64:
                raise ValueError(f"{n} workers is out of range (1-64)")
        return value

    @model_validator(mode="after")
    def _known_names(self):
        for name in [*self.workloads, *self.parameters, *(self.concurrent.workloads if self.concurrent else [])]:
            if name not in registry.WORKLOADS:
                raise ValueError(f"unknown workload '{name}'; choose from {', '.join(registry.WORKLOADS)}")
        for name, given in self.parameters.items():
            allowed = set(registry.get(name).defaults()) | {"reuse_input"}
            unknown = set(given) - allowed
            if unknown:
                raise ValueError(f"unknown parameter(s) {', '.join(sorted(unknown))} for {name}; "
                                 f"it takes {', '.join(sorted(allowed))}")
        if not self.workloads or not self.engines or not self.workers or not self.sizes or not self.storage:
            raise ValueError("engines, workloads, workers, sizes and storage each need at least one entry")
        return self


class Cell(BaseModel):
    """One run of the matrix."""

    workload: str
    engine: str
    workers: int
    size_bytes: int | None
    board: str
    storage: str
    preset: str
    parameters: dict[str, Any]
    repetition: int

    @property
    def key(self) -> str:
        """A digest of everything that defines the run, the repetition included."""
        canonical = json.dumps(self.model_dump(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:20]

    @property
    def shape(self) -> tuple[str, str, int]:
        return (self.storage, self.preset, self.workers)

    def label(self) -> str:
        size = f" {format_size(self.size_bytes)}" if self.size_bytes else ""
        return (f"{self.workload}/{self.engine} {self.workers}w {self.board}/{self.storage} {self.preset}{size} "
                f"#{self.repetition}")

    def as_record(self) -> dict[str, Any]:
        return {"key": self.key, **self.model_dump()}


def load(path: Path) -> Experiment:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise SbclabError(f"Cannot read the experiment file {path}: {err}.", "Give a readable YAML file.") from err
    if not isinstance(raw, dict):
        raise SbclabError(f"{path} does not describe an experiment.", "See examples/experiments/ for the format.")
    return parse(raw, str(path))


def parse(raw: dict[str, Any], where: str = "the experiment") -> Experiment:
    try:
        return Experiment.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        at = ".".join(map(str, first["loc"])) or "top level"
        raise SbclabError(f"{where}: {at}: {first['msg']}.",
                          "Fix that field; see examples/experiments/ for a complete file.") from err
    except SbclabError as err:
        raise SbclabError(f"{where}: {err.message}", err.hint) from err


def cells(experiment: Experiment) -> list[Cell]:
    """Every run, grouped by cluster shape (so a cluster is brought up once per shape), then by size,
    repetition, workload and engine, so repetitions of one cell are spread over the experiment's time."""
    out = []
    for storage in experiment.storage:
        for preset in experiment.presets:
            for workers in experiment.workers:
                for size in experiment.sizes:
                    for repetition in range(1, experiment.repetitions + 1):
                        for name in experiment.workloads:
                            workload = registry.get(name)
                            if not workload.sized and size != experiment.sizes[0]:
                                continue  # Pi does not depend on the size: once per shape and repetition
                            params = workload.parameters(size, experiment.parameters.get(name))
                            params.pop("size_bytes", None)
                            for engine in experiment.engines:
                                if engine not in workload.engines:
                                    continue
                                out.append(Cell(workload=name, engine=engine, workers=workers,
                                                size_bytes=size if workload.sized else None,
                                                board=experiment.cluster.board, storage=storage, preset=preset,
                                                parameters=params, repetition=repetition))
    return out


def bytes_needed(workload_name: str, size: int, workers: int, preset: str) -> int:
    """Bytes the cluster's disks hold at the peak of one cell: the input's replicas (dfs.replication
    of the preset, capped by the DataNodes) and the workload's intermediate data and output."""
    replicas = 1 if preset == "paper" else min(3, workers)
    return int(size * (replicas + registry.get(workload_name).footprint_per_input_byte))


def storage_needed(experiment: Experiment, workers: int, preset: str) -> tuple[int, str]:
    """Bytes the cluster's disks must hold at the peak of the largest cell, and which cell that is."""
    worst, which = 0, ""
    for size in experiment.sizes:
        for name in experiment.workloads:
            if not registry.get(name).sized:
                continue
            need = bytes_needed(name, size, workers, preset)
            if need > worst:
                worst, which = need, f"{name} at {format_size(size)}"
    return worst, which


def disk_per_node(experiment: Experiment, workers: int) -> int:
    if experiment.cluster.disk_size:
        return experiment.cluster.disk_size
    biggest = max((storage_needed(experiment, workers, preset)[0] for preset in experiment.presets), default=0)
    return max(cluster_spec.DEFAULT_DISK_BYTES, int(biggest * 1.25 / workers) + 2**30)
