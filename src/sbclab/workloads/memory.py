"""A node's memory: copy bandwidth with mbw (libc memcpy, and memcpy in 256 KiB blocks) and the
latency of one dependent load by buffer size, 16 KiB to 64 MiB, from a pointer chase in sbclab's jobs
jar (org.sbclab.jobs.PointerChase, on the node's Java): the curve steps up at each cache's size and
ends at DRAM's latency. sbc-bench publishes the same two figures for the boards it measures
(tinymembench's memcpy, ramlat's one-pointer chase), so a node's figures can be set beside a board's.

No latency tool is packaged for Debian (tinymembench, lmbench, ramlat are not), and Java is on every
node sbclab runs Hadoop on; the chase is a loop of array loads each of which reads the next one's
index, which a JIT can neither reorder nor drop.

Both measure wall-clock time, so on an emulated node they include the waits for its share of a host
core, as its other figures do. mbw times a fixed number of copies: it is first run with more copies
until a run lasts a second, and then with as many as fill `seconds`.
"""

import json
import math
import re
from pathlib import Path
from typing import Any

from ..cluster import tools
from ..cluster.spec import NodeSpec
from ..errors import SbclabError
from ..results.schema import Check
from ..stack import deploy, distribution
from .base import Attempt, NodeBenchmark, RunContext, timed

METHODS = {"memcpy": ("0", "MEMCPY"), "block": ("2", "MCBLOCK")}  # mbw -t and the name it prints
SIZES = ("16k", "64k", "256k", "1m", "4m", "16m", "64m")
MB_PER_MIB = 2**20 / 1e6
PROBE_SECONDS = 1.0  # a probe run long enough to span many CPU-quota periods of an emulated node
MOST_COPIES = 100_000
MAIN_CLASS = "org.sbclab.jobs.PointerChase"

# "AVG\tMethod: MEMCPY\tElapsed: 0.02813\tMiB: 256.00000\tCopy: 9100.863 MiB/s"
_MBW_AVERAGE = re.compile(r"^AVG\s+Method:\s*(\w+)\s+Elapsed:\s*([\d.]+)\s+MiB:\s*([\d.]+)\s+Copy:\s*([\d.]+)\s*MiB/s", re.M)
_SIZE = re.compile(r"^(\d+)([kmg])$")
_RESULT = re.compile(r"SBCLAB_RESULT (\{.*\})")


def size_bytes(size: str) -> int:
    """'16k', '64m' as bytes (KiB, MiB, GiB), or one sentence on what to write instead."""
    match = _SIZE.match(str(size).strip().lower())
    if not match or int(match.group(1)) == 0:
        raise SbclabError(f"Memory size '{size}' is not a buffer size.", "Write e.g. 16k, 256k or 64m.")
    return int(match.group(1)) * {"k": 2**10, "m": 2**20, "g": 2**30}[match.group(2)]


def parse_mbw(output: str) -> dict[str, tuple[float, float]]:
    """mbw's AVG lines: {method name: (seconds per copy, MiB/s)}, or one sentence on what it said instead."""
    found = {m.group(1): (float(m.group(2)), float(m.group(4))) for m in _MBW_AVERAGE.finditer(output)}
    if not found:
        said = (output.strip().splitlines() or ["no output"])[-1][:200]
        raise SbclabError(f"mbw printed no average ({said}).",
                          "Give a smaller array_mib if it could not allocate it, or check the mbw package.")
    return found


def mbw_command(method: str, array_mib: int, copies: int) -> list[str]:
    return ["mbw", "-q", "-n", str(copies), f"-t{METHODS[method][0]}", str(array_mib)]


def copies_for(seconds_per_copy: float, seconds: float) -> int:
    return max(1, min(MOST_COPIES, math.ceil(seconds / max(seconds_per_copy, 1e-6))))


def copy_bandwidth(run: tools.Runner, method: str, array_mib: int, seconds: float) -> tuple[float, int]:
    """(MB/s, copies) of one mbw method measured for about `seconds`."""
    name, copies = METHODS[method][1], 1
    while True:
        per_copy, mib_s = _mbw(run, method, array_mib, copies)[name]
        if per_copy * copies >= min(PROBE_SECONDS, seconds) or copies >= MOST_COPIES:
            break
        copies = copies_for(per_copy, min(PROBE_SECONDS, seconds)) if per_copy * copies > 0.05 else copies * 10
    wanted = copies_for(per_copy, seconds)
    if wanted > copies:
        per_copy, mib_s = _mbw(run, method, array_mib, wanted)[name]
        copies = wanted
    return mib_s * MB_PER_MIB, copies


def _mbw(run: tools.Runner, method: str, array_mib: int, copies: int) -> dict[str, tuple[float, float]]:
    status, out, err = run(mbw_command(method, array_mib, copies))
    if status == 127:
        raise SbclabError("mbw is not installed on the node.", "Install the Debian package mbw (make setup does).")
    return parse_mbw(out + err)


def parse_latency(output: str, sizes: list[str]) -> dict[str, float]:
    """The pointer chase's SBCLAB_RESULT line as {size: ns per load}."""
    found = _RESULT.findall(output)
    if not found:
        said = (output.strip().splitlines() or ["no output"])[-1][:200]
        raise SbclabError(f"The pointer chase printed no result ({said}).",
                          "Give smaller latency sizes if the JVM ran out of memory; read the run's log.")
    try:
        line = json.loads(found[-1])
    except ValueError:
        raise SbclabError(f"The pointer chase printed a result that is not JSON ({found[-1][:200]}).",
                          "Read the run's log.") from None
    latency = {}
    for size in sizes:
        ns = line.get(f"ns_{size_bytes(size)}")
        if not isinstance(ns, (int, float)) or not ns > 0:
            raise SbclabError(f"The pointer chase gave no time for {size}.", "Read the run's log.")
        latency[size] = round(ns, 3)
    return latency


