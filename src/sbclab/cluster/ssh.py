"""Nodes that are real boards, reached over SSH (remote.py), as an inventory lists them.

Every file of the cluster on a board lives under `<data_dir>/sbclab/<cluster>/` (configuration,
data, logs, pid files). Nothing on a board is reached through a local path: files go by SFTP,
commands by SSH, and every command is an argument list quoted by shlex.

A daemon or command is started in a session of its own (setsid) whose id is written to a pid file
first, so it can be stopped with its children from any later sbclab, even after this one was killed.
"""

import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import SbclabError
from . import containers, knobs
from .inventory import Host
from .local import orphaned, run_recorded, sbclab_owner
from . import reaper
from .remote import Connection, address_towards, in_parallel, raise_first, resolved_ipv4, smallest_network
from .spec import NodeSpec
from .transport import Captured, Job, MpiNetworks, NodeParts, Session, Transport

NODE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# A command in a session of its own whose id is written first (the session leader's pid).
_IN_SESSION = 'echo $$ > "$0"; cd "$1" || exit 111; shift; exec "$@"'

# Stop a session by its pid file: TERM to the whole group, KILL what is left after the grace.
_STOP_SESSION = r'''
for f in "$@"; do
  p=$(cat "$f" 2>/dev/null) || continue
  kill -TERM "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
done
for i in 1 2 3 4 5 6 7 8 9 10; do
  alive=""
  for f in "$@"; do p=$(cat "$f" 2>/dev/null) && kill -0 "$p" 2>/dev/null && alive=1; done
  [ -z "$alive" ] && break
  sleep 1
done
for f in "$@"; do
  p=$(cat "$f" 2>/dev/null) || continue
  kill -KILL "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
  rm -f "$f"
done
'''


# A command (one shell string, as ssh runs one) in a session of its own, tied to the SSH connection
# that started it: when the connection goes — the local side exited or was killed, even by SIGKILL —
# sshd closes the command's standard input, and the watcher stops the command's session; once the
# command's own process is gone, whatever it left in its session is killed (an idle iperf3 server
# outlives TERM). A group is killed as `kill -SIG -PGID`: dash, the /bin/sh of Debian and Raspberry
# Pi OS, takes no `--` in kill. The watcher
# reads a copy of stdin (fd 3): a background list in a non-interactive shell gets /dev/null as its
# stdin unless it is redirected explicitly.
TIED = r'''
exec 3<&0
setsid sh -c "$1" < /dev/null 3<&- &
child=$!
( cat <&3 > /dev/null 2>&1; kill -TERM "-$child" 2>/dev/null || kill -TERM "$child" 2>/dev/null ) &
watcher=$!
exec 3<&-
wait $child
status=$?
kill -KILL "-$child" 2>/dev/null
kill $watcher 2>/dev/null
exit $status
'''



def not_found(err: OSError) -> bool:
    return isinstance(err, FileNotFoundError) or getattr(err, "errno", None) == 2


_REMOVE_UNTIL_GONE = ('for try in 1 2 3 4 5; do rm -rf -- "$0" 2>/dev/null; [ -e "$0" ] || exit 0; sleep 1; done; '
                      'rm -rf -- "$0"')


class RemoteSession(Session):
    """A command left running on a board, looked at the way a local Popen is."""

    def __init__(self, transport: "SshTransport", node: NodeSpec, label: str, entry: dict, pid: int):
        self.transport, self.node, self.label, self.entry, self.pid = transport, node, label, entry, pid
        self._returncode = None

    def poll(self):
        if self._returncode is None:
            alive = self.transport.connection(self.node).run(["kill", "-0", str(self.pid)], timeout_s=30).status == 0
            if not alive:
                self._returncode = "unknown: it ran on the board"
        return self._returncode


