"""Option bundles: options that always travel together, given to a command as one object.

Each bundle is a dataclass and a decorator that adds its options to a command and hands the
command the object, so a command takes a handful of parameters however many options it has."""

import functools
from dataclasses import dataclass, fields
from pathlib import Path

import click
import yaml
from pydantic import ValidationError

from .. import utf8
from ..cluster import inventory, knobs, spec as cluster_spec
from ..cluster.inventory import BoardAccess, Inventory
from ..cluster.spec import ClusterSpec
from ..cluster.remote import DEFAULT_KNOWN_HOSTS
from ..errors import SbclabError
from ..experiments import plan
from ..experiments.model import ClusterSettings
from ..monitor.settings import MonitorSettings
from ..stack import versions as stack_versions
from ..stack.presets import PRESETS
from .values import FiniteRange, size


def bundle(cls, options: list, parameter: str):
    """Add `options` to a command and pass their values to it as one `cls` object named `parameter`."""
    wanted = [f.name for f in fields(cls)]

    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            kwargs[parameter] = cls(**{name: kwargs.pop(name) for name in wanted})
            return func(*args, **kwargs)
        for option in reversed(options):
            wrapper = option(wrapper)
        return wrapper
    return decorate


@dataclass
class Shape:
    """A cluster's shape as the user gives it."""

    name: str
    workers: int
    board: str
    storage: str
    preset: str
    backend: str | None
    subnet: str
    disk_size: int | None
    timeout: float
    scale_factor: float | None
    spark_manager: str
    layout: str
    master_board: str | None
    master_storage: str | None
    stack: str

    def settings(self, knobs: tuple[str, ...] = ()) -> ClusterSettings:
        return ClusterSettings(name=self.name, board=self.board, backend=self.backend, subnet=self.subnet,
                               disk_size=self.disk_size, scale=self.scale_factor, timeout_s=self.timeout,
                               knobs=list(knobs), spark_manager=self.spark_manager, master_board=self.master_board,
                               master_storage=self.master_storage)


shape_options = bundle(Shape, [
    click.option("--name", default="lab", show_default=True, help="Cluster name; several clusters can coexist."),
    click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True,
                 help="Number of worker nodes (a master is added, unless it is a worker too: --layout)."),
    click.option("--profile", "board", default="rpi5b", show_default=True,
                 help="Board profile of every node (see 'sbclab profiles list')."),
    click.option("--storage", default="nvme", show_default=True, help="Storage medium profile of every node."),
    click.option("--preset", type=click.Choice(list(PRESETS)), default="stock", show_default=True,
                 help="stock = upstream defaults; paper = the newest seed's Tables 9-10."),
    click.option("--backend", type=click.Choice(cluster_spec.BACKENDS), default=None,
                 help="emulated (root: namespaces + cgroups, shaped) or processes (no root, unshaped). "
                      "Default: emulated when root."),
    click.option("--subnet", default="10.213.0.0/24", show_default=True, help="Private network of the emulated nodes."),
    click.option("--disk-size", callback=size, default=None,
                 help="Size of each emulated node's filesystem, e.g. 8GiB. Default: 4GiB, more for large --size."),
    click.option("--timeout", type=float, default=180, show_default=True,
                 help="Seconds to wait for the daemons to be ready."),
    click.option("--scale", "scale_factor", type=FiniteRange(0, 1, min_open=True), default=None,
                 help="Fix the emulation scale factor (default: the largest this host can give). Use one value to "
                      "compare different boards."),
    click.option("--spark-manager", type=click.Choice(["yarn", "standalone"]), default="yarn", show_default=True,
                 help="What runs Spark's executors: YARN, or Spark's standalone master and workers over HDFS "
                      "(no YARN, so no MapReduce; what 1 GB boards can hold)."),
    click.option("--layout", type=click.Choice(cluster_spec.LAYOUTS), default="separate-master", show_default=True,
                 help="Where the master's daemons run: a board of their own, the first worker (the master counts as "
                      "one of --workers), or a desktop (--master-profile) beside the board workers."),
    click.option("--master-profile", "master_board", default=None,
                 help="The master's board where it is not the workers' (a Pi 5 master beside RK3588 workers, say; "
                      f"the desktop-master layout's default is {cluster_spec.DESKTOP_MASTER})."),
    click.option("--master-storage", default=None,
                 help="The master's medium where it is not the workers' (the desktop-master layout's default is "
                      f"{cluster_spec.DESKTOP_MASTER_STORAGE})."),
    click.option("--stack", default=stack_versions.DEFAULT, show_default=True,
                 help="Named Hadoop and Spark versions (see 'sbclab stack list')."),
], "shape")


