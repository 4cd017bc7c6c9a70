"""RESULTS/index.json: every stored run summarised in a few rows, so that `sbclab query` and `sbclab
diff` read one file instead of validating every document.

A run's summary is one row (the `runs` table of `sbclab query`, and what `diff` matches cells on)
and one row per node (the `nodes` table). Each entry is kept under its document's file name with the
document's size, modification time and inode: a document added, changed, replaced or removed since is
read again or dropped at the next reading, and a damaged one stays set aside until it changes. A
document written in the last seconds is not kept, as a change within its timestamp's granularity would
go unseen. The index is rebuilt whole when the code that summarises changes (a digest of this
package's sources) and is only a cache: deleting it loses nothing, and a directory sbclab may not
write to is summarised afresh at each reading.
"""

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .. import atomic
from .schema import RunRecord
from .store import DamagedDocument, ResultsStore, SetAside, existing, load, some

INDEX = "index.json"
RECENT_NS = 2 * 10**9


def run_row(run: RunRecord) -> dict:
    """The run in one row: its cell's dimensions, its times and status, its energy and intermediate data."""
    m = run.measurements
    cp = m.cluster_power if m else None
    inter = m.intermediate if m else None
    c = run.cluster
    return {
        "run_id": run.run_id, "experiment_id": run.experiment_id, "repetition": run.repetition,
        "workload": run.workload, "engine": run.engine, "size_bytes": run.parameters.get("size_bytes"),
        "workers": c.workers, "board": c.board, "storage": c.storage, "preset": c.preset, "backend": c.backend,
        "emulated": c.emulated, "scale_factor": run.scale.factor, "host": run.host.get("hostname"),
        "cluster": c.name, "spark_manager": c.spark_manager, "layout": c.layout, "runtime": c.runtime, "stack": c.stack,
        "started_at": run.started_at.isoformat(), "wall_time_s": run.wall_time_s, "exit_status": run.exit_status,
        "valid": run.validity.valid, "flagged": run.flagged, "status": run.status,
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
    """One row per sampled node: its figures over the run, its gaps counted, its energy and power source."""
    if not run.measurements:
        return []
    rows = []
    for name, figures in run.measurements.nodes.items():
        power = run.measurements.power.get(name)
        rows.append({"run_id": run.run_id, "node": name, **figures.model_dump(exclude={"gaps", "sampler_errors"}),
                     "gaps": len(figures.gaps), "energy_j": power.energy_j if power else None,
                     "power_source": power.source if power else None})
    return rows


@dataclass(frozen=True)
class Summary:
    run: dict
    nodes: list[dict] = field(default_factory=list)


def summary(run: RunRecord) -> Summary:
    return Summary(run_row(run), node_rows(run))


@lru_cache(maxsize=1)
def _fingerprint() -> str:
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.name.encode() + source.read_bytes())
    return digest.hexdigest()[:16]


def _read(path: Path) -> dict[str, dict]:
    """The entries of an index written by this code; none when there is no such index."""
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(raw, dict) or raw.get("fingerprint") != _fingerprint() or not isinstance(raw.get("runs"), dict):
        return {}
    return raw["runs"]


def _write(path: Path, entries: dict[str, dict]) -> None:
    try:
        atomic.write_text(path, json.dumps({"fingerprint": _fingerprint(), "runs": entries}, separators=(",", ":")))
    except OSError:
        pass  # a directory this user may not write to: summarised again next time


def _entry(path: Path, key: list[int]) -> dict | None:
    try:
        run = load(path)
    except DamagedDocument as err:
        return {"key": key, "set_aside": err.reason}
    except FileNotFoundError:
        return None  # removed since it was listed
    return {"key": key, "run": run_row(run), "nodes": node_rows(run)}


def summaries(store: ResultsStore) -> list[Summary]:
    """Every readable run's summary, oldest first, through the index; the damaged documents are in
    store.set_aside."""
    index = store.root / INDEX
    known = _read(index)
    kept, read_again = {}, False
    now = time.time_ns()
    found, store.set_aside = [], []
    with os.scandir(store.runs_dir) as listing:
        documents = sorted((e for e in listing if e.name.endswith(".json") and not e.name.startswith(".")),
                           key=lambda e: e.name)
    for document in documents:
        try:
            stat = document.stat()
        except FileNotFoundError:
            continue
        key = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
        entry = known.get(document.name)
        if entry is None or entry.get("key") != key:
            entry = _entry(Path(document.path), key)
            if entry is None:
                continue
            read_again = True
        if now - stat.st_mtime_ns > RECENT_NS:
            kept[document.name] = entry
        if "set_aside" in entry:
            store.set_aside.append(SetAside(Path(document.path), entry["set_aside"]))
        else:
            found.append(Summary(entry["run"], entry["nodes"]))
    if read_again or kept.keys() != known.keys():
        _write(index, kept)
    return sorted(found, key=lambda s: s.run["started_at"])


def read_summaries(results: Path) -> tuple[list[Summary], list[SetAside]]:
    """Every readable run's summary of a results directory, oldest first, and the documents set aside;
    a directory without a readable run is refused."""
    store = existing(results)
    return some(summaries(store), store), store.set_aside
