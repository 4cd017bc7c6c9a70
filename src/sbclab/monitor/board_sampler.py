"""A node's sampler on a real board, driven over SSH.

The same sampler runs there as on an emulated node: sampler.py with readings.py and taskstats.py
(standard library only) are copied to the board and run by its python3, in a session of its own
whose pid file is recorded first, so a later sbclab stops it even if this one was killed. A mark is
the same file and SIGUSR1 as on a local node, sent by one SSH command that also waits for the
labelled sample; the samples come back by SFTP when the sampler stops. The board writes its samples
to its own disk, so a dropped connection loses no sample, only marks.
"""

import json
from pathlib import Path

from ..cluster.spec import NodeSpec
from ..cluster.ssh import SshTransport
from ..errors import SbclabError

SHIPPED = ("sampler.py", "readings.py", "taskstats.py")

# Started in the background as its own session (setsid without a fork: $! is the session's id),
# then waited for until it has written its header and first sample, as the recorder does locally.
_LAUNCH = r'''
cd "$1" || exit 111
out=$2; pidfile=$3; shift 3
command -v "$1" >/dev/null || { echo "no $1 on this board"; exit 4; }
setsid "$@" >> "$out.log" 2>&1 < /dev/null &
pid=$!
echo $pid > "$pidfile"
i=0
while [ $i -lt 200 ]; do
  kill -0 $pid 2>/dev/null || { echo "the sampler exited:"; tail -n 5 "$out.log"; exit 3; }
  [ "$(wc -l < "$out" 2>/dev/null || echo 0)" -ge 2 ] && break
  sleep 0.1; i=$((i+1))
done
echo $pid
'''

# The dirty pages of the board's data filesystem (where its samples are too) written first, so the device
# counters at a mark include what the command left in the page cache, as recorder.py does locally (a plain
# sync where sync has no -f); then the mark's text, SIGUSR1, and up to 3 s for the labelled sample
# (recorder.MARK_WAIT_S): one round trip per board.
_MARK = r'''
pid=$1; out=$2; label=$3; needle=$4
kill -0 "$pid" 2>/dev/null || exit 3
sync -f "$out" 2>/dev/null || sync
printf '%s' "$label" > "$out.mark"
kill -USR1 "$pid" 2>/dev/null || exit 3
i=0
while [ $i -lt 60 ]; do
  tail -c 4096 "$out" | grep -qF -- "$needle" && exit 0
  sleep 0.05; i=$((i+1))
done
'''

# The sampler's cost (its /proc/PID/stat, the uptime and the clock tick), then it is stopped: TERM,
# which it answers with a last sample, and KILL to its session if it has not gone within 10 s.
_STOP = r'''
pid=$1; pidfile=$2
cat "/proc/$pid/stat" /proc/uptime 2>/dev/null && getconf CLK_TCK
kill -TERM "$pid" 2>/dev/null
i=0
while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
kill -KILL "-$pid" 2>/dev/null
rm -f "$pidfile"
'''


def cpu_share_from(stat_uptime_hz: str) -> float | None:
    """The sampler's CPU use in % of one core since it started, from its /proc/PID/stat, /proc/uptime
    and the clock tick, as _STOP prints them."""
    lines = stat_uptime_hz.strip().splitlines()
    if len(lines) != 3:
        return None
    try:
        fields = lines[0].rsplit(")", 1)[1].split()
        user, system, started = int(fields[11]), int(fields[12]), int(fields[19])
        uptime, hz = float(lines[1].split()[0]), int(lines[2])
    except (IndexError, ValueError):
        return None
    alive = uptime - started / hz
    return round(100 * (user + system) / hz / alive, 4) if alive > 0 else None


