"""A bottleneck verdict per run, in one sentence with its numbers, argued the way the seeds argue:
"CPU usage reached nearly 100 % while the NVMe SSD was far from its bandwidth → CPU-bound"
(Lee & Park 2026, PCIe 2.0 vs 3.0).

Each worker's resources are put on one scale, the share of the node's own capacity used while the
job ran (submission to finish by the engine's phases, so start-up and margins do not dilute it):
CPU against its quota (emulated) or its cores, storage as the share of time the medium was busy
(its throughput against its limits when emulated), the link as the busier direction's bytes per
second against the node's link rate. Swap use means memory pressure whatever else was busy: the
node's own swap (swap_bytes: on an emulated node its cgroup's, never the host's paging, which
monitor/measure.py leaves out there because other processes on the host cause it too).
The resource with the highest share names the verdict; when none reaches SATURATED the job spent
its time in start-up, scheduling and waiting, which the small inputs of a quick suite often do.
"""

from dataclasses import dataclass

from .. import profiles
from ..errors import SbclabError
from ..results.schema import RunRecord

SATURATED = 60.0   # % of a resource's capacity, averaged over the run, that makes it the bottleneck
IOWAIT_STORAGE = 20.0  # % iowait that makes storage the bottleneck even when busy time is unknown
UNEVEN_CPU = 0.6  # a worker below this share of the busiest worker's CPU, given few tasks, was left idle


@dataclass
class Verdict:
    kind: str        # cpu | storage | network | memory | overhead | unknown
    sentence: str
    figures: dict[str, float]

    LABELS = {"cpu": "CPU-bound", "storage": "storage-bound", "network": "network-bound",
              "memory": "memory pressure", "overhead": "no resource saturated", "scheduler": "scheduler-limited",
              "unknown": "not measured"}

    @property
    def label(self) -> str:
        return self.LABELS[self.kind]


def _link_mbit(run: RunRecord, node_name: str) -> float | None:
    for node in run.cluster.nodes:
        if node.name == node_name:
            if run.cluster.emulated and node.link_mbit_s:
                return node.link_mbit_s
            try:
                board = profiles.board(node.board)
                return board.network_mbps or board.nic_mbps
            except SbclabError:
                return None
    return None


def _job_window(run: RunRecord) -> tuple[float, float]:
    """From the first engine phase to the last (job submitted to job finished), else the whole run:
    the client's start-up and the margins would dilute every resource's share alike."""
    m = run.measurements
    engine = [p for p in m.phases if p.get("source") != "sbclab"]
    if engine:
        start, end = min(p["start"] for p in engine), max(p["end"] for p in engine)
        if end - start > 1.0:
            return start, end
    return m.window["start"], m.window["end"]


def _mean(values: list) -> float:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else 0.0


def _from_series(series: dict, workers: list[str], start: float, end: float) -> dict[str, dict[str, float]]:
    """Each worker's means over [start, end] from its stored samples."""
    out = {}
    for name in workers:
        node = series.get("nodes", {}).get(name)
        if not node or node.get("scope") != "node":
            continue
        cols = node["columns"]
        inside = [i for i, t in enumerate(cols["t"]) if start <= t <= end]
        if not inside:
            continue
        pick = lambda column: [cols[column][i] for i in inside] if column in cols else []  # noqa: E731
        busy = [None if u is None or s is None else u + s for u, s in zip(pick("cpu_user_pct"), pick("cpu_system_pct"))]
        out[name] = {"cpu": _mean(busy), "iowait": _mean(pick("cpu_iowait_pct")), "disk": _mean(pick("disk_busy_pct")),
                     "rx_bps": _mean(pick("net_rx_bps")), "tx_bps": _mean(pick("net_tx_bps"))}
    return out


