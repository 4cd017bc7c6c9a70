"""The boards of a real cluster, written the way Pi-cluster users already write Ansible inventories.

    all:
      vars: {ansible_user: pi, board: rpi5b, storage: nvme-p31-gen3, data_dir: /srv/sbclab}
      children:
        master:  {hosts: {pi0: {ansible_host: 192.168.1.10}}}
        workers: {hosts: {pi1: {ansible_host: 192.168.1.11}, pi2: {ansible_host: 192.168.1.12}}}

Variables are inherited all.vars -> group vars -> host, the nearer one winning, as in Ansible. Both
Ansible's names (ansible_host, ansible_user, ansible_port, ansible_ssh_private_key_file) and short
ones (address, user, port, key) are accepted. Everything is validated here, before any connection:
names, addresses, users and paths are restricted to characters that need no quoting, and commands
built from them still quote every value (shlex), so an inventory cannot smuggle in shell.
"""

import ipaddress
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator

from .. import profiles, utf8
from ..errors import SbclabError

_HOST_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,62}$")
_DNS_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
_SAFE_PATH = re.compile(r"^[A-Za-z0-9._/~+-]+$")
_ALIASES = {"ansible_host": "address", "ansible_user": "user", "ansible_port": "port",
            "ansible_ssh_private_key_file": "key", "ansible_ssh_port": "port"}
GROUPS = {"master": "master", "workers": "worker"}
# A host's name is its key and its role its group; a variable cannot say otherwise.
_PLACED = {"name": "the key a host is listed under is its name",
           "role": "a host's role is the group it is listed in, master or workers"}


