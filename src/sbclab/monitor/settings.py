"""What to measure during runs: sampling rate, margins, the idle baseline and each node's power source."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..cluster.inventory import Inventory
from .. import redact
from ..errors import SbclabError

POWER_SOURCES = ("model", "rapl", "pi5-pmic", "http-plug", "csv")


class PowerSpec(BaseModel):
    """One node's power source.

    model      linear between the board profile's idle and full-load watts by CPU utilisation (an estimate)
    rapl       the powercap energy counters of an Intel/AMD node (package domains summed)
    pi5-pmic   the Raspberry Pi 5's PMIC rail readings (`vcgencmd pmic_read_adc`)
    http-plug  a smart plug's HTTP JSON API (Shelly Gen1 /status, Shelly Gen2+ Switch.GetStatus, Tasmota Status 8)
    csv        a log from an external meter: a time column and a watts column, aligned by timestamp
    """

    model_config = ConfigDict(extra="forbid")

    source: Literal["model", "rapl", "pi5-pmic", "http-plug", "csv"] = "model"
    url: str | None = Field(None, description="http-plug: the plug's status URL")
    format: Literal["shelly", "shelly-gen2", "tasmota"] | None = None
    path: str | None = Field(None, description="csv: the meter's log file")
    time_column: str = "time"
    watts_column: str = "watts"
    powercap: str = Field("/sys/class/powercap", description="rapl: where the powercap tree is")
    timeout_s: float = Field(2.0, gt=0, le=30)

    @model_validator(mode="after")
    def _complete(self):
        if self.source == "http-plug" and not (self.url and self.format):
            raise ValueError("an http-plug source needs 'url' and 'format' (shelly, shelly-gen2 or tasmota)")
        if self.source == "http-plug" and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"the plug's url '{self.url}' must start with http:// or https://")
        if self.source == "csv" and not self.path:
            raise ValueError("a csv source needs 'path', the meter's log file")
        return self

    def shown(self) -> dict:
        """The source as runs record it: its URL without credentials (redact.py)."""
        found = self.model_dump(exclude_none=True)
        if "url" in found:
            found["url"] = redact.url(found["url"])
        return found

    def node_side(self) -> dict | None:
        """What the node's own sampler reads (RAPL counters, the PMIC); the rest is read elsewhere."""
        if self.source == "rapl":
            return {"source": "rapl", "powercap": self.powercap}
        if self.source == "pi5-pmic":
            return {"source": "pi5-pmic"}
        return None


class MonitorSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    hz: float = Field(1.0, ge=0.2, le=10, description="samples per second on every node")
    margin_s: float = Field(1.0, ge=0, le=60, description="sampling before the job starts and after it ends")
    idle_baseline_s: float = Field(10.0, ge=0, le=3600, description="idle sampling before a suite; 0 skips it")
    power: dict[str, PowerSpec] = Field(default_factory=dict, description="'default' or a node name -> source")

    def power_for(self, node: str) -> PowerSpec:
        return self.power.get(node) or self.power.get("default") or PowerSpec()

    def check_nodes(self, names: list[str]) -> None:
        """Refuse power sources for nodes the cluster does not have (a typo would silently use the model)."""
        unknown = [n for n in self.power if n != "default" and n not in names]
        if unknown:
            raise SbclabError(f"Power sources are given for {', '.join(unknown)}, which the cluster does not have.",
                              f"Name its nodes ({', '.join(names)}) or 'default'.")


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
