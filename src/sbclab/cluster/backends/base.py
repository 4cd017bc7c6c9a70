"""What every backend gives the stack: node environments, a way to run commands on a node, and removal."""

import getpass
import os
import shlex
import shutil
import subprocess
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable

import psutil

from ... import atomic
from ...errors import SbclabError
from .. import reaper
from ..spec import NodeSpec


def check_local_programs(packages_by_program: dict[str, str]) -> None:
    """A program missing on this host is said before anything starts, with the Debian package that brings it."""
    missing = {program: package for program, package in packages_by_program.items() if not shutil.which(program)}
    if missing:
        raise SbclabError(f"Missing on this host: {', '.join(missing)}.",
                          f"Install the Debian packages (apt-get install {' '.join(sorted(set(missing.values())))}), "
                          "or run 'make setup'.")


@dataclass(frozen=True)
class MpiNetworks:
    """CIDRs for OpenMPI's interface filters: `ranks` for messages between nodes, `daemons` for its
    daemons' link back to mpirun on this host."""
    ranks: list[str]
    daemons: list[str]


class Backend(ABC):
    name: str
    shaped: bool

    def __init__(self, state):
        self.state = state
        self.spec = state.spec

    def node_dir(self, node: NodeSpec) -> Path:
        """The node's own files that are not on its data disk: configs, logs, pids."""
        return self.state.root / "nodes" / node.name

    @abstractmethod
    def node_disk(self, node: NodeSpec) -> Path:
        """Where the node's HDFS and YARN data lives (its storage medium)."""

    @abstractmethod
    def create_nodes(self) -> None:
        """Make every node's environment; record each resource before creating it."""

    @abstractmethod
    def on_node(self, node: NodeSpec, argv: list[str]) -> tuple[list[str], Callable[[], None] | None]:
        """The command line that runs argv on the node, and a function to run in the child first.

        This is the node's environment only (namespaces, host name, cgroup), without sbclab's
        bookkeeping; popen() and run() add that."""

    @abstractmethod
    def destroy(self) -> list[str]:
        """Remove every recorded resource; return descriptions of anything that could not be removed."""

    # --- the node's files and runtime -------------------------------------------------------
    # Local backends' nodes see this host's filesystem; a backend whose nodes are other machines
    # (ssh.py) overrides these so the stack never touches a node's files through a local path.

    def node_paths(self, node: NodeSpec, logs: Path) -> tuple[Path, Path, Path]:
        """(configuration folder, data folder, log folder) as the node sees them."""
        return self.node_dir(node) / "conf", self.node_disk(node), logs

    def java_home(self, node: NodeSpec) -> Path:
        from ...stack.java import java_home
        return java_home()

    def node_env(self, node: NodeSpec) -> dict[str, str]:
        """The environment every command on the node starts from."""
        return {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
                "HADOOP_USER_NAME": "root" if os.geteuid() == 0 else os.environ.get("USER", "sbclab")}

    def node_user(self, node: NodeSpec) -> str:
        """The user commands run as on the node."""
        return getpass.getuser()

    def distribution(self, local):
        """The Hadoop/Spark distribution as the nodes see it."""
        return local

    def java_version(self) -> str:
        from ...stack.java import java_version
        return java_version()

    def make_dirs(self, node: NodeSpec, folders: list[Path], fresh: list[Path] = ()) -> None:
        """Create folders on the node; those in `fresh` are emptied first."""
        for folder in fresh:
            shutil.rmtree(folder, ignore_errors=True)
        for folder in [*fresh, *folders]:
            folder.mkdir(parents=True, exist_ok=True)

    def write_files(self, node: NodeSpec, folder: Path, files: dict[str, str]) -> None:
        for name, text in files.items():
            atomic.write_text(folder / name, text)

    def read_text(self, node: NodeSpec, path: Path) -> str | None:
        """A file on the node, or None when it is not there."""
        try:
            return Path(path).read_text(errors="replace")
        except FileNotFoundError:
            return None

    def remove_tree(self, node: NodeSpec, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def ensure_programs(self, packages_by_program: dict[str, str]) -> None:
        """Every program runnable on the nodes; here they are this host's (check_local_programs)."""
        check_local_programs(packages_by_program)

    def remove(self, node: NodeSpec, path: Path) -> None:
        Path(path).unlink(missing_ok=True)

    def fetch(self, node: NodeSpec, path: Path, here: Path) -> Path | None:
        """Where a node's file can be read on this host (copied to `here` if it must be); None if missing."""
        return Path(path) if Path(path).exists() else None

    def where(self, node: NodeSpec, path: Path) -> str:
        """A node's path the way a user should look for it."""
        return str(path)

    def capture(self, node: NodeSpec, argv: list[str], env: dict[str, str], timeout_s: float = 120) -> tuple[int, bytes, bytes]:
        """Run a short command where the node's files are visible; (status, stdout, stderr)."""
        done = subprocess.run(argv, env=env, capture_output=True, timeout=timeout_s)
        return done.returncode, done.stdout, done.stderr

    def start_daemon(self, node: NodeSpec, argv: list[str], env: dict[str, str], out: Path, cwd: Path, label: str):
        """A long-running daemon on the node; the handle answers poll() and returncode like a Popen."""
        with open(out, "ab") as f:
            return self.popen(node, argv, env, f, cwd=cwd, label=label)

    def busy_percent(self, window_s: float) -> float:
        """The busiest node's CPU use over a window; emulated and local nodes share this host's CPUs.

        Time stolen by the hypervisor is nobody's work here: on a contended virtual machine it
        would keep the host from ever looking idle."""
        times = psutil.cpu_times_percent(interval=window_s)
        return max(0.0, 100.0 - times.idle - getattr(times, "iowait", 0.0) - getattr(times, "steal", 0.0))

    def drop_caches(self) -> bool:
        """Drop the nodes' page caches; emulated nodes share this host's, so once is enough."""
        if os.geteuid() != 0:
            return False
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True

    def host_address(self) -> str:
        """The address this host uses to reach the nodes' daemons."""
        return self.spec.master.address

    def popen(self, node: NodeSpec, argv: list[str], env: dict[str, str], out: IO, cwd: Path | None = None,
              label: str = "command") -> subprocess.Popen:
        """Start argv on the node in its own session, recorded so it is always stopped at teardown."""
        return self._start(node, argv, env, out, cwd, label)[0]

    @contextmanager
    def serving(self, node: NodeSpec, argv: list[str], env: dict[str, str], log: Path, label: str,
                cwd: Path | None = None, limited: bool = True):
        """A server on the node for the length of the block (nginx, NPtcp's receiver), then stopped.

        limited=False: with the node's address and name but outside its CPU and memory limits, as a
        machine of its own would be (the boards that test the SSH backend)."""
        log.parent.mkdir(parents=True, exist_ok=True)
        launch = None if limited else (lambda n, a: (self.on_node(n, a)[0], None))
        with open(log, "ab") as out:
            proc, entry = self._start(node, argv, env, out, cwd, label, owned=True, launch=launch)
            try:
                yield proc
            finally:
                try:
                    reaper.stop([psutil.Process(proc.pid)], grace_s=2)
                except psutil.Error:
                    pass
                self.state.forget(entry)

    def mpi_folder(self, run_id: str) -> Path:
        """The working folder of an MPI run, one path for all its nodes (mpirun's --wdir)."""
        return self.state.root / "mpi" / run_id

    def mpi_networks(self, nodes: list[NodeSpec]) -> MpiNetworks | None:
        """Networks MPI's daemons and ranks keep to; None: OpenMPI's own choice."""
        return None

    @contextmanager
    def polling_friendly(self, nodes: list[NodeSpec]):
        """The nodes set up for programs that poll for messages (MPI) for the block; yields the CPU
        period used, or None where the nodes' CPUs are not shaped."""
        yield None

    # --- measuring ------------------------------------------------------------------------

    def sampling_points(self) -> list[tuple[str, NodeSpec, dict]]:
        """(name, node, sampler target) of every sampler a run needs; see monitor/sampler.py.

        Without nodes of their own (processes backend) there is one, for the host all nodes share."""
        return [("host", self.spec.master, {"node": "host", "scope": "host", "cores": os.cpu_count() or 1,
                                            "device_of": str(self.state.root), "interface": {"name": "lo"}})]

    def sampler(self, name: str, node: NodeSpec, target: dict, run_id: str, interval_s: float):
        """The recorder's handle of a node's sampler (monitor/recorder.py)."""
        from ...monitor.recorder import LocalSampler
        return LocalSampler(self, name, node, target, run_id, interval_s)

    def web_url(self, node: NodeSpec, host: str, port: int) -> str:
        """The URL by which this host reaches a web endpoint that listens on host:port on the node."""
        return f"http://{host}:{port}"

    def knobs(self) -> dict[str, list[str]]:
        """Each knob the cluster has -> the nodes it is on: the spec's cluster knobs on every node, and
        the master on a node of its own wherever nodes are separate machines or namespaces."""
        everyone = [n.name for n in self.spec.nodes]
        found = {name: everyone for name in self.spec.knobs}
        if self.name != "processes":
            found["master-separate"] = [self.spec.master.name]
        return found

    def fstrim(self) -> list[str]:
        """Trim each node's own filesystem; the names of the nodes trimmed. Only nodes with a
        filesystem of their own can be (emulated nodes as root; boards)."""
        return []

    def local_dir(self, node: NodeSpec) -> Path:
        """Where this host keeps what it collects of a node (samples, plug readings)."""
        return self.node_dir(node)

    def node_time(self, node: NodeSpec) -> float | None:
        """The node's clock (time since the epoch), or None when it does not answer."""
        argv, prepare = self.on_node(node, ["date", "+%s.%N"])
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=20, preexec_fn=prepare)
            return float(done.stdout.strip().splitlines()[-1])
        except (subprocess.SubprocessError, OSError, ValueError, IndexError):
            return None

    def sampler_launch(self, node: NodeSpec, argv: list[str]) -> tuple[list[str], Callable[[], None] | None]:
        """How a sampler is started on the node; by default like any command."""
        return self.on_node(node, argv)

    def start_sampler(self, node: NodeSpec, argv: list[str], out: IO, label: str) -> tuple[subprocess.Popen, dict]:
        """A sampler process, recorded (and owned by this sbclab) so teardown or the next sbclab stops it."""
        return self._start(node, argv, dict(os.environ), out, None, label, owned=True, launch=self.sampler_launch)

    def sync_disks(self) -> None:
        """Write every node's dirty pages to its storage, so device counters include them."""
        os.sync()

    def _start(self, node, argv, env, out, cwd, label, owned: bool = False, launch=None) -> tuple[subprocess.Popen, dict]:
        wrapped, prepare = (launch or self.on_node)(node, argv)
        try:
            proc = subprocess.Popen(wrapped, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    cwd=cwd, preexec_fn=prepare, start_new_session=True)
        except FileNotFoundError as err:
            raise SbclabError(f"Cannot start '{argv[0]}' on {node.name}: not found.",
                              "Run 'make setup' to install what sbclab needs.") from err
        try:
            created = psutil.Process(proc.pid).create_time()
        except psutil.Error:
            created = 0.0
        # A command sbclab waits for belongs to this sbclab process: if it dies (SIGKILL), the next
        # sbclab on this cluster stops what it left running, see stop_orphans().
        owner = self.owner() if owned else {}
        entry = self.state.record("process", node=node.name, pid=proc.pid, create_time=created, label=label, **owner)
        return proc, entry

    def run(self, node: NodeSpec, argv: list[str], env: dict[str, str], log: Path, timeout_s: float | None = None,
            cwd: Path | None = None, label: str = "command", on_host: bool = False) -> int:
        """Run argv on the node to completion, its output appended to log; return the exit status.

        on_host: run it on this host instead, still recorded under the node (a launcher such as
        mpirun, which reaches every node through the node shell)."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            launch = (lambda _node, args: (args, None)) if on_host else None
            proc, entry = self._start(node, argv, env, out, cwd, label, owned=True, launch=launch)
            try:
                return proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                reaper.stop([psutil.Process(proc.pid)], grace_s=2)
                raise SbclabError(f"'{label}' on {node.name} did not finish within {timeout_s:.0f} s.",
                                  f"Read {log}.")
            except BaseException:
                try:
                    reaper.stop([psutil.Process(proc.pid)], grace_s=2)
                except psutil.Error:
                    pass
                raise
            finally:
                self.state.forget(entry)

    @staticmethod
    def fed(feed: list[str], argv: list[str]) -> list[str]:
        """argv reading what the local command `feed` writes, as one pipeline that fails if either fails."""
        return ["bash", "-c", f"set -o pipefail; {shlex.join(feed)} | {shlex.join(argv)}"]

    def run_parallel(self, jobs: list[tuple[NodeSpec, list[str], dict[str, str], Path, str]],
                     timeout_s: float | None = None, feeds: list[list[str] | None] | None = None) -> list[int]:
        """Run (node, argv, env, log, label) jobs at once, one per node or more; return their exit statuses.

        feeds: per job, a command of this host's whose output is the job's input (an input generator).
        All are started from this thread (the state file is not written from several threads) and,
        if one wait fails or is interrupted, the others are stopped too."""
        started = []
        outs = []
        feeds = feeds or [None] * len(jobs)
        jobs = [(node, self.fed(feed, argv) if feed else argv, env, log, label)
                for (node, argv, env, log, label), feed in zip(jobs, feeds)]
        try:
            for node, argv, env, log, label in jobs:
                log.parent.mkdir(parents=True, exist_ok=True)
                outs.append(open(log, "ab"))
                started.append(self._start(node, argv, env, outs[-1], None, label, owned=True))
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            statuses = []
            for (proc, _), (node, *_rest, log, label) in zip(started, jobs):
                left = None if deadline is None else max(0.1, deadline - time.monotonic())
                try:
                    statuses.append(proc.wait(timeout=left))
                except subprocess.TimeoutExpired:
                    raise SbclabError(f"'{label}' on {node.name} did not finish within {timeout_s:.0f} s.",
                                      f"Read {log}.") from None
            return statuses
        finally:
            for proc, entry in started:
                if proc.poll() is None:
                    try:
                        reaper.stop([psutil.Process(proc.pid)], grace_s=2)
                    except psutil.Error:
                        pass
                self.state.forget(entry)
            for out in outs:
                out.close()

    @staticmethod
    def owner() -> dict:
        """This sbclab process, as recorded with the commands it waits for."""
        return {"owner_pid": os.getpid(), "owner_create_time": psutil.Process().create_time()}

    def orphaned(self, kind: str) -> list[dict]:
        """Recorded commands of that kind whose sbclab process died without waiting for them."""
        return [entry for entry in self.state.of_kind(kind) if "owner_pid" in entry and not reaper.recorded(
            [{"pid": entry["owner_pid"], "create_time": entry["owner_create_time"]}])]

    def stop_orphans(self) -> list[str]:
        """Stop commands whose sbclab process died without waiting for them; return their labels."""
        orphans = []
        for entry in self.orphaned("process"):
            reaper.stop(reaper.recorded([entry]), grace_s=2)
            self.state.forget(entry)
            orphans.append(entry.get("label", "command"))
        return orphans

    def live_processes(self) -> list[psutil.Process]:
        """The cluster's processes still running: recorded ones and any naming its directory."""
        return reaper.recorded(self.state.of_kind("process")) + reaper.mentioning(str(self.state.root) + os.sep)

    def stop_processes(self) -> list[psutil.Process]:
        """Stop recorded processes, then anything still naming the cluster's directory."""
        survivors = reaper.stop(reaper.recorded(self.state.of_kind("process")))
        survivors += reaper.stop(reaper.mentioning(str(self.state.root) + os.sep))
        for entry in list(self.state.of_kind("process")):
            self.state.forget(entry)
        return survivors
