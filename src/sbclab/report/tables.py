"""The report's tables as plain rows, written as CSV, JSON and a Markdown summary.

The same rows feed the HTML report, so every number there is one of these, and each row names the
runs it was computed from.
"""

import csv
import json
from pathlib import Path

from .. import atomic
from ..analysis import explanations, faults
from ..results.schema import SPARK_STAGE_GROUP
from ..results.summary import memory_line
from ..units import format_size
from . import nodes
from .build import Report


def _r(value, digits=3):
    return None if value is None else round(float(value), digits)


def cell_rows(report: Report) -> list[dict]:
    rows = []
    for f in report.figures:
        k, t = f.cell.key, f.wall_time
        rows.append({
            "cell": report.label(k), "workload": k.workload, "engine": k.engine, "size_bytes": k.size_bytes or None,
            "workers": k.workers, "board": k.board, "storage": k.storage, "preset": k.preset, "cluster": k.cluster,
            "parameters": k.parameters or None,
            "n": t.n if t else 0, "mean_s": _r(t.mean) if t else None, "sd_s": _r(t.sd) if t else None,
            "median_s": _r(t.median) if t else None, "ci95_low_s": _r(t.ci_low) if t else None,
            "ci95_high_s": _r(t.ci_high) if t else None, "rel_spread": _r(t.rel_spread, 4) if t else None,
            "throughput_mb_s": _r(f.throughput.mean / 1e6) if f.throughput else None,
            "avg_power_w": _r(f.avg_power.mean, 2) if f.avg_power else None,
            "power_estimated": f.power_estimated if f.avg_power else None,
            "energy_j": _r(f.energy.mean, 1) if f.energy else None,
            "energy_above_idle_j": _r(f.energy_above_idle.mean, 1) if f.energy_above_idle else None,
            "energy_per_gb_j": _r(f.energy_per_gb.mean, 1) if f.energy_per_gb else None,
            "perf_per_watt_mb_s_per_w": _r(f.perf_per_watt.mean / 1e6, 4) if f.perf_per_watt else None,
            "records_per_joule": _r(f.records_per_joule.mean, 1) if f.records_per_joule else None,
            "price_usd": _r(f.price.usd, 2) if f.price else None,
            "perf_per_dollar_kb_s_per_usd": _r(f.perf_per_dollar.mean / 1e3, 3) if f.perf_per_dollar else None,
            f"energy_cost_per_year_{report.costs.currency.lower()}": _r(f.energy_cost_per_year, 2),
            "intermediate_device_x": _r(f.intermediate_device_ratio.mean, 3) if f.intermediate_device_ratio else None,
            "intermediate_engine_x": _r(f.intermediate_engine_ratio.mean, 3) if f.intermediate_engine_ratio else None,
            "emulated": f.cell.emulated, "scale_factor": f.cell.scale_factor,
            "runs": " ".join(r.run_id for r in f.cell.runs),
            "excluded_runs": " ".join(r.run_id for r in f.cell.excluded),
        })
    return rows


def comparison_rows(report: Report) -> list[dict]:
    return [{"kind": c.kind, "cell": report.label(c.cell), "baseline": report.label(c.baseline), "value": _r(c.value.value, 4),
             "ci95_low": _r(c.value.ci_low, 4), "ci95_high": _r(c.value.ci_high, 4),
             "efficiency": _r(c.efficiency.value, 4) if c.efficiency else None, "note": c.note}
            for c in report.comparisons]


def run_rows(report: Report) -> list[dict]:
    rows = []
    for run in report.runs:
        m = run.measurements
        v = report.verdicts[run.run_id]
        rows.append({
            "run_id": run.run_id, "workload": run.workload, "engine": run.engine,
            "size_bytes": run.parameters.get("size_bytes"), "workers": run.cluster.workers,
            "board": run.cluster.board, "storage": run.cluster.storage, "preset": run.cluster.preset,
            "status": run.status, "wall_time_s": _r(run.wall_time_s),
            "energy_j": _r(m.cluster_power.energy_j, 1) if m and m.cluster_power else None,
            "power_sources": " ".join(f"{n}={s}" for n, s in sorted(m.cluster_power.sources.items())) if m and m.cluster_power else None,
            "verdict": v.label, "verdict_sentence": v.sentence,
            "flags": "; ".join([*(f"{f.node} {f.kind} at {f.at:.0f} s" for f in (m.flags if m else [])),
                                *(f"lost {x}" for x in (run.liveness.lost if run.liveness else []))]),
            "memory": memory_line(m) if m else "",
            "oom_kills": sum(n.oom_kills or 0 for n in m.memory.values()) if m and m.memory else None,
            "emulated": run.cluster.emulated, "scale_factor": run.scale.factor if run.cluster.emulated else None,
            "command": " ".join(run.command), "started_at": run.started_at.isoformat(),
        })
    return rows


