"""From a node's raw samples (cumulative counters) to a time series of rates and shares.

One row per interval between two consecutive samples. CPU shares are of the node's capacity: on
an emulated node that is its cgroup's quota (the host cores it was given), so a node working flat
out reads 100 % busy, as a board would; iowait there is its threads' block-I/O delay spread over
its board cores, capped by its idle share. Where samples are further apart than a sampler could
explain (it died, or the node vanished), the interval is a recorded gap: no row is made across it.

Swap on a node with a cgroup is the group's own: the bytes of it in swap (v1 memory.stat
total_swap, v2 memory.swap.current), whose growth is what it swapped out; how much it swapped back
in cannot be told from that figure (freeing swapped pages lowers it too), so swap-in is left
empty there. The host's /proc/vmstat paging stands in only where the cgroup accounts no swap;
a host-scope sampler (processes backend) has nothing else.
"""

import os
from typing import Any

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

COLUMNS = ("t", "dt", "cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct", "cpu_idle_pct", "cpu_steal_pct",
           "cpu_cores_used", "load", "threads", "mem_used_bytes", "mem_available_bytes", "mem_cached_bytes",
           "swap_in_bps", "swap_out_bps", "disk_read_bps", "disk_write_bps", "disk_busy_pct",
           "net_rx_bps", "net_tx_bps", "clock_mhz_min", "clock_mhz_mean", "temp_max_c", "throttled", "mark")


def gap_threshold(interval_s: float) -> float:
    """Longer than this between samples is a gap: a few ticks late is a busy node, not a dead sampler."""
    return max(3 * interval_s, interval_s + 2.0)


def _get(sample: dict, *path: str):
    value: Any = sample
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _delta(a: dict, b: dict, *path: str) -> float | None:
    x, y = _get(a, *path), _get(b, *path)
    if x is None or y is None or y < x:  # a counter that went back: the sampler restarted
        return None
    return y - x


def _rate(a, b, dt, *path) -> float | None:
    d = _delta(a, b, *path)
    return None if d is None else d / dt


def _pct(x: float | None) -> float | None:
    return None if x is None else round(100 * x, 2)


def _cpu_host(a: dict, b: dict, dt: float, cores: int) -> dict:
    fields = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    d = {f: _delta(a, b, "cpu", f) for f in fields}
    if any(v is None for v in d.values()):
        return {}
    total = sum(d.values()) or 1
    busy = d["user"] + d["nice"] + d["system"] + d["irq"] + d["softirq"]
    return {"cpu_user_pct": _pct((d["user"] + d["nice"]) / total),
            "cpu_system_pct": _pct((d["system"] + d["irq"] + d["softirq"]) / total),
            "cpu_iowait_pct": _pct(d["iowait"] / total), "cpu_idle_pct": _pct(d["idle"] / total),
            "cpu_steal_pct": _pct(d["steal"] / total), "cpu_cores_used": round(busy / total * cores, 4),
            "load": _get(b, "load")}


def _cpu_node(a: dict, b: dict, dt: float, target: dict) -> dict:
    used = _delta(a, b, "cgroup_cpu", "usage_ns")
    if used is None:
        return {}
    capacity = dt * 1e9 * float(target.get("cpu_capacity") or 1)
    # The quota is enforced per CFS period, which sample intervals do not line up with, so one
    # interval can hold a little more than its share; shares are capped, cores used are not.
    busy = min(1.0, used / capacity)
    user, system = _delta(a, b, "cgroup_cpu", "user_ns"), _delta(a, b, "cgroup_cpu", "system_ns")
    user_part = user / (user + system) if user is not None and system and user + system > 0 else 1.0
    blkio = _delta(a, b, "delays", "blkio_delay_ns")
    idle = max(0.0, 1 - busy)
    iowait = None if blkio is None else min(idle, blkio / (dt * 1e9 * int(target.get("cores") or 1)))
    row = {"cpu_user_pct": _pct(busy * user_part), "cpu_system_pct": _pct(busy * (1 - user_part)),
           "cpu_iowait_pct": _pct(iowait), "cpu_idle_pct": _pct(idle - (iowait or 0)),
           "cpu_cores_used": round(used / (dt * 1e9), 4)}
    host = _cpu_host({"cpu": _get(a, "host_cpu")}, {"cpu": _get(b, "host_cpu")}, dt, 1)
    row["cpu_steal_pct"] = host.get("cpu_steal_pct")
    run, wait = _delta(a, b, "delays", "cpu_run_real_ns"), _delta(a, b, "delays", "cpu_delay_ns")
    if run is not None and wait is not None and blkio is not None:
        # Threads running, waiting for a core, or blocked on I/O: what the load average counts.
        row["load"] = round((run + wait + blkio) / (dt * 1e9), 3)
        row["threads"] = _get(b, "delays", "threads")  # the node's, whose delays these are
    return row


