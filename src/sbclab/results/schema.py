"""The run document. Bump SCHEMA_VERSION on any incompatible change and teach store.py to migrate."""

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..earlier import FIRST_STACK
from .faults import FaultEffects, FaultRun
from .measurements import Measurements

SCHEMA_VERSION = 3
# 2: `measurements` (per-node time series summary, phases, intermediate data, power, health flags).
# 3: engines `node` (a tool run on nodes: sysbench, fio, iperf3, stress-ng, nginx/httperf, NetPIPE TCP)
#    and `mpi` (HPL, NetPIPE over MPI) beside Hadoop and Spark; older documents are valid as they are.
#    Later, without a new version (older documents lack them and stay valid): measurements `memory`
#    (each node's peak against its limit, OOM kills) and the health flag `oom_kill`; `liveness` (the
#    cluster's daemons counted before and after the run, a lost one flagging the run); `faults` and
#    `fault_effects` (faults applied during the run, and what the engines did: status faulted);
#    measurements `diagnostics` (busy outside the cluster before the run, frequency residency, the
#    measured clock) and the health flag `too_busy`.
# What runs a workload: the two big-data engines, a tool on the nodes, an MPI program.
BIG_DATA_ENGINES = ("hadoop", "spark")
ENGINES = (*BIG_DATA_ENGINES, "node", "mpi")
# The counter groups of a Spark run that hold one stage each: "stage ID: NAME" (stack/counters.py).
SPARK_STAGE_GROUP = "stage "

class Check(BaseModel):
    name: str
    passed: bool
    detail: str


class Validity(BaseModel):
    """A run is valid when every check passed; `None` when nothing could be checked."""

    valid: bool | None
    checks: list[Check] = []

    @classmethod
    def of(cls, checks: list[Check]) -> "Validity":
        return cls(valid=all(c.passed for c in checks) if checks else None, checks=checks)


class NodeRecord(BaseModel):
    """One node as the run had it: what this host gave it after scaling, and YARN's share of it."""

    name: str
    role: Literal["master", "worker"]
    runs_tasks: bool | None = Field(None, description="stores blocks and runs tasks (None: stored before layouts; "
                                    "every worker did, no master did)")
    address: str
    board: str
    storage: str
    cpu_cores: float
    memory_bytes: int
    disk_bytes: int
    disk_read_bytes_s: float
    disk_write_bytes_s: float
    disk_read_iops: float
    disk_write_iops: float
    link_mbit_s: float
    dirty_bytes: int = 0  # the node's own dirty-page limit (0: the kernel's, as on a board)
    yarn_memory_mb: int
    yarn_vcores: int
    system: dict[str, str] = Field(default={}, description="what the node ran: OS, kernel, page size, governor, "
                                   "NUMA nodes, firmware, Java (an emulated node: this host's)")


class ScaleRecord(BaseModel):
    """How much of each profile the host could give: `factor` for CPU, disk and network together,
    `memory_factor` for memory; `core_speed` host cores per board core (sysbench, 1 thread)."""

    factor: float
    memory_factor: float
    host_cores: int
    host_memory_bytes: int
    calibrated: bool = False
    core_speed: float = 1.0
    limited_by: str = "cpu"
    host_calibration: str | None = None
    note: str = ""


class ClusterShape(BaseModel):
    name: str
    backend: Literal["emulated", "processes", "ssh"]
    emulated: bool
    shaped: bool
    workers: int
    board: str
    storage: str
    preset: str
    preset_source: str = Field("", description="where the preset's settings came from: a seed's table, upstream's "
                               "defaults, or the tuning behind 'tuned' (its file, question, trials and version)")
    nodes: list[NodeRecord]
    knobs: dict[str, list[str]] = Field(default={}, description="each knob the cluster had -> the nodes it was on "
                                        "(cluster/knobs.py); a board knob written after the board's last boot says so")
    spark_manager: Literal["yarn", "standalone"] = Field("yarn", description="what ran Spark's executors")
    layout: Literal["separate-master", "master-is-worker", "desktop-master"] = Field(
        "separate-master", description="where the master's daemons ran: a board of their own, a worker, a desktop")
    runtime: Literal["native", "container"] = Field("native", description="the nodes' processes directly on them, "
                                                    "or inside an OCI container on each")
    container: dict[str, str] = Field(default={}, description="the container runtime and image digest, where one ran")
    stack: str = Field(FIRST_STACK, description="the named Hadoop and Spark versions it ran (the run's versions "
                       "say which); runs recorded before stacks had names ran lee-park-2026")

    @property
    def task_nodes(self) -> list[NodeRecord]:
        """The nodes that stored blocks and ran tasks."""
        return [n for n in self.nodes if n.runs_tasks or (n.runs_tasks is None and n.role == "worker")]


