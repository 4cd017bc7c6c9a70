"""What a board and a storage medium are, as data, with every figure's source.

Numbers may be written with their unit ("2.4 GHz", "8 GiB", "1 Gb/s", "90 MB/s"); a unit that
does not fit the field is refused with the field named, as is a missing or negative figure.
"""

import re
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

# Units a field may be written in, and the factor to the field's own unit.
_UNITS = {
    "ghz": {"ghz": 1.0, "mhz": 1e-3},
    "gib": {"gib": 1.0, "gb": 1e9 / 2**30, "mib": 1 / 1024, "mb": 1e6 / 2**30},
    "gb": {"gb": 1.0, "tb": 1000.0, "gib": 2**30 / 1e9},
    "w": {"w": 1.0, "mw": 1e-3},
    "c": {"c": 1.0, "°c": 1.0},
    "mbps": {"mbps": 1.0, "mb/s": 1.0, "mbit/s": 1.0, "gbps": 1000.0, "gb/s": 1000.0, "gbit/s": 1000.0},
    "mb_s": {"mb/s": 1.0, "mbps": 1.0, "gb/s": 1000.0, "kb/s": 1e-3},
    "usd": {"usd": 1.0, "$": 1.0},
    "iops": {"iops": 1.0},
    "flops": {"flops": 1.0, "flops/cycle": 1.0},
    "mips": {"mips": 1.0},
    "ns": {"ns": 1.0},
}
_NUMBER_WITH_UNIT = re.compile(r"^\s*\$?\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*([A-Za-z/$]*)\s*$")


def _unit_number(field_unit: str):
    def parse(value):
        if isinstance(value, str):
            match = _NUMBER_WITH_UNIT.match(value)
            if not match:
                raise ValueError(f"'{value}' is not a number (write e.g. 2.4 or '2.4 {field_unit}')")
            number, unit = float(match.group(1).replace(",", "")), match.group(2).lower()
            if value.strip().startswith("$"):
                unit = "usd"
            if unit and unit not in _UNITS[field_unit]:
                raise ValueError(f"unknown unit '{match.group(2)}' here; use {', '.join(sorted(_UNITS[field_unit]))}")
            return number * (_UNITS[field_unit][unit] if unit else 1.0)
        return value
    return BeforeValidator(parse)


def Positive(unit: str):
    return Annotated[float, _unit_number(unit), Field(gt=0)]


def NonNegative(unit: str):
    return Annotated[float, _unit_number(unit), Field(ge=0)]


Interface = Literal["microsd", "usb2", "usb3", "pcie", "sata"]
# Record sizes as the seeds give them (4k, 512k, 16m, 300m for dd); "unstated" where a seed gives none.
RecordSize = Annotated[str, Field(pattern=r"^(\d+[kmg]|unstated)$")]
# sysbench 0.4, which Baun used, runs 10,000 requests unless told otherwise: events/s = 10,000 / time.
SYSBENCH_04_REQUESTS = 10_000


def record_bytes(size: str) -> float:
    """Bytes in a record-size key; 'unstated' sorts as the largest (seeds quote streaming figures)."""
    if size == "unstated":
        return float("inf")
    return float(size[:-1]) * {"k": 2**10, "m": 2**20, "g": 2**30}[size[-1]]


class _Profile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Derived(_Profile):
    """A figure no seed prints for this profile: how it was worked out (from the seeds' figures, or
    from a source outside them) and how far off it could be."""

    source: str = Field(min_length=1)
    uncertainty: str = Field(min_length=1)


def _check_derived(profile: BaseModel) -> None:
    """Each derived entry names figures the profile holds ("idle_watts, load_watts", "on_board.rpi1b")."""
    for key in profile.derived:
        for name in (part.strip() for part in key.split(",")):
            field, _, rest = name.partition(".")
            value = getattr(profile, field, None) if field in type(profile).model_fields else None
            if value is None or (rest and rest not in value):
                raise ValueError(f"derived names '{name}', which this profile does not hold")


class Sysbench(_Profile):
    """The seed's sysbench CPU figures: `by_threads` maps a thread count to the metric."""

    max_prime: int = Field(gt=0)
    metric: Literal["events_per_s", "total_time_s"] = "events_per_s"
    by_threads: dict[int, Annotated[float, Field(gt=0)]]

    def events_per_s(self, threads: int) -> float | None:
        value = self.by_threads.get(threads)
        if value is None or self.metric == "events_per_s":
            return value
        return SYSBENCH_04_REQUESTS / value