class BoardSampler:
    """The recorder's handle of one board's sampler (the methods of recorder.LocalSampler)."""

    def __init__(self, transport: SshTransport, name: str, node: NodeSpec, target: dict, run_id: str, interval_s: float,
                 collected: Path):
        self.transport, self.name, self.node, self.target = transport, name, node, target
        root = transport.cluster_root(node)
        self.code = root / "sampler"
        self.remote_out = root / "samples" / f"{run_id}.jsonl"
        self.local_out = collected / f"{run_id}.jsonl"
        self.interval_s = interval_s
        self.pid: int | None = None
        self.entry: dict | None = None
        self.died = False
        self.cost: float | None = None

    def launch(self) -> None:
        """Copy the sampler and its target over SFTP, then start it and wait for its first sample
        in one command: on a slow board every command costs a process start."""
        here = Path(__file__).parent
        sftp = self.transport.connection(self.node).sftp()
        for folder in (self.code.parent, self.code, self.remote_out.parent):
            try:
                sftp.mkdir(str(folder))
            except OSError:
                pass  # there already; a folder that cannot be made fails the write below
        self.transport.put(self.node, self.code, {name: (here / name).read_text() for name in SHIPPED})
        target_file = self.remote_out.with_suffix(".target.json")
        self.transport.put(self.node, target_file.parent, {target_file.name: json.dumps(self.target)})
        self.entry = self.transport.record_session(self.node, f"sampler {self.name}")
        argv = ["python3", str(self.code / "sampler.py"), "--target", str(target_file), "--out", str(self.remote_out),
                "--interval", f"{self.interval_s:g}"]
        started = self.transport.connection(self.node).shell(
            _LAUNCH, [str(self.code), str(self.remote_out), self.entry["pidfile"], *argv], timeout_s=60)
        last = started.stdout.strip().splitlines()[-1:] or [""]
        if started.status != 0 or not last[0].isdigit():
            self.transport.stop_sessions(self.node, [self.entry["pidfile"]])
            self.transport.state.forget(self.entry)
            self.entry = None
            raise SbclabError(f"The sampler did not start on {self.node.name}: "
                              f"{(started.stdout + started.stderr).strip()[-300:] or f'exit {started.status}'}.",
                              "It needs python3 on the board (sudo apt-get install python3), or run with --no-sampling.")
        self.pid, self.died = int(last[0]), False

    def starting(self) -> bool:
        return False  # launch() waited for the first sample on the board

    def running(self) -> bool:
        return self.pid is not None and not self.died

    def exit_status(self):
        return "unknown: it ran on the board" if self.died else None

    def mark(self, label: str) -> bool:
        if not self.running():
            return False
        needle = f'"mark":{json.dumps(label)}'
        done = self.transport.connection(self.node).shell(_MARK, [str(self.pid), str(self.remote_out), label, needle],
                                                         timeout_s=30)
        if done.status != 0:
            self.died = True
        return not self.died

    def cpu_share(self) -> float | None:
        return self.cost  # read as it stops, in the same command

    def stop(self) -> None:
        if self.entry is None:
            return
        if self.running():
            done = self.transport.connection(self.node).shell(_STOP, [str(self.pid), self.entry["pidfile"]], timeout_s=60)
            self.cost = cpu_share_from(done.stdout)
        else:
            self.transport.stop_sessions(self.node, [self.entry["pidfile"]])
        self.transport.state.forget(self.entry)
        self.entry, self.pid = None, None
        self._fetch()

    def forget(self) -> None:
        if self.entry is not None:
            self.transport.stop_sessions(self.node, [self.entry["pidfile"]])
            self.transport.state.forget(self.entry)
            self.entry = None
        self._fetch()

    def _fetch(self) -> None:
        try:
            self.transport.get(self.node, self.remote_out, self.local_out)
        except (OSError, SbclabError):
            pass  # the board is unreachable: its samples stay there, and the run says it has none

    def samples_file(self) -> Path:
        return self.local_out

    def newest_lines(self) -> list[str]:
        """The board's file's header and last few lines, over the board's SSH connection."""
        if not self.running():
            return []
        try:
            done = self.transport.connection(self.node).shell('head -n 1 "$1"; tail -n 3 "$1"', [str(self.remote_out)],
                                                             timeout_s=10)
        except SbclabError:
            return []
        return done.stdout.splitlines() if done.status == 0 else []
