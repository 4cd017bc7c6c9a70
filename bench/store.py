"""The results store at scale: `sbclab query`, `diff`, `compare` and `report` over many stored runs.

Generates RUNS run documents with their series in a temporary results directory, each a real stored
run of examples/results/runs copied and varied (run id, times, worker count, Pi's maps, repetition),
and a second directory of as many runs for `diff` to set against it (documents only: diff reads no
series). Each command runs in a subprocess of its own, so its peak memory (the child's maximum
resident set) is its own. The first `query` of a directory, and the first `diff` for the second
one, build its index (results/index.py) and are printed apart from the next, which read it.
Goals: query and diff under 5 s, compare and report under 60 s, each under 1 GiB.
"""

import argparse
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "results"
GiB = 2**30
QUERY = "SELECT workload, engine, count(*) AS n, round(avg(wall_time_s), 1) AS mean_s FROM runs GROUP BY ALL ORDER BY ALL"
WORKERS = (1, 2, 4)
PI_MAPS = (25, 50, 100)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y%m%dT%H%M%SZ")


def generate(results: Path, count: int, seed: int, with_series: bool = True) -> None:
    """`count` run documents in results/runs (and their series in results/series), one experiment
    of 100 runs sharing an idle baseline's series."""
    templates = [json.loads(p.read_text()) for p in sorted((EXAMPLES / "runs").glob("*.json"))]
    series = {t["run_id"]: (EXAMPLES / t["measurements"]["series"]).read_bytes() for t in templates}
    idle = next((EXAMPLES / "series").glob("*idle*.json")).read_bytes()
    rng = random.Random(seed)
    (results / "runs").mkdir(parents=True)
    (results / "series").mkdir()
    start = datetime(2027, 1, 1, tzinfo=timezone.utc)
    experiment_id = idle_series = ""
    for i in range(count):
        at = start + timedelta(seconds=300 * i)
        if i % 100 == 0:
            experiment_id = f"{_stamp(at)}-exp-store-bench-{i // 100:04x}"
            idle_series = f"series/{_stamp(at)}-idle-{i // 100:04x}.json"
            if with_series:
                (results / idle_series).write_bytes(idle)
        template = templates[i % len(templates)]
        doc = copy.deepcopy(template)
        run_id = f"{_stamp(at)}-{doc['engine']}-{doc['workload']}-{i:05x}"
        took = doc["wall_time_s"] * rng.lognormvariate(0, 0.05)
        workers = WORKERS[(i // len(templates)) % len(WORKERS)]
        doc.update(run_id=run_id, experiment_id=experiment_id, repetition=1 + (i // 100) % 5, wall_time_s=round(took, 3),
                   started_at=at.isoformat(), finished_at=(at + timedelta(seconds=took)).isoformat())
        doc["cluster"]["workers"] = workers
        if doc["workload"] == "pi":
            maps = PI_MAPS[(i // (len(templates) * len(WORKERS))) % len(PI_MAPS)]
            doc["parameters"] = {**doc["parameters"], "maps": maps, "samples": maps * doc["parameters"]["samples_per_map"]}
        if doc.get("cell"):
            doc["cell"] = {**doc["cell"], "key": f"{doc['cell']['key']}-{workers}", "workers": workers}
        doc["logs"] = {name: path.replace(template["run_id"], run_id) for name, path in doc["logs"].items()}
        m = doc["measurements"]
        m["series"] = doc["logs"]["series"] = f"series/{run_id}.json"
        if m.get("idle_baseline"):
            m["idle_baseline"]["series"] = idle_series
        (results / "runs" / f"{run_id}.json").write_text(json.dumps(doc, indent=1) + "\n")
        if with_series:
            (results / m["series"]).write_bytes(series[template["run_id"]])


def measured(argv: list[str]) -> tuple[float, int, str]:
    """Wall time (s), peak resident memory (bytes) and stderr of one sbclab command in a child process."""
    started = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "sbclab.cli", *argv], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    took = time.monotonic() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"sbclab {' '.join(argv)} failed ({child.returncode}):\n{stderr}")
    return took, usage.ru_maxrss * 1024, stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10_000, help="run documents in each results directory")
    parser.add_argument("--dir", default=None, help="where to make the results directories (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the generated results directories")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sbclab-store-", dir=args.dir))
    try:
        a, b = work / "a", work / "b"
        made = time.monotonic()
        generate(a, args.runs, seed=1)
        generate(b, args.runs, seed=2, with_series=False)
        print(f"{args.runs:,} runs with series in {a} and {args.runs:,} without in {b}, "
              f"made in {time.monotonic() - made:.0f} s")
        commands = [
            ("query (first)", ["query", QUERY, "--results", str(a), "--format", "csv"], 5),
            ("query", ["query", QUERY, "--results", str(a), "--format", "csv"], 5),
            ("diff (first)", ["diff", str(a), str(b)], 5),
            ("diff", ["diff", str(a), str(b)], 5),
            ("compare", ["compare", str(a)], 60),
            ("report", ["report", str(a), "--out", str(work / "report")], 60),
        ]
        print(f"{'command':14} {'time (s)':>9} {'goal':>5} {'ratio':>6}   {'peak memory':>11} {'goal':>6} {'ratio':>6}")
        for name, argv, goal_s in commands:
            took, peak, _ = measured(argv)
            print(f"{name:14} {took:9.2f} {goal_s:5} {took / goal_s:6.2f}   {peak / 2**20:8.0f} MB {'1 GiB':>6} "
                  f"{peak / GiB:6.2f}")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