class CoreClass(_Profile):
    """Cores of one kind on a board of two or more (big.LITTLE): how many, and the speed of each
    relative to the fastest kind's, whose single-thread figure the sysbench profile holds."""

    name: str = Field(min_length=1)
    cores: int = Field(gt=0)
    speed: float = Field(gt=0, le=1)


class SevenZip(_Profile):
    """7-Zip's benchmark (`7z b`, dictionaries 22-25) as published: the total rating in MIPS at one
    thread and at all cores, and the 7-Zip that measured it (ratings move a little between versions)."""

    single_mips: Positive("mips")
    multi_mips: Positive("mips")
    version: str = Field(min_length=1)


BufferSize = Annotated[str, Field(pattern=r"^\d+[kmg]$")]


class Memory(_Profile):
    """One core's memory as published: libc memcpy's copy bandwidth (bytes copied, counted once) and the
    latency of one dependent load by buffer size (a pointer chase: caches, then DRAM)."""

    copy_mb_s: Positive("mb_s") | None = None
    latency_ns: dict[BufferSize, Positive("ns")] = {}

    @model_validator(mode="after")
    def _has_a_figure(self):
        if self.copy_mb_s is None and not self.latency_ns:
            raise ValueError("needs copy_mb_s, latency_ns or both")
        return self

    @property
    def dram_latency(self) -> tuple[str, float] | None:
        """(size, ns) at the largest buffer measured: the nearest the curve comes to DRAM alone."""
        if not self.latency_ns:
            return None
        size = max(self.latency_ns, key=record_bytes)
        return size, self.latency_ns[size]


class Board(_Profile):
    name: str = ""
    description: str
    arch: Literal["aarch64", "armv6l", "armv7l", "x86_64"]
    cores: int = Field(gt=0)
    clock_ghz: Positive("ghz")
    ram_gib: Positive("gib")
    price_usd: NonNegative("usd")
    idle_watts: Positive("w") | None = None
    load_watts: Positive("w") | None = None
    # Whole-system watts measured during named benchmarks, where a seed gives them instead of a stress test.
    benchmark_watts: dict[str, dict[str, Annotated[float, Field(gt=0)]]] = {}  # engine -> workload -> W
    nic_mbps: Positive("mbps")
    network_mbps: Positive("mbps") | None = None
    power_supply_watts: Positive("w") | None = None
    # Where the board's firmware starts throttling; a run that went above it is flagged.
    soft_temp_c: Positive("c") | None = None
    # Double-precision floating-point operations per cycle and core, for HPL's Rpeak (Baun 2016).
    flops_per_cycle: Positive("flops") | None = None
    storage_interfaces: list[Interface]
    # A board whose storage figures this one shares (an overclocked Pi 5 has the Pi 5's I/O).
    io_like: str | None = None
    sysbench: Sysbench | None = None
    # Boards whose cores are not all alike, fastest kind first; none: `cores` cores of one kind.
    core_classes: list[CoreClass] = []
    # A second CPU figure and the memory's, where a public measurement of the board exists.
    seven_zip: SevenZip | None = None
    memory: Memory | None = None
    sources: dict[str, str] = {}
    # Figures no seed prints, by field: how each was worked out and how far off it could be.
    derived: dict[str, Derived] = {}

    @model_validator(mode="after")
    def _load_above_idle(self):
        if self.load_watts and self.idle_watts and self.load_watts < self.idle_watts:
            raise ValueError(f"load_watts ({self.load_watts}) is below idle_watts ({self.idle_watts})")
        _check_derived(self)
        if self.core_classes:
            if sum(c.cores for c in self.core_classes) != self.cores:
                raise ValueError(f"core_classes hold {sum(c.cores for c in self.core_classes)} cores, not the "
                                 f"board's {self.cores}")
            if [c.speed for c in self.core_classes] != sorted((c.speed for c in self.core_classes), reverse=True) \
                    or self.core_classes[0].speed != 1:
                raise ValueError("core_classes go fastest first, the first of speed 1 (its single-thread figure is the "
                                 "sysbench profile's)")
        return self

    @property
    def core_speeds(self) -> list[float]:
        """Each core's speed relative to the fastest core's, fastest first."""
        if not self.core_classes:
            return [1.0] * self.cores
        return [c.speed for c in self.core_classes for _ in range(c.cores)]

    @property
    def core_capacity(self) -> float:
        """The board's cores in fastest-core equivalents: what all of them do at once."""
        return sum(self.core_speeds)

    def sysbench_events(self, threads: int) -> float | None:
        return self.sysbench.events_per_s(threads) if self.sysbench else None

    def derivation(self, field: str) -> Derived | None:
        """How `field` was worked out, when no seed prints it."""
        return next((d for key, d in self.derived.items() if field in (k.strip() for k in key.split(","))), None)


