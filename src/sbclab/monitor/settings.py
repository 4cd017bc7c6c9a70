"""What to measure during runs: sampling rate, margins, the idle baseline and each node's power source."""

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator
from pydantic.fields import FieldInfo

from ..cluster.inventory import Inventory
from ..errors import SbclabError
from .power import FALLBACK, SOURCES, Poller, PowerSource, Redacted

POWER_SOURCES = tuple(SOURCES)
# The power entry of a meter that measures the whole cluster at once (one plug for every node, as
# two of the seeds metered): counted once for the cluster, never added to the nodes' figures.
CLUSTER_METER = "cluster"


class _PowerSpec(BaseModel):
    """One node's power source: `source` names it, and the other fields are those its module in
    power/ declares. A power file writes them flat, `{source: http-plug, url: ..., format: shelly}`;
    what each source is, reads and needs is its module's concern."""

    model_config = ConfigDict(extra="forbid")

    @property
    def kind(self) -> PowerSource:
        return SOURCES[self.source]

    @model_validator(mode="after")
    def _complete(self):
        self.kind.check(self.kind.own(self))
        return self

    def shown(self) -> dict:
        """The source as runs record it: every field marked Redacted (a URL's credentials) hidden."""
        found = self.model_dump(exclude_none=True)
        for name, info in type(self).model_fields.items():
            for mark in info.metadata:
                if isinstance(mark, Redacted) and name in found:
                    found[name] = mark.hide(found[name])
        return found

    def node_side(self) -> dict | None:
        """What the node's own sampler reads (RAPL counters, the PMIC); the rest is read elsewhere."""
        return self.kind.node_side(self.kind.own(self))

    def poller(self, interval_s: float, folder: Path, run_id: str) -> Poller | None:
        """What this host reads during a run (a smart plug), not yet started."""
        return self.kind.poller(self.kind.own(self), interval_s, folder, run_id)


def spec_model(sources: Mapping[str, PowerSource]) -> type[_PowerSpec]:
    """The settings model of these sources: `source` names one, and every source's own fields are
    beside it in one flat set. A key two sources share must mean the same to both, since a power
    file gives it once."""
    fields = {"source": (Literal[tuple(sources)], Field(FALLBACK))}
    for source in sources.values():
        for name, info in source.fields.model_fields.items():
            if name in fields and _meaning(fields[name][1]) != _meaning(info):
                raise TypeError(f"power source {source.name} gives the field '{name}' a meaning of its own")
            fields.setdefault(name, (info.annotation, info))
    listed = "\n".join(f"    {name:10} {type(source).__doc__}" for name, source in sources.items())
    return create_model("PowerSpec", __base__=_PowerSpec, __module__=__name__,
                        __doc__=f"{_PowerSpec.__doc__}\n\n{listed}", **fields)


def _meaning(info: FieldInfo) -> tuple:
    return info.annotation, info.default, info.metadata


PowerSpec = spec_model(SOURCES)


class MonitorSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    hz: float = Field(1.0, ge=0.2, le=10, description="samples per second on every node")
    margin_s: float = Field(1.0, ge=0, le=60, description="sampling before the job starts and after it ends")
    idle_baseline_s: float = Field(10.0, ge=0, le=3600, description="idle sampling before a suite; 0 skips it")
    busy_window_s: float = Field(2.0, ge=0, le=60, description="seconds of each machine's CPU use outside the "
                                 "cluster read before every sampled run; 0 skips the too-busy check")
    # A tenth of a machine: on a 4-core board 0.4 of a core, less than one busy thread; on a 2-core host
    # a fifth of one core. sbc-bench calls 2 % too much for its single-threaded tests; a cluster's run,
    # longer and spread over every core, is less fragile than those.
    busy_max_pct: float = Field(10.0, gt=0, le=100, description="% of a machine's CPU used outside the cluster "
                                "before a run above which the run is flagged too busy to benchmark")
    power: dict[str, PowerSpec] = Field(default_factory=dict,
                                        description="'default', a node name or 'cluster' (one meter for all) -> source")
    prometheus: str | None = Field(None, pattern=r"^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]*):[0-9]{1,5}$",
                                   description="HOST:PORT to serve the run in progress as Prometheus metrics on")

    @model_validator(mode="after")
    def _cluster_meter_is_read_here(self):
        meter = self.power.get(CLUSTER_METER)
        if meter is not None and (meter.source == FALLBACK or meter.node_side() is not None):
            raise ValueError(f"the '{CLUSTER_METER}' meter measures every node at once, so it must be read by this "
                             f"host (http-plug or csv), not '{meter.source}'")
        return self

    @model_validator(mode="after")
    def _prometheus_port_exists(self):
        if self.prometheus and not 0 < int(self.prometheus.rpartition(":")[2]) < 65536:
            raise ValueError(f"{self.prometheus}: a port is 1-65535")
        return self

    def power_for(self, node: str) -> PowerSpec:
        return self.power.get(node) or self.power.get("default") or PowerSpec()

    @property
    def cluster_meter(self) -> PowerSpec | None:
        return self.power.get(CLUSTER_METER)

    def check_nodes(self, names: list[str]) -> None:
        """Refuse power sources for nodes the cluster does not have (a typo would silently use the model)."""
        unknown = [n for n in self.power if n not in ("default", CLUSTER_METER) and n not in names]
        if unknown:
            raise SbclabError(f"Power sources are given for {', '.join(unknown)}, which the cluster does not have.",
                              f"Name its nodes ({', '.join(names)}), 'default' or '{CLUSTER_METER}'.")


OFF = MonitorSettings(enabled=False)


def inventory_power(inventory: Inventory) -> dict[str, PowerSpec]:
    """Each board's power source as its inventory gives it (boards that name none are left out)."""
    found = {}
    for host in inventory.hosts:
        if not host.power:
            continue
        try:
            found[host.name] = PowerSpec.model_validate(host.power)
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "source"
            raise SbclabError(f"{inventory.source}: host '{host.name}' has a bad power.{field}: "
                              f"{first['msg'].removeprefix('Value error, ')}.",
                              "Fix that value; examples/inventory.yml shows every field.") from err
    return found


def with_inventory_power(settings: MonitorSettings, inventory: Inventory) -> MonitorSettings:
    """The boards' power sources from the inventory, where the settings name none for that board:
    a power file's entry for a board wins, then the inventory's, then the file's default."""
    power = dict(settings.power)
    for name, spec in inventory_power(inventory).items():
        if name not in power and (spec.source != "model" or "default" not in power):
            power[name] = spec
    return settings.model_copy(update={"power": power})
