"""fio on a node's data disk in the seeds' iozone pattern, and dd's buffered figures: the 2026
seed's Tables 6, 7 and 22 (MB/s by access and record size, 4 KB IOPS), Lee, Oh & Park 2021 Table 10,
Baun 2016 Tables 4-5."""

import re
from pathlib import Path
from typing import Any

from ..cluster import tools
from ..cluster.spec import NodeSpec
from ..errors import SbclabError
from ..results.schema import Check
from .base import Attempt, NodeBenchmark, RunContext, timed

RECORDS = ("4k", "512k", "16m")  # the iozone record sizes the 2026 seed reports
ACCESSES = {"seq-read": "read", "seq-write": "write", "rand-read": "randread", "rand-write": "randwrite"}
_DD = re.compile(r"^(\d+) bytes .* copied, ([\d.]+) s", re.M)


def dd_mb_s(run: tools.Runner, argv: list[str]) -> float:
    """MB/s from dd's own summary line (bytes over seconds, whatever unit dd chose to print)."""
    status, _, err = run(["dd", *argv])
    match = _DD.search(err)
    if status != 0 or not match:
        raise SbclabError(f"dd {' '.join(argv)} failed: {err.strip()[-300:]}", "Check free space on the node's disk.")
    return int(match.group(1)) / float(match.group(2)) / 1e6


def mebibytes(size: str) -> int:
    """fio's sizes (100M = 100 MiB) as dd's count of 1 MiB blocks."""
    match = re.fullmatch(r"(\d+)([KMG])I?B?", size.strip().upper())
    if not match:
        raise SbclabError(f"'{size}' is not a file size fio and dd both read.", "Write e.g. 100M or 1G.")
    return max(1, int(int(match.group(1)) * {"K": 1 / 1024, "M": 1, "G": 1024}[match.group(2)]))


def dd_buffered(ctx: RunContext, node: NodeSpec, run: tools.Runner, work: Path, size: str) -> dict:
    """The seeds' dd figures: a buffered write flushed before dd reports (conv=fdatasync), and a
    read of that file with the page cache dropped first."""
    target = work / "dd.bin"
    write = dd_mb_s(run, ["if=/dev/zero", f"of={target}", "bs=1M", f"count={mebibytes(size)}", "conv=fdatasync"])
    dropped = ctx.drop_caches()
    read = dd_mb_s(run, [f"if={target}", "of=/dev/null", "bs=1M"])
    # Without the right to drop the page cache the read comes from memory; the run says so.
    return {"seq-write": round(write, 2), "seq-read": round(read, 2), "read_after_cache_drop": dropped}


class Storage(NodeBenchmark):
    name = "storage"
    description = "fio on a node's data disk: sequential and random MB/s by record size, 4 KB IOPS, dd"
    programs = ("fio",)

    def defaults(self) -> dict[str, Any]:
        return {**super().defaults(), "size": "100M", "records": list(RECORDS), "seconds": 10}

    def check_parameters(self, params: dict[str, Any]) -> None:
        mebibytes(params["size"])

    def node(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        node = ctx.spec.node(params["node"])
        run = tools.on_node(ctx.transport, node)
        work = ctx.transport.node_disk(node) / ".sbclab-storage"
        size, seconds, records = params["size"], params["seconds"], params["records"]

        def body():
            ctx.transport.make_dirs(node, [work])
            try:
                mb_s: dict[str, dict[str, float]] = {}
                for access, rw in ACCESSES.items():
                    mb_s[access] = {record: round(tools.fio_job(run, work, f"{access}-{record}", rw, record, size,
                                                                seconds)["mb_s"], 2) for record in records}
                iops = {access: round(tools.fio_job(run, work, f"iops-{access}", ACCESSES[access], "4k", size,
                                                    seconds)["iops"], 1) for access in ("rand-read", "rand-write")}
                buffered = dd_buffered(ctx, node, run, work, size)
            finally:
                ctx.transport.remove(node, work)
            result = {"mb_s": mb_s, "iops_4k": iops, "buffered_mb_s": buffered, "file": size}
            ok = all(v > 0 for per in mb_s.values() for v in per.values())
            return result, [Check(name="every pattern measured", passed=ok,
                                  detail=f"{len(ACCESSES) * len(records)} direct patterns")]
        return timed(ctx, run_id, self.name, node, ["fio", "--direct=1", "--ioengine=psync", f"--size={size}"], body)