class MediumOnBoard(_Profile):
    """A medium's figures measured in one board (iozone/fio, MB/s by record size; 4 KB random IOPS)."""

    seq_read_mb_s: dict[RecordSize, Positive("mb_s")]
    seq_write_mb_s: dict[RecordSize, Positive("mb_s")]
    rand_read_mb_s: dict[RecordSize, Positive("mb_s")] = {}
    rand_write_mb_s: dict[RecordSize, Positive("mb_s")] = {}
    # Baun prints random I/O in kB/s; kept as printed.
    rand_read_kb_s: dict[RecordSize, Positive("mb_s")] = {}
    rand_write_kb_s: dict[RecordSize, Positive("mb_s")] = {}
    rand_read_iops: Positive("iops") | None = None
    rand_write_iops: Positive("iops") | None = None

    @model_validator(mode="after")
    def _has_a_sequential_figure(self):
        if not self.seq_read_mb_s or not self.seq_write_mb_s:
            raise ValueError("needs at least one sequential read and one sequential write figure")
        return self

    @staticmethod
    def _largest(figures: dict[str, float]) -> float:
        return figures[max(figures, key=record_bytes)]

    @property
    def seq_read(self) -> float:
        """Sequential read MB/s at the largest record size measured (streaming throughput)."""
        return self._largest(self.seq_read_mb_s)

    @property
    def seq_write(self) -> float:
        return self._largest(self.seq_write_mb_s)

    @property
    def read_iops(self) -> float:
        """4 KB random read IOPS; from 4 KB random MB/s when only that was measured."""
        if self.rand_read_iops:
            return self.rand_read_iops
        return self._iops(self.rand_read_mb_s, self.rand_read_kb_s, self.seq_read_mb_s, self.seq_read)

    @property
    def write_iops(self) -> float:
        if self.rand_write_iops:
            return self.rand_write_iops
        return self._iops(self.rand_write_mb_s, self.rand_write_kb_s, self.seq_write_mb_s, self.seq_write)

    @staticmethod
    def _iops(rand_mb_s, rand_kb_s, seq_mb_s, streaming) -> float:
        """4 KB operations per second from the nearest figure measured; a guess of 1/8 of streaming otherwise."""
        if "4k" in rand_mb_s:
            return rand_mb_s["4k"] * 1e6 / 4096
        if "4k" in rand_kb_s:
            return rand_kb_s["4k"] * 1e3 / 4096
        if "4k" in seq_mb_s:
            return seq_mb_s["4k"] * 1e6 / 4096
        return streaming / 8 * 1e6 / 4096


class Storage(_Profile):
    name: str = ""
    description: str
    interface: Interface
    capacity_gb: Positive("gb")
    price_usd: NonNegative("usd") | None = None
    on_board: dict[str, MediumOnBoard]
    sources: dict[str, str] = {}
    derived: dict[str, Derived] = {}

    @model_validator(mode="after")
    def _measured_somewhere(self):
        if not self.on_board:
            raise ValueError("on_board needs the figures of at least one board")
        _check_derived(self)
        return self

    def figures_on(self, board: str) -> MediumOnBoard:
        """The medium's figures in this board, or its slowest known figures elsewhere.

        A medium never measured in this board gets the slowest known figures: an optimistic
        guess would make an emulated node faster than the real one.
        """
        if board in self.on_board:
            return self.on_board[board]
        return min(self.on_board.values(), key=lambda m: m.seq_read)

    def measured_on(self, board: str) -> bool:
        return board in self.on_board