@dataclass
class Monitoring:
    """How runs are measured; an experiment file's `monitor:` is overridden by what is given."""

    sample_hz: float | None
    no_sampling: bool
    idle_baseline: float | None
    power_file: Path | None
    prometheus: str | None
    busy_max: float | None

    def settings(self, base: dict | None = None) -> MonitorSettings:
        raw = dict(base or {})
        if self.prometheus:
            raw["prometheus"] = self.prometheus
        if self.sample_hz is not None:
            raw["hz"] = self.sample_hz
        if self.no_sampling:
            raw["enabled"] = False
        if self.idle_baseline is not None:
            raw["idle_baseline_s"] = self.idle_baseline
        if self.busy_max == 0:
            raw["busy_window_s"] = 0
        elif self.busy_max is not None:
            raw["busy_max_pct"] = self.busy_max
        if self.power_file:
            try:
                given = yaml.safe_load(utf8.read(self.power_file))
            except (OSError, yaml.YAMLError) as err:
                raise SbclabError(f"Cannot read the power file {self.power_file}: {' '.join(str(err).split())}.",
                                  "Give a YAML file such as 'default: {source: model}'.") from err
            if not isinstance(given, dict):
                raise SbclabError(f"{self.power_file} is not a mapping of node names to power sources.",
                                  "Write e.g. 'default: {source: model}' and "
                                  "'worker1: {source: http-plug, url: ..., format: shelly}'.")
            raw["power"] = given
        try:
            return MonitorSettings.model_validate(raw)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise SbclabError(f"Monitoring settings: {where}: {first['msg'].removeprefix('Value error, ')}.",
                              "See 'sbclab run --help' and docs/measurements.md for the power sources and their "
                              "fields.") from err


monitor_options = bundle(Monitoring, [
    click.option("--sample-hz", type=FiniteRange(0.2, 10), default=None,
                 help="Samples per second on every node during runs (default 1)."),
    click.option("--no-sampling", is_flag=True, help="Run without per-node samplers (no series, power or flags)."),
    click.option("--idle-baseline", type=FiniteRange(0, 3600), default=None,
                 help="Seconds of idle sampling before the runs, for energy above idle (default 10; 0 skips)."),
    click.option("--power-file", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
                 help="YAML: node name (or 'default') -> power source, e.g. {default: {source: rapl}}."),
    click.option("--prometheus", metavar="HOST:PORT", default=None,
                 help="Serve the run in progress as Prometheus metrics there (e.g. 127.0.0.1:9464; "
                      "examples/grafana has a dashboard)."),
    click.option("--busy-max", type=FiniteRange(0, 100), default=None, metavar="PCT",
                 help="Flag a run too busy to benchmark when a machine used more than PCT % of its CPU outside the "
                      "cluster before it (default 10; 0 skips the check, e.g. beside other work on purpose)."),
], "monitoring")


@dataclass
class HostKeys:
    """How boards' host keys are checked (cluster/remote.py), for every command that reaches boards."""

    known_hosts: Path | None
    accept_new_host_keys: bool

    def access(self, inventory: Inventory) -> BoardAccess:
        return BoardAccess(inventory=inventory, known_hosts=str(self.known_hosts or DEFAULT_KNOWN_HOSTS),
                           accept_new_host_keys=self.accept_new_host_keys)


KNOWN_HOSTS = click.option("--known-hosts", type=click.Path(dir_okay=False, path_type=Path), default=None,
                           help="The known_hosts file that host keys are checked against (default ~/.ssh/known_hosts).")
ACCEPT_NEW_HOST_KEYS = click.option("--accept-new-host-keys", is_flag=True,
                                    help="Record the key of a board never seen before (trust on first use); "
                                         "a changed key is refused always.")
