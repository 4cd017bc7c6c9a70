"""Nodes that are real boards, reached over SSH (remote.py), as an inventory lists them.

Every file of the cluster on a board lives under `<data_dir>/sbclab/<cluster>/` (configuration,
data, logs, pid files); the Hadoop/Spark distribution under one `dist_dir`, the same path on every
board, because YARN and Spark name jars by path. Nothing on a board is reached through a local path:
files go by SFTP, commands by SSH, and every command is an argument list quoted by shlex.

Deploying is idempotent: Java is installed only where no Java 11/17 answers, the distribution is
copied only where its manifests differ, HDFS is formatted only where it holds no file system, and
the data stays on the boards after `cluster down` (`--purge` removes it).

A daemon or command is started in a session of its own (setsid) whose id is written to a pid file
first, so it can be stopped with its children from any later sbclab, even after this one was killed.
"""

import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from ...errors import SbclabError
from ...stack.distribution import sha256
from ...stack.java import SUPPORTED, major_of
from .. import knobs, reaper
from ..inventory import Host, Inventory
from ..remote import DEFAULT_KNOWN_HOSTS, Connection, address_towards, in_parallel, resolved_ipv4, smallest_network
from ..spec import NodeSpec
from .base import Backend, MpiNetworks

JAVA_PACKAGE = "openjdk-17-jre-headless"
NODE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Java homes a board offers, one per line: "<home>|<first line of java -version>".
_FIND_JAVA = r'''
for d in "$JAVA_HOME" /usr/lib/jvm/*; do
  [ -n "$d" ] && [ -x "$d/bin/java" ] || continue
  [ -L "$d" ] && continue
  printf '%s|%s\n' "$d" "$("$d/bin/java" -version 2>&1 | head -n 1)"
done
'''

# Debian and Raspberry Pi OS: the package manager, as root or through sudo without a password.
_INSTALL_PACKAGES = r'''
command -v apt-get >/dev/null || { echo "no apt-get on this board"; exit 3; }
if [ "$(id -u)" = 0 ]; then as_root=""; else as_root="sudo -n"; fi
DEBIAN_FRONTEND=noninteractive $as_root apt-get install -y --no-install-recommends "$@" 2>&1 | tail -n 5
'''

# Copy-in of a distribution folder: unpacked beside its final place, then renamed over it, so a
# board never holds half of one under the real name.
_UNPACK = r'''
set -e
final="$1"; parent=$(dirname "$final"); partial="$final.partial.$$"
mkdir -p "$parent" "$partial"
tar -xf - -C "$partial"
rm -rf "$final"
mv "$partial/$(basename "$final")" "$final"
rmdir "$partial"
'''

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


def pick_java(listing: str) -> tuple[str, str] | None:
    """(home, version line) of the newest supported Java in _FIND_JAVA's output, or None."""
    found = []
    for line in listing.splitlines():
        home, _, version = line.partition("|")
        major = major_of(version)
        if major in SUPPORTED:
            found.append((major, home.strip(), version.strip()))
    if not found:
        return None
    _, home, version = max(found)
    return home, version


def _not_found(err: OSError) -> bool:
    return isinstance(err, FileNotFoundError) or getattr(err, "errno", None) == 2


def cpu_busy_percent(before: str, after: str) -> float:
    """CPU use between two `cpu` lines of /proc/stat: everything but idle, iowait and steal (time a
    hypervisor took, when the board is a virtual machine)."""
    a, b = ([int(x) for x in line.split()[1:]] for line in (before, after))
    total = sum(b[:8]) - sum(a[:8])  # guest time is inside user already
    resting = sum(b[i] - a[i] for i in (3, 4, 7) if i < len(a) and i < len(b))
    return 100.0 * (total - resting) / total if total > 0 else 0.0


