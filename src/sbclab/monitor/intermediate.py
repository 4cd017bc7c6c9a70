"""Intermediate data: what a run wrote to node storage beyond its input and output.

Two measures, side by side (docs/measurements.md explains why they differ):
- device: per node, bytes written to its data device from the job's start mark to its end mark
  (both after a sync), less what its DataNode wrote into HDFS blocks (the job's output, and input
  made during the run). It counts what reached the medium — the seeds' fstrim measure — including
  filesystem metadata and journal, and not what was written and deleted while still in the page cache.
- engine: what the engine says it wrote outside HDFS. Hadoop: FILE_BYTES_WRITTEN (map spills,
  merged map outputs, the reducers' shuffle copies and merges). Spark: shuffle write plus disk spill.
"""

from .series import counter, edges

_HADOOP_FS = "File System Counters"
_HADOOP_MR = "Map-Reduce Framework"


def engine_figures(engine: str, counters: dict) -> dict:
    if engine == "hadoop":
        fs, mr = counters.get(_HADOOP_FS, {}), counters.get(_HADOOP_MR, {})
        figures = {"file_bytes_written": fs.get("FILE: Number of bytes written"),
                   "file_bytes_read": fs.get("FILE: Number of bytes read"),
                   "map_output_materialized_bytes": mr.get("Map output materialized bytes"),
                   "reduce_shuffle_bytes": mr.get("Reduce shuffle bytes"),
                   "spilled_records": mr.get("Spilled Records")}
        total = figures["file_bytes_written"]
    else:
        metrics = counters.get("task_metrics", {})
        figures = {"shuffle_bytes_written": metrics.get("shuffle_bytes_written"),
                   "disk_bytes_spilled": metrics.get("disk_bytes_spilled"),
                   "memory_bytes_spilled": metrics.get("memory_bytes_spilled"),
                   "shuffle_remote_bytes_read": metrics.get("shuffle_remote_bytes_read")}
        parts = [figures["shuffle_bytes_written"], figures["disk_bytes_spilled"]]
        total = sum(p for p in parts if p is not None) if any(p is not None for p in parts) else None
    return {"figures": {k: v for k, v in figures.items() if v is not None}, "bytes": total}


def _datanode_delta(snapshots: list[dict], start: float, end: float, node: str) -> int | None:
    before = [s for s in snapshots if s["t"] <= start + 0.5 and node in s["nodes"]]
    after = [s for s in snapshots if s["t"] >= end - 0.5 and node in s["nodes"]]
    if not before or not after:
        return None
    return after[0]["nodes"][node]["bytes_written"] - before[-1]["nodes"][node]["bytes_written"]


def measure(nodes: dict[str, dict], datanodes: list[dict], workers: list[str], start: float, end: float,
            engine: str, counters: dict, input_bytes: int | None) -> dict:
    per_node, notes = {}, []
    for name, recorded in nodes.items():
        bounds = edges(recorded["samples"], start, end)
        written = counter(*bounds, "disk", "write_bytes") if bounds else None
        if written is None:
            notes.append(f"{name}: no device counters around the run")
            continue
        # A host-wide sampler (processes backend) sees every DataNode's writes on its one device.
        holds = workers if recorded["target"].get("scope") == "host" else [name] if name in workers else []
        deltas = [_datanode_delta(datanodes, start, end, worker) for worker in holds]
        hdfs = None if None in deltas else sum(deltas)
        if hdfs is None:
            notes.append(f"{name}: its DataNode's counters were not read around the run; HDFS bytes not subtracted")
        per_node[name] = {"device_write_bytes": int(written), "hdfs_write_bytes": hdfs,
                          "intermediate_bytes": int(max(0, written - (hdfs or 0)))}
    device = sum(n["intermediate_bytes"] for n in per_node.values()) if per_node else None
    engine_side = engine_figures(engine, counters)
    return {"input_bytes": input_bytes, "nodes": per_node, "device_bytes": device,
            "device_ratio": round(device / input_bytes, 4) if device is not None and input_bytes else None,
            "engine_bytes": engine_side["bytes"], "engine": engine_side["figures"],
            "engine_ratio": round(engine_side["bytes"] / input_bytes, 4)
            if engine_side["bytes"] is not None and input_bytes else None,
            "notes": notes}


def attach_trimmed(measured: dict, trimmed: dict[str, int], input_bytes: int | None) -> None:
    """What fstrim discarded on each node right after the job, on filesystems trimmed right before
    it: the 2026 seed's measure of intermediate data (Table 11 and its Discussion)."""
    if not trimmed:
        return
    for node, discarded in trimmed.items():
        measured["nodes"].setdefault(node, {})["trimmed_bytes"] = discarded
    measured["trimmed_bytes"] = sum(trimmed.values())
    if input_bytes:
        measured["trimmed_ratio"] = round(measured["trimmed_bytes"] / input_bytes, 4)


def attach_engine_by_node(measured: dict, by_host: dict[str, int], spec) -> None:
    """The engine's own figure per node, beside the device figure (hosts named by name or address)."""
    for host, written in by_host.items():
        node = next((n.name for n in spec.nodes if host in (n.name, n.address)), None)
        if node is None:
            measured["notes"].append(f"the engine reports {written:,} bytes written on an unknown host {host}")
            continue
        measured["nodes"].setdefault(node, {})["engine_bytes"] = written
