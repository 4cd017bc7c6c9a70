"""What a run document keeps of the machines' CPUs around the run, to explain a poor result: how
busy each machine was outside the cluster before the run, the share of the run its cores spent at
each frequency step, and the clock they really ran at against the one cpufreq reported.

A machine is a board (by its node's name) or, where the nodes share it, "host". A figure that could
not be had is not invented: its `unavailable` says why. Runs stored before these were recorded have
no `diagnostics` and load as they are.
"""

from pydantic import BaseModel, ConfigDict


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProcessShare(_Part):
    name: str  # the program's name as the kernel keeps it (15 characters), or "kernel threads"
    pct: float  # % of all the machine's cores


class MachineBusy(_Part):
    """One machine over the window before the run, in % of all its cores."""

    window_s: float | None = None
    busy_pct: float | None = None
    outside_pct: float | None = None  # used by processes that are not the cluster's own
    top: list[ProcessShare] = []  # the busiest of those, by name
    # Busy time no live process accounts for: processes that ended within the window, interrupts.
    unattributed_pct: float | None = None
    unavailable: str | None = None

    def sentence(self, machine: str) -> str:
        """"host 85 % busy outside the cluster (python3 72 %)", or why it is not known."""
        if self.outside_pct is None:
            return f"{machine}: {self.unavailable or 'not read'}"
        named = [f"{p.name} {_pct(p.pct)} %" for p in self.top]
        if self.unattributed_pct and self.unattributed_pct >= 1:
            named.append(f"processes that ended and interrupts {_pct(self.unattributed_pct)} %")
        shares = f" ({', '.join(named)})" if named else ""
        return f"{machine} {_pct(self.outside_pct)} % busy outside the cluster{shares}"


class BusyCheck(_Part):
    """The too-busy check before the run: a machine above `threshold_pct` outside the cluster flags it."""

    threshold_pct: float
    machines: dict[str, MachineBusy] = {}

    @property
    def too_busy(self) -> dict[str, MachineBusy]:
        return {name: m for name, m in self.machines.items()
                if m.outside_pct is not None and m.outside_pct > self.threshold_pct}


class FrequencyStep(_Part):
    mhz: float
    pct: float  # of the time the policy's statistics counted during the recording


class PolicyResidency(_Part):
    """One cpufreq policy (CPUs that share a clock) over the recording: the job and its margins."""

    cpus: list[int]
    seconds: float
    top_mhz: float  # the highest step the policy has
    below_top_pct: float
    steps: list[FrequencyStep] = []  # the steps it spent time at, highest first


class Residency(_Part):
    policies: dict[str, PolicyResidency] = {}
    unavailable: str | None = None

    def text(self) -> str:
        if not self.policies:
            return f"unavailable: {self.unavailable}"
        return "; ".join(f"{name} (CPUs {_cpus(p.cpus)}): " + ", ".join(f"{s.mhz:.0f} MHz {_pct(s.pct)} %"
                                                                        for s in p.steps)
                         for name, p in self.policies.items())


class DomainClock(_Part):
    """One frequency domain's clock under a busy loop on one of its CPUs, before the run."""

    cpus: list[int] = []
    cpu: int | None = None
    measured_mhz: float | None = None  # cycles / time, counted by perf
    cpufreq_mhz: float | None = None  # scaling_cur_freq while the loop ran
    firmware_mhz: float | None = None  # `vcgencmd measure_clock arm` while the loop ran (a Pi)
    unavailable: str | None = None


class MachineClock(_Part):
    domains: dict[str, DomainClock] = {}
    method: str | None = None
    unavailable: str | None = None

    def text(self) -> str:
        if self.unavailable:
            return self.unavailable
        parts = []
        for name, d in self.domains.items():
            said = ", ".join(f"{source} {value:.0f} MHz" for source, value in
                             (("cpufreq", d.cpufreq_mhz), ("firmware", d.firmware_mhz)) if value is not None)
            measured = (f"{d.measured_mhz:.0f} MHz measured" if d.measured_mhz is not None
                        else f"not measured ({d.unavailable})")
            parts.append(f"{name} (CPU {d.cpu}): {measured}" + (f"; {said} reported" if said else ""))
        return "; ".join(parts)


class Diagnostics(_Part):
    busy: BusyCheck | None = None  # None: the check was off
    residency: dict[str, Residency] = {}
    clock: dict[str, MachineClock] = {}

    def lines(self) -> list[str]:
        """Each diagnostic in a line, for `results show` and the report."""
        found = []
        if self.busy is not None:
            found += [f"before the run: {m.sentence(name)} (flagged above {self.busy.threshold_pct:g} %)"
                      for name, m in self.busy.machines.items()]
        found += [f"clock of {name}: {c.text()}" for name, c in self.clock.items()]
        found += [f"time at each frequency step of {name}: {r.text()}" for name, r in self.residency.items()]
        return found


def _pct(value: float) -> str:
    """72 for 72.4, 0.5 for 0.5: whole percents, except the small shares that would read 0 or 1."""
    return f"{round(value) if value >= 10 else round(value, 1):g}"


def _cpus(cpus: list[int]) -> str:
    """0-3 for [0, 1, 2, 3]."""
    if cpus and cpus == list(range(cpus[0], cpus[-1] + 1)) and len(cpus) > 1:
        return f"{cpus[0]}-{cpus[-1]}"
    return ",".join(map(str, cpus))
