"""SQL over stored runs with DuckDB: `sbclab query "SELECT ..." --results DIR`.

Three tables are built in memory from the run documents each time (the documents stay the one
source of truth): `runs` (one row per run), `nodes` (one row per run and node, the measured
figures) and `published` (the seeds' results, one printed number per row).
"""

import json
import tempfile
from pathlib import Path

import duckdb

from ..errors import SbclabError
from ..results.schema import RunRecord
from . import reference
from .cells import status

EXAMPLES = [
    ("mean time per workload and engine",
     "SELECT workload, engine, count(*) AS n, round(avg(wall_time_s), 1) AS mean_s FROM runs WHERE status = 'headline' GROUP BY ALL ORDER BY ALL"),
    ("energy per run, with its source",
     "SELECT run_id, energy_j, power_estimated FROM runs ORDER BY started_at"),
    ("the busiest worker of each run",
     "SELECT run_id, node, cpu_busy_pct_mean, disk_busy_pct_mean FROM nodes WHERE node <> 'master' QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY cpu_busy_pct_mean DESC) = 1"),
    ("the seeds' TeraSort times",
     "SELECT seed, \"table\", engine, size, workers, storage, value, unit FROM published WHERE workload = 'terasort' AND metric = 'wall_time'"),
]


def run_row(run: RunRecord) -> dict:
    m = run.measurements
    cp = m.cluster_power if m else None
    inter = m.intermediate if m else None
    return {
        "run_id": run.run_id, "experiment_id": run.experiment_id, "repetition": run.repetition,
        "workload": run.workload, "engine": run.engine, "size_bytes": run.parameters.get("size_bytes"),
        "workers": run.cluster.workers, "board": run.cluster.board, "storage": run.cluster.storage,
        "preset": run.cluster.preset, "backend": run.cluster.backend, "emulated": run.cluster.emulated,
        "scale_factor": run.scale.factor, "host": run.host.get("hostname"),
        "started_at": run.started_at.isoformat(), "wall_time_s": run.wall_time_s, "exit_status": run.exit_status,
        "valid": run.validity.valid, "flagged": run.flagged, "status": status(run),
        "energy_j": cp.energy_j if cp else None, "avg_w": cp.avg_w if cp else None,
        "energy_above_idle_j": cp.energy_above_idle_j if cp else None,
        "power_estimated": cp.estimate if cp else None,
        "intermediate_device_bytes": inter.device_bytes if inter else None,
        "intermediate_device_ratio": inter.device_ratio if inter else None,
        "intermediate_engine_bytes": inter.engine_bytes if inter else None,
        "intermediate_engine_ratio": inter.engine_ratio if inter else None,
        "parameters": json.dumps(run.parameters, sort_keys=True), "command": " ".join(run.command),
    }


def node_rows(run: RunRecord) -> list[dict]:
    if not run.measurements:
        return []
    rows = []
    for name, figures in run.measurements.nodes.items():
        power = run.measurements.power.get(name)
        row = {"run_id": run.run_id, "node": name, **figures.model_dump(exclude={"gaps", "sampler_errors"}),
               "gaps": len(figures.gaps), "energy_j": power.energy_j if power else None,
               "power_source": power.source if power else None}
        rows.append(row)
    return rows


def published_rows() -> list[dict]:
    return [{"seed": p.seed, "table": p.table, "metric": p.metric, "unit": p.unit, "value": p.value,
             "printed": p.printed, **{k: p.dimensions.get(k) for k in ("workload", "engine", "size", "workers", "board", "storage")},
             "other": json.dumps({k: v for k, v in p.dimensions.items() if k not in reference.DIMENSIONS}, sort_keys=True)}
            for p in reference.published()]


def connect(runs: list[RunRecord]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    tables = {"runs": [run_row(r) for r in runs], "nodes": [n for r in runs for n in node_rows(r)],
              "published": published_rows()}
    with tempfile.TemporaryDirectory(prefix="sbclab-query-") as tmp:
        for name, rows in tables.items():
            path = Path(tmp) / f"{name}.json"
            path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
            if rows:
                con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_json_auto(?, format='newline_delimited')", [str(path)])
            else:
                con.execute(f"CREATE TABLE {name} (run_id VARCHAR)")
    return con


def run_sql(runs: list[RunRecord], sql: str) -> tuple[list[str], list[tuple]]:
    con = connect(runs)
    try:
        cursor = con.execute(sql)
    except duckdb.Error as err:
        raise SbclabError(f"The query failed: {str(err).splitlines()[0]}",
                          "Tables: runs, nodes, published; see 'sbclab query --help' for examples "
                          "and 'DESCRIBE runs' for the columns.") from err
    columns = [d[0] for d in cursor.description] if cursor.description else []
    return columns, cursor.fetchall()
