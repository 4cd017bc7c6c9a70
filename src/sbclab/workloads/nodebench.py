"""The seeds' per-node figures as stored runs (engine 'node'): sysbench CPU by threads, storage in
the iozone pattern with fio, iperf3 between each worker and the master both ways, and power idle and
under stress-ng with the node's power source and temperature.

Layouts follow the seeds: Lee & Park 2026 Table 4 (events/s at 1, 2, 4, 8, 16 threads), Tables 6,
7 and 22 (MB/s by access and record size, 4 KB IOPS), Table 5 (iperf3), Table 3 (W idle and under
stress); Lee, Oh & Park 2021 Table 10; Baun 2016 Tables 3-6.
"""

import json
import re
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from .. import profiles
from ..cluster.calibration import fio_job, iperf3_mbps, sysbench_cpu
from ..cluster.spec import NodeSpec
from ..errors import SbclabError
from ..results.schema import Check, RunRecord
from ..stack.clients import JobOutcome
from .base import RunContext, new_id

THREADS = (1, 2, 4, 8, 16)
RECORDS = ("4k", "512k", "16m")  # the iozone record sizes the 2026 seed reports
ACCESSES = {"seq-read": "read", "seq-write": "write", "rand-read": "randread", "rand-write": "randwrite"}
# The program each node benchmark runs; Debian packages them under the same names.
PROGRAMS = {"cpu": "sysbench", "storage": "fio", "network": "iperf3", "power": "stress-ng"}


def measured_run(ctx: RunContext, workload: str, node: NodeSpec, parameters: dict[str, Any],
              body: Callable[[], tuple[dict, list[Check]]], command: list[str], repetition: int = 1) -> RunRecord:
    """Run body under the node samplers and store it as a run of engine 'node'."""
    run_id = new_id("node", workload)
    log = ctx.job_log(run_id, workload)
    log.parent.mkdir(parents=True, exist_ok=True)
    status, result, checks = 0, {}, []
    with ctx.recording(run_id) as recorded:
        # Inside the recording: the run's window must start after the samplers' first samples.
        started = datetime.now(timezone.utc)
        clock = time.monotonic()
        if ctx.stack.recording is not None:
            ctx.stack.recording.command_started(workload)
        try:
            result, checks = body()
        except (SbclabError, subprocess.SubprocessError) as err:
            status = 1
            checks = [Check(name=f"{workload} finished", passed=False, detail=str(err)[:500])]
        finished = datetime.now(timezone.utc)
        if ctx.stack.recording is not None:
            ctx.stack.recording.command_finished(workload, started, finished, status)
    log.write_text(json.dumps({"node": node.name, "result": result}, indent=1) + "\n")
    outcome = JobOutcome(command, status, started, finished, time.monotonic() - clock, log, "")
    return ctx.store_run(run_id=run_id, workload=workload, engine="node", repetition=repetition,
                         parameters={"node": node.name, **parameters}, outcome=outcome,
                         checks=checks or [Check(name=f"{workload} finished", passed=status == 0, detail="")],
                         result=result, recording=recorded.raw)


def cpu(ctx: RunContext, node: NodeSpec, threads=THREADS, max_prime: int = 2000, seconds: int = 10,
        repetition: int = 1) -> RunRecord:
    """sysbench cpu at each thread count (the 2026 seed's Table 4; --cpu-max-prime=2000)."""
    prefix, preexec = ctx.cluster.backend.on_node(node, [])

    def body():
        figures = {str(t): round(sysbench_cpu(max_prime, t, seconds, prefix, preexec), 2) for t in threads}
        return {"events_per_s": figures}, [Check(name="events counted", passed=all(v > 0 for v in figures.values()),
                                                 detail=", ".join(f"{t} threads: {v}" for t, v in figures.items()))]
    return measured_run(ctx, "sysbench-cpu", node, {"threads": list(threads), "max_prime": max_prime, "seconds": seconds},
                     body, ["sysbench", "cpu", f"--cpu-max-prime={max_prime}", "--threads=N", f"--time={seconds}", "run"],
                     repetition)


def storage(ctx: RunContext, node: NodeSpec, size: str = "100M", records=RECORDS, seconds: int = 5,
            repetition: int = 1) -> RunRecord:
    """fio on the node's data disk in the iozone pattern: direct sequential and random reads and
    writes at each record size on a 100 MB file, random 4 KB IOPS, and dd's buffered sequential
    figures (the write flushed before dd reports, the read from a dropped page cache)."""
    prefix, preexec = ctx.cluster.backend.on_node(node, [])
    work = ctx.cluster.backend.node_disk(node) / ".sbclab-storage"

    def body():
        ctx.cluster.backend.make_dirs(node, [work])
        try:
            mb_s: dict[str, dict[str, float]] = {}
            for access, rw in ACCESSES.items():
                mb_s[access] = {}
                for record in records:
                    mb_s[access][record] = round(fio_job(work, f"{access}-{record}", rw, record, size, seconds, True,
                                                         prefix, preexec)["mb_s"], 2)
            iops = {access: round(fio_job(work, f"iops-{access}", ACCESSES[access], "4k", size, seconds, True, prefix,
                                          preexec)["iops"], 1) for access in ("rand-read", "rand-write")}
            buffered = dd_buffered(ctx, node, work, size)
        finally:
            ctx.cluster.backend.remove_tree(node, work)
        result = {"mb_s": mb_s, "iops_4k": iops, "buffered_mb_s": buffered, "file": size}
        ok = all(v > 0 for per in mb_s.values() for v in per.values())
        return result, [Check(name="every pattern measured", passed=ok, detail=f"{len(ACCESSES) * len(records)} direct patterns")]
    return measured_run(ctx, "storage", node, {"size": size, "records": list(records), "seconds": seconds}, body,
                     ["fio", "--direct=1", "--ioengine=psync", f"--size={size}"], repetition)