def _memory(b: dict, target: dict) -> dict:
    if "cgroup_memory" in b:
        mem = b["cgroup_memory"]
        limit = target.get("memory_limit")
        return {"mem_used_bytes": mem["rss"], "mem_cached_bytes": mem["cache"],
                "mem_available_bytes": limit - mem["rss"] if limit else None}
    mem = b.get("memory") or {}
    return {"mem_used_bytes": mem.get("used"), "mem_cached_bytes": mem.get("cached"),
            "mem_available_bytes": mem.get("available")}


def _node_swap(sample: dict) -> int | None:
    return _get(sample, "cgroup_memory", "swap")


def _swap(a: dict, b: dict, dt: float) -> dict:
    """Swap rates of the interval: the node's own where its cgroup accounts swap, else the host's paging."""
    if _node_swap(a) is not None or _node_swap(b) is not None:
        held_a, held_b = _node_swap(a), _node_swap(b)
        out = None if held_a is None or held_b is None else max(0, held_b - held_a) / dt
        return {"swap_in_bps": None, "swap_out_bps": None if out is None else round(out, 1)}
    found = {}
    for name, path in (("swap_in_bps", ("swap", "in_pages")), ("swap_out_bps", ("swap", "out_pages"))):
        pages = _rate(a, b, dt, *path)
        found[name] = None if pages is None else round(pages * PAGE_BYTES, 1)
    return found


def has_node_swap(samples: list[dict]) -> bool:
    """Whether these samples carry the node's own swap figure (its cgroup accounts swap)."""
    return any(_node_swap(s) is not None for s in samples)


def node_swapped_out(samples: list[dict], start: float, end: float) -> float | None:
    """Bytes the node's cgroup swapped out between two sample times: the sum of the increases of its
    swapped bytes from sample to sample (a lower bound: what goes out and back within one
    interval is not seen). None when no sample in that time carries such a figure."""
    ordered = sorted(samples, key=lambda s: s["t"])
    held = [_node_swap(s) for s in ordered if start <= s["t"] <= end and _node_swap(s) is not None]
    if not held:
        return None
    return float(sum(max(0, y - x) for x, y in zip(held, held[1:])))


def _disk_busy(a: dict, b: dict, dt: float, rates: dict, limits: dict | None) -> float | None:
    """Share of the interval the medium was busy: the kernel's busy time, or on a throttled
    (emulated) medium the highest of bandwidth and operations against the medium's limits."""
    if not limits:
        busy_ms = _delta(a, b, "disk", "io_ms")
        return None if busy_ms is None else round(min(100.0, busy_ms / (dt * 10)), 2)
    reads, writes = _rate(a, b, dt, "disk", "reads"), _rate(a, b, dt, "disk", "writes")
    shares = [rates.get("disk_read_bps") and rates["disk_read_bps"] / limits["read_bytes_s"],
              rates.get("disk_write_bps") and rates["disk_write_bps"] / limits["write_bytes_s"],
              reads and reads / limits["read_iops"], writes and writes / limits["write_iops"]]
    known = [x for x in shares if x is not None]
    return round(min(100.0, 100 * max(known)), 2) if known else None


