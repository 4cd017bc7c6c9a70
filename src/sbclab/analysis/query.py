"""SQL over stored runs with DuckDB: `sbclab query "SELECT ..." --results DIR`.

Three tables are built in memory each time: `runs` (one row per run) and `nodes` (one row per run
and node, the measured figures) from the runs' summaries (results/index.py: read from the index,
the documents staying the one source of truth), and `published` (the seeds' results, one printed
number per row).
"""

import json
import tempfile
from pathlib import Path

import duckdb

from ..errors import SbclabError
from ..results.index import Summary
from . import reference

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


def published_rows() -> list[dict]:
    return [{"seed": p.seed, "table": p.table, "metric": p.metric, "unit": p.unit, "value": p.value,
             "printed": p.printed, **{k: p.dimensions.get(k) for k in ("workload", "engine", "size", "workers", "board", "storage")},
             "other": json.dumps({k: v for k, v in p.dimensions.items() if k not in reference.DIMENSIONS}, sort_keys=True)}
            for p in reference.published()]


def connect(runs: list[Summary]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    tables = {"runs": [r.run for r in runs], "nodes": [n for r in runs for n in r.nodes], "published": published_rows()}
    with tempfile.TemporaryDirectory(prefix="sbclab-query-") as tmp:
        for name, rows in tables.items():
            path = Path(tmp) / f"{name}.json"
            path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
            if rows:
                con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_json_auto(?, format='newline_delimited')", [str(path)])
            else:
                con.execute(f"CREATE TABLE {name} (run_id VARCHAR)")
    return con


def run_sql(runs: list[Summary], sql: str) -> tuple[list[str], list[tuple]]:
    con = connect(runs)
    try:
        cursor = con.execute(sql)
    except duckdb.Error as err:
        raise SbclabError(f"The query failed: {str(err).splitlines()[0]}",
                          "Tables: runs, nodes, published; see 'sbclab query --help' for examples "
                          "and 'DESCRIBE runs' for the columns.") from err
    columns = [d[0] for d in cursor.description] if cursor.description else []
    return columns, cursor.fetchall()
