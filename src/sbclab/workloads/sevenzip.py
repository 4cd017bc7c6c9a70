"""7-Zip's own benchmark (`7zz b`) on a node, at one thread and at all the board's cores: the CPU figure
sbc-bench publishes for every board it measures, a second opinion beside sysbench's, whose prime loop
runs in cache and favours some instruction sets.

Each thread count yields 7-Zip's compression, decompression and total ratings in MIPS (the rating
column, computed from wall-clock time, so on an emulated node it includes the waits for its share of a
host core). 7-Zip sizes each pass to `seconds` of work at the clock it measures first (its -mtimems;
4 s is its own), which on an emulated node takes that long divided by the node's share of a core.
"""

import math
import re
from typing import Any

from .. import profiles
from ..cluster import tools
from ..cluster.spec import NodeSpec
from ..errors import SbclabError
from ..results.schema import Check
from .base import Attempt, NodeBenchmark, RunContext, timed

PROGRAM = "7zz"
OWN_SECONDS = 4  # 7-Zip's own time per pass (kComplexInMs)
DICTIONARIES = range(22, 26)  # 7-Zip's default passes on a machine with the memory for them: 4 MiB to 32 MiB

# "Avr:      1869    59   3305   1946  |      31528    62   4444   2745": speed, usage, rating per usage and
# rating, of compression then decompression (7-Zip 16.02, sbc-bench's, prints no speed there);
# "Tot:   60   3874   2345": usage, rating per usage, rating.
_AVERAGE = re.compile(r"^Avr:\s+(?:\d+\s+)?(\d+)\s+(\d+)\s+(\d+)\s*\|\s*(?:\d+\s+)?(\d+)\s+(\d+)\s+(\d+)\s*$", re.M)
_TOTAL = re.compile(r"^Tot:\s+(\d+)\s+(\d+)\s+(\d+)\s*$", re.M)
_DICTIONARY_ROW = re.compile(r"^(\d+):\s+\d+", re.M)
_VERSION = re.compile(r"7-Zip (?:\([a-z]\) )?(?:\[\d+\] )?(\d+\.\d+)")
_ERROR = re.compile(r"^(ERROR:.*|.*Can't allocate.*)$", re.M)


def parse(output: str) -> dict[str, Any]:
    """7zz b's summary: {compress_mips, decompress_mips, total_mips, usage_pct, dictionaries, version}."""
    error = _ERROR.search(output)
    average, total = _AVERAGE.search(output), _TOTAL.search(output)
    if error or not average or not total:
        said = error.group(1).strip() if error else (output.strip().splitlines() or ["no output"])[-1][:200]
        raise SbclabError(f"7zz b printed no rating ({said}).",
                          "Give a smaller 'dictionary' if it ran out of memory, or check the 7zip package (7zz --help).")
    version = _VERSION.search(output)
    return {"compress_mips": int(average.group(3)), "decompress_mips": int(average.group(6)),
            "total_mips": int(total.group(3)), "usage_pct": int(total.group(1)),
            "dictionaries": [int(d) for d in _DICTIONARY_ROW.findall(output)],
            "version": version.group(1) if version else None}


def memory_needed(dictionary_bits: int, threads: int) -> int:
    """Bytes 7zz b asks for: about 13.9 dictionaries per pair of threads, as it printed here (437 MB at one
    thread and 889 MB at four with 32 MiB, 1,779 MB at eight; 455 MB at four with 16 MiB), plus its code."""
    return math.ceil(threads / 2) * 14 * 2**dictionary_bits + 16 * 2**20


def largest_dictionary(memory_bytes: int, threads: int) -> int:
    """The largest of 7-Zip's default dictionaries whose passes fit in half the node's memory, the
    rest left to the system (a board of 1 GB runs them all; an emulated node may hold far less)."""
    fitting = [d for d in DICTIONARIES if memory_needed(d, threads) <= memory_bytes / 2]
    return max(fitting, default=DICTIONARIES[0])


def command(threads: int, dictionary_bits: int, seconds: float) -> list[str]:
    return [PROGRAM, "b", f"-mmt{threads}", f"-md{dictionary_bits}", f"-mtimems={round(seconds * 1000)}"]


def thread_counts(wanted: list, cores: int) -> list[int]:
    """The `threads` parameter as counts: 'all' is the board's cores."""
    counts = []
    for value in wanted:
        count = cores if value == "all" else value
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise SbclabError(f"7zip threads {value!r} is neither a count nor 'all'.", "Write e.g. threads: [1, all].")
        counts.append(count)
    return list(dict.fromkeys(counts))


class SevenZip(NodeBenchmark):
    name = "7zip"
    description = "7-Zip's benchmark (7zz b) on a node: compression, decompression and total MIPS at 1 thread and all cores"
    programs = (PROGRAM,)

    def defaults(self) -> dict[str, Any]:
        # dictionary None: the largest of 22-25 that fits the node (largest_dictionary).
        return {**super().defaults(), "threads": [1, "all"], "seconds": OWN_SECONDS, "dictionary": None}

    def check_parameters(self, params: dict[str, Any]) -> None:
        thread_counts(params["threads"], 1)
        seconds, dictionary = params["seconds"], params.get("dictionary")
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not 0.1 <= seconds <= 600:
            raise SbclabError(f"7zip seconds {seconds!r} is not a pass length 7-Zip takes.",
                              f"Give 0.1 to 600 seconds ({OWN_SECONDS} is 7-Zip's own).")
        if dictionary is not None and (not isinstance(dictionary, int) or isinstance(dictionary, bool)
                                       or not 18 <= dictionary <= 30):
            raise SbclabError(f"7zip dictionary {dictionary!r} is not a dictionary size in bits.",
                              "Give 18 to 30 (7-Zip's default passes run 22-25), or leave it out.")

    def node(self, ctx: RunContext, run_id: str, params: dict[str, Any], data: dict[str, Any]) -> Attempt:
        node = ctx.spec.node(params["node"])
        run = tools.on_node(ctx.transport, node)
        counts = thread_counts(params["threads"], profiles.board(node.board).cores)
        dictionaries = {t: params.get("dictionary") or largest_dictionary(node.memory_bytes, t) for t in counts}

        def body():
            found = {t: measure(run, node, t, dictionaries[t], params["seconds"]) for t in counts}
            result = {figure: {str(t): found[t][figure] for t in counts}
                      for figure in ("total_mips", "compress_mips", "decompress_mips", "usage_pct")}
            result["dictionary_bits"] = {str(t): dictionaries[t] for t in counts}
            result["version"] = next((f["version"] for f in found.values() if f["version"]), None)
            rated = all(v > 0 for v in result["total_mips"].values())
            return result, [Check(name="rated", passed=rated,
                                  detail=", ".join(f"{t} threads: {v} MIPS" for t, v in result["total_mips"].items()))]
        return timed(ctx, run_id, self.name, node, command(max(counts), max(dictionaries.values()), params["seconds"]),
                     body)


def measure(run: tools.Runner, node: NodeSpec, threads: int, dictionary_bits: int, seconds: float) -> dict[str, Any]:
    status, out, err = run(command(threads, dictionary_bits, seconds))
    if status == 127 or "not found" in err:
        raise SbclabError(f"7zz is not installed on {node.name}.", "Install the Debian package 7zip (make setup does).")
    found = parse(out + err)
    if status != 0:
        raise SbclabError(f"7zz b exited {status} on {node.name}.", "Read its output in the run's log.")
    return found
