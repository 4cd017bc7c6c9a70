"""The per-node benchmarks, HPL, NetPIPE and web capacity in the seeds' layouts: events/s by threads
(Lee & Park 2026, Table 4), MB/s by access and record size and 4 KB IOPS (Tables 6-7), iperf3 both
ways (Table 5), W idle and under stress (Table 3), HPL by node count (Baun 2016, Table 7), NetPIPE
curves (Baun Fig. 3) and web capacity by document size (Hajji & Tso 2016, Fig. 4). Repetitions are
averaged; every row names its runs."""

import statistics

from ..analysis import stats
from ..results.schema import RunRecord
from .build import Report
from .plots import Plot, pyplot, render_figure


def _counted(report: Report, workload: str) -> list[RunRecord]:
    return [r for r in report.runs if r.workload == workload and r.status == "headline"]


def _by(runs: list[RunRecord], key) -> dict:
    groups: dict = {}
    for run in runs:
        groups.setdefault(key(run), []).append(run)
    return groups


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.fmean(values), 3) if values else None


def _who(run: RunRecord) -> dict:
    node = run.parameters.get("node")
    spec = next((n for n in run.cluster.nodes if n.name == node), None)
    return {"node": node, "board": spec.board if spec else run.cluster.board,
            "storage": spec.storage if spec else run.cluster.storage}


def cpu_rows(report: Report) -> list[dict]:
    rows = []
    for (node, board), runs in sorted(_by(_counted(report, "sysbench-cpu"), lambda r: (_who(r)["node"], _who(r)["board"])).items()):
        threads = sorted({t for r in runs for t in r.result.get("events_per_s", {})}, key=int)
        rows.append({"node": node, "board": board, "n": len(runs),
                     **{f"{t} threads": _mean(r.result["events_per_s"].get(t) for r in runs) for t in threads},
                     "runs": " ".join(r.run_id for r in runs)})
    return rows


def storage_rows(report: Report) -> list[dict]:
    rows = []
    for (node, medium), runs in sorted(_by(_counted(report, "storage"), lambda r: (_who(r)["node"], _who(r)["storage"])).items()):
        for access in ("seq-read", "seq-write", "rand-read", "rand-write"):
            records = sorted({k for r in runs for k in r.result.get("mb_s", {}).get(access, {})},
                             key=lambda s: float(s[:-1]) * {"k": 1, "m": 1024}[s[-1]])
            row = {"node": node, "storage": medium, "access": access, "n": len(runs)}
            row.update({f"{rec} MB/s": _mean(r.result["mb_s"][access].get(rec) for r in runs) for rec in records})
            if access in ("rand-read", "rand-write"):
                row["4k IOPS"] = _mean(r.result.get("iops_4k", {}).get(access) for r in runs)
            if access in ("seq-read", "seq-write"):
                row["dd MB/s"] = _mean(r.result.get("buffered_mb_s", {}).get(access) for r in runs)
            row["runs"] = " ".join(r.run_id for r in runs)
            rows.append(row)
    return rows


def network_rows(report: Report) -> list[dict]:
    return [{"node": node, "n": len(runs), "to master Mbit/s": _mean(r.result.get("to_master_mbit_s") for r in runs),
             "from master Mbit/s": _mean(r.result.get("from_master_mbit_s") for r in runs),
             "link Mbit/s": _mean(r.result.get("link_mbit_s") for r in runs), "runs": " ".join(r.run_id for r in runs)}
            for node, runs in sorted(_by(_counted(report, "iperf"), lambda r: _who(r)["node"]).items())]


def _node_power(run: RunRecord) -> tuple[float | None, str | None, float | None]:
    m = run.measurements
    node = run.parameters.get("node")
    p = m.power.get(node) if m else None
    temp = m.nodes[node].temp_max_c if m and node in m.nodes else None
    return (p.avg_w if p else None), (p.source + (" (estimate)" if p.estimate else "") if p else None), temp


