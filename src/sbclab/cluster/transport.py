"""How sbclab reaches a node: the one narrow interface every kind of node implements.

Emulated nodes (emulated.py), plain local processes (processes.py) and real boards over SSH (ssh.py)
each implement these operations and nothing else; what runs on a node (Java, Hadoop, samplers,
benchmark programs) is built above them, as Jepsen layers its database and OS over its remote.

Operations: create_nodes, destroy, run, run_all, capture, attach, start, stop, stop_orphans, put, get,
make_dirs, remove. Facts about a node (its folders, user, base environment, how its web endpoints
are reached, what it is made of) are plain methods beside them.
"""

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .cgroups import NodeCgroup
from .spec import ClusterSpec, NodeSpec
from .state import ClusterState

# Which of a node's walls a command starts inside: all of them, only its network (and host name),
# or only its CPU and memory limits (a sampler that reads the host's kernel interfaces).
Enter = Literal["node", "network", "limits"]


@dataclass(frozen=True)
class Captured:
    status: int
    stdout: bytes
    stderr: bytes


@dataclass
class Job:
    """One command for run_all: on `node`, its output appended to `log`; `feed` is a command of this
    host whose output becomes the job's input."""

    node: NodeSpec
    argv: list[str]
    env: dict[str, str]
    log: Path
    label: str
    feed: list[str] | None = None


@dataclass(frozen=True)
class MpiNetworks:
    """CIDRs for OpenMPI's interface filters: `ranks` for messages between nodes, `daemons` for its
    daemons' link back to mpirun on this host."""

    ranks: list[str]
    daemons: list[str]


@dataclass(frozen=True)
class NodeParts:
    """What a node is made of, for whoever measures it (monitor/sampling.py).

    scope "node": the figures below are the node's own; "host": the node shares this host's.
    Each field is None where the node has no such part of its own, or where the node finds it
    itself (a board finds the device holding its data folder and the interface with its address)."""

    scope: Literal["node", "host"]
    cores: int | None = None
    cpu_capacity: float | None = None
    memory_limit: int | None = None
    cgroup: dict | None = None
    device: str | None = None
    device_of: str | None = None
    interface: dict | None = None
    interface_of: str | None = None
    disk_limits: dict | None = None
    extra: dict = field(default_factory=dict)


class Session(ABC):
    """A command left running on a node (a daemon, a server, a sampler), recorded in the cluster's
    state so it is stopped at teardown even if this sbclab is killed."""

    node: NodeSpec
    label: str
    entry: dict

    @abstractmethod
    def poll(self) -> int | str | None:
        """None while it runs; its exit status (or why it is not known) once it has stopped."""

    @property
    def returncode(self):
        return self.poll()