_DD = re.compile(r"^(\d+) bytes .* copied, ([\d.]+) s", re.M)


def _dd(prefix, preexec, argv: list[str]) -> float:
    """MB/s from dd's own summary line (bytes over seconds, whatever unit dd chose to print)."""
    done = subprocess.run([*prefix, "dd", *argv], capture_output=True, text=True, preexec_fn=preexec)
    match = _DD.search(done.stderr)
    if done.returncode != 0 or not match:
        raise SbclabError(f"dd {' '.join(argv)} failed: {done.stderr.strip()[-300:]}", "Check free space on the node's disk.")
    return int(match.group(1)) / float(match.group(2)) / 1e6


def _mebibytes(size: str) -> int:
    """fio's sizes (100M = 100 MiB) as dd's count of 1 MiB blocks."""
    match = re.fullmatch(r"(\d+)([KMG])I?B?", size.strip().upper())
    if not match:
        raise SbclabError(f"'{size}' is not a file size fio and dd both read.", "Write e.g. 100M or 1G.")
    return max(1, int(int(match.group(1)) * {"K": 1 / 1024, "M": 1, "G": 1024}[match.group(2)]))


def dd_buffered(ctx: RunContext, node: NodeSpec, work: Path, size: str) -> dict:
    """The seeds' dd figures: a buffered write flushed before dd reports (conv=fdatasync), and a
    read of that file with the page cache dropped first."""
    prefix, preexec = ctx.cluster.backend.on_node(node, [])
    megabytes = _mebibytes(size)
    target = work / "dd.bin"
    write = _dd(prefix, preexec, ["if=/dev/zero", f"of={target}", "bs=1M", f"count={megabytes}", "conv=fdatasync"])
    dropped = ctx.drop_caches()
    read = _dd(prefix, preexec, [f"if={target}", "of=/dev/null", "bs=1M"])
    # Without the right to drop the page cache the read comes from memory; the run says so.
    return {"seq-write": round(write, 2), "seq-read": round(read, 2), "read_after_cache_drop": dropped}


def network(ctx: RunContext, worker: NodeSpec, seconds: int = 5, repetition: int = 1) -> RunRecord:
    """iperf3 between the worker and the master, both directions (the seeds' Tables 5 and 9)."""
    backend, master = ctx.cluster.backend, ctx.cluster.spec.master
    (m_prefix, m_pre), (w_prefix, w_pre) = backend.on_node(master, []), backend.on_node(worker, [])

    def body():
        to_master = iperf3_mbps(m_prefix, w_prefix, master.address, seconds, m_pre, w_pre)
        from_master = iperf3_mbps(w_prefix, m_prefix, worker.address, seconds, w_pre, m_pre)
        result = {"to_master_mbit_s": round(to_master, 1), "from_master_mbit_s": round(from_master, 1),
                  "link_mbit_s": round(worker.link_mbit_s, 1)}
        return result, [Check(name="both directions measured", passed=to_master > 0 and from_master > 0,
                              detail=f"{to_master:.0f} / {from_master:.0f} Mbit/s")]
    return measured_run(ctx, "iperf", worker, {"peer": master.name, "seconds": seconds}, body,
                     ["iperf3", "-c", master.address, "-t", str(seconds)], repetition)


def power(ctx: RunContext, node: NodeSpec, seconds: int = 60, repetition: int = 1) -> list[RunRecord]:
    """The node idle, then with stress-ng on every core, for `seconds` each (the seeds used an hour):
    two runs whose measurements hold the energy, average W (with the source) and temperatures."""
    cores = profiles.board(node.board).cores
    prefix, preexec = ctx.cluster.backend.on_node(node, [])

    def idle():
        time.sleep(seconds)
        return {"seconds": seconds}, [Check(name="idle for the duration", passed=True, detail=f"{seconds} s")]

    def stress():
        done = subprocess.run([*prefix, "stress-ng", "--cpu", str(cores), "--timeout", f"{seconds}s", "--metrics-brief"],
                              capture_output=True, text=True, preexec_fn=preexec)
        return ({"seconds": seconds, "workers": cores},
                [Check(name="stress-ng finished", passed=done.returncode == 0, detail=(done.stderr or "")[-300:])])
    return [measured_run(ctx, "idle", node, {"seconds": seconds}, idle, ["sleep", str(seconds)], repetition),
            measured_run(ctx, "stress", node, {"seconds": seconds, "cpu_workers": cores}, stress,
                      ["stress-ng", "--cpu", str(cores), "--timeout", f"{seconds}s"], repetition)]
