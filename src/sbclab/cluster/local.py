"""Nodes on this host (emulated and processes): commands are local processes started inside the
node's walls, files are this host's files. What differs between the two is only how a command
enters a node (`launch`), how nodes are made and how they are removed."""

import getpass
import os
import re
import shlex
import shutil
import subprocess
import time
from abc import abstractmethod
from pathlib import Path
from typing import Callable

import psutil

from .. import atomic
from ..errors import SbclabError
from . import reaper
from .spec import NodeSpec
from .transport import Captured, Enter, Job, Session, Transport

Launch = tuple[list[str], Callable[[], None] | None]


class LocalSession(Session):
    def __init__(self, node: NodeSpec, label: str, entry: dict, proc: subprocess.Popen):
        self.node, self.label, self.entry, self.proc = node, label, entry, proc

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self):
        return self.proc.poll()


class LocalTransport(Transport):
    shares_host = True

    @abstractmethod
    def launch(self, node: NodeSpec, argv: list[str], enter: Enter = "node") -> Launch:
        """The command line that runs argv inside the node's walls, and a function the child runs first."""

    def user(self, node: NodeSpec) -> str:
        return getpass.getuser()

    def base_env(self, node: NodeSpec) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
                "HADOOP_USER_NAME": "root" if os.geteuid() == 0 else os.environ.get("USER", "sbclab")}

    # --- files --------------------------------------------------------------------------

    def put(self, node: NodeSpec, folder: Path, files: dict[str, str]) -> None:
        for name, text in files.items():
            atomic.write_text(Path(folder) / name, text)

    def get(self, node: NodeSpec, path: Path, here: Path) -> Path | None:
        return Path(path) if Path(path).exists() else None

    def read_text(self, node: NodeSpec, path: Path) -> str | None:
        try:
            return Path(path).read_text(errors="replace")
        except FileNotFoundError:
            return None

    def make_dirs(self, node: NodeSpec, folders: list[Path], fresh: list[Path] = ()) -> None:
        for folder in fresh:
            shutil.rmtree(folder, ignore_errors=True)
        for folder in [*fresh, *folders]:
            Path(folder).mkdir(parents=True, exist_ok=True)

    def remove(self, node: NodeSpec, path: Path) -> None:
        path = Path(path)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)

    # --- commands -----------------------------------------------------------------------

    @staticmethod
    def _fed(feed: list[str] | None, argv: list[str]) -> list[str]:
        """argv reading what the local command `feed` writes, as one pipeline that fails if either fails."""
        if not feed:
            return argv
        return ["bash", "-c", f"set -o pipefail; {shlex.join(feed)} | {shlex.join(argv)}"]

    def run(self, node, argv, env, log, timeout_s=None, cwd=None, label="command", feed=None, on_host=False) -> int:
        argv = self._fed(feed, argv)
        launch = (argv, None) if on_host else self.launch(node, argv)
        return run_recorded(self.state, node, argv, env, log, timeout_s, cwd, label, launch)

    def run_all(self, jobs: list[Job], timeout_s: float | None = None) -> list[int]:
        # All started from this thread (the state file is written by one writer at a time anyway),
        # then waited for; whatever is left when a wait fails or is interrupted is stopped.
        started, outs = [], []
        try:
            for job in jobs:
                job.log.parent.mkdir(parents=True, exist_ok=True)
                outs.append(open(job.log, "ab"))
                argv = self._fed(job.feed, job.argv)
                started.append(start_recorded(self.state, job.node, argv, job.env, outs[-1], None, job.label, True,
                                           self.launch(job.node, argv)))
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            statuses = []
            for (proc, _), job in zip(started, jobs):
                left = None if deadline is None else max(0.1, deadline - time.monotonic())
                try:
                    statuses.append(proc.wait(timeout=left))
                except subprocess.TimeoutExpired:
                    raise SbclabError(f"'{job.label}' on {job.node.name} did not finish within {timeout_s:.0f} s.",
                                      f"Read {job.log}.") from None
            return statuses
        finally:
            for proc, entry in started:
                end_recorded(self.state, proc, entry)
            for out in outs:
                out.close()

    def capture(self, node, argv, env=None, timeout_s=120) -> Captured:
        wrapped, prepare = self.launch(node, argv)
        try:
            done = subprocess.run(wrapped, env=env if env is not None else self.base_env(node), capture_output=True,
                                  timeout=timeout_s, preexec_fn=prepare)
        except subprocess.TimeoutExpired:
            raise SbclabError(f"'{' '.join(argv[:3])}' on {node.name} did not finish within {timeout_s:.0f} s.",
                              "The node may be overloaded; run 'sbclab cluster status'.") from None
        return Captured(done.returncode, done.stdout, done.stderr)

    def attach(self, node: NodeSpec, command: str) -> int:
        wrapped, prepare = self.launch(node, ["sh", "-c", command])
        if prepare:
            prepare()
        os.execvp(wrapped[0], wrapped)

    def start(self, node, argv, env, out, cwd=None, label="command", owned=True, enter="node") -> LocalSession:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        with open(out, "ab") as f:
            proc, entry = start_recorded(self.state, node, argv, env, f, cwd, label, owned, self.launch(node, argv, enter))
        return LocalSession(node, label, entry, proc)

    def stop(self, session: LocalSession, grace_s: float = 2) -> None:
        if session.proc.poll() is None:
            try:
                reaper.stop([psutil.Process(session.proc.pid)], grace_s=grace_s)
            except psutil.Error:
                pass
        self.state.forget(session.entry)

    def stop_orphans(self) -> list[str]:
        orphans = []
        for entry in orphaned(self.state, "process"):
            reaper.stop(reaper.recorded([entry]), grace_s=2)
            self.state.forget(entry)
            orphans.append(entry.get("label", "command"))
        return orphans

    def node_processes(self, node: NodeSpec, pattern: str) -> list[int]:
        """Every node shares this host's process table: a process is the node's when its command
        line names the node's own folder."""
        mine = str(self.node_dir(node)) + os.sep
        return [p.pid for p in _matching(psutil.process_iter(["pid", "cmdline"]), pattern)
                if any(mine in part for part in p.info["cmdline"] or [])]

    def still_running(self, entries: list[dict]) -> list[bool]:
        # A daemon this process started and that died stays a zombie until it is waited for: dead all the same.
        return [any(_alive(proc) for proc in reaper.recorded([entry])) for entry in entries]

    # --- removal --------------------------------------------------------------------------

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


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _matching(procs, pattern: str) -> list[psutil.Process]:
    wanted = re.compile(pattern)
    return [p for p in procs if p.info.get("cmdline") and wanted.search(" ".join(p.info["cmdline"]))]