def power_rows(report: Report) -> list[dict]:
    rows = []
    idle = _by(_counted(report, "idle"), lambda r: _who(r)["node"])
    stress = _by(_counted(report, "stress"), lambda r: _who(r)["node"])
    for node in sorted(set(idle) | set(stress)):
        i, s = idle.get(node, []), stress.get(node, [])
        sources = {_node_power(r)[1] for r in i + s} - {None}
        rows.append({"node": node, "board": _who((i + s)[0])["board"], "idle W": _mean(_node_power(r)[0] for r in i),
                     "stress W": _mean(_node_power(r)[0] for r in s),
                     "max °C under stress": _mean(_node_power(r)[2] for r in s),
                     "seconds": _mean(r.parameters.get("seconds") for r in i + s), "source": ", ".join(sorted(sources)),
                     "runs": " ".join(r.run_id for r in i + s)})
    return rows


def hpl_watts(run) -> float | None:
    """The cluster's mean power over HPL itself where hpcc timed it long enough, else over the run
    (hpcc's other tests included)."""
    m = run.measurements
    if m is None:
        return None
    for phase in m.phases:
        if phase.get("name") == "hpcc HPL" and phase.get("avg_w"):
            return phase["avg_w"]
    return m.cluster_power.avg_w if m.cluster_power else None


def _interval(e) -> str:
    return f"{e.ci_low:.3g}–{e.ci_high:.3g}" if e is not None and e.ci_low is not None else "—"


def _hpl_cells(report: Report) -> list[tuple[tuple, list[RunRecord], "stats.Estimate | None"]]:
    """HPL's runs by memory share (another share solves another N), nodes, N and NB, with Rmax's estimate."""
    groups = _by(_counted(report, "hpl"), lambda r: (r.parameters.get("memory_fraction") or 0, r.parameters["nodes"],
                                                     r.parameters["n"], r.parameters["nb"]))
    cells = []
    for key, runs in sorted(groups.items()):
        values = [r.result["rmax_gflops"] for r in runs if r.result.get("rmax_gflops")]
        cells.append((key, runs, stats.estimate(values) if values else None))
    return cells


def _share(fraction: float) -> str:
    return f"{fraction:.0%}" if fraction else "—"


def hpl_rows(report: Report) -> list[dict]:
    """Rmax by node count, per memory share, with its 95 % interval over the repetitions, and the
    speedup over the fewest nodes of the same share with its own."""
    rows = []
    bases: dict = {}
    for (share, nodes, n, nb), runs, rmax in _hpl_cells(report):
        watts = _mean(hpl_watts(r) for r in runs)
        base = bases.setdefault(share, (nodes, rmax)) if rmax else None
        speedup = stats.ratio(rmax, base[1]) if rmax and base and base[0] < nodes else None
        rows.append({"memory share": _share(share), "nodes": nodes, "N": n, "NB": nb,
                     "P x Q": f"{runs[0].parameters['p']} x {runs[0].parameters['q']}",
                     "n": len(runs), "time s": _mean(r.result.get("hpl_seconds") for r in runs),
                     "Rmax Gflops": round(rmax.mean, 4) if rmax else None, "Rmax 95 %": _interval(rmax),
                     "speedup": round(speedup.value, 3) if speedup else (1.0 if rmax else None),
                     "speedup 95 %": _interval(speedup),
                     "Rpeak here Gflops": _mean(r.result.get("rpeak_here_gflops") for r in runs),
                     "efficiency": _mean(r.result.get("efficiency") for r in runs),
                     "Mflops per W": round(rmax.mean * 1000 / watts, 2) if rmax and watts else None,
                     "runs": " ".join(r.run_id for r in runs)})
    return rows


def _cpu_at_peak(run: RunRecord, node: str) -> float | None:
    """The server's CPU over the step at the peak rate; runs stored before steps were timed give the
    whole ramp's mean."""
    peak = f"web {run.result.get('peak_rate')} req/s"
    for phase in run.measurements.phases:
        if phase.get("name") == peak and phase.get("cpu_busy_pct") is not None:
            return phase["cpu_busy_pct"]
    return run.measurements.nodes[node].cpu_busy_pct_mean


def web_rows(report: Report) -> list[dict]:
    rows = []
    for (node, size), runs in sorted(_by(_counted(report, "web"), lambda r: (_who(r)["node"], r.result.get("doc_size"))).items(),
                                     key=lambda kv: (kv[0][0], int(str(kv[0][1]).rstrip("KB") or 0))):
        cpu = [_cpu_at_peak(r, node) for r in runs if r.measurements and node in r.measurements.nodes]
        rows.append({"server": node, "document": size, "n": len(runs), "peak req/s": _mean(r.result.get("peak_rate") for r in runs),
                     "Mbit/s at peak": _mean(r.result.get("net_mbit_s_at_peak") for r in runs),
                     "server CPU % at peak": _mean(cpu), "runs": " ".join(r.run_id for r in runs)})
    return rows


