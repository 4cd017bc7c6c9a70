"""The `tuned` preset against `stock` and `paper-2026`, as ratios measured in one run.

Targets (the tuning issue): TeraSort and WordCount at the demo's size on emulated rpi5b/NVMe and
rpi4b/microSD, tuned >= 1.5x faster than stock and >= 1.25x faster than paper-2026; the share of a
16 MB job spent before its first task runs cut by >= 40 %; TeraSort's effective throughput >= 50 % of
the nodes' I/O roofline. Every run's output valid.

On each board one cluster of the stock preset runs all three configurations as job settings that
alternate run by run (paper-2026's are job settings too: output replication 1, two reduces, an
executor a worker with two cores), so a drift of the host falls on all three alike. The start-up
share is measured at 16 MB on --startup-workloads (WordCount: its input needs no generating job).
The tuned settings are the board's and medium's tuning (src/sbclab/stack/tuned/, or --tuned FILE).

The roofline: TeraSort reads its input, writes and reads its map output, moves (n-1)/n of it over
the links and writes its output once per replica. With D bytes, n workers of sequential read r and
write w bytes/s and a link of l bytes/s each, the least time the nodes' I/O allows is
max(D/n * (1/r + 1/w + 1/r + replicas/w), D * (n-1)/n / (n * l)) (disk and network overlapping, the
CPU free); the effective throughput D / T over D / that time is the share of the roofline reached.
"""

import argparse
import math
import statistics
import tempfile
from pathlib import Path

import yaml

from sbclab.analysis import stats
from sbclab.analysis.cells import exclusion_reason
from sbclab.experiments import model, orchestrator
from sbclab.experiments.display import LineDisplay
from sbclab.results.store import ResultsStore
from sbclab.stack import presets

TARGET_OVER_STOCK, TARGET_OVER_PAPER, TARGET_STARTUP_CUT, TARGET_ROOFLINE = 1.5, 1.25, 0.40, 0.50
PAPER_2026_JOB = {"hdfs-site": {"dfs.replication": "1"}, "mapred-site": {"mapreduce.job.reduces": "2"}}


def paper_job(workers: int) -> dict:
    return {**PAPER_2026_JOB, "spark-defaults": {"spark.executor.instances": str(workers),
                                                 "spark.executor.cores": "2"}}


def before_first_task_s(run) -> float | None:
    """The seconds of a run before its first task started: from the job's own start to the first map
    phase or Spark stage."""
    phases = (run.measurements.phases if run.measurements else []) or []
    began = min((p["start"] for p in phases if p.get("source") == "sbclab"), default=None)
    first = min((p["start"] for p in phases if p.get("source") in ("jobhistory", "spark")
                 and ("map phase" in p["name"] or p["name"].startswith("stage"))), default=None)
    if began is None or first is None or run.wall_time_s <= 0:
        return None
    return max(0.0, first - began)


def startup_share(run) -> float | None:
    """The share of a run before its first task started."""
    seconds = before_first_task_s(run)
    return None if seconds is None else seconds / run.wall_time_s


def roofline_s(run) -> float:
    """The least time the workers' disks and links allow TeraSort's bytes (see the module's text)."""
    workers = run.cluster.task_nodes
    n = len(workers)
    size = float(run.parameters["size_bytes"])
    read = min(w.disk_read_bytes_s for w in workers)
    write = min(w.disk_write_bytes_s for w in workers)
    link = min(w.link_mbit_s for w in workers) * 1e6 / 8
    replicas = int(run.configuration.get("hdfs-site", {}).get("dfs.replication", "3"))
    disk = size / n * (2 / read + (1 + min(replicas, n)) / write)
    network = size * (n - 1) / n / (n * link) if n > 1 else 0.0
    return max(disk, network)


def measure(board: str, storage: str, size: str, workers: int, repetitions: int, tuned: dict, results: Path,
            workloads: list[str], engines: list[str], startup_workloads: list[str]):
    """The demo's size for every workload, and 16 MB for those whose start-up share is measured."""
    for name, these, sizes in ((f"tuned-{board}", workloads, [size]),
                               (f"tuned-{board}-16MB", startup_workloads, ["16MB"])):
        if not these:
            continue
        experiment = model.Experiment(
            name=name, cluster=model.ClusterSettings(name="benchtun", board=board, subnet="10.219.0.0/24"),
            workloads=these, engines=engines, workers=[workers], sizes=sizes,
            storage=[storage], presets=["stock"], repetitions=repetitions,
            variants={"stock": {}, "paper-2026": paper_job(workers), "tuned": tuned})
        orchestrator.run(experiment, orchestrator.Options(results=results, display=LineDisplay(print)))
    return stored(results)


def stored(results: Path):
    """The bench's runs in a results folder: those of a cell, each with its variant."""
    return [r for r in ResultsStore(results).runs() if r.cell and r.parameters.get("variant")]


def left_a_worker_idle(run) -> bool:
    return any(f.kind == "idle_worker" for f in (run.measurements.flags if run.measurements else []))


def counts(run) -> bool:
    """Whether a run measures its configuration. A worker left without a task is where that
    configuration's settings put the tasks (stock's TeraSort pins every map to one worker, and its one
    reduce often lands beside them): leaving such runs out would compare stock's lucky runs only. A busy host, a lost daemon or a fault says nothing of the configuration."""
    if run.headline:
        return True
    others = [f for f in (run.measurements.flags if run.measurements else []) if f.kind != "idle_worker"]
    return (run.valid and not run.faulted and not others and not (run.liveness and run.liveness.lost))