def diagnostic_rows(report: Report) -> list[dict]:
    """Each sampled run's diagnostics (busy outside the cluster before it, clocks, frequency steps) and
    what explains its time."""
    return explanations.rows(report.cells, report.several_clusters)


def reference_rows(report: Report) -> list[dict]:
    return [{k: (_r(v, 3) if isinstance(v, float) else v) for k, v in m.as_dict(report.several_clusters).items()}
            for m in report.references]


def stage_rows(report: Report) -> list[dict]:
    """Each Spark run's stages: where its time and data went (the event log's metrics per stage)."""
    rows = []
    for run in report.runs:
        for group, m in run.counters.items():
            if not group.startswith(SPARK_STAGE_GROUP):
                continue
            rows.append({"run_id": run.run_id, "workload": run.workload, "stage": group.removeprefix(SPARK_STAGE_GROUP),
                         "tasks": int(m.get("tasks", 0)), "failed_tasks": int(m.get("failed_tasks", 0)),
                         "duration_s": _r(m["duration_ms"] / 1000, 2) if "duration_ms" in m else None,
                         "executor_run_time_s": _r(m.get("executor_run_time_ms", 0) / 1000, 2),
                         "executor_cpu_time_s": _r(m.get("executor_cpu_time_ns", 0) / 1e9, 2),
                         "gc_time_s": _r(m.get("jvm_gc_time_ms", 0) / 1000, 2),
                         "input_mb": _r(m.get("input_bytes_read", 0) / 1e6, 2),
                         "shuffle_read_mb": _r((m.get("shuffle_remote_bytes_read", 0)
                                                + m.get("shuffle_local_bytes_read", 0)) / 1e6, 2),
                         "shuffle_write_mb": _r(m.get("shuffle_bytes_written", 0) / 1e6, 2),
                         "spill_mb": _r((m.get("memory_bytes_spilled", 0) + m.get("disk_bytes_spilled", 0)) / 1e6, 2),
                         "output_mb": _r(m.get("output_bytes_written", 0) / 1e6, 2)})
    return rows


def baseline_rows(report: Report) -> list[dict]:
    """Each cell these results share with the baseline (`report --baseline`): B = these, A = the baseline."""
    found = report.against_baseline
    if found is None:
        return []
    return [{"cell": r.label, "baseline_mean_s": _r(r.a.mean, 3), "baseline_n": r.a.n, "mean_s": _r(r.b.mean, 3),
             "n": r.b.n, "ratio": _r(r.ratio.value, 4), "ci95_low": _r(r.ratio.ci_low, 4),
             "ci95_high": _r(r.ratio.ci_high, 4), "p_welch_log": _r(r.p_value, 4), "verdict": r.verdict}
            for r in found.rows]


def fault_rows(report: Report) -> list[dict]:
    return faults.rows(report.cells, report.several_clusters)


def tuning_rows(report: Report) -> list[dict]:
    """Every trial of every search `sbclab tune` kept: what it changed against the incumbent, the
    speedup with its interval, whether it was accepted and why, and the runs it rests on."""
    rows = []
    for search in report.tunings:
        for t in search["trials"]:
            speedup = t.get("speedup") or {}
            rows.append({"search": search["name"], "trial": t["trial"],
                         "changed": ", ".join(f"{k}={v}" for k, v in sorted(t["chosen"].items()) if v != "keep")
                         or "nothing", "speedup": _r(speedup.get("value"), 4),
                         "ci95_low": _r(speedup.get("ci_low"), 4), "ci95_high": _r(speedup.get("ci_high"), 4),
                         "accepted": t["accepted"], "note": t["note"],
                         "runs": " ".join(i for ids in t["runs"].values() for i in ids)})
    return rows