def _uniform(make):
    """Every row with every column of the table (in first-seen order, runs last), for CSV and HTML."""
    def rows(report: Report) -> list[dict]:
        found = make(report)
        columns = list(dict.fromkeys(k for row in found for k in row if k != "runs")) + ["runs"]
        return [{c: row.get(c) for c in columns} for row in found]
    return rows


TABLES = {"node_cpu": ("CPU: sysbench events per second by threads (Lee & Park 2026, Table 4)", _uniform(cpu_rows)),
          "node_storage": ("Storage: fio MB/s by access and record size, 4 KB IOPS (Tables 6-7)", _uniform(storage_rows)),
          "node_network": ("Network: iperf3 between each worker and the master (Table 5)", _uniform(network_rows)),
          "node_power": ("Power: idle and under stress-ng (Table 3)", _uniform(power_rows)),
          "hpl": ("HPL by node count (Baun 2016, Table 7); Mflops per W over HPL itself where hpcc timed it a second or more, "
                  "else over the whole hpcc run", _uniform(hpl_rows)),
          "web": ("Web-serving capacity by document size (Hajji & Tso 2016, Fig. 4)", _uniform(web_rows))}


def plots(report: Report) -> list[Plot]:
    out = []
    curves = _counted(report, "netpipe")
    if curves:
        fig, (left, right) = pyplot().subplots(1, 2, figsize=(10, 3.6))
        for run in curves:
            points = run.result.get("points") or []
            label = f"{run.parameters.get('transport', '?').upper()} {run.parameters.get('node')}-{run.parameters.get('peer')}"
            left.plot([p[0] for p in points], [p[1] for p in points], label=label)
            right.plot([p[0] for p in points], [p[2] for p in points], label=label)
        for ax, what in ((left, "throughput (Mbit/s)"), (right, "one-way time (µs)")):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("message size (bytes)")
            ax.set_ylabel(what)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        right.set_yscale("log")
        fig.suptitle("NetPIPE: TCP and MPI (Baun 2016, Fig. 3)", fontsize=10)
        out.append(render_figure(fig, "NetPIPE", "NetPIPE throughput and latency by message size, TCP and MPI"))
    hpl = [(key, rmax) for key, _, rmax in _hpl_cells(report) if rmax]
    if hpl:
        fig, ax = pyplot().subplots(figsize=(6, 3.6))
        for share in dict.fromkeys(key[0] for key, _ in hpl):
            points = [(key[1], rmax) for key, rmax in hpl if key[0] == share]
            below = [e.mean - e.ci_low if e.ci_low is not None else 0 for _, e in points]
            above = [e.ci_high - e.mean if e.ci_high is not None else 0 for _, e in points]
            ax.errorbar([nodes for nodes, _ in points], [e.mean for _, e in points], yerr=[below, above], marker="o",
                        capsize=4, label=f"memory share {_share(share)}")
        ax.set_xlabel("nodes")
        ax.set_ylabel("Rmax (Gflops)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_title("HPL Rmax by node count, mean and 95 % interval (Baun 2016, Table 7)", fontsize=10)
        out.append(render_figure(fig, "HPL Rmax", "HPL's Rmax by node count and memory share, with 95 % intervals"))
    rows = web_rows(report)
    if rows:
        fig, ax = pyplot().subplots(figsize=(6, 3.6))
        ax.plot([r["document"] for r in rows], [r["peak req/s"] for r in rows], "o-", label="peak sustained req/s")
        ax.set_xlabel("document size")
        ax.set_ylabel("requests per second")
        other = ax.twinx()
        other.plot([r["document"] for r in rows], [r["Mbit/s at peak"] for r in rows], "s:", color="tab:orange",
                   label="Mbit/s at peak")
        other.set_ylabel("Mbit/s")
        ax.grid(alpha=0.3)
        ax.set_title("web-serving capacity (Hajji & Tso 2016, Fig. 4)", fontsize=10)
        out.append(render_figure(fig, "Web capacity", "Highest sustained request rate and throughput by document size"))
    return out