class Transport(ABC):
    name: str
    shaped: bool            # nodes are given their profile's resources (CPU, memory, disk, link)
    shares_host: bool       # every node runs on this host: one page cache, one /proc/stat, one set of programs
    own_filesystems: bool   # each node's data folder is a filesystem of its own (it can be trimmed)

    def __init__(self, state: ClusterState):
        self.state = state
        self.spec: ClusterSpec = state.spec
        self._lock = threading.Lock()

    # --- facts ------------------------------------------------------------------------------

    def node_dir(self, node: NodeSpec) -> Path:
        """The node's own files that are not on its data disk: configs, pid files, samples."""
        return self.state.root / "nodes" / node.name

    @abstractmethod
    def node_disk(self, node: NodeSpec) -> Path:
        """Where the node keeps its data (its storage medium)."""

    @abstractmethod
    def user(self, node: NodeSpec) -> str:
        """The user commands run as on the node."""

    @abstractmethod
    def base_env(self, node: NodeSpec) -> dict[str, str]:
        """The environment every command on the node starts from."""

    def where(self, node: NodeSpec, path: Path) -> str:
        """A node's path the way a user should look for it."""
        return str(path)

    def common_dir(self, name: str) -> Path:
        """A folder with the same path on every node (one working folder for all ranks of an MPI run)."""
        return self.state.root / "common" / name

    def reach(self, node: NodeSpec, host: str, port: int) -> str:
        """The URL by which this host reaches a web endpoint listening on host:port on the node."""
        return f"http://{host}:{port}"

    def host_address(self) -> str:
        """The address this host has towards the nodes."""
        return self.spec.master.address

    def parts(self, node: NodeSpec) -> NodeParts:
        """What the node is made of, for its sampler."""
        return NodeParts(scope="host")

    def memory_group(self, node: NodeSpec) -> NodeCgroup | None:
        """The cgroup the node's memory is limited and accounted in; None where it has none of its own
        (its memory is then the host's or the board's, as its sampler reads it)."""
        return None

    def mpi_networks(self, nodes: list[NodeSpec]) -> MpiNetworks | None:
        """Networks MPI's daemons and ranks keep to; None: OpenMPI's own choice."""
        return None

    def short_cpu_periods(self, nodes: list[NodeSpec]):
        """A context in which the nodes suit programs that poll for messages (MPI); it yields the
        CPU period used, or None where the nodes' CPUs are not shaped."""
        return _NoPeriods()

    def finish_shaping(self) -> None:
        """What shaping the nodes leaves until they serve; see EmulatedTransport."""

    def container_runtimes(self) -> tuple[str, ...]:
        """The container runtimes that keep a container inside a node, in the order tried (containers.py)."""
        return ("podman", "docker")

    def container_entry(self, node: NodeSpec) -> list[str]:
        """What goes before a container runtime's command on the node ([]: it runs as any command)."""
        return []

    # --- operations -------------------------------------------------------------------------

    @abstractmethod
    def create_nodes(self) -> None:
        """Make every node; each resource is recorded in the state before it is created."""

    @abstractmethod
    def destroy(self) -> list[str]:
        """Stop everything the cluster runs and remove what it made; what could not be removed."""

    @abstractmethod
    def run(self, node: NodeSpec, argv: list[str], env: dict[str, str], log: Path, timeout_s: float | None = None,
            cwd: Path | None = None, label: str = "command", feed: list[str] | None = None,
            on_host: bool = False) -> int:
        """Run argv on the node to completion, its output appended to log; the exit status.

        feed: a command of this host whose output is argv's input. on_host: run it on this host,
        recorded with the cluster like the node's commands (a launcher such as mpirun)."""

    @abstractmethod
    def run_all(self, jobs: list[Job], timeout_s: float | None = None) -> list[int]:
        """Run every job at once (several per node if asked); their exit statuses, in order. If one
        cannot finish in time or the wait is interrupted, the others are stopped too."""

    @abstractmethod
    def capture(self, node: NodeSpec, argv: list[str], env: dict[str, str] | None = None,
                timeout_s: float = 120) -> Captured:
        """A short command on the node, its output captured."""

    @abstractmethod
    def attach(self, node: NodeSpec, command: str) -> int:
        """A shell command on the node with this process's standard streams, ending when this
        process does (what `ssh node command` does; a local node may replace this process)."""

    @abstractmethod
    def start(self, node: NodeSpec, argv: list[str], env: dict[str, str], out: Path, cwd: Path | None = None,
              label: str = "command", owned: bool = True, enter: Enter = "node") -> Session:
        """argv left running on the node, its output in the node's file `out`.

        owned: it belongs to this sbclab process, and the next sbclab stops it if this one dies
        (stop_orphans); a daemon that outlives the command that started it is not owned."""

    @abstractmethod
    def stop(self, session: Session, grace_s: float = 2) -> None:
        """Stop a session with everything it started, and forget its record."""

    @abstractmethod
    def stop_orphans(self) -> list[str]:
        """Stop the owned sessions whose sbclab died without stopping them; their labels."""

    def sessions(self, label: str) -> list[dict]:
        """The recorded sessions of that label (a daemon's key): what teardown would stop."""
        return [e for kind in ("process", "remote_process") for e in self.state.of_kind(kind) if e.get("label") == label]

    @abstractmethod
    def node_processes(self, node: NodeSpec, pattern: str) -> list[int]:
        """The pids of the node's processes of this cluster whose command line matches the regular
        expression (a Java main class): what a fault kills or pauses, never another node's."""

    @abstractmethod
    def still_running(self, entries: list[dict]) -> list[bool]:
        """Whether each recorded session still runs (a daemon that died is False)."""

    @abstractmethod
    def put(self, node: NodeSpec, folder: Path, files: dict[str, str]) -> None:
        """Text files into a folder on the node, each whole or not at all."""

    @abstractmethod
    def get(self, node: NodeSpec, path: Path, here: Path) -> Path | None:
        """Where a node's file can be read on this host (copied to `here` if it must be); None if missing."""

    @abstractmethod
    def make_dirs(self, node: NodeSpec, folders: list[Path], fresh: list[Path] = ()) -> None:
        """Folders on the node; those in `fresh` are emptied first."""

    @abstractmethod
    def remove(self, node: NodeSpec, path: Path) -> None:
        """A file or a folder with everything in it."""

    # --- built on the operations --------------------------------------------------------------

    def read_text(self, node: NodeSpec, path: Path) -> str | None:
        """A text file on the node, or None when it is not there."""
        here = self.state.root / "fetched" / node.name / Path(path).name
        got = self.get(node, path, here)
        if got is None:
            return None
        try:
            return got.read_text(errors="replace")
        finally:
            if got == here:
                here.unlink(missing_ok=True)

    def close(self) -> None:
        """Let go of connections (nothing to do where nodes are local)."""


class _NoPeriods:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False