host_key_options = bundle(HostKeys, [KNOWN_HOSTS, ACCEPT_NEW_HOST_KEYS], "keys")
INVENTORY = click.option("--inventory", "inventory_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                         help="Run on the boards of this YAML inventory over SSH (examples/inventory.yml) instead of "
                              "emulating nodes.")


@dataclass
class Boards:
    """Real boards instead of emulated nodes, and the cluster's knobs."""

    knob_names: tuple[str, ...]
    inventory_file: Path | None
    known_hosts: Path | None
    accept_new_host_keys: bool
    dist_dir: str | None
    expose_web_uis: bool
    jdk: Path | None

    @property
    def keys(self) -> HostKeys:
        return HostKeys(self.known_hosts, self.accept_new_host_keys)

    def knobs(self) -> tuple[str, ...]:
        return knobs.check_cluster_knobs(self.knob_names)

    def of_inventory(self, name: str, shape: "Shape | None" = None) -> tuple[ClusterSpec | None, BoardAccess | None]:
        """(spec, how to reach the boards) of the inventory, or (None, None) without one; the spec is
        built where every board cluster's is (plan.board_spec_for), in the shape's layout."""
        if self.inventory_file is None:
            if self.expose_web_uis:
                raise SbclabError("--expose-web-uis is for real boards.", "Give it with --inventory.")
            return None, None
        if self.dist_dir is not None and not self.dist_dir.startswith("/"):
            raise SbclabError(f"--dist-dir {self.dist_dir} is not an absolute path.", "Give one like /opt/sbclab.")
        hosts = inventory.load(self.inventory_file)
        spec = plan.board_spec_for(hosts, name=name, knobs=self.knobs(),
                                   **({"layout": shape.layout} if shape else {}))
        access = self.keys.access(hosts)
        if self.jdk is not None:
            access = access.model_copy(update={"jdk": str(self.jdk.resolve())})
        return spec, access


board_options = bundle(Boards, [
    click.option("--knob", "knob_names", multiple=True, metavar="NAME",
                 help="A cluster knob to apply (repeatable): crc-off (HDFS checksums off) or fstrim (trim the "
                      "nodes' filesystems before every run). See 'sbclab knobs'; recorded in every run."),
    click.option("--inventory", "inventory_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                 help="Deploy onto the boards of this YAML inventory over SSH (examples/inventory.yml) "
                      "instead of emulating nodes; the shape options are then taken from it."),
    KNOWN_HOSTS,
    ACCEPT_NEW_HOST_KEYS,
    click.option("--dist-dir", default=None,
                 help="Where Hadoop and Spark live on every board (the same path on all; copied there when "
                      "missing or different). Default: the master's data_dir/sbclab/dist."),
    click.option("--expose-web-uis", is_flag=True,
                 help="Let the web UIs and REST APIs listen on the boards' inventory addresses instead of their "
                      "loopback. Anyone who reaches those addresses can then run code on the cluster through "
                      "YARN's REST API: only on a network of your own (docs/boards.md)."),
    click.option("--jdk", type=click.Path(exists=True, path_type=Path), default=None,
                 help="A JDK on this host (folder or .tar.gz/.tar.xz) for boards that have no Java the stack runs on "
                      "and whose distribution packages none (a Debian 13 board and the lee-park-2026 stack): copied "
                      "once, checked by its SHA-256."),
], "boards")


@dataclass
class CostOptions:
    kwh_price: float | None
    currency: str | None
    switch_usd: float | None
    psu_usd: float | None

    def given(self) -> dict:
        return {k: v for k, v in (("kwh_price", self.kwh_price), ("currency", self.currency),
                                  ("switch_usd", self.switch_usd), ("psu_usd", self.psu_usd)) if v is not None}


cost_options = bundle(CostOptions, [
    click.option("--kwh-price", type=FiniteRange(0),
                 help="Price of one kWh for the yearly energy cost (default 0.25, Baun's Eq. 1)."),
    click.option("--currency", help="Currency of --kwh-price (default EUR)."),
    click.option("--switch-usd", type=FiniteRange(0), help="Price of the cluster's switch in USD (default 20)."),
    click.option("--psu-usd", type=FiniteRange(0), help="Price of one power supply in USD (default 12)."),
], "costs")