TABLES = {"cells": cell_rows, "comparisons": comparison_rows, "runs": run_rows, "diagnostics": diagnostic_rows,
          "published": reference_rows,
          "stages": stage_rows, "baseline": baseline_rows, "faults": fault_rows,
          "tuning": tuning_rows}


def write_all(report: Report, out: Path) -> dict[str, Path]:
    """tables/<name>.csv for each table, report.json with all of them, summary.md."""
    written = {}
    everything = {"results": str(report.results), "generated_at": report.generated_at, "command": report.command,
                  "clusters": report.clusters, "warnings": report.warnings, "costs": report.costs.model_dump()}
    everything_tables = {**TABLES, **{name: make for name, (_, make) in nodes.TABLES.items()}}
    for name, make in everything_tables.items():
        rows = make(report)
        everything[name] = rows
        path = out / "tables" / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        columns = list(rows[0]) if rows else ["(no rows)"]
        with atomic.open_for_write(path, "w") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
        written[name] = path
    written["json"] = out / "report.json"
    atomic.write_text(written["json"], json.dumps(everything, indent=1, default=str) + "\n")
    written["markdown"] = out / "summary.md"
    atomic.write_text(written["markdown"], markdown(report))
    return written


def _md_table(rows: list[dict], columns: list[str]) -> str:
    if not rows:
        return "_none_\n"
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join("" if row.get(c) is None else str(row[c]) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def markdown(report: Report) -> str:
    cells = cell_rows(report)
    for row in cells:
        row["time (s), mean ± 95 % CI"] = (f"{row['mean_s']:.1f} ± {(row['ci95_high_s'] - row['mean_s']):.1f}"
                                          if row["ci95_high_s"] is not None else
                                          (f"{row['mean_s']:.1f}" if row["mean_s"] is not None else "no valid run"))
        row["size"] = format_size(row["size_bytes"]) if row["size_bytes"] else ""
    parts = [f"# sbclab results: {report.results}\n",
             f"Generated {report.generated_at} by `{' '.join(report.command)}` from {len(report.runs)} stored runs.\n"]
    if report.warnings:
        parts.append("## Warnings\n\n" + "\n".join(f"- {w}" for w in report.warnings) + "\n")
    # Runs of several clusters: rows differing only in their cluster must say which is which.
    where = ["cluster"] if report.several_clusters else []
    parts.append("## Cells\n\n" + _md_table(cells, ["workload", "engine", "size", "workers", "board", "storage", "preset",
                                                     *where, "n", "time (s), mean ± 95 % CI", "throughput_mb_s",
                                                     "avg_power_w", "energy_j", "perf_per_watt_mb_s_per_w"]))
    comparisons = comparison_rows(report)
    if comparisons:
        parts.append("## Speedup, storage gain, engine ratio, setups\n\n" +
                     _md_table(comparisons, ["kind", "cell", "baseline", "value", "ci95_low", "ci95_high", "efficiency", "note"]))
    parts.append("## Bottlenecks\n\n" + "\n".join(f"- `{r['run_id']}`: {r['verdict_sentence']}" for r in run_rows(report)) + "\n")
    explained = [r for r in diagnostic_rows(report) if r["explanation"]]
    if explained:
        parts.append("## What explains a run's time\n\n" +
                     "\n".join(f"- `{r['run_id']}` ({r['status']}): {r['explanation']}" for r in explained) + "\n")
    faulted = fault_rows(report)
    if faulted:
        parts.append("## Faults\n\n" + _md_table(faulted, ["cell", "fault", "runs", "completed", "validated", "slowdown",
                                                           "slowdown_ci95_low", "slowdown_ci95_high", "reactions",
                                                           "recovered_s", "cause"]))
    tuned = tuning_rows(report)
    if tuned:
        parts.append("## Tuning\n\n" + _md_table(tuned, ["search", "trial", "changed", "speedup", "ci95_low", "ci95_high",
                                                         "accepted", "note"]))
    published = reference_rows(report)
    if published:
        parts.append("## Next to the published results\n\n" +
                     _md_table(published, ["cell", "ours_s", "published_printed", "source", "ratio", "emulated"]))
    return "\n".join(parts)
