"""What was measured beside a run's wall time: the part of the run document monitor/ fills in.

The time series themselves are stored beside the document (series/RUN_ID.json); the document
holds their summary per node, the run's phases, intermediate data, power and energy, and the
health flags that keep a run out of headline figures.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .diagnostics import Diagnostics


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Flag(_Part):
    node: str
    kind: Literal["throttled", "clock", "temperature", "swap", "disappeared", "idle_worker", "oom_kill", "too_busy"]
    at: float
    detail: str


class NodeFigures(_Part):
    """One node over the run's window. Shares are of the node's own capacity (its quota when emulated)."""

    scope: Literal["node", "host"]
    samples: int
    cpu_busy_pct_mean: float | None = None
    cpu_busy_pct_max: float | None = None
    # The level a node held while it worked, without the one-sample spikes of JVMs starting (Hajji & Tso
    # read their workers' CPU plateaus off such series).
    cpu_busy_pct_p90: float | None = None
    cpu_iowait_pct_mean: float | None = None
    cpu_cores_used_max: float | None = None
    cpu_capacity_cores: float | None = None
    load_max: float | None = None
    mem_used_max_bytes: int | None = None
    mem_used_mean_bytes: int | None = None
    swap_bytes: float | None = None
    disk_read_bytes: int | None = None
    disk_write_bytes: int | None = None
    disk_busy_pct_mean: float | None = None
    net_rx_bytes: int | None = None
    net_tx_bytes: int | None = None
    net_rx_peak_bps: float | None = None  # the highest rate of one sampling interval
    net_tx_peak_bps: float | None = None
    clock_mhz_min: float | None = None
    temp_max_c: float | None = None
    throttled_bits: int | None = None
    gaps: list[dict[str, float]] = []
    sampler_errors: dict[str, str] = {}
    sampler_cpu_pct: float | None = None  # the sampler's own CPU use, % of one (host) core


class NodeMemory(_Part):
    """One node's memory during a run, against the limit it was given.

    `peak_source` "cgroup": the kernel's own high of the node's cgroup (its processes and page cache)
    from the samplers' start to their stop; "sampled": the samplers' highest used memory over the job
    (an emulated node's resident memory, without its page cache; a board's or host's MemTotal less
    MemAvailable), which can miss a peak between samples. A figure that could not be had is None, and
    `notes` say why."""

    limit_bytes: int | None = None
    peak_bytes: int | None = None
    peak_source: Literal["cgroup", "sampled"] | None = None
    oom_kills: int | None = None  # processes the kernel killed for want of memory during the recording
    notes: list[str] = []

    @property
    def peak_share(self) -> float | None:
        """Peak ÷ limit."""
        if self.peak_bytes is None or not self.limit_bytes:
            return None
        return self.peak_bytes / self.limit_bytes


class PowerFigures(_Part):
    source: str
    estimate: bool
    energy_j: float | None = None
    avg_w: float | None = None
    peak_w: float | None = None
    coverage: float = 0.0
    idle_w: float | None = None
    energy_above_idle_j: float | None = None
    notes: list[str] = []


class ClusterPower(_Part):
    energy_j: float | None = None
    avg_w: float | None = None
    peak_w: float | None = None
    idle_w: float | None = None
    energy_above_idle_j: float | None = None
    sources: dict[str, str] = {}
    estimate: bool = True


class Intermediate(_Part):
    input_bytes: int | None = None
    nodes: dict[str, dict[str, int | None]] = {}
    device_bytes: int | None = None
    device_ratio: float | None = None
    engine_bytes: float | None = None
    engine_ratio: float | None = None
    # fstrim's discarded bytes after the job on filesystems trimmed before it (the 2026 seed's way).
    trimmed_bytes: int | None = None
    trimmed_ratio: float | None = None
    engine: dict[str, float] = {}
    notes: list[str] = []


class Measurements(_Part):
    hz: float
    window: dict[str, float]
    series: str | None = None
    clock_offsets: dict[str, dict[str, float]] = {}
    phases: list[dict[str, Any]] = []
    nodes: dict[str, NodeFigures] = {}
    intermediate: Intermediate | None = None
    power: dict[str, PowerFigures] = {}
    cluster_power: ClusterPower | None = None
    flags: list[Flag] = []
    notes: list[str] = []
    idle_baseline: dict[str, Any] | None = None
    # The engine's tasks that succeeded on each worker (JobHistory task attempts, Spark task ends).
    tasks_by_worker: dict[str, int] = {}
    # Per node; empty in runs stored before it was recorded.
    memory: dict[str, NodeMemory] = {}
    # The machines' CPUs around the run (results/diagnostics.py); None in runs stored before them.
    diagnostics: Diagnostics | None = None

    @property
    def flagged(self) -> bool:
        return bool(self.flags)
