"""What explains a run's time, from the diagnostics stored with it: a run markedly slower than its
cell's others is said to be so, with the diagnostics that explain it — "slower than its cell's
others (1.8x their mean of 10.2 s); the host was 80 % busy outside the cluster before it started
(python3 72 %)" — or with "no diagnostic explains it".

A diagnostic explains a run when
- a machine was busier outside the cluster before the run than the run's threshold (the run is
  flagged too busy to benchmark),
- a board's cores, measured under load before the run, ran below CLOCK_FLOOR of the clock cpufreq
  or its firmware reported, or of its profile's clock, or
- a board's cores spent more of the run below their top frequency step than they were idle, by
  more than CLOCK_SHARE of the run. A governor lowers an idle core's clock, which costs nothing;
  time below the top step beyond the idle time is time the cores worked at a lower clock
  (throttling, a capped clock). Only a board's residency is judged: how idle this host was during
  an emulated run is not measured, so its residency is shown, not judged.
"""

from .. import profiles
from ..errors import SbclabError
from ..results.diagnostics import Diagnostics
from ..results.schema import RunRecord
from .cells import Cell

SLOWER = 0.10  # how much slower than the mean of its cell's others a run must be to be called slower
CLOCK_FLOOR = 0.90  # as monitor/health.py's clock flag
CLOCK_SHARE = 5.0  # % of the run


def _where(machine: str) -> str:
    return "the host" if machine == "host" else machine


def _profile_mhz(run: RunRecord, machine: str) -> float | None:
    for node in run.cluster.nodes:
        if node.name == machine:
            try:
                return profiles.board(node.board).clock_ghz * 1000
            except SbclabError:
                return None
    return None


def findings(run: RunRecord) -> list[str]:
    """The diagnostics of a run that would explain a poor time, one clause each."""
    m = run.measurements
    d: Diagnostics | None = m.diagnostics if m else None
    if d is None:
        return []
    found = []
    if d.busy is not None:
        for machine, busy in d.busy.too_busy.items():
            said = busy.sentence(machine).removeprefix(machine + " ")
            found.append(f"{_where(machine)} was {said} before it started")
    for machine, clock in d.clock.items():
        profile = _profile_mhz(run, machine)
        for name, domain in clock.domains.items():
            measured = domain.measured_mhz
            claims = (("cpufreq reported", domain.cpufreq_mhz), ("the firmware reported", domain.firmware_mhz),
                      ("its board's profile says", profile))
            # The first claim the cores fell short of: a Pi's cpufreq says what was asked for while its
            # firmware throttles (sbc-bench's finding), then the firmware's own word, then the profile.
            short = [(who, mhz) for who, mhz in claims if measured is not None and mhz and measured < CLOCK_FLOOR * mhz]
            if short:
                who, mhz = short[0]
                found.append(f"{machine}'s cores ({name}) ran at {measured:.0f} MHz measured while {who} {mhz:.0f} MHz")
    for machine, residency in d.residency.items():
        figures = m.nodes.get(machine)
        if figures is None or figures.cpu_busy_pct_mean is None:
            continue
        idle = 100.0 - figures.cpu_busy_pct_mean
        for name, policy in residency.policies.items():
            if policy.below_top_pct - idle > CLOCK_SHARE:
                lowest = min(s.mhz for s in policy.steps)
                found.append(f"{machine}'s cores ({name}) spent {policy.below_top_pct:.0f} % of the run below their "
                             f"top step of {policy.top_mhz:.0f} MHz while idle {idle:.0f} % of it (down to "
                             f"{lowest:.0f} MHz)")
    return found


def slowdown(run: RunRecord, cell: Cell) -> tuple[float, float] | None:
    """(this run's time over the mean of its cell's other counted runs, that mean); None without others."""
    others = [r.wall_time_s for r in cell.runs if r.run_id != run.run_id]
    if not others or run.wall_time_s <= 0:
        return None
    mean = sum(others) / len(others)
    return (run.wall_time_s / mean, mean) if mean > 0 else None


def explain(run: RunRecord, cell: Cell) -> str:
    """The sentence that says what explains the run's time: "" when it is not slower and nothing stands out."""
    found = findings(run)
    slower = slowdown(run, cell)
    if slower and slower[0] >= 1 + SLOWER:
        head = f"slower than its cell's others ({slower[0]:.2f}x their mean of {slower[1]:.1f} s)"
        return f"{head}; {'; '.join(found)}" if found else f"{head}; no diagnostic explains it"
    return "; ".join(found)


def rows(cells: list[Cell], with_cluster: bool = False) -> list[dict]:
    """One row per run with diagnostics: each diagnostic in short, and what explains its time."""
    found = []
    for cell in cells:
        for run in sorted(cell.runs + cell.excluded, key=lambda r: r.started_at):
            d = run.measurements.diagnostics if run.measurements else None
            if d is None:
                continue
            found.append({
                "run_id": run.run_id, "cell": cell.key.label(with_cluster), "status": run.status,
                "wall_time_s": round(run.wall_time_s, 3),
                "busy_outside": ("; ".join(m.sentence(name) for name, m in d.busy.machines.items()) if d.busy
                                 else "not checked"),
                "clock": "; ".join(f"{name}: {c.text()}" for name, c in d.clock.items()),
                "frequency_steps": "; ".join(f"{name}: {r.text()}" for name, r in d.residency.items()),
                "explanation": explain(run, cell)})
    return found