def row(a: dict, b: dict, target: dict) -> dict:
    dt = b["t"] - a["t"]
    out: dict[str, Any] = {"t": b["t"], "dt": round(dt, 4)}
    if "cgroup_cpu" in b:
        out.update(_cpu_node(a, b, dt, target))
    else:
        out.update(_cpu_host(a, b, dt, int(target.get("cores") or 1)))
    out.update(_memory(b, target))
    out.update(_swap(a, b, dt))
    out["disk_read_bps"] = _rate(a, b, dt, "disk", "read_bytes")
    out["disk_write_bps"] = _rate(a, b, dt, "disk", "write_bytes")
    out["disk_busy_pct"] = _disk_busy(a, b, dt, out, target.get("disk_limits"))
    out["net_rx_bps"] = _rate(a, b, dt, "net", "rx_bytes")
    out["net_tx_bps"] = _rate(a, b, dt, "net", "tx_bytes")
    clocks = [c for c in (b.get("mhz") or []) if c]
    if b.get("arm_hz"):
        clocks = [b["arm_hz"] / 1e6]  # the firmware's view of the ARM clock is the one that throttles
    out["clock_mhz_min"] = round(min(clocks), 1) if clocks else None
    out["clock_mhz_mean"] = round(sum(clocks) / len(clocks), 1) if clocks else None
    temps = list((b.get("temp_c") or {}).values())
    out["temp_max_c"] = max(temps) if temps else None
    out["throttled"] = b.get("throttled")
    out["mark"] = b.get("mark")
    return {k: (round(v, 1) if isinstance(v, float) and k.endswith("_bps") else v) for k, v in out.items()}


def with_confirmed_delays(ordered: list[dict]) -> list[dict]:
    """The samples with each one's delay counters as of its own reading: a sampler confirms a
    reading of them with the next (sampler.NodeGroupDelays), so delays marked `of_previous` belong
    to the sample before the one that carries them. The newest sample is left without."""
    if not any(_get(s, "delays", "of_previous") for s in ordered):
        return ordered
    placed = []
    for sample, following in zip(ordered, [*ordered[1:], None]):
        sample = {k: v for k, v in sample.items() if k != "delays"}
        if following is not None and _get(following, "delays", "of_previous"):
            sample["delays"] = following["delays"]
        placed.append(sample)
    return placed


def newest_row(samples: list[dict], target: dict) -> dict | None:
    """The row of the newest interval whose delays are confirmed (one interval behind the newest sample)."""
    if not samples:
        return None
    ordered = with_confirmed_delays(samples[-3:])
    if _get(samples[-1], "delays", "of_previous"):
        ordered = ordered[:-1]
    return row(ordered[-2], ordered[-1], target) if len(ordered) >= 2 else None


def build(samples: list[dict], target: dict, interval_s: float) -> tuple[list[dict], list[dict]]:
    """(rows, gaps) of one node's samples, in time order."""
    ordered = with_confirmed_delays(sorted(samples, key=lambda s: s["t"]))
    rows, gaps = [], []
    limit = gap_threshold(interval_s)
    for a, b in zip(ordered, ordered[1:]):
        dt = b["t"] - a["t"]
        if dt <= 0.005:  # a mark right on a tick says nothing new about rates
            continue
        if dt > limit:
            gaps.append({"from": a["t"], "to": b["t"], "seconds": round(dt, 3)})
            continue
        rows.append(row(a, b, target))
    return rows, gaps


def edges(samples: list[dict], start: float, end: float) -> tuple[dict, dict] | None:
    """The samples that bound a window: the last at or before its start, and the first mark at or
    after its end (a mark follows a sync, so it includes what the job left in the page cache)."""
    ordered = sorted(samples, key=lambda s: s["t"])
    before = [s for s in ordered if s["t"] <= start]
    after_marks = [s for s in ordered if s["t"] >= end and s.get("mark")]
    after = after_marks or [s for s in ordered if s["t"] >= end]
    if not before or not after:
        return None
    return before[-1], after[0]


def counter(a: dict, b: dict, *path: str) -> float | None:
    return _delta(a, b, *path)


def columnar(rows: list[dict]) -> dict[str, list]:
    """Rows as columns, the compact form stored with a run."""
    return {column: [r.get(column) for r in rows] for column in COLUMNS}
