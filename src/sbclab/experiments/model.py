"""An experiment: engines × workloads × worker counts × data sizes × storage × presets × repetitions.

An experiment file (YAML), `sbclab bench` flags and the shorthand commands (`run`, `micro`, `hpl`)
all become an `Experiment`. It expands into cells, one per run, each with a key that does not
depend on when or where it ran, so a results directory tells which cells are done and a re-run
does only the rest.
"""

import hashlib
import itertools
import json
import re
from pathlib import Path
from typing import Annotated, Any, Callable, ClassVar, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from .. import faults, utf8, workloads as registry
from ..cluster.spec import DESKTOP_MASTER, DESKTOP_MASTER_STORAGE, LAYOUTS, RUNTIMES
from ..errors import SbclabError
from ..monitor.settings import MonitorSettings
from ..results.faults import FaultSpec
from ..results.schema import BIG_DATA_ENGINES, ENGINES
from ..stack.config import SETTINGS_FILES, check_job_settings, check_settings
from ..stack import scheduler, versions as stack_versions
from ..stack.presets import PRESETS
from ..units import bounded, format_size, parse_size
from ..workloads.user import UserJobSpec


def _size(value):
    if isinstance(value, bool):  # YAML's yes/true, which would otherwise be 1 byte
        raise ValueError(f"{value} is not a data size; write a number and a unit, e.g. 256MB")
    if isinstance(value, str):
        return parse_size(value)
    if isinstance(value, (int, float)):
        bounded(value, value)
    return value


def _setting_text(value) -> str:
    """A property's value as Hadoop and Spark write it: YAML's true is 'true', not Python's 'True'."""
    return str(value).lower() if isinstance(value, bool) else str(value)


# Sizes are written as in the CLI: 64MB, 2GiB, or a number of bytes.
Size = Annotated[int, BeforeValidator(_size), Field(gt=0)]


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
    timeout_s: float = Field(240, gt=0)
    knobs: list[str] = Field(default_factory=list, description="cluster knobs (crc-off, fstrim)")
    spark_manager: Literal["yarn", "standalone"] = Field(
        "yarn", description="what runs Spark's executors: YARN, or Spark's standalone master and workers (no YARN)")
    master_board: str | None = Field(None, description="the master's board where it is not the workers' (default: "
                                     f"the workers'; in the desktop-master layout {DESKTOP_MASTER})")
    master_storage: str | None = Field(None, description="the master's medium where it is not the workers' (default: "
                                       f"the workers'; in the desktop-master layout {DESKTOP_MASTER_STORAGE})")
    settings: dict[Literal[SETTINGS_FILES], dict[str, str]] = Field(
        default_factory=dict, description="stack properties set over the preset, by file: {hdfs-site: {dfs.blocksize: ...}}")
    expose_web_uis: bool = Field(False, description="boards: the web UIs and REST APIs on each board's own address "
                                 "rather than its loopback (reached through SSH)")
    data_scale: float = Field(1.0, gt=0, le=1, description="the share of the seed's data each task holds (a "
                              "reproduction sets it with the HDFS block): sort, shuffle and Spark memory buffers follow it")

    @field_validator("settings", mode="before")
    @classmethod
    def _settings_as_text(cls, value):
        if isinstance(value, dict):
            return {f: {str(k): _setting_text(v) for k, v in (props or {}).items()} if isinstance(props, dict) else props
                    for f, props in value.items()}
        return value

    @field_validator("settings")
    @classmethod
    def _settings_allowed(cls, value):
        try:
            check_settings(value)
        except SbclabError as err:
            raise ValueError(f"{err.message.rstrip('.')}; {err.hint[0].lower()}{err.hint[1:].rstrip('.')}") from err
        return value


class Concurrent(BaseModel):
    """The 2026 seed's mix: several jobs submitted together, then the same one after another."""

    model_config = ConfigDict(extra="forbid")

    engine: Literal[BIG_DATA_ENGINES] = "spark"
    workloads: list[str] = ["wordcount", "terasort", "grep", "pi"]
    size: Size
    repetitions: int = Field(1, ge=1, le=100)