def start_recorded(state, node: NodeSpec, argv: list[str], env: dict[str, str], out, cwd: Path | None, label: str,
                   owned: bool, launch: Launch) -> tuple[subprocess.Popen, dict]:
    """A local process for the node, recorded in the cluster's state before anything can lose it."""
    wrapped, prepare = launch
    try:
        proc = subprocess.Popen(wrapped, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=cwd, preexec_fn=prepare, start_new_session=True)
    except FileNotFoundError as err:
        raise SbclabError(f"Cannot start '{argv[0]}' on {node.name}: not found.",
                          "Run 'make setup' to install what sbclab needs.") from err
    created = reaper.started(proc.pid)
    # A command sbclab waits for belongs to this sbclab process: if it dies (SIGKILL), the next
    # sbclab on this cluster stops what it left running (stop_orphans).
    owner = sbclab_owner() if owned else {}
    entry = state.record("process", node=node.name, pid=proc.pid, create_time=created, label=label, **owner)
    return proc, entry


def end_recorded(state, proc: subprocess.Popen, entry: dict) -> None:
    """The process stopped if it still runs, and its record gone."""
    if proc.poll() is None:
        try:
            reaper.stop([psutil.Process(proc.pid)], grace_s=2)
        except psutil.Error:
            pass
    state.forget(entry)


def run_recorded(state, node: NodeSpec, argv: list[str], env: dict[str, str], log: Path, timeout_s: float | None,
                 cwd: Path | None, label: str, launch: Launch) -> int:
    """A local process for the node run to completion, its output appended to log, recorded while it
    runs (so teardown or the next sbclab stops it if this one dies); its exit status."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc, entry = start_recorded(state, node, argv, env, out, cwd, label, True, launch)
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise SbclabError(f"'{label}' on {node.name} did not finish within {timeout_s:.0f} s.",
                              f"Read {log}.") from None
        finally:
            end_recorded(state, proc, entry)


def sbclab_owner() -> dict:
    """This sbclab process, as recorded with the commands it waits for."""
    return {"owner_pid": os.getpid(), "owner_create_time": reaper.started(os.getpid())}


def orphaned(state, kind: str) -> list[dict]:
    """Recorded commands of that kind whose sbclab process died without waiting for them."""
    return [entry for entry in state.of_kind(kind) if "owner_pid" in entry and not reaper.recorded(
        [{"pid": entry["owner_pid"], "create_time": entry["owner_create_time"]}])]