def _uneven(tasks: dict[str, int], cpu: dict[str, float]) -> str | None:
    """The scheduler, not the hardware, set the time: a job with tasks enough for every worker (two
    each) gave one worker at most half the tasks of another, and that worker's CPU stayed well below
    the busiest's (YARN's capacity scheduler fills the NodeManager that heartbeats first)."""
    if len(tasks) < 2 or sum(tasks.values()) < 2 * len(tasks) or len(cpu) < 2:
        return None
    if min(tasks.values()) * 2 > max(tasks.values()) or min(cpu.values()) >= UNEVEN_CPU * max(cpu.values()):
        return None
    idle, busy = min(cpu, key=cpu.get), max(cpu, key=cpu.get)
    spread = ", ".join(f"{name} {count}" for name, count in sorted(tasks.items()))
    return (f"Scheduler-limited: the tasks were spread unevenly (tasks per worker: {spread}); {idle}'s CPU averaged "
            f"{cpu[idle]:.0f} % while {busy}'s averaged {cpu[busy]:.0f} %, so the placement, not a resource of the "
            "boards, set the time.")


def verdict(run: RunRecord, series: dict | None = None) -> Verdict:
    """The run's bottleneck; with its stored series, judged over the job's own phases."""
    m = run.measurements
    workers = [w.name for w in run.cluster.task_nodes]
    nodes = {n: f for n, f in (m.nodes.items() if m else []) if n in workers and f.scope == "node"}
    if not nodes:
        return Verdict("unknown", "No per-node samples were stored for this run, so no bottleneck can be named.", {})
    start, end = _job_window(run)
    means = _from_series(series, list(nodes), start, end) if series else {}
    if not means:
        duration = max(m.window["end"] - m.window["start"], 1e-9)
        means = {n: {"cpu": f.cpu_busy_pct_mean or 0.0, "iowait": f.cpu_iowait_pct_mean or 0.0,
                     "disk": f.disk_busy_pct_mean or 0.0, "rx_bps": (f.net_rx_bytes or 0) / duration,
                     "tx_bps": (f.net_tx_bytes or 0) / duration} for n, f in nodes.items()}
    cpu = max(v["cpu"] for v in means.values())
    iowait = max(v["iowait"] for v in means.values())
    disk = max(v["disk"] for v in means.values())
    link = 0.0
    for name, v in means.items():
        rate = _link_mbit(run, name)
        if rate:
            link = max(link, 100.0 * max(v["rx_bps"], v["tx_bps"]) * 8 / (rate * 1e6))
    swapped = {n: f.swap_bytes for n, f in nodes.items() if f.swap_bytes}
    figures = {"cpu_busy_pct": round(cpu, 1), "iowait_pct": round(iowait, 1), "disk_busy_pct": round(disk, 1),
               "link_pct": round(link, 1)}
    others = f"CPU {cpu:.0f} % of its capacity, storage {disk:.0f} % busy (iowait {iowait:.0f} %), link {link:.0f} % used"
    if swapped:
        node, amount = max(swapped.items(), key=lambda kv: kv[1])
        figures["swap_bytes"] = amount
        return Verdict("memory", f"Memory pressure: {node} swapped {amount / 2**20:.0f} MiB during the run "
                                 f"(busiest worker: {others}); give containers less memory or the nodes more.", figures)
    uneven = _uneven(m.tasks_by_worker, {n: v["cpu"] for n, v in means.items()})
    if uneven:
        return Verdict("scheduler", uneven, figures)
    shares = {"cpu": cpu, "storage": max(disk, iowait * SATURATED / IOWAIT_STORAGE), "network": link}
    kind, top = max(shares.items(), key=lambda kv: kv[1])
    if top < SATURATED:
        return Verdict("overhead", f"No resource saturated: the busiest worker averaged {others}, so the run's "
                                   "time went to start-up, scheduling and waiting rather than to one resource.", figures)
    reasons = {
        "cpu": f"CPU-bound: workers' CPU averaged {cpu:.0f} % of their capacity while storage was {disk:.0f} % busy "
               f"(iowait {iowait:.0f} %) and the link {link:.0f} % used.",
        "storage": f"Storage-bound: the medium was {disk:.0f} % busy with {iowait:.0f} % iowait while the CPU averaged "
                   f"{cpu:.0f} % and the link {link:.0f} %.",
        "network": f"Network-bound: the link carried {link:.0f} % of its rate while the CPU averaged {cpu:.0f} % and "
                   f"storage was {disk:.0f} % busy.",
    }
    return Verdict(kind, reasons[kind], figures)