class Experiment(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "experiment"
    description: str = ""
    cluster: ClusterSettings = ClusterSettings()
    engines: list[Literal[ENGINES]] | None = Field(
        None, description="default: every engine each workload runs on")
    engines_of: dict[str, list[str]] = Field(default_factory=dict, description="a workload's engines, where fewer")
    workloads: list[str]
    workers: list[int] = [2]
    sizes: list[Size] = [64 * 10**6]
    storage: list[str] = ["nvme"]
    presets: list[str] = ["paper"]
    layouts: list[Literal[LAYOUTS]] = Field(["separate-master"], description="where the master's daemons run")
    runtimes: list[Literal[RUNTIMES]] = Field(["native"], description="nodes' processes natively or in containers")
    stacks: list[str] = Field([stack_versions.DEFAULT], description="named Hadoop and Spark versions "
                              f"({', '.join(stack_versions.STACKS)}; 'sbclab stack list')")
    repetitions: int = Field(5, ge=1, le=1000)
    parameters: dict[str, dict[str, Any]] = {}
    between_runs: BetweenRuns = BetweenRuns()
    monitor: MonitorSettings = MonitorSettings()
    concurrent: Concurrent | None = None
    jobs: dict[str, UserJobSpec] = Field(default_factory=dict, description="the user's own jobs, by the name "
                                         "`workloads` uses: a JAR, a PySpark script or a command (workloads/user.py)")
    variants: dict[str, dict[str, dict[str, str]]] = Field(
        default_factory=dict, description="job settings to compare on one running cluster, by name: each cell runs "
        "once under each, interleaved ({compressed: {mapred-site: {mapreduce.map.output.compress: 'true'}}})")
    faults: list[FaultSpec] = Field(default_factory=list, description="faults to apply while a job runs: each cell "
                                    "runs unfaulted and once under each fault (sbclab.faults)")

    @field_validator("variants", mode="before")
    @classmethod
    def _variants_as_text(cls, value):
        if isinstance(value, dict):
            return {name: ({f: {str(k): _setting_text(v) for k, v in (props or {}).items()} if isinstance(props, dict) else props
                            for f, props in files.items()} if isinstance(files, dict) else files)
                    for name, files in value.items()}
        return value

    @field_validator("variants")
    @classmethod
    def _variants_are_job_settings(cls, value):
        for name, job_settings in value.items():
            try:
                check_job_settings(job_settings)
            except SbclabError as err:
                raise ValueError(f"variant {name}: {err.message.rstrip('.')}; {err.hint[0].lower()}"
                                 f"{err.hint[1:].rstrip('.')}") from err
        return value

    @field_validator("faults")
    @classmethod
    def _faults(cls, value):
        for spec in value:
            faults.check(spec)
        return value

    @model_validator(mode="after")
    def _faults_workloads(self):
        for spec in self.faults:
            for name in spec.workloads or []:
                if name not in self.workloads:
                    raise ValueError(f"fault '{spec.label}' names workload {name}, which the experiment does not run")
        return self

    @model_validator(mode="after")
    def _scheduler_variants_on_stacks_that_refresh(self):
        if any(scheduler.asked(job_settings) for job_settings in self.variants.values()):
            for name in self.stacks:
                try:
                    scheduler.check(stack_versions.get(name).hadoop)
                except SbclabError as err:
                    raise ValueError(f"stack {name}: {err.message.rstrip('.')}") from err
        return self

    @field_validator("jobs")
    @classmethod
    def _register_jobs(cls, value):
        for name in value:
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,40}", name):
                raise ValueError(f"job name '{name}': use lower-case letters, digits and dashes")
        try:
            registry.register_user_jobs(value)
        except SbclabError as err:
            raise ValueError(err.message.rstrip(".")) from err
        return value

    @field_validator("workers")
    @classmethod
    def _workers(cls, value):
        for n in value:
            if not 1 <= n <= 64:
                raise ValueError(f"{n} workers is out of range (1-64)")
        return value

    @field_validator("stacks")
    @classmethod
    def _stacks(cls, value):
        for name in value:
            try:
                stack_versions.check(name)
            except SbclabError as err:
                raise ValueError(f"{err.message.rstrip('.')}; {err.hint[0].lower()}{err.hint[1:].rstrip('.')}") from err
        return value

    @field_validator("presets")
    @classmethod
    def _presets(cls, value):
        for name in value:
            if name not in PRESETS:
                raise ValueError(f"unknown preset '{name}'; choose from {', '.join(PRESETS)}")
        return value

    @model_validator(mode="after")
    def _known_names(self):
        names = [*self.workloads, *self.parameters, *self.engines_of,
                 *(self.concurrent.workloads if self.concurrent else [])]
        for name in names:
            if name not in registry.WORKLOADS:
                raise ValueError(f"unknown workload '{name}'; choose from {', '.join(registry.WORKLOADS)}")
        for name, given in self.parameters.items():
            allowed = set(registry.get(name).defaults()) | {"reuse_input"}
            unknown = set(given) - allowed
            if unknown:
                raise ValueError(f"unknown parameter(s) {', '.join(sorted(map(str, unknown)))} for {name}; "
                                 f"it takes {', '.join(sorted(allowed))}")
        if not all((self.workloads, self.workers, self.sizes, self.storage, self.presets, self.layouts, self.runtimes,
                    self.stacks)):
            raise ValueError("workloads, workers, sizes, storage, presets, layouts, runtimes and stacks each need at "
                             "least one entry")
        if (self.cluster.master_board or self.cluster.master_storage) and set(self.layouts) == {"master-is-worker"}:
            raise ValueError("cluster.master_board and master_storage need a master of its own; add separate-master "
                             "or desktop-master to layouts or leave them out")
        if self.engines is not None and not self.engines:
            raise ValueError("engines needs at least one entry, or none at all for each workload's own")
        for name in self.workloads:
            if not self.engines_for(name):
                raise ValueError(f"{name} runs on {', '.join(registry.get(name).engines)}, none of the engines asked for")
        for name in self.workloads:
            workload = registry.get(name)
            for size in self.sizes:
                try:
                    workload.check_parameters(workload.parameters(size, self.parameters.get(name)))
                except SbclabError as err:
                    raise ValueError(f"{name}: {err.message.rstrip('.')}") from err
        return self

    def engines_for(self, name: str) -> list[str]:
        """The engines a workload runs on in this experiment."""
        own = registry.get(name).engines
        asked = self.engines_of.get(name) or self.engines or list(own)
        return [e for e in asked if e in own]


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
    spark_manager: str = "yarn"
    layout: str = "separate-master"
    runtime: str = "native"
    stack: str = stack_versions.FIRST
    fault: dict[str, Any] | None = None  # a FaultSpec's fields: the run is faulted
    variant: str | None = None  # the name of the job settings it runs under
    job_settings: dict[str, dict[str, str]] | None = None

    # Dimensions added after runs were stored, with the value every earlier run had.
    LATER_DIMENSIONS: ClassVar[dict[str, Any]] = {"spark_manager": "yarn", "layout": "separate-master",
                                                  "runtime": "native", "stack": stack_versions.FIRST, "fault": None,
                                                  "variant": None, "job_settings": None}

    @property
    def key(self) -> str:
        """A digest of everything that defines the run, the repetition included. A dimension added
        later enters it only when it differs from what every earlier run had, so their keys hold."""
        defining = self.model_dump()
        for name, earlier in self.LATER_DIMENSIONS.items():
            if defining[name] == earlier:
                del defining[name]
        canonical = json.dumps(defining, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:20]

    @property
    def shape(self) -> "Shape":
        return (self.storage, self.preset, self.workers, self.layout, self.runtime, self.stack)

    def label(self) -> str:
        size = f" {format_size(self.size_bytes)}" if self.size_bytes else ""
        where = f" on {self.parameters['node']}" if isinstance(self.parameters.get("node"), str) else ""
        extra = "".join(f" {getattr(self, name)}" for name, earlier in self.LATER_DIMENSIONS.items()
                        if name not in ("spark_manager", "fault", "job_settings") and getattr(self, name) != earlier)
        if self.fault:
            extra += f" under {FaultSpec(**self.fault).label}"
        return (f"{self.workload}/{self.engine}{where} {self.workers}w {self.board}/{self.storage} {self.preset}{size}"
                f"{extra} #{self.repetition}")

    def as_record(self) -> dict[str, Any]:
        return {"key": self.key, **self.model_dump()}


