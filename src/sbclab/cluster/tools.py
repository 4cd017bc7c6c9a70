"""The seeds' measuring tools — sysbench, fio, iperf3 — run the same way wherever they measure: on
this host for its calibration, inside a node for the node's own figures. A caller says how a
command runs (`Runner`) and, for iperf3, how its server is kept running; the command lines and the
reading of their output are here, once, so host and node figures come from identical commands."""

import json
import subprocess
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Callable

from ..errors import SbclabError

# argv -> (exit status, standard output, standard error)
Runner = Callable[[list[str]], tuple[int, str, str]]
SECONDS_PER_TEST = 5


def here(prefix: list[str] | tuple = (), preexec=None) -> Runner:
    """Commands run on this host (behind a prefix such as `ip netns exec NS`)."""
    def run(argv: list[str]) -> tuple[int, str, str]:
        done = subprocess.run([*prefix, *argv], capture_output=True, text=True, preexec_fn=preexec)
        return done.returncode, done.stdout, done.stderr
    return run


def sysbench_cpu(run: Runner, max_prime: int, threads: int, seconds: int = SECONDS_PER_TEST) -> float:
    """sysbench CPU events per second, the seeds' test (`sysbench cpu --cpu-max-prime=N`)."""
    status, out, err = run(["sysbench", "cpu", f"--cpu-max-prime={max_prime}", f"--threads={threads}",
                            f"--time={seconds}", "run"])
    for line in out.splitlines():
        if status == 0 and "events per second" in line:
            return float(line.split(":")[1])
    raise SbclabError(f"sysbench printed no 'events per second' ({err.strip()[-200:] or f'exit {status}'}).",
                      "Check the sysbench installation (sysbench --version).")


def fio_job(run: Runner, directory: Path, name: str, rw: str, block_size: str, size: str = "256M",
            seconds: int = SECONDS_PER_TEST, direct: bool = True) -> dict:
    """One fio job in `directory`; {'mb_s', 'iops'} of its read or write side. Direct I/O runs for
    `seconds`; buffered I/O writes `size` once and flushes it, as HDFS and shuffle files are written
    (rewriting one file for a while would measure the page cache, not the medium)."""
    argv = ["fio", f"--name={name}", f"--directory={directory}", f"--rw={rw}", f"--bs={block_size}",
            f"--size={size}", f"--direct={1 if direct else 0}",
            "--ioengine=psync", "--numjobs=1", "--group_reporting", "--output-format=json"]
    argv += [f"--runtime={seconds}", "--time_based"] if direct else ["--end_fsync=1"]
    status, out, err = run(argv)
    if status != 0 or "{" not in out:
        raise SbclabError(f"fio {rw} {block_size} in {directory} failed: {err.strip()[:300]}",
                          "Check free space and that the directory is writable.")
    job = json.loads(out[out.index("{"):])["jobs"][0]
    side = job["read"] if "read" in rw else job["write"]
    return {"mb_s": side["bw_bytes"] / 1e6, "iops": side["iops"]}


def iperf3_server(address: str) -> list[str]:
    return ["iperf3", "-s", "-B", address]


def iperf3_mbps(serving: Callable[[list[str]], AbstractContextManager], client: Runner, server_address: str,
                seconds: int = 3) -> float:
    """TCP throughput client → server in Mb/s, the seeds' `iperf3 -c`, with the server kept running
    by `serving` for the length of the test."""
    with serving(iperf3_server(server_address)):
        last = ""
        for _ in range(50):
            status, out, err = client(["iperf3", "-c", server_address, "-t", str(seconds), "-J"])
            try:
                report = json.loads(out)
            except json.JSONDecodeError:
                report = {"error": (err or out).strip()}
            received = report.get("end", {}).get("sum_received", {}).get("bits_per_second")
            if received:
                return received / 1e6
            last = str(report.get("error") or "no throughput in the report")
            # The server may not listen yet, or still be finishing a previous test.
            if not any(word in last for word in ("refused", "busy", "no throughput")):
                break
            time.sleep(0.2)
        raise SbclabError(f"iperf3 to {server_address} failed: {last[:300]}.", "Check the iperf3 installation.")


class Serving(AbstractContextManager):
    """A server on this host (behind a prefix) for the length of a block."""

    def __init__(self, prefix: list[str], argv: list[str]):
        self.argv = [*prefix, *argv]
        self.proc: subprocess.Popen | None = None

    def __enter__(self):
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self.proc

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()
        return False


def on_node(transport, node, timeout_s: float = 3600) -> Runner:
    """Commands run inside a node, through its transport."""
    def run(argv: list[str]) -> tuple[int, str, str]:
        done = transport.capture(node, argv, timeout_s=timeout_s)
        return done.status, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    return run


class ServingOnNode(AbstractContextManager):
    """A server on a node for the length of a block (iperf3 -s, nginx, NPtcp's receiver), recorded so
    teardown stops it if this does not; its output ends in `log` on this host."""

    def __init__(self, transport, node, argv: list[str], log: Path, label: str, cwd: Path | None = None,
                 env: dict[str, str] | None = None):
        self.transport, self.node, self.argv, self.log, self.label = transport, node, argv, Path(log), label
        self.cwd, self.env = cwd, env
        self.out = self.log if transport.shares_host else transport.node_dir(node) / "serving" / self.log.name
        self.session = None

    def __enter__(self):
        self.transport.make_dirs(self.node, [self.out.parent])
        self.session = self.transport.start(self.node, self.argv, self.env or self.transport.base_env(self.node),
                                            self.out, cwd=self.cwd, label=self.label)
        return self.session

    def __exit__(self, *exc):
        self.transport.stop(self.session)
        if self.out != self.log:
            text = self.transport.read_text(self.node, self.out)
            if text is not None:
                self.log.parent.mkdir(parents=True, exist_ok=True)
                with open(self.log, "a") as f:
                    f.write(text)
                self.transport.remove(self.node, self.out)
        return False