def report(board: str, storage: str, runs, size_bytes: int) -> None:
    invalid = [r.run_id for r in runs if not r.valid]
    print(f"\n{board}/{storage}: {len(runs)} runs, {len(invalid)} not valid {invalid or ''}")
    by, flagged = {}, {}
    for r in runs:
        key = (r.workload, r.engine, int(r.parameters.get("size_bytes") or 0), r.parameters["variant"])
        (by if counts(r) else flagged).setdefault(key, []).append(r)
    for (workload, engine, size, variant), found in sorted(by.items()):
        if idle := sum(left_a_worker_idle(r) for r in found):
            print(f"  {workload}/{engine} {size / 1e6:.0f} MB {variant}: {idle} of {len(found)} runs left a worker "
                  "without a task (counted: that is where its settings put the tasks)")
    for (workload, engine, size, variant), found in sorted(by.items()):
        if variant != "tuned" or size != size_bytes:
            continue
        tuned_time = stats.estimate([r.wall_time_s for r in found])
        for other, target in (("stock", TARGET_OVER_STOCK), ("paper-2026", TARGET_OVER_PAPER)):
            theirs, left_out = by.get((workload, engine, size, other), []), flagged.get((workload, engine, size, other), [])
            if not theirs and not left_out:
                continue
            # A configuration whose every run is flagged gets its ratio with them, said so, rather than none.
            ratio = stats.ratio(stats.estimate([r.wall_time_s for r in theirs or left_out]), tuned_time)
            counted = (f"every {other} run flagged ({exclusion_reason(left_out[0])}); with them, " if not theirs
                       else "")
            left = f"; {len(left_out)} flagged {other} run(s) left out" if theirs and left_out else ""
            print(f"  {workload}/{engine} {size / 1e6:.0f} MB: {counted}tuned over {other} {ratio.text()} "
                  f"(target {target}, measured/target {ratio.value / target:.2f}){left}")
        if workload == "terasort":
            reached = statistics.mean(roofline_s(r) / r.wall_time_s for r in found)
            print(f"  terasort/{engine}: {reached:.0%} of the I/O roofline (target {TARGET_ROOFLINE:.0%}, "
                  f"measured/target {reached / TARGET_ROOFLINE:.2f})")
    for workload in ("wordcount", "terasort"):
        for engine in ("hadoop", "spark"):
            ran = {v: [r for r in by.get((workload, engine, 16 * 10**6, v), []) if startup_share(r) is not None]
                   for v in ("stock", "tuned")}
            if ran["stock"] and ran["tuned"]:
                before, after = (statistics.mean(startup_share(r) for r in ran[v]) for v in ("stock", "tuned"))
                cut = 1 - after / before if before else math.nan
                # The seconds too: a setting that shortens the tasks as much as the start leaves the share
                # where it was, and one that shortens only the tasks raises it.
                seconds = {v: stats.estimate([before_first_task_s(r) for r in ran[v]]) for v in ran}
                print(f"  {workload}/{engine} 16 MB: before the first task {before:.0%} of the job stock, {after:.0%} "
                      f"tuned: cut {cut:.0%} (target {TARGET_STARTUP_CUT:.0%}, measured/target "
                      f"{cut / TARGET_STARTUP_CUT:.2f}); {seconds['stock'].mean:.1f} s stock, "
                      f"{seconds['tuned'].mean:.1f} s tuned, stock over tuned "
                      f"{stats.ratio(seconds['stock'], seconds['tuned']).text()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", default="rpi5b/nvme-p31-gen3,rpi4b-4gb/microsd-evo")
    parser.add_argument("--size", default="128MB", help="the demo's size (Makefile SIZE)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--workloads", default="terasort,wordcount")
    parser.add_argument("--engines", default="hadoop,spark")
    parser.add_argument("--startup-workloads", default="wordcount",
                        help="the workloads also run at 16 MB for the share before their first task ('' for none)")
    parser.add_argument("--tuned", type=Path, help="a tuning's file instead of the shipped one (every board)")
    parser.add_argument("--results", type=Path, help="keep the runs here (default a temporary folder)")
    parser.add_argument("--stored", action="store_true",
                        help="run nothing: the ratios of the runs already in --results")
    args = parser.parse_args()
    if args.stored and not args.results:
        parser.error("--stored reads the runs of --results: give the folder a bench wrote")
    from sbclab.units import parse_size
    size_bytes = parse_size(args.size)
    for pair in args.boards.split(","):
        board, storage = pair.split("/")
        tuned = presets.tuned_settings(yaml.safe_load(args.tuned.read_text()) if args.tuned
                                       else presets.tuned(board, storage), args.workers)
        results = args.results / f"{board}-{storage}" if args.results else Path(tempfile.mkdtemp(prefix="bench-tuned-"))
        runs = (stored(results) if args.stored else
                measure(board, storage, args.size, args.workers, args.repetitions, tuned, results,
                        args.workloads.split(","), args.engines.split(","),
                        [w for w in args.startup_workloads.split(",") if w]))
        report(board, storage, runs, size_bytes)


if __name__ == "__main__":
    main()
