"""What a power source is: one way of knowing a node's watts over a run.

A source is named in a power file (`source: NAME`) and may take fields of its own beside the name.
Over a run it may have the node's sampler read something (sampler.py, which runs on boards with the
standard library alone, knows the node-side sources by name), and it may read something from this
host while the run goes on (a smart plug polled over HTTP). Afterwards it turns what was recorded
into intervals (t0, t1, watts); the rest of the arithmetic is the same for every source.
"""

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from ..series import gap_threshold

Interval = tuple[float, float, float]


@dataclass(frozen=True)
class Redacted:
    """Marks a field whose value may carry credentials, `Annotated[str | None, Redacted(redact.url)]`:
    runs record the value through `hide`, while the source reads it as given."""

    hide: Callable[[str], str]


class NoFields(BaseModel):
    """A source that a power file names and nothing more."""


@dataclass
class NodeRecording:
    """What a run recorded of one node, for a source to turn into intervals."""

    header: dict  # the node sampler's header (the RAPL domains it found, among others)
    samples: list[dict]  # the node sampler's samples, as it wrote them
    rows: list[dict]  # the samples as per-interval rows (series.build), CPU use among them
    board: str
    interval_s: float
    clock_offset_s: float = 0.0  # the node's clock minus this host's
    polled: dict = field(default_factory=dict)  # what the source's poller on this host kept


@dataclass
class Readings:
    """A source's intervals for one node; `unavailable` is why there are none to use (None: use these,
    even if empty). Notes are kept only beside intervals that are used."""

    intervals: list[Interval]
    unavailable: str | None = None
    notes: list[str] = field(default_factory=list)


def measured(intervals: list[Interval], why_none: str, notes: Iterable[str] = ()) -> Readings:
    """A meter's readings: no intervals means the source is unavailable, for the reason given."""
    if not intervals:
        return Readings([], why_none)
    return Readings(intervals, None, list(notes))


class Poller(Protocol):
    """A reader on this host running beside the nodes' samplers for the length of a recording."""

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def collected(self) -> dict:
        """What the run keeps of it, handed back as NodeRecording.polled."""
        ...


class PowerSource(ABC):
    """One power source: its name in power files, its fields, and the hooks the recording calls."""

    name: str
    # Derived from something other than watts (the model), which run documents mark as an estimate.
    estimate: bool = False
    fields: type[BaseModel] = NoFields

    def own(self, spec: BaseModel | Mapping[str, Any]) -> BaseModel:
        """This source's fields out of a whole power spec, or out of one as a run recorded it (a dict,
        where fields left at their defaults may be absent)."""
        names = self.fields.model_fields
        given = spec if isinstance(spec, Mapping) else {k: getattr(spec, k) for k in names}
        return self.fields.model_construct(**{k: v for k, v in given.items() if k in names})

    def check(self, spec: BaseModel) -> None:
        """Refuse fields this source cannot be read with: a ValueError whose text says what is missing."""

    def node_side(self, spec: BaseModel) -> dict | None:
        """What the node's sampler must read, as its target's `power` (sampler.py reads it by `source`)."""
        return None

    def poller(self, spec: BaseModel, interval_s: float, folder: Path, run_id: str) -> Poller | None:
        """What this host must read during a run, keeping its readings under `folder`; not started yet."""
        return None

    @abstractmethod
    def readings(self, spec: BaseModel, node: NodeRecording) -> Readings:
        """The node's intervals from what the run recorded."""


def point_intervals(points: list[tuple[float, float]], interval_s: float) -> list[Interval]:
    """Point readings (t, watts) as intervals at the mean of consecutive readings; a gap is not bridged."""
    ordered = sorted(points)
    return [(t0, t1, (w0 + w1) / 2) for (t0, w0), (t1, w1) in zip(ordered, ordered[1:])
            if 0 < t1 - t0 <= gap_threshold(interval_s)]


def sampler_error(samples: list[dict], name: str) -> str | None:
    """The first error the node's sampler reported for one of its readings."""
    for s in samples:
        if name in (s.get("errors") or {}):
            return s["errors"][name]
    return None