class RemoteDaemon:
    """A daemon on a board, looked at the way stack/daemons.py looks at a local Popen."""

    def __init__(self, backend: "SshBackend", node: NodeSpec, pid: int):
        self.backend, self.node, self.pid = backend, node, pid
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            alive = self.backend.connection(self.node).run(["kill", "-0", str(self.pid)], timeout_s=30).status == 0
            if not alive:
                self.returncode = "unknown: it ran on the board"
        return self.returncode


class SshBackend(Backend):
    name = "ssh"
    shaped = False

    def __init__(self, state):
        super().__init__(state)
        self.inventory = Inventory.model_validate(state.extra["inventory"])
        self.known_hosts = Path(state.extra.get("known_hosts") or DEFAULT_KNOWN_HOSTS)
        self.accept_new = bool(state.extra.get("accept_new_host_keys"))
        self._connections: dict[str, Connection] = {}
        self._lock = threading.Lock()

    # --- where things are on a board -----------------------------------------------------

    def host(self, node: NodeSpec) -> Host:
        return self.inventory.host(node.name)

    def cluster_root(self, node: NodeSpec) -> Path:
        return Path(self.host(node).data_dir) / "sbclab" / self.spec.name

    @property
    def dist_root(self) -> Path:
        return Path(self.state.extra["dist_dir"])

    def node_dir(self, node: NodeSpec) -> Path:
        return self.cluster_root(node)

    def node_disk(self, node: NodeSpec) -> Path:
        return self.cluster_root(node) / "data"

    def node_paths(self, node: NodeSpec, logs: Path) -> tuple[Path, Path, Path]:
        root = self.cluster_root(node)
        return root / "conf", root / "data", root / "logs"

    def java_home(self, node: NodeSpec) -> Path:
        return Path(self.state.extra["java"][node.name]["home"])

    def java_version(self) -> str:
        return self.state.extra["java"][self.spec.master.name]["version"]

    def node_env(self, node: NodeSpec) -> dict[str, str]:
        return {"PATH": NODE_PATH, "HADOOP_USER_NAME": self.host(node).user}

    def node_user(self, node: NodeSpec) -> str:
        return self.host(node).user

    def distribution(self, local):
        return local.relocated(self.dist_root)

    def where(self, node: NodeSpec, path: Path) -> str:
        return f"{path} on {node.name}"

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

    def _each(self, work, nodes: list[NodeSpec] | None = None) -> dict[str, object]:
        """work(node) on every board at once; errors are returned, not raised, so all boards are tried."""
        return in_parallel(list(nodes or self.spec.nodes), work, lambda node: node.name)

    @staticmethod
    def _raise_first(results: dict[str, object], doing: str) -> None:
        failed = {name: err for name, err in results.items() if isinstance(err, SbclabError)}
        if failed:
            name, err = next(iter(failed.items()))
            others = f" (and {len(failed) - 1} more board(s))" if len(failed) > 1 else ""
            raise SbclabError(f"{doing} failed on {name}{others}: {err.message}", err.hint)

    # --- deploying ---------------------------------------------------------------------------

    def create_nodes(self) -> None:
        """Java, the distribution and the cluster's folders on every board, in parallel."""
        local = self.state.extra["local_distribution"]
        for node in self.spec.nodes:
            self.state.record("remote_directory", node=node.name, path=str(self.cluster_root(node)))
        if self.state.extra.get("nodes_only"):  # node benchmarks: the cluster's folders, nothing of the stack
            made = self._each(lambda node: self.make_dirs(node, [self.node_disk(node), self.cluster_root(node) / "pids"]))
            self._raise_first(made, "Preparing the boards")
            return
        self.state.extra["java"] = {}
        done = self._each(lambda node: self._deploy_one(node, local))
        self._raise_first(done, "Deploying")
        self.state.extra["java"] = {name: got["java"] for name, got in done.items()}
        self.state.extra["deploy"] = {name: got["changed"] for name, got in done.items()}
        self.state.extra["board_knobs"] = {name: got["knobs"] for name, got in done.items() if got["knobs"]}
        self.state.save()

    def _deploy_one(self, node: NodeSpec, local: dict) -> dict:
        conn = self.connection(node)
        changed = []
        java = pick_java(conn.shell(_FIND_JAVA, []).stdout)
        if java is None:
            installed = conn.shell(_INSTALL_PACKAGES, [JAVA_PACKAGE], timeout_s=1800)
            java = pick_java(conn.shell(_FIND_JAVA, []).stdout)
            if java is None:
                raise SbclabError(f"no Java 11 or 17, and installing {JAVA_PACKAGE} did not give one "
                                  f"({(installed.stdout or installed.stderr).strip()[-300:] or 'no output'}).",
                                  f"Install Java 17 on {node.name} (sudo apt-get install {JAVA_PACKAGE}), "
                                  "or let its user run sudo without a password, then run 'cluster up' again.")
            changed.append(f"installed {JAVA_PACKAGE}")
        changed += self._ship_distribution(node, conn, local)
        root = self.cluster_root(node)
        conn.run(["mkdir", "-p", "--", str(root / "conf"), str(root / "data"), str(root / "logs"), str(root / "pids")])
        return {"java": {"home": java[0], "version": java[1]}, "changed": changed, "knobs": knobs.in_effect(conn)}

    def _stale(self, conn: Connection, local: dict) -> list[Path]:
        """The parts of this host's distribution (Hadoop, Spark by manifest; the jobs jar) the board lacks."""
        stale = []
        for part, digest_of in ((Path(local["hadoop_home"]), "MANIFEST.json"), (Path(local["spark_home"]), "MANIFEST.json"),
                                (Path(local["jobs_jar"]), "")):
            there = self.dist_root / part.name
            have = conn.run(["sha256sum", "--", str(there / digest_of if digest_of else there)]).stdout.split(" ")[0]
            if have != sha256(part / digest_of if digest_of else part):
                stale.append(part)
        return stale

    def _ship_distribution(self, node: NodeSpec, conn: Connection, local: dict) -> list[str]:
        """Copy what differs from this host's cache; a folder goes as one tar stream, unpacked aside."""
        changed = []
        for part in self._stale(conn, local):
            there = self.dist_root / part.name
            if part.is_file():
                sftp = conn.sftp()
                conn.run(["mkdir", "-p", "--", str(self.dist_root)])
                partial = f"{there}.partial.{node.name}"
                sftp.put(str(part), partial)
                sftp.posix_rename(partial, str(there))
                changed.append(f"copied {part.name}")
                continue
            tar = subprocess.Popen(["tar", "-C", str(part.parent), "-cf", "-", part.name], stdout=subprocess.PIPE)
            try:
                with open("/dev/null", "wb") as sink:
                    status = conn.stream(["sh", "-c", _UNPACK, "sh", str(there)], sink, timeout_s=3600, stdin=tar.stdout)
            finally:
                tar.stdout.close()
                tar.wait()
            if status != 0 or tar.returncode != 0:
                raise SbclabError(f"copying {part.name} to {there} failed (exit {status}).",
                                  f"Check free space under {self.dist_root} on {node.name} ('df -h').")
            changed.append(f"copied {part.name}")
        return changed

    def verify_deployment(self) -> list[str]:
        """What differs on the boards from what create_nodes would leave there (nothing is changed)."""
        local = self.state.extra["local_distribution"]

        def one(node):
            conn = self.connection(node)
            differs = [f"{part.name} on {node.name}" for part in self._stale(conn, local)]
            if conn.run(["test", "-x", str(self.java_home(node) / "bin" / "java")]).status != 0:
                differs.append(f"Java on {node.name}")
            return differs
        found = self._each(one)
        self._raise_first(found, "Checking the deployment")
        return [d for got in found.values() for d in got]

    # --- files -------------------------------------------------------------------------------

    def make_dirs(self, node: NodeSpec, folders: list[Path], fresh: list[Path] = ()) -> None:
        conn = self.connection(node)
        if fresh:
            conn.run(["rm", "-rf", "--", *map(str, fresh)])
        status = conn.run(["mkdir", "-p", "--", *map(str, [*fresh, *folders])])
        if status.status != 0:
            raise SbclabError(f"Cannot create folders on {node.name}: {status.stderr.strip()}.",
                              f"Check that {self.host(node).user} may write under {self.host(node).data_dir}.")

    def write_files(self, node: NodeSpec, folder: Path, files: dict[str, str]) -> None:
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
            if _not_found(err):
                return None
            raise

    def remove_tree(self, node: NodeSpec, path: Path) -> None:
        self.connection(node).run(["rm", "-rf", "--", str(path)], timeout_s=600)

    def ensure_programs(self, packages_by_program: dict[str, str]) -> None:
        """Each program on every board, installed with apt-get (root or sudo -n) where it is missing."""
        programs = sorted(packages_by_program)
        # Looked up on the PATH commands get (nginx is in /usr/sbin, off a plain user's login PATH).
        lookup = ["env", f"PATH={NODE_PATH}", "sh", "-c", 'command -v "$1"', "sh"]

        def one(node):
            conn = self.connection(node)
            missing = [p for p in programs if conn.run([*lookup, p]).status != 0]
            if not missing:
                return []
            packages = sorted({packages_by_program[p] for p in missing})
            installed = conn.shell(_INSTALL_PACKAGES, packages, timeout_s=1800)
            still = [p for p in missing if conn.run([*lookup, p]).status != 0]
            if still:
                raise SbclabError(f"{', '.join(still)} missing, and installing {' '.join(packages)} did not bring them "
                                  f"({(installed.stdout or installed.stderr).strip()[-300:] or 'no output'}).",
                                  f"Install them on {node.name} (sudo apt-get install {' '.join(packages)}), then run again.")
            return packages
        self._raise_first(self._each(one), "Installing the benchmark programs")

    def remove(self, node: NodeSpec, path: Path) -> None:
        try:
            self.connection(node).sftp().remove(str(path))
        except OSError as err:
            if not _not_found(err):
                raise

    def fetch(self, node: NodeSpec, path: Path, here: Path) -> Path | None:
        here.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.connection(node).sftp().get(str(path), str(here))
        except OSError as err:
            if _not_found(err):
                here.unlink(missing_ok=True)
                return None
            raise
        return here

    # --- commands ----------------------------------------------------------------------------

    def _session(self, argv: list[str], env: dict[str, str], cwd: Path | None, pidfile: Path) -> list[str]:
        return ["setsid", "-w", "sh", "-c", _IN_SESSION, str(pidfile), str(cwd or "/"), *self._with_env(env, argv)]

    @staticmethod
    def _with_env(env: dict[str, str], argv: list[str]) -> list[str]:
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

    def record_process(self, node: NodeSpec, label: str, owned: bool = True) -> dict:
        """A command about to start on the board, recorded with the pid file its session will write."""
        owner = self.owner() if owned else {}
        return self.state.record("remote_process", node=node.name, pidfile=str(self._pidfile(node, label)),
                                 label=label, **owner)

    def run(self, node, argv, env, log, timeout_s=None, cwd=None, label="command", on_host=False) -> int:
        if on_host:
            # A launcher on this machine (mpirun), reaching the boards through the node shell.
            return super().run(node, argv, env, log, timeout_s, cwd, label, on_host=True)
        entry = self.record_process(node, label)
        try:
            return self._run_remote(node, argv, env, log, timeout_s, cwd, label, Path(entry["pidfile"]))
        finally:
            self.state.forget(entry)

    def run_parallel(self, jobs, timeout_s=None, feeds=None) -> list[int]:
        entries = [self.record_process(node, label) for node, _argv, _env, _log, label in jobs]
        feeds = feeds or [None] * len(jobs)
        try:
            with ThreadPoolExecutor(max_workers=min(16, len(jobs))) as pool:
                futures = [pool.submit(self._run_remote, node, argv, env, log, timeout_s, None, label,
                                       Path(entry["pidfile"]), feed)
                           for (node, argv, env, log, label), entry, feed in zip(jobs, entries, feeds)]
                try:
                    return [f.result() for f in futures]
                except BaseException:
                    for (node, *_rest), entry in zip(jobs, entries):
                        self.stop_sessions(node, [entry["pidfile"]])
                    raise
        finally:
            for entry in entries:
                self.state.forget(entry)

    def capture(self, node, argv, env, timeout_s=120) -> tuple[int, bytes, bytes]:
        done = self.connection(node).run(self._with_env(env, argv), timeout_s=timeout_s)
        return done.status, done.stdout.encode(), done.stderr.encode()

    def start_daemon(self, node, argv, env, out, cwd, label):
        entry = self.record_process(node, label, owned=False)
        return self._background(node, argv, env, cwd, out, entry["pidfile"], label)

    def _background(self, node, argv, env, cwd, out, pidfile, label) -> RemoteDaemon:
        """argv left running on the board, its output in the board's file `out`."""
        # Backgrounded by a non-interactive sh, the process is no group leader, so setsid makes it
        # one without forking: $! is the pid of its session.
        script = ('cd "$1" || exit 111; out=$2; pidfile=$3; shift 3; '
                  'setsid "$@" > "$out" 2>&1 < /dev/null & echo $! > "$pidfile"; echo $!')
        started = self.connection(node).run(["sh", "-c", script, "sh", str(cwd), str(out), pidfile,
                                             *self._with_env(env, argv)])
        if started.status != 0 or not started.stdout.strip().isdigit():
            raise SbclabError(f"Starting {label} on {node.name} failed: {started.stderr.strip() or started.stdout.strip()}.",
                              f"Read {out} on {node.name}.")
        return RemoteDaemon(self, node, int(started.stdout.strip()))

    @contextmanager
    def serving(self, node, argv, env, log, label, cwd=None, limited=True):
        """A server on the board for the length of the block, in a session of its own (recorded as
        this sbclab's, so an orphan is stopped later); its output is fetched to `log` at the end."""
        entry = self.record_process(node, label)
        remote_log = Path(entry["pidfile"]).with_suffix(".out")
        try:
            yield self._background(node, argv, env, cwd or self.cluster_root(node), remote_log, entry["pidfile"], label)
        finally:
            self.stop_sessions(node, [entry["pidfile"]])
            text = self.read_text(node, remote_log)
            if text is not None:
                log.parent.mkdir(parents=True, exist_ok=True)
                with open(log, "a") as f:
                    f.write(text)
                self.remove(node, remote_log)
            self.state.forget(entry)

    def mpi_folder(self, run_id: str) -> Path:
        """The same path on every board ('mpirun --wdir' is one for all ranks), in /tmp because a
        board's data directory need not be another's."""
        return Path("/tmp") / f"sbclab-{self.spec.name}-{run_id}"

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

    def on_node(self, node, argv):
        """A local command that runs argv on the board over SSH (node_shell.py), as `ssh board argv`
        would: the words joined by spaces for the board's shell, its exit status passed back, and
        the remote command stopped when the local one ends."""
        return ["env", f"SBCLAB_CLUSTER={self.spec.name}", sys.executable, "-m", "sbclab.cluster.node_shell",
                node.name, *argv], None

    def run_tied(self, node: NodeSpec, command: str, out, err) -> int:
        """A shell command on the board, stopped with its children if this process goes (TIED)."""
        return self.connection(node).attached(["sh", "-c", TIED, "sh", command], out, err)

    def sync_disks(self) -> None:
        """Nothing here: each board syncs in its sampler's mark (monitor/board_sampler.py), one round
        trip instead of two."""

    def drop_caches(self) -> bool:
        script = ('sync; if [ "$(id -u)" = 0 ]; then echo 3 > /proc/sys/vm/drop_caches; '
                  'else echo 3 | sudo -n tee /proc/sys/vm/drop_caches >/dev/null; fi')
        done = self._each(lambda node: self.connection(node).run(["sh", "-c", script], timeout_s=600).status == 0)
        return all(ok is True for ok in done.values())

    def fstrim(self) -> list[str]:
        """Trim the filesystem of each board's data directory (root or sudo -n); boards without
        fstrim, or whose medium does not take discards, are left out."""
        script = ('if [ "$(id -u)" = 0 ]; then as_root=""; else as_root="sudo -n"; fi; '
                  'command -v fstrim >/dev/null && $as_root fstrim "$1"')
        done = self._each(lambda node: self.connection(node).run(["sh", "-c", script, "sh", str(self.node_disk(node))],
                                                                 timeout_s=600).status == 0)
        return [name for name, ok in done.items() if ok is True]

    def knobs(self) -> dict[str, list[str]]:
        """The cluster's knobs and the firmware knobs found on the boards at deployment."""
        found = super().knobs()
        for node, names in (self.state.extra.get("board_knobs") or {}).items():
            for name in names:
                found.setdefault(name, []).append(node)
        return found

    def busy_percent(self, window_s: float) -> float:
        """The busiest board's CPU use over the window, from its /proc/stat before and after."""
        script = 'head -n 1 /proc/stat; sleep "$1"; head -n 1 /proc/stat'

        def busy(node):
            lines = self.connection(node).shell(script, [f"{window_s:g}"], timeout_s=window_s + 30).stdout.splitlines()
            return cpu_busy_percent(lines[0], lines[1]) if len(lines) == 2 else 100.0
        found = self._each(busy)
        return max(v if isinstance(v, float) else 100.0 for v in found.values())

    def sampling_points(self):
        """Each board's whole view: its /proc, the disk holding its data directory and the interface
        with its inventory address, both found by the sampler on the board."""
        return [(node.name, node, {"node": node.name, "scope": "node", "device_of": str(self.node_disk(node)),
                                   "interface_of": node.address}) for node in self.spec.nodes]

    def sampler(self, name, node, target, run_id, interval_s):
        from ...monitor.board_sampler import BoardSampler
        return BoardSampler(self, name, node, target, run_id, interval_s)

    def local_dir(self, node: NodeSpec) -> Path:
        return self.state.root / "boards" / node.name

    def web_url(self, node: NodeSpec, host: str, port: int) -> str:
        """A board's loopback endpoint through its SSH connection; one on its address directly."""
        if host.startswith("127."):
            return f"http://127.0.0.1:{self.connection(node).tunnel(host, port)}"
        return super().web_url(node, host, port)

    def node_time(self, node: NodeSpec) -> float | None:
        try:
            return float(self.connection(node).run(["date", "+%s.%N"], timeout_s=20).stdout.strip())
        except (SbclabError, OSError, ValueError):
            return None

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
        found = self._each(alive)
        return [p for got in found.values() if isinstance(got, list) for p in got]

    def stop_orphans(self) -> list[str]:
        orphans = super().stop_orphans()  # launchers this host ran for the boards
        for entry in self.orphaned("remote_process"):
            self.stop_sessions(self.spec.node(entry["node"]), [entry["pidfile"]])
            self.state.forget(entry)
            orphans.append(entry.get("label", "command"))
        return orphans

    def destroy(self) -> list[str]:
        """Stop every daemon and command of the cluster on every board; with purge, remove its folders."""
        purge = bool(self.state.extra.get("purge"))
        reaper.stop(reaper.recorded(self.state.of_kind("process")))
        by_node: dict[str, list[str]] = {}
        for entry in self.state.of_kind("remote_process"):
            by_node.setdefault(entry["node"], []).append(entry["pidfile"])

        def stop(node):
            conn = self.connection(node)
            self.stop_sessions(node, by_node.get(node.name, []))
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
        results = self._each(stop, nodes)
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