class SshTransport(Transport):
    name = "ssh"
    shaped = False
    shares_host = False
    own_filesystems = True

    def __init__(self, state):
        super().__init__(state)
        access = state.info.boards
        if access is None:
            raise SbclabError(f"Cluster '{state.spec.name}' on boards has no record of how to reach them.",
                              f"Remove it with 'sbclab cluster down --forget --name {state.spec.name}'.")
        self.inventory = access.inventory
        self.known_hosts = Path(access.known_hosts)
        self.accept_new = access.accept_new_host_keys
        self._connections: dict[str, Connection] = {}

    # --- where things are on a board -----------------------------------------------------

    def host(self, node: NodeSpec) -> Host:
        return self.inventory.host(node.name)

    def cluster_root(self, node: NodeSpec) -> Path:
        return Path(self.host(node).data_dir) / "sbclab" / self.spec.name

    def node_dir(self, node: NodeSpec) -> Path:
        return self.cluster_root(node)

    def node_disk(self, node: NodeSpec) -> Path:
        return self.cluster_root(node) / "data"

    def user(self, node: NodeSpec) -> str:
        return self.host(node).user

    def base_env(self, node: NodeSpec) -> dict[str, str]:
        return {"PATH": NODE_PATH, "HADOOP_USER_NAME": self.host(node).user}

    def where(self, node: NodeSpec, path: Path) -> str:
        return f"{path} on {node.name}"

    def common_dir(self, name: str) -> Path:
        """/tmp, because a board's data directory need not be another's."""
        return Path("/tmp") / f"sbclab-{self.spec.name}-{name}"

    def reach(self, node: NodeSpec, host: str, port: int) -> str:
        """A board's loopback endpoint through its SSH connection; one on its address directly."""
        if host.startswith("127."):
            return f"http://127.0.0.1:{self.connection(node).tunnel(host, port)}"
        return super().reach(node, host, port)

    def parts(self, node: NodeSpec) -> NodeParts:
        """Each board's whole view: its /proc, the disk holding its data directory and the interface
        with its inventory address, both found by the sampler on the board."""
        return NodeParts(scope="node", device_of=str(self.node_disk(node)), interface_of=node.address)

    def mpi_networks(self, nodes: list[NodeSpec]) -> MpiNetworks | None:
        """The daemons keep to the boards' inventory addresses and the one this host reaches them
        from; the ranks to the smallest network holding every board. OpenMPI's TCP transport fails
        to connect ("Invalid argument") when a rank's own address is given as a host route (/32),
        while its daemons take those (one board's network is its /32, but its ranks share memory,
        not TCP). Boards known by IPv6 or by names that do not resolve here leave the choice to
        OpenMPI."""
        try:
            boards = [resolved_ipv4(n.address) for n in nodes]
        except SbclabError:
            return None
        here = address_towards(boards[0])
        return MpiNetworks(ranks=[smallest_network(boards)],
                           daemons=[f"{address}/32" for address in dict.fromkeys([here, *boards])])

    def _pidfile(self, node: NodeSpec, label: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9.-]+", "-", label).strip("-")[:60] or "command"
        return self.cluster_root(node) / "pids" / f"{safe}.{time.monotonic_ns()}.pid"

    # --- connections -------------------------------------------------------------------------

    def connection(self, node: NodeSpec) -> Connection:
        """One SSH connection per board, shared by this sbclab's threads (paramiko multiplexes channels)."""
        with self._lock:
            conn = self._connections.get(node.name)
            if conn is not None and not conn.alive():
                conn.close()
                conn = None
            if conn is None:
                conn = Connection(self.host(node), self.known_hosts, self.accept_new)
                self._connections[node.name] = conn
            return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._connections.values():
                conn.close()
            self._connections.clear()

    def each(self, work, nodes: list[NodeSpec] | None = None) -> dict[str, object]:
        """work(node) on every board at once; errors are returned, not raised, so all boards are tried."""
        return in_parallel(list(nodes or self.spec.nodes), work, lambda node: node.name)

    # --- the boards as nodes -------------------------------------------------------------------

    def create_nodes(self) -> None:
        """The cluster's folders on every board, and the firmware knobs each has (a Pi's config.txt)."""
        for node in self.spec.nodes:
            self.state.record("remote_directory", node=node.name, path=str(self.cluster_root(node)))

        def prepare(node):
            root = self.cluster_root(node)
            self.make_dirs(node, [root / "conf", root / "data", root / "logs", root / "pids"])
            return knobs.in_effect(self.connection(node))
        done = self.each(prepare)
        raise_first(done, "Preparing the boards")
        self.state.info.board_knobs = {name: found for name, found in done.items() if found}
        self.state.save()

    # --- files -------------------------------------------------------------------------------

    def make_dirs(self, node: NodeSpec, folders: list[Path], fresh: list[Path] = ()) -> None:
        conn = self.connection(node)
        if fresh:
            conn.run(["rm", "-rf", "--", *map(str, fresh)])
        status = conn.run(["mkdir", "-p", "--", *map(str, [*fresh, *folders])])
        if status.status != 0:
            raise SbclabError(f"Cannot create folders on {node.name}: {status.stderr.strip()}.",
                              f"Check that {self.host(node).user} may write under {self.host(node).data_dir}.")

    def put(self, node: NodeSpec, folder: Path, files: dict[str, str]) -> None:
        """Each file whole or not at all: written beside, then renamed (as atomic.py does locally)."""
        sftp = self.connection(node).sftp()
        for name, text in files.items():
            target = f"{folder}/{name}"
            with sftp.open(f"{target}.partial", "w") as f:
                f.write(text.encode())
            sftp.posix_rename(f"{target}.partial", target)

    def read_text(self, node: NodeSpec, path: Path) -> str | None:
        try:
            with self.connection(node).sftp().open(str(path), "r") as f:
                return f.read().decode(errors="replace")
        except OSError as err:
            if not_found(err):
                return None
            raise

    def remove(self, node: NodeSpec, path: Path) -> None:
        # A process of the board that has just ended (an MPI rank's daemon, say) may still be writing
        # there when rm walks the folder: rm then fails on a folder that is not empty, so it is tried
        # again until nothing is left.
        done = self.connection(node).run(["sh", "-c", _REMOVE_UNTIL_GONE, str(path)], timeout_s=600)
        if done.status != 0:
            raise SbclabError(f"Could not remove {path} on {node.name}: {done.stderr.strip()[-300:]}",
                              f"Remove it by hand on {node.name}, then try again.")

    def get(self, node: NodeSpec, path: Path, here: Path) -> Path | None:
        here.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.connection(node).sftp().get(str(path), str(here))
        except OSError as err:
            if not_found(err):
                here.unlink(missing_ok=True)
                return None
            raise
        return here

    # --- commands ----------------------------------------------------------------------------

    def _session(self, argv: list[str], env: dict[str, str], cwd: Path | None, pidfile: Path) -> list[str]:
        return ["setsid", "-w", "sh", "-c", _IN_SESSION, str(pidfile), str(cwd or "/"), *self.with_env(env, argv)]

    @staticmethod
    def with_env(env: dict[str, str], argv: list[str]) -> list[str]:
        """argv under `env` with the stack's variables only, not this host's whole environment
        (HOME, SSH_AUTH_SOCK, ...), which means nothing on a board."""
        keep = [f"{k}={v}" for k, v in env.items()
                if k in ("PATH", "LANG", "JAVA_HOME") or k.startswith(("HADOOP_", "SPARK_", "YARN_", "SBCLAB_"))]
        return ["env", *keep, *argv]

    def stop_sessions(self, node: NodeSpec, pidfiles: list[str]) -> None:
        if pidfiles:
            self.connection(node).run(["sh", "-c", _STOP_SESSION, "sh", *pidfiles], timeout_s=60)

    def _run_remote(self, node, argv, env, log: Path, timeout_s, cwd, label, pidfile: Path,
                    feed: list[str] | None = None) -> int:
        """argv in a session on the board, its output appended to the local log; with feed, the
        output of that local command is its input, streamed over the connection."""
        log.parent.mkdir(parents=True, exist_ok=True)
        conn = self.connection(node)
        producer = None
        try:
            with open(log, "ab") as out:
                if feed:
                    producer = subprocess.Popen(feed, stdout=subprocess.PIPE, stderr=out, stdin=subprocess.DEVNULL)
                status = conn.stream(self._session(argv, env, cwd, pidfile), out, timeout_s,
                                     stdin=producer.stdout if producer else None)
            if producer is not None:
                producer.stdout.close()
                if producer.wait() != 0 and status == 0:
                    status = producer.returncode
        except BaseException:
            self.stop_sessions(node, [str(pidfile)])
            raise
        finally:
            if producer is not None and producer.poll() is None:
                producer.kill()
                producer.wait()
        if status is None:
            self.stop_sessions(node, [str(pidfile)])
            raise SbclabError(f"'{label}' on {node.name} did not finish within {timeout_s:.0f} s.", f"Read {log}.")
        conn.run(["rm", "-f", "--", str(pidfile)])
        return status

    def record_session(self, node: NodeSpec, label: str, owned: bool = True) -> dict:
        """A command about to start on the board, recorded with the pid file its session will write."""
        owner = sbclab_owner() if owned else {}
        return self.state.record("remote_process", node=node.name, pidfile=str(self._pidfile(node, label)),
                                 label=label, **owner)

    def run(self, node, argv, env, log, timeout_s=None, cwd=None, label="command", feed=None, on_host=False) -> int:
        if on_host:
            # A launcher on this machine (mpirun) reaching the boards through the node shell.
            return run_recorded(self.state, node, argv, env, log, timeout_s, cwd, label, (argv, None))
        entry = self.record_session(node, label)
        try:
            return self._run_remote(node, argv, env, log, timeout_s, cwd, label, Path(entry["pidfile"]), feed)
        finally:
            self.state.forget(entry)

    def run_all(self, jobs: list[Job], timeout_s: float | None = None) -> list[int]:
        entries = [self.record_session(job.node, job.label) for job in jobs]
        try:
            with ThreadPoolExecutor(max_workers=min(16, len(jobs))) as pool:
                futures = [pool.submit(self._run_remote, job.node, job.argv, job.env, job.log, timeout_s, None,
                                       job.label, Path(entry["pidfile"]), job.feed)
                           for job, entry in zip(jobs, entries)]
                try:
                    return [f.result() for f in futures]
                except BaseException:
                    for job, entry in zip(jobs, entries):
                        self.stop_sessions(job.node, [entry["pidfile"]])
                    raise
        finally:
            for entry in entries:
                self.state.forget(entry)

    def capture(self, node, argv, env=None, timeout_s=120) -> Captured:
        done = self.connection(node).run(self.with_env(env or {}, argv), timeout_s=timeout_s)
        return Captured(done.status, done.stdout.encode(), done.stderr.encode())

    def attach(self, node: NodeSpec, command: str) -> int:
        """A shell command on the board, stopped with its children if this process goes (TIED)."""
        return self.connection(node).attached(["sh", "-c", TIED, "sh", command], sys.stdout.buffer, sys.stderr.buffer)

    def start(self, node, argv, env, out, cwd=None, label="command", owned=True, enter="node") -> RemoteSession:
        """argv left running on the board, its output in the board's file `out`."""
        entry = self.record_session(node, label, owned=owned)
        # Backgrounded by a non-interactive sh, the process is no group leader, so setsid makes it
        # one without forking: $! is the pid of its session.
        script = ('cd "$1" || exit 111; out=$2; pidfile=$3; shift 3; '
                  'setsid "$@" > "$out" 2>&1 < /dev/null & echo $! > "$pidfile"; echo $!')
        started = self.connection(node).run(["sh", "-c", script, "sh", str(cwd or self.cluster_root(node)), str(out),
                                             entry["pidfile"], *self.with_env(env, argv)])
        if started.status != 0 or not started.stdout.strip().isdigit():
            self.state.forget(entry)
            raise SbclabError(f"Starting {label} on {node.name} failed: {started.stderr.strip() or started.stdout.strip()}.",
                              f"Read {out} on {node.name}.")
        return RemoteSession(self, node, label, entry, int(started.stdout.strip()))

    def stop(self, session: RemoteSession, grace_s: float = 2) -> None:
        self.stop_sessions(session.node, [session.entry["pidfile"]])
        self.state.forget(session.entry)

    def stop_orphans(self) -> list[str]:
        orphans = []
        for entry in orphaned(self.state, "process"):  # launchers this host ran for the boards
            reaper.stop(reaper.recorded([entry]), grace_s=2)
            self.state.forget(entry)
            orphans.append(entry.get("label", "command"))
        for entry in orphaned(self.state, "remote_process"):
            self.stop_sessions(self.spec.node(entry["node"]), [entry["pidfile"]])
            self.state.forget(entry)
            orphans.append(entry.get("label", "command"))
        return orphans

    def node_processes(self, node: NodeSpec, pattern: str) -> list[int]:
        """On a board only its own processes run: those of the cluster name its folder."""
        script = ('root=$1; shift; for p in $(pgrep -f -- "$1"); do '
                  'tr "\\0" " " < /proc/$p/cmdline 2>/dev/null | grep -qF -- "$root" && echo "$p"; done; true')
        done = self.connection(node).run(["sh", "-c", script, "sh", str(self.cluster_root(node)) + "/", pattern],
                                         timeout_s=30)
        return [int(p) for p in done.stdout.split() if p.isdigit()]

    def still_running(self, entries: list[dict]) -> list[bool]:
        """Local launchers by their pid; a board's sessions by the pid their pid file holds, one
        command per board."""
        found: dict[int, bool] = {}
        remote: dict[str, list[int]] = {}
        for i, entry in enumerate(entries):
            if "pidfile" in entry:
                remote.setdefault(entry["node"], []).append(i)
            else:
                found[i] = bool(reaper.recorded([entry]))
        script = 'for f in "$@"; do p=$(cat "$f" 2>/dev/null) && kill -0 "$p" 2>/dev/null && echo 1 || echo 0; done'
        for node_name, indexes in remote.items():
            done = self.connection(self.spec.node(node_name)).run(
                ["sh", "-c", script, "sh", *(entries[i]["pidfile"] for i in indexes)], timeout_s=30)
            answers = done.stdout.split()
            for i, answer in zip(indexes, answers + ["?"] * (len(indexes) - len(answers))):
                # A board that does not answer says nothing of its daemons: not counted as lost here
                # (the masters' counts see a board that is gone).
                found[i] = answer != "0"
        return [found[i] for i in range(len(entries))]

    # --- stopping ----------------------------------------------------------------------------

    def _pattern(self, node: NodeSpec) -> str:
        """A pgrep pattern for processes naming the cluster's folder on the board; the bracket keeps
        it from matching the shell that runs pgrep itself."""
        root = re.escape(str(self.cluster_root(node)) + "/")
        return f"[{root[0]}]{root[1:]}"

    def live_processes(self) -> list[str]:
        def alive(node):
            found = self.connection(node).run(["pgrep", "-f", "--", self._pattern(node)], timeout_s=30)
            return [f"{node.name}:{pid}" for pid in found.stdout.split()]
        found = self.each(alive)
        return [p for got in found.values() if isinstance(got, list) for p in got]

    def destroy(self) -> list[str]:
        """Stop every daemon and command of the cluster on every board; with purge, remove its folders."""
        purge = self.state.info.purge
        reaper.stop(reaper.recorded(self.state.of_kind("process")))
        by_node: dict[str, list[str]] = {}
        for entry in self.state.of_kind("remote_process"):
            by_node.setdefault(entry["node"], []).append(entry["pidfile"])

        def stop(node):
            conn = self.connection(node)
            self.stop_sessions(node, by_node.get(node.name, []))
            # A container outlives its client (docker's daemon keeps it): removed by its recorded name.
            for entry in self.state.of_kind("container"):
                if entry["node"] == node.name:
                    conn.run(containers.remove_argv(entry["runtime"], entry.get("options", ()), entry["name"]))
            pattern = self._pattern(node)
            conn.run(["pkill", "-TERM", "-f", "--", pattern])
            for _ in range(20):
                if conn.run(["pgrep", "-f", "--", pattern]).status != 0:
                    break
                time.sleep(0.5)
            else:
                conn.run(["pkill", "-KILL", "-f", "--", pattern])
            left = conn.run(["pgrep", "-f", "--", pattern]).stdout.split()
            if purge and not left:
                conn.run(["rm", "-rf", "--", str(self.cluster_root(node))], timeout_s=600)
            return [f"process {pid} on {node.name}" for pid in left]

        nodes = [self.spec.node(n) for n in {e["node"] for e in self.state.of_kind("remote_directory")}] or list(self.spec.nodes)
        results = self.each(stop, nodes)
        leftovers = []
        for name, got in results.items():
            if isinstance(got, SbclabError):
                leftovers.append(f"{name}: {got.message}")
            else:
                leftovers += got
        if not leftovers:
            for entry in list(self.state.resources):
                self.state.forget(entry)
        self.close()
        return leftovers