def load(path: Path) -> Experiment:
    path = Path(path)
    try:
        raw = yaml.safe_load(utf8.read(path))
    except (OSError, yaml.YAMLError) as err:
        raise SbclabError(f"Cannot read the experiment file {path}: {' '.join(str(err).split())}.",
                          "Give a readable YAML file; see examples/experiments/.") from err
    if not isinstance(raw, dict):
        raise SbclabError(f"{path} does not describe an experiment.", "See examples/experiments/ for the format.")
    return parse(raw, str(path))


def parse(raw: dict[str, Any], where: str = "the experiment") -> Experiment:
    try:
        return Experiment.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        at = ".".join(map(str, first["loc"])) or "top level"
        message = first["msg"].removeprefix("Value error, ")
        raise SbclabError(f"{where}: {at}: {message}.",
                          "Fix that field; see examples/experiments/ for a complete file.") from err
    except SbclabError as err:
        raise SbclabError(f"{where}: {err.message}", err.hint) from err


NodeNames = Callable[[int, str], list[tuple[str, str]]]
# A cluster brought up once for all its cells: storage, preset, workers, layout, runtime, stack.
Shape = tuple[str, str, int, str, str, str]


def default_node_names(workers: int, layout: str = "separate-master") -> list[tuple[str, str]]:
    """(name, role) of a cluster sbclab makes: the master, then worker1, worker2 ... (one fewer when
    the master is a worker too)."""
    boards = workers - 1 if layout == "master-is-worker" else workers
    return [("master", "master"), *((f"worker{i}", "worker") for i in range(1, boards + 1))]