def chase_command(java: str, jar: str, sizes: list[str], seconds_per_size: float) -> list[str]:
    largest = max(size_bytes(s) for s in sizes)
    # Room for the largest ring, its shuffle and the previous ring not yet collected; one GC thread.
    heap_mb = math.ceil(2.2 * largest / 2**20) + 64
    return [java, "-XX:+UseSerialGC", "-XX:-UsePerfData", f"-Xmx{heap_mb}m", "-cp", jar, MAIN_CLASS,
            f"{seconds_per_size:g}", *(str(size_bytes(s)) for s in sizes)]


class Memory(NodeBenchmark):
    name = "memory"
    description = "mbw copy bandwidth (memcpy, block copy) and a pointer chase's load latency by buffer size, 16 KiB to 64 MiB"
    programs = ("mbw",)

    def defaults(self) -> dict[str, Any]:
        return {**super().defaults(), "array_mib": 64, "seconds": 10, "methods": list(METHODS),
                "sizes": list(SIZES), "seconds_per_size": 2}

    def check_parameters(self, params: dict[str, Any]) -> None:
        unknown = [m for m in params["methods"] if m not in METHODS]
        if unknown or not params["methods"]:
            raise SbclabError(f"memory methods {unknown or '(none)'} are not mbw's.", f"Choose from {', '.join(METHODS)}.")
        array = params["array_mib"]
        if not isinstance(array, int) or isinstance(array, bool) or not 1 <= array <= 65536:
            raise SbclabError(f"memory array_mib {array!r} is not an array size in MiB.",
                              "Give 1 to 65536; mbw copies between two arrays of that size, so the node needs twice it.")
        for size in params["sizes"]:
            size_bytes(size)
        for key in ("seconds", "seconds_per_size"):
            value = params[key]
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.1 <= value <= 3600:
                raise SbclabError(f"memory {key} {value!r} is not a length in seconds.", "Give 0.1 to 3600.")

    def node(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        node = ctx.spec.node(params["node"])
        run = tools.on_node(ctx.transport, node)
        sizes = list(params["sizes"])

        def body():
            result: dict[str, Any] = {"copy_mb_s": {}, "copies": {}, "array_mib": params["array_mib"]}
            for method in params["methods"]:
                mb_s, copies = copy_bandwidth(run, method, params["array_mib"], params["seconds"])
                result["copy_mb_s"][method], result["copies"][method] = round(mb_s, 1), copies
            checks = [Check(name="copied", passed=all(v > 0 for v in result["copy_mb_s"].values()),
                            detail=", ".join(f"{m}: {v:,.0f} MB/s" for m, v in result["copy_mb_s"].items()))]
            try:
                java, jar = java_and_jar(ctx, node, run_id)
                status, out, err = run(chase_command(java, jar, sizes, params["seconds_per_size"]))
                result["latency_ns"] = parse_latency(out + err, sizes)
                checks.append(Check(name="latency measured", passed=True,
                                    detail=", ".join(f"{s}: {ns:.3g} ns" for s, ns in result["latency_ns"].items())))
            except SbclabError as err:
                # The bandwidth stays stored; the run is invalid and says what the latency needs.
                checks.append(Check(name="latency measured", passed=False, detail=str(err)))
            return result, checks
        return timed(ctx, run_id, self.name, node, ["mbw", "-q", f"-t{'/'.join(METHODS[m][0] for m in params['methods'])}",
                                                    str(params["array_mib"]), "+", MAIN_CLASS], body)


def java_and_jar(ctx: RunContext, node: NodeSpec, run_id: str) -> tuple[str, str]:
    """The node's java and sbclab's jobs jar where the node reads it: this host's own for nodes on this
    host, a board's Java and a copy of the jar in its node folder otherwise."""
    dist = ctx.stack.dist
    if not Path(dist.jobs_jar).exists():
        raise SbclabError(f"The latency half runs sbclab's jobs jar, which is not built for the {dist.stack.name} stack.",
                          f"Run 'sbclab stack fetch --stack {dist.stack.name}' (make setup does).")
    # A jar built before the pointer chase joined the jobs is rebuilt from the cached dependencies.
    jar = distribution.build_jobs(dist.stack)
    transport = ctx.transport
    if transport.shares_host:
        return str(ctx.stack.java_home(node) / "bin" / "java"), str(jar)
    found = deploy.find_java(transport, node, dist.stack.java)
    if found is None:
        raise SbclabError(f"{node.name} has no Java {' or '.join(map(str, dist.stack.java))} for the pointer chase.",
                          "Bring the cluster up once ('sbclab cluster up --inventory ...' installs one), or install "
                          "openjdk-17-jre-headless on the board.")
    there = transport.node_dir(node) / "jobs" / jar.name
    status = transport.run(node, ["sh", "-c", deploy.RECEIVE, "sh", str(there)], {},
                           ctx.job_log(run_id, "copy-jobs-jar"), timeout_s=600, label="copy the jobs jar",
                           feed=["cat", "--", str(jar)])
    if status != 0:
        raise SbclabError(f"Copying the jobs jar to {node.name} failed (exit {status}).",
                          f"Check free space in {transport.where(node, there.parent)}.")
    return str(Path(found[0]) / "bin" / "java"), str(there)
