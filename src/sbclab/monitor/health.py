"""Health flags: what happened on a node during a run that makes its time unfit for headline figures.

A run is flagged when, within its window, any node
- had a throttle or under-voltage bit set (`vcgencmd get_throttled`),
- ran below 90 % of its profile's clock for more than 5 % of the run, or
- went above its board's soft temperature limit (these two on boards only: an emulated node's
  clock and sensors are the host's, which say nothing about the board),
- swapped (on a node with a cgroup, the cgroup's own swap; the host's paging only where the
  cgroup accounts no swap, and the flag then says it was the host),
- had a process killed by the kernel for want of memory (memory.py counts them), or
- disappeared: its sampler stopped answering (a gap) or ended before the run did.
A run is flagged too when a machine was too busy outside the cluster before it (diagnostics.py).
Each flag names the node, what happened and when.
"""

from .. import profiles
from ..units import format_size
from .readings import throttle_reasons
from .series import has_node_swap

CLOCK_FLOOR = 0.90
CLOCK_SHARE = 0.05


def _in_window(rows: list[dict], start: float, end: float) -> list[dict]:
    return [r for r in rows if r["t"] - r["dt"] < end and r["t"] > start]


def node_flags(name: str, rows: list[dict], gaps: list[dict], samples: list[dict], board: str, emulated: bool,
               start: float, end: float) -> list[dict]:
    """Flags of one node; `emulated` means its clock and sensors are a host's, not the board's."""
    flags = []
    inside = _in_window(rows, start, end)
    throttled = [r for r in inside if r.get("throttled") and r["throttled"] & 0xF]
    if throttled:
        bits = 0
        for r in throttled:
            bits |= r["throttled"]
        flags.append({"node": name, "kind": "throttled", "at": throttled[0]["t"],
                      "detail": f"{', '.join(throttle_reasons(bits))} (get_throttled {bits:#x}) in {len(throttled)} samples"})
    else:
        sticky = [s.get("throttled") for s in samples if s.get("throttled") is not None and start <= s["t"] <= end + 5]
        if len(sticky) >= 2 and (sticky[-1] & ~sticky[0]) >> 16 & 0xF:
            new = sticky[-1] & ~sticky[0]
            flags.append({"node": name, "kind": "throttled", "at": end,
                          "detail": f"{', '.join(throttle_reasons(new, current_only=False))} between samples "
                                    f"(get_throttled {sticky[0]:#x} -> {sticky[-1]:#x})"})
    profile = profiles.board(board)
    if not emulated:
        floor = CLOCK_FLOOR * profile.clock_ghz * 1000
        timed = [r for r in inside if r.get("clock_mhz_min") is not None]
        slow = [r for r in timed if r["clock_mhz_min"] < floor]
        total = sum(r["dt"] for r in timed)
        if total and sum(r["dt"] for r in slow) / total > CLOCK_SHARE:
            flags.append({"node": name, "kind": "clock", "at": slow[0]["t"],
                          "detail": f"below {floor:.0f} MHz (90 % of {profile.clock_ghz:g} GHz) for "
                                    f"{100 * sum(r['dt'] for r in slow) / total:.0f} % of the run, lowest "
                                    f"{min(r['clock_mhz_min'] for r in slow):.0f} MHz"})
    if profile.soft_temp_c and not emulated:
        hot = [r for r in inside if r.get("temp_max_c") is not None and r["temp_max_c"] > profile.soft_temp_c]
        if hot:
            flags.append({"node": name, "kind": "temperature", "at": hot[0]["t"],
                          "detail": f"{max(r['temp_max_c'] for r in hot):.1f} °C, above the soft limit "
                                    f"{profile.soft_temp_c:g} °C of {board}"})
    swapped = [r for r in inside if (r.get("swap_in_bps") or 0) > 0 or (r.get("swap_out_bps") or 0) > 0]
    if swapped:
        moved = sum(((r.get("swap_in_bps") or 0) + (r.get("swap_out_bps") or 0)) * r["dt"] for r in swapped)
        if has_node_swap(samples):  # series.py took these rows from the node's cgroup
            detail = f"{name} swapped out {moved / 2**20:.1f} MiB during the run (its cgroup's swap)"
        else:
            where = "the host" if emulated else name
            detail = f"{where} swapped {moved / 2**20:.1f} MiB during the run"
        flags.append({"node": name, "kind": "swap", "at": swapped[0]["t"], "detail": detail})
    for gap in gaps:
        if gap["from"] < end and gap["to"] > start:
            flags.append({"node": name, "kind": "disappeared", "at": gap["from"],
                          "detail": f"no sample for {gap['seconds']:.1f} s"})
    last = max((s["t"] for s in samples), default=None)
    if last is None or last < end:
        flags.append({"node": name, "kind": "disappeared", "at": last or start,
                      "detail": "no samples" if last is None else f"its samples end {end - last:.1f} s before the run"})
    return flags


def oom_killed(name: str, kills: int, at: float, limit_bytes: int | None, host: bool) -> dict:
    """A node whose processes the kernel killed for want of memory: a daemon or task lost mid-run, so
    the time measures a run that was retried or crippled. `host`: the nodes share this host's kernel,
    whose kills may have hit any of them (or something else on the host)."""
    processes = f"{kills} process{'es' if kills != 1 else ''}"
    if host:
        detail = f"this host's kernel killed {processes} for want of memory during the run (the nodes share it)"
    else:
        limit = f" (its limit {format_size(limit_bytes)})" if limit_bytes else ""
        detail = f"the kernel killed {processes} of {name} for want of memory during the run{limit}"
    return {"node": name, "kind": "oom_kill", "at": at, "detail": detail}


def tasks_by_worker(by_host: dict[str, int], spec) -> dict[str, int]:
    """The engine's tasks per worker (hosts named by name or address); a worker that ran none is 0."""
    found = {n.name: 0 for n in spec.worker_nodes}
    for host, count in by_host.items():
        # On the processes backend every node has this host's address: only a name tells them apart.
        named = [n.name for n in spec.worker_nodes if host in (n.name, n.address)]
        if len(named) == 1:
            found[named[0]] += count
    return found


def idle_workers(ran: dict[str, int], start: float) -> list[dict]:
    """A worker that ran none of a job's tasks while the job had enough of them (two per worker) for
    every worker: the run measured fewer workers than its cell names (executors that registered late,
    a scheduler that filled one node first), so it is never a headline figure."""
    total = sum(ran.values())
    if len(ran) < 2 or total < 2 * len(ran):
        return []
    busy = [name for name, count in ran.items() if count]
    return [{"node": name, "kind": "idle_worker", "at": start,
             "detail": f"ran none of the job's {total} tasks ({', '.join(busy)} ran them all)"}
            for name, count in ran.items() if count == 0]
