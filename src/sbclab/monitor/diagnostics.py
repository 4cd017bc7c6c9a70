"""Diagnostics of the machines' CPUs around a run (cpu_probe.py reads them): before it, how busy
each machine is outside the cluster and, on boards, the clock its cores really run at; over it, the
time at each frequency step. They are stored with the run's measurements, and a machine busier
outside the cluster than MonitorSettings.busy_max_pct flags the run: "too busy to benchmark".

The machines are the boards, each read over SSH by the probe copied beside its sampler, or this
host, read here, where the nodes share it (emulated nodes, the processes backend): there the other
clusters, tests and programs of the host are what the check catches. An emulated node's clock is
not measured: its CPU is a quota of the host's cores, so its clock is the host's.
"""

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..cluster.spec import NodeSpec
from ..cluster.ssh import SshTransport
from ..cluster.transport import Transport
from ..errors import SbclabError
from ..results.diagnostics import (BusyCheck, Diagnostics, DomainClock, MachineBusy, MachineClock, PolicyResidency,
                                   Residency)
from . import cpu_probe
from .settings import MonitorSettings

SHIPPED = ("cpu_probe.py", "readings.py")
CLOCK_METHOD = (f"perf stat: cycles:u / task-clock over {cpu_probe.CLOCK_LOOP_S:g} s of a busy loop on the domain's "
                "first CPU; cpufreq and the firmware read while it ran")
EMULATED_CLOCK = "emulated: the node's CPU is a quota, its clock is the host's"
SHARED_CLOCK = "the nodes are processes of this host: their clock is the host's"
HOST = "host"


@dataclass
class Before:
    """What was read before the run, and how to read the machines again after it."""

    machines: dict[str, NodeSpec | None]  # name -> board, or None for this host
    read: dict[str, dict] = field(default_factory=dict)
    threshold_pct: float = 0.0
    checked: bool = False
    clock_unavailable: str | None = None


def _marks(transport: Transport, node: NodeSpec | None) -> tuple[list[str], list[str]]:
    """What names the cluster's processes: its folder on their command lines (where they keep
    configuration, logs and data) and, for emulated nodes, its cgroups."""
    if node is not None and isinstance(transport, SshTransport):
        return [f"{transport.cluster_root(node)}/"], []
    cgroups = [f"/sbclab/{transport.spec.name}/"] if transport.name == "emulated" else []
    return [f"{transport.state.root}/"], cgroups


def _probe_dir(transport: SshTransport, node: NodeSpec) -> Path:
    return transport.cluster_root(node) / "sampler"


def _on_board(transport: SshTransport, node: NodeSpec, args: list[str], timeout_s: float) -> dict:
    """The probe's answer on a board; {"error": why} where it gave none."""
    here = Path(__file__).parent
    folder = _probe_dir(transport, node)
    try:
        transport.make_dirs(node, [folder])
        transport.put(node, folder, {name: (here / name).read_text() for name in SHIPPED})
        done = transport.capture(node, ["python3", str(folder / "cpu_probe.py"), *args], timeout_s=timeout_s)
    except (SbclabError, OSError) as err:
        return {"error": str(err)}
    if done.status != 0:
        return {"error": (done.stderr.decode(errors="replace").strip().splitlines() or [f"exit {done.status}"])[-1]}
    try:
        return json.loads(done.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"the probe printed no reading: {done.stdout.decode(errors='replace')[:160]!r}"}


def _read(transport: Transport, name: str, node: NodeSpec | None, when: str, window_s: float, clock_s: float) -> dict:
    commands, cgroups = _marks(transport, node)
    if node is None:
        if when == "before":
            return cpu_probe.before(window_s, commands, cgroups)
        return {"residency": cpu_probe.residency_snapshot()}
    args = [when, "--window", f"{window_s:g}", "--clock", f"{clock_s:g}",
            *(f"--own-command={m}" for m in commands), *(f"--own-cgroup={m}" for m in cgroups)]
    return _on_board(transport, node, args, timeout_s=window_s + 20 * clock_s + 60)


def _each(machines: dict[str, NodeSpec | None], work) -> dict[str, dict]:
    with ThreadPoolExecutor(max_workers=min(16, len(machines))) as pool:
        return dict(zip(machines, pool.map(lambda name: work(name, machines[name]), machines)))


def machines(transport: Transport) -> dict[str, NodeSpec | None]:
    """The boards by name, or this host alone where the nodes share it."""
    if transport.shares_host:
        return {HOST: None}
    return {node.name: node for node in transport.spec.nodes}


def before_run(transport: Transport, settings: MonitorSettings) -> Before:
    """Every machine read at once: the busy window, the clocks of boards, the residency counters."""
    found = Before(machines=machines(transport), threshold_pct=settings.busy_max_pct,
                   checked=settings.busy_window_s > 0)
    if transport.shares_host:
        found.clock_unavailable = EMULATED_CLOCK if transport.name == "emulated" else SHARED_CLOCK
    clock_s = 0.0 if transport.shares_host else cpu_probe.CLOCK_LOOP_S
    found.read = _each(found.machines, lambda name, node: _read(transport, name, node, "before",
                                                                settings.busy_window_s, clock_s))
    return found


def after_run(transport: Transport, before: Before) -> Diagnostics:
    """The residency counters read again, and everything turned into the run's diagnostics."""
    after = _each(before.machines, lambda name, node: _read(transport, name, node, "after", 0, 0))
    return diagnose(before, after)


def diagnose(before: Before, after: dict[str, dict]) -> Diagnostics:
    """The run's diagnostics from the probe's readings before and after it, per machine."""
    busy = BusyCheck(threshold_pct=before.threshold_pct) if before.checked else None
    residency, clock = {}, {}
    for name in before.machines:
        then, now = before.read.get(name) or {}, after.get(name) or {}
        failed = then.get("error") or now.get("error")
        if busy is not None:
            busy.machines[name] = (MachineBusy(unavailable=f"the probe failed: {then['error']}") if "error" in then
                                   else MachineBusy(**then["busy"]))
        if failed:
            residency[name] = Residency(unavailable=f"the probe failed: {failed}")
        else:
            spent = cpu_probe.residency_between(then["residency"], now["residency"])
            policies = {p: PolicyResidency(**r) for p, r in spent.get("policies", {}).items()}
            residency[name] = Residency(unavailable=spent.get("unavailable"), policies=policies)
        if before.clock_unavailable:
            clock[name] = MachineClock(unavailable=before.clock_unavailable)
        elif "error" in then:
            clock[name] = MachineClock(unavailable=f"the probe failed: {then['error']}")
        elif then.get("clock"):
            clock[name] = MachineClock(method=CLOCK_METHOD,
                                       domains={d: DomainClock(**c) for d, c in then["clock"].items()})
    return Diagnostics(busy=busy, residency=residency, clock=clock)


def too_busy_flags(diagnostics: Diagnostics | None, at: float) -> list[dict]:
    """A health flag for each machine busier outside the cluster than the threshold before the run:
    its time measures the cluster sharing its CPUs with something else."""
    if diagnostics is None or diagnostics.busy is None:
        return []
    check = diagnostics.busy
    return [{"node": name, "kind": "too_busy", "at": at,
             "detail": f"too busy to benchmark: {m.sentence(name)} before the run "
                       f"(more than {check.threshold_pct:g} %)"}
            for name, m in check.too_busy.items()]