def cells(experiment: Experiment, node_names: NodeNames = default_node_names) -> list[Cell]:
    """Every run, grouped by cluster shape (so a cluster is brought up once per shape), then by size,
    repetition, workload and engine, so repetitions of one cell are spread over the experiment's time.
    The concurrent mix, when asked for, runs on the last shape."""
    out = []
    for storage, preset, workers, layout, runtime, stack in itertools.product(
            experiment.storage, experiment.presets, experiment.workers, experiment.layouts, experiment.runtimes,
            experiment.stacks):
        nodes = node_names(workers, layout)
        for size in experiment.sizes:
            for repetition in range(1, experiment.repetitions + 1):
                for name in experiment.workloads:
                    workload = registry.get(name)
                    if not workload.sized and size != experiment.sizes[0]:
                        continue  # Pi does not depend on the size: once per shape and repetition
                    params = workload.parameters(size, experiment.parameters.get(name))
                    params.pop("size_bytes", None)
                    for engine in experiment.engines_for(name):
                        for variant in workload.expand(params, nodes):
                            # Job settings innermost: the variants of a cell alternate run by run.
                            for tuned, job_settings in (list(experiment.variants.items()) or [(None, None)]):
                                for fault in [None, *(f.model_dump(exclude_defaults=True) for f in experiment.faults
                                                      if f.workloads is None or name in f.workloads)]:
                                    out.append(Cell(workload=name, engine=engine, workers=workers,
                                                    size_bytes=size if workload.sized else None,
                                                    board=experiment.cluster.board, storage=storage, preset=preset,
                                                    parameters=variant, repetition=repetition,
                                                    spark_manager=experiment.cluster.spark_manager,
                                                    layout=layout, runtime=runtime, stack=stack, fault=fault,
                                                    variant=tuned, job_settings=job_settings or None))
    conc = experiment.concurrent
    if conc:
        for repetition in range(1, conc.repetitions + 1):
            for mode in ("sequential", "concurrent"):
                out.append(Cell(workload=f"mix-{mode}", engine=conc.engine, workers=experiment.workers[-1],
                                size_bytes=conc.size, board=experiment.cluster.board, storage=experiment.storage[-1],
                                preset=experiment.presets[-1], parameters={"workloads": conc.workloads},
                                repetition=repetition, spark_manager=experiment.cluster.spark_manager,
                                layout=experiment.layouts[-1], runtime=experiment.runtimes[-1],
                                stack=experiment.stacks[-1]))
    return out