class Host(BaseModel):
    """One board as sbclab reaches it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    role: str
    address: str
    user: str = "pi"
    # Strict: YAML reads `port: true` as a boolean, which would otherwise become port 1.
    port: StrictInt = Field(22, ge=1, le=65535)
    key: str | None = None
    board: str = "rpi5b"
    storage: str = "nvme-p31-gen3"
    data_dir: str = "/srv/sbclab"
    # The board's power source as written; monitor/settings.py reads it (inventory_power).
    power: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _HOST_NAME.match(v):
            raise ValueError("use letters, digits and '-', starting with a letter (it becomes a file and host name)")
        return v

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        try:
            return str(ipaddress.ip_address(v))
        except ValueError:
            if _DNS_NAME.match(v):
                return v
        raise ValueError("not an IP address or a DNS name")

    @field_validator("user")
    @classmethod
    def _user(cls, v: str) -> str:
        if not _USER.match(v):
            raise ValueError("not a Unix user name (lower-case letters, digits, '_' and '-')")
        return v

    @field_validator("key")
    @classmethod
    def _key(cls, v: str | None) -> str | None:
        if v is not None and not _SAFE_PATH.match(v):
            raise ValueError("a key file path may hold letters, digits and . _ / ~ + - only")
        return v

    @field_validator("data_dir")
    @classmethod
    def _data_dir(cls, v: str) -> str:
        if not v.startswith("/") or not _SAFE_PATH.match(v) or "/../" in f"{v}/" or v.rstrip("/") == "":
            raise ValueError("an absolute path of letters, digits and . _ / + - other than / itself")
        return v.rstrip("/")

    @property
    def key_path(self) -> Path | None:
        return Path(self.key).expanduser() if self.key else None


class Inventory(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str
    hosts: tuple[Host, ...]

    @property
    def master(self) -> Host:
        return next(h for h in self.hosts if h.role == "master")

    @property
    def workers(self) -> list[Host]:
        return [h for h in self.hosts if h.role == "worker"]

    def first_workers(self, count: int) -> "Inventory":
        """The master and the first `count` workers, as listed: the boards a smaller cell runs on
        (none beside a master that is a worker too)."""
        if not 0 <= count <= len(self.workers):
            raise SbclabError(f"{self.source} has {len(self.workers)} worker(s); {count} were asked for.",
                              "Use worker counts the inventory has, or add boards to it.")
        return self.model_copy(update={"hosts": (self.master, *self.workers[:count])})

    def host(self, name: str) -> Host:
        for h in self.hosts:
            if h.name == name:
                return h
        raise SbclabError(f"{self.source} has no host '{name}'.", f"Hosts: {', '.join(h.name for h in self.hosts)}.")


class _NoDuplicates(yaml.SafeLoader):
    """YAML silently keeps the last of two equal keys; an inventory with two `pi1:` is a mistake."""


def _mapping(loader: _NoDuplicates, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"'{key}' appears twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_NoDuplicates.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _fail(source: str, what: str, fix: str) -> SbclabError:
    return SbclabError(f"{source}: {what}.", fix)


def _vars(source: str, where: str, raw: Any) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _fail(source, f"{where} must be a mapping of variables", "Write `name: value` pairs under it.")
    out = {}
    for key, value in raw.items():
        key = _ALIASES.get(str(key), str(key))
        if key.startswith("ansible_"):
            continue  # Ansible's own settings (python interpreter, become, ...) mean nothing to sbclab
        if key in _PLACED:
            raise _fail(source, f"{where} sets the variable '{key}', which sbclab does not take from variables",
                        f"Remove '{key}:' there: {_PLACED[key]}.")
        out[key] = value
    return out


def parse(text: str, source: str = "inventory") -> Inventory:
    try:
        raw = yaml.load(text, Loader=_NoDuplicates)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        raise _fail(source, f"not valid YAML ({err})", "Fix the syntax; examples/inventory.yml is a working file.") from err
    if not isinstance(raw, dict) or not isinstance(raw.get("all"), dict):
        raise _fail(source, "has no 'all' group", "Start the file with `all:` holding `children: {master: ..., workers: ...}`.")
    top = raw["all"]
    common = _vars(source, "all.vars", top.get("vars"))
    children = top.get("children")
    if not isinstance(children, dict) or set(children) - set(GROUPS):
        unknown = sorted(set(children or {}) - set(GROUPS)) if isinstance(children, dict) else []
        raise _fail(source, "all.children must hold the groups 'master' and 'workers'"
                    + (f", not {', '.join(map(str, unknown))}" if unknown else ""),
                    "Put the master under all.children.master.hosts and the workers under all.children.workers.hosts.")
    hosts: list[Host] = []
    for group, role in GROUPS.items():
        body = children.get(group) or {}
        if not isinstance(body, dict):
            raise _fail(source, f"group '{group}' must be a mapping", f"Write `{group}: {{hosts: {{...}}}}`.")
        group_vars = {**common, **_vars(source, f"{group}.vars", body.get("vars"))}
        members = body.get("hosts") or {}
        if not isinstance(members, dict):
            raise _fail(source, f"{group}.hosts must map host names to their variables", "Write `hosts: {pi1: {ansible_host: ...}}`.")
        for name, host_vars in members.items():
            if not isinstance(name, str):
                # YAML reads a bare ~ or null as no value, yes/no as booleans and 12 as a number.
                raise _fail(source, f"{group}.hosts lists a host whose name YAML reads as the value "
                            f"{yaml.safe_dump(name).splitlines()[0]}, not as a name",
                            "Name each host with letters, digits and '-', starting with a letter, e.g. pi1.")
            fields = {**group_vars, **_vars(source, f"host '{name}'", host_vars)}
            fields.setdefault("address", str(name))
            try:
                hosts.append(Host(name=name, role=role, **fields))
            except ValidationError as err:
                first = err.errors()[0]
                field = ".".join(str(p) for p in first["loc"]) or "(host)"
                raise _fail(source, f"host '{name}' has a bad {field}: {first['msg'].removeprefix('Value error, ')}",
                            "Fix that value; examples/inventory.yml shows every field.") from err
    _check_cluster(source, hosts)
    return Inventory(source=source, hosts=tuple(hosts))


def _check_cluster(source: str, hosts: list[Host]) -> None:
    masters = [h for h in hosts if h.role == "master"]
    if len(masters) != 1:
        raise _fail(source, f"needs exactly one master host, found {len(masters)}", "List one host under all.children.master.hosts.")
    if not any(h.role == "worker" for h in hosts):
        raise _fail(source, "lists no workers", "List at least one host under all.children.workers.hosts.")
    names, endpoints = set(), set()
    for h in hosts:
        if h.name in names:
            raise _fail(source, f"host '{h.name}' is listed twice", "Give every board one entry, in one group.")
        if (h.address, h.port) in endpoints:
            raise _fail(source, f"{h.address}:{h.port} is given to two hosts", "Every board needs its own address (or port).")
        names.add(h.name)
        endpoints.add((h.address, h.port))
        try:
            profiles.check_pair(h.board, h.storage)
        except SbclabError as err:
            raise _fail(source, f"host '{h.name}': {err.message}", err.hint) from err


def load(path: Path) -> Inventory:
    try:
        text = utf8.read(path)
    except OSError as err:
        raise SbclabError(f"Cannot read the inventory {path}: {err.strerror}.",
                          "Give the path of a YAML inventory; examples/inventory.yml is a template.") from err
    return parse(text, str(path))


class BoardAccess(BaseModel):
    """How this host reaches a cluster's boards: their inventory and the host keys they must show."""

    model_config = ConfigDict(frozen=True)

    inventory: Inventory
    known_hosts: str
    accept_new_host_keys: bool = False
    # A JDK on this host (a folder or a tarball) for boards where neither an installed Java nor the
    # distribution's packages fit the stack: copied once, checked by its digest.
    jdk: str | None = None