class Liveness(BaseModel):
    """The cluster's daemons counted before and after the run (stack/liveness.py): what was missing
    each time, one phrase each, and what was restarted before the run."""

    model_config = ConfigDict(extra="forbid")

    expected: dict[str, int]
    before: list[str] = []
    after: list[str] = []
    repaired: list[str] = []

    @property
    def lost(self) -> list[str]:
        """What the run lost: missing after it and not before."""
        earlier = set(self.before)
        return [m for m in self.after if m not in earlier]


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    run_id: str
    experiment_id: str
    repetition: int = 1
    workload: str
    engine: Literal[ENGINES]
    parameters: dict[str, Any]
    cluster: ClusterShape
    scale: ScaleRecord
    versions: dict[str, str]
    configuration: dict[str, dict[str, str]]
    host: dict[str, Any] = Field(description="this host: name, kernel, CPU, cores, memory, Python and, from when "
                                 "it was recorded, `cgroup_version`, the hierarchy emulated nodes were shaped on")
    command: list[str] = Field(description="the sbclab command line that made this run")
    job_command: list[str] = Field(description="the engine client command line sbclab ran")
    started_at: datetime
    finished_at: datetime
    wall_time_s: float
    exit_status: int
    validity: Validity
    counters: dict[str, dict[str, float]] = {}
    job_ids: list[str] = []
    result: dict[str, Any] = {}
    logs: dict[str, str] = Field(default={}, description="log files, relative to the results directory")
    notes: list[str] = []
    cell: dict[str, Any] | None = Field(default=None, description="the experiment cell this run belongs to, with its key")
    jobs_before: int | None = Field(default=None, description="applications the ResourceManager had taken since it "
                                    "started, before this run's (0: the first job of freshly started daemons, whose "
                                    "code is not yet compiled); None where there is no ResourceManager")
    measurements: Measurements | None = Field(default=None, description="what was sampled during the run")
    liveness: Liveness | None = Field(default=None, description="the cluster's daemons before and after the run; "
                                      "None where it had none (node benchmarks) or before they were counted")
    faults: list[FaultRun] = Field(default=[], description="faults applied during the run (a faulted run is never "
                                   "a headline figure)")
    fault_effects: FaultEffects | None = Field(default=None, description="what the engines did about the faults")

    @property
    def valid(self) -> bool:
        """Counted in statistics: finished, and every check passed."""
        return self.exit_status == 0 and self.validity.valid is True

    @property
    def flagged(self) -> bool:
        """A health flag was raised during the run (throttling, slow clock, heat, swap, an OOM kill, a lost
        node), or the cluster lost a daemon."""
        return bool(self.measurements and self.measurements.flagged) or bool(self.liveness and self.liveness.lost)

    @property
    def flag_reasons(self) -> list[str]:
        """Why the run is flagged, one phrase each: its health flags, then the daemons it lost."""
        flags = self.measurements.flags if self.measurements else []
        return [*(f"{f.node} {f.kind} at {f.at:.0f} s: {f.detail}" for f in flags),
                *(f"lost {m}" for m in (self.liveness.lost if self.liveness else []))]

    @property
    def faulted(self) -> bool:
        """Faults were declared for the run: its time measures them, not the cluster."""
        return bool(self.faults)

    @property
    def headline(self) -> bool:
        """Fit for headline figures: valid, not faulted and not flagged."""
        return self.valid and not self.faulted and not self.flagged

    @property
    def succeeded(self) -> bool:
        return self.exit_status == 0 and self.validity.valid is not False

    @property
    def status(self) -> str:
        """headline | faulted | flagged | invalid | failed | unchecked: why a run does or does not count."""
        if self.faulted:
            return "faulted"
        if self.exit_status != 0:
            return "failed"
        if self.validity.valid is False:
            return "invalid"
        if self.validity.valid is None:
            return "unchecked"
        return "flagged" if self.flagged else "headline"
