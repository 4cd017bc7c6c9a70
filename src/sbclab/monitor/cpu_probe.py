"""What a machine's CPUs do around a run, read on the machine itself: how busy it is outside the
cluster before the run, how long its cores spent at each frequency step, and the clock they really
run at.

Standard library only, like sampler.py: on a board it is copied beside the sampler and run by the
board's python3 (`python3 cpu_probe.py before ...` prints one JSON object); on this host it is
imported. Every reading that cannot be had is returned as {"unavailable": why}, never a guess.

Busy outside the cluster. /proc/stat is read before and after a short window, and so is every
process's CPU time (/proc/PID/stat utime + stime, all its threads). A process is the cluster's own
when it, or a process it descends from, names the cluster's folder on its command line or sits in
one of the cluster's cgroups (/proc/PID/cgroup): daemons, their YARN containers, an emulated node's
whole group. The machine's busy share less the own processes' is the share used outside the
cluster; the outside processes are named, busiest first, and what no live process accounts for
(processes that ended during the window, interrupts) is kept apart.

Frequency residency. cpufreq's statistics (policy*/stats/time_in_state: each step in kHz and the
time spent at it in 10 ms units) read before and after the run give the share of the run at each step.

Measured clock. sbc-bench times a dependent chain of known cycles per iteration; the boards here
have no compiler to build one and an interpreted loop has no known cycle count, so the cycles are
counted instead: `perf stat` counts the core's cycles (the PMU's own counter, user space only, which
perf_event_paranoid 2 allows anyone) and its task-clock over half a second of a busy loop pinned to
one core of each frequency domain, and cycles / time is the clock the core ran at, whatever the
loop's instructions. scaling_cur_freq and, on a Pi, `vcgencmd measure_clock arm` are read while the
loop runs, so what cpufreq and the firmware report is compared under the same load.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import time

if __package__ in (None, ""):  # copied to a board as plain files
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import readings  # type: ignore[no-redef]
else:
    from . import readings

BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq", "steal")
KERNEL_THREADS = "kernel threads"  # children of kthreadd (pid 2): no program of their own to name
TOP = 5  # outside processes named
SHOWN_PCT = 0.5  # smaller shares are not worth a name
CLOCK_LOOP_S = 0.5
# A busy loop of its own interpreter: user space only, its clock reads are vDSO calls.
_LOOP = "import sys, time\nend = time.perf_counter() + float(sys.argv[1])\nwhile time.perf_counter() < end:\n    pass\n"


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


# --- busy outside the cluster --------------------------------------------------------------------

def process_stat(text: str) -> tuple[str, int, int, int]:
    """(name, parent pid, CPU ticks of user + system time, start time in ticks) of a /proc/PID/stat."""
    name = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return name, int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[19])


def processes(cmdline_marks: list[str], cgroup_marks: list[str], proc: str = "/proc") -> dict[str, list]:
    """Every process now: pid -> [name, ticks, start, own]; `own` by the marks, inherited from parents."""
    found, parent, marked = {}, {}, set()
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            name, ppid, ticks, start = process_stat(_read(f"{proc}/{entry}/stat"))
            command = _read_bytes(f"{proc}/{entry}/cmdline").replace(b"\0", b" ").decode(errors="replace")
            groups = _read(f"{proc}/{entry}/cgroup") if cgroup_marks else ""
        except (OSError, ValueError, IndexError):
            continue  # ended while it was read
        pid = int(entry)
        if ppid == 2 or pid == 2:
            name = KERNEL_THREADS
        found[pid] = [name, ticks, start]
        parent[pid] = ppid
        if any(m in command for m in cmdline_marks) or any(m in groups for m in cgroup_marks):
            marked.add(pid)
    own: dict[int, bool] = {}

    def is_own(pid: int) -> bool:
        chain = []
        while pid in parent and pid not in own and pid not in marked and pid > 1 and len(chain) < 512:
            chain.append(pid)
            pid = parent[pid]
        verdict = own.get(pid, pid in marked)
        for p in chain:
            own[p] = verdict
        return verdict
    return {str(pid): [*values, is_own(pid)] for pid, values in found.items()}


def snapshot(cmdline_marks: list[str], cgroup_marks: list[str], proc: str = "/proc") -> dict:
    return {"cpu": readings.proc_stat_cpu(_read(f"{proc}/stat")), "procs": processes(cmdline_marks, cgroup_marks, proc)}


def busy_between(before: dict, after: dict, window_s: float) -> dict:
    """The machine's CPU use over the window between two snapshots, in % of all its cores: in all,
    by the cluster's own processes, outside them, the busiest outside by name, and what no live
    process accounts for."""
    total = sum(after["cpu"][k] - before["cpu"][k] for k in after["cpu"])
    if total <= 0:
        return {"unavailable": "/proc/stat did not advance over the window"}
    busy = sum(after["cpu"][k] - before["cpu"][k] for k in BUSY_FIELDS)
    own, outside = 0, {}
    for pid, (name, ticks, start, mine) in after["procs"].items():
        earlier = before["procs"].get(pid)
        # A pid seen before with another start time is a new process: all its time is in the window.
        used = ticks - earlier[1] if earlier and earlier[2] == start else ticks
        if used <= 0:
            continue
        if mine:
            own += used
        else:
            outside[name] = outside.get(name, 0) + used
    pct = lambda ticks: round(100.0 * ticks / total, 1)  # noqa: E731
    named = sum(outside.values())
    ranked = sorted(outside.items(), key=lambda item: -item[1])
    return {"window_s": round(window_s, 2), "busy_pct": pct(busy), "outside_pct": pct(max(0, busy - own)),
            "top": [{"name": n, "pct": pct(t)} for n, t in ranked[:TOP] if pct(t) >= SHOWN_PCT],
            "unattributed_pct": pct(max(0, busy - own - named))}


def busy_outside(window_s: float, cmdline_marks: list[str], cgroup_marks: list[str], proc: str = "/proc") -> dict:
    try:
        before = snapshot(cmdline_marks, cgroup_marks, proc)
        start = time.monotonic()
        time.sleep(window_s)
        after = snapshot(cmdline_marks, cgroup_marks, proc)
    except (OSError, ValueError) as err:
        return {"unavailable": f"{proc} could not be read ({err})"}
    return busy_between(before, after, time.monotonic() - start)


# --- frequency residency -------------------------------------------------------------------------

def cpu_list(text: str) -> list[int]:
    """A cpufreq related_cpus value ("0 1 2 3"), or a kernel CPU list ("0-3,6")."""
    cpus = []
    for part in text.replace(",", " ").split():
        low, _, high = part.partition("-")
        cpus += range(int(low), int(high or low) + 1)
    return cpus


def time_in_state(text: str) -> dict[int, int]:
    """A policy's stats/time_in_state: step in kHz -> time spent at it, in 10 ms units."""
    steps = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            steps[int(parts[0])] = int(parts[1])
    return steps


def residency_snapshot(sys_root: str = "/sys") -> dict:
    """Each cpufreq policy's CPUs and time at each step now, or why there are none."""
    policies = sorted(glob.glob(os.path.join(sys_root, "devices/system/cpu/cpufreq/policy[0-9]*")),
                      key=lambda p: int(p.rsplit("policy", 1)[1]))
    if not policies:
        return {"unavailable": "no cpufreq on this machine (a virtual machine, or a kernel without a cpufreq driver)"}
    found = {}
    for folder in policies:
        try:
            steps = time_in_state(_read(os.path.join(folder, "stats/time_in_state")))
            cpus = cpu_list(_read(os.path.join(folder, "related_cpus")))
        except (OSError, ValueError):
            continue
        if steps:
            found[os.path.basename(folder)] = {"cpus": cpus, "steps": {str(k): v for k, v in steps.items()}}
    if not found:
        return {"unavailable": "cpufreq keeps no statistics here (no policy*/stats/time_in_state: "
                               "a kernel without CONFIG_CPU_FREQ_STAT)"}
    return {"policies": found}


def residency_between(before: dict, after: dict) -> dict:
    """The share of the time between two snapshots each policy spent at each step (% of that time)."""
    if "unavailable" in before or "unavailable" in after:
        return {"unavailable": before.get("unavailable") or after["unavailable"]}
    policies = {}
    for name, then in before["policies"].items():
        now = after["policies"].get(name)
        if now is None:
            continue
        spent = {int(k): now["steps"].get(k, 0) - v for k, v in then["steps"].items()}
        if any(v < 0 for v in spent.values()):
            return {"unavailable": f"{name}'s statistics were reset during the run"}
        total = sum(spent.values())
        if total <= 0:
            continue
        top = max(spent)
        policies[name] = {"cpus": then["cpus"], "seconds": round(total / 100, 2), "top_mhz": top / 1000,
                          "steps": [{"mhz": khz / 1000, "pct": round(100.0 * t / total, 1)}
                                    for khz, t in sorted(spent.items(), reverse=True) if t > 0],
                          "below_top_pct": round(100.0 * (total - spent[top]) / total, 1)}
    if not policies:
        return {"unavailable": "cpufreq counted no time at any step during the run"}
    return {"policies": policies}


# --- the clock the cores run at --------------------------------------------------------------------

def perf_stat(text: str) -> tuple[int, float]:
    """(cycles, task-clock in ms) from `perf stat -x,` output; ValueError saying why where perf counted none."""
    cycles = task_ms = None
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) < 3:
            continue
        value, event = fields[0], fields[2]
        if event.startswith("cycles"):
            if not value[:1].isdigit():
                raise ValueError(f"perf counted no cycles ({value}: this kernel or machine gives no "
                                 "cycle counter to user space)")
            cycles = int(value)
        elif event.startswith("task-clock") and value[:1].isdigit():
            task_ms = float(value)
    if cycles is None or not task_ms:
        raise ValueError("perf printed no cycles and task-clock: " + " ".join(text.split())[:160])
    return cycles, task_ms


def domains(sys_root: str = "/sys") -> list[tuple[str, list[int]]]:
    """Each frequency domain's name and CPUs: cpufreq's policies, or every CPU as one without cpufreq."""
    found = []
    for folder in sorted(glob.glob(os.path.join(sys_root, "devices/system/cpu/cpufreq/policy[0-9]*")),
                         key=lambda p: int(p.rsplit("policy", 1)[1])):
        try:
            found.append((os.path.basename(folder), cpu_list(_read(os.path.join(folder, "related_cpus")))))
        except (OSError, ValueError):
            continue
    return found or [("all", sorted(os.sched_getaffinity(0)))]


def measure_clock(cpus: list[int], seconds: float = CLOCK_LOOP_S, sys_root: str = "/sys") -> dict:
    """One domain's clock: measured by perf on its first CPU, beside what cpufreq and the firmware report."""
    cpu = cpus[0]
    found: dict = {"cpus": cpus, "cpu": cpu}
    perf = shutil.which("perf")
    if perf is None:
        return {**found, "unavailable": "perf is not installed (Debian and Raspberry Pi OS: linux-perf)"}
    try:
        argv = [perf, "stat", "-x", ",", "-e", "cycles:u,task-clock", "--", sys.executable, "-c", _LOOP, str(seconds)]
        loop = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    except OSError as err:
        return {**found, "unavailable": f"perf could not start: {err}"}
    time.sleep(seconds / 2)
    try:
        found["cpufreq_mhz"] = readings.scaling_cur_freq_mhz(
            _read(os.path.join(sys_root, f"devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq")))
    except (OSError, ValueError):
        pass
    vcgencmd = shutil.which("vcgencmd")
    if vcgencmd:
        try:
            said = subprocess.run([vcgencmd, "measure_clock", "arm"], capture_output=True, text=True, timeout=5)
            found["firmware_mhz"] = readings.vcgencmd_clock_hz(said.stdout) / 1e6
        except (OSError, ValueError, subprocess.SubprocessError):
            pass
    try:
        _, err = loop.communicate(timeout=seconds + 30)
    except subprocess.TimeoutExpired:
        loop.kill()
        loop.communicate()
        return {**found, "unavailable": "perf did not finish its loop"}
    if loop.returncode != 0:
        return {**found, "unavailable": f"perf failed: {(err.strip().splitlines() or ['?'])[-1][:160]}"}
    try:
        cycles, task_ms = perf_stat(err)
    except ValueError as why:
        return {**found, "unavailable": str(why)}
    return {**found, "measured_mhz": round(cycles / (task_ms * 1000), 1)}


def clocks(seconds: float = CLOCK_LOOP_S, sys_root: str = "/sys") -> dict:
    return {name: measure_clock(cpus, seconds, sys_root) for name, cpus in domains(sys_root)}


# --- one command per run and machine ------------------------------------------------------------

def before(window_s: float, cmdline_marks: list[str], cgroup_marks: list[str], clock_s: float = 0) -> dict:
    """Before a run: busy outside the cluster (first, while nothing of this probe runs), the measured
    clock where asked, then the residency counters the run starts from."""
    found = {"busy": busy_outside(window_s, cmdline_marks, cgroup_marks) if window_s > 0 else None}
    if clock_s > 0:
        found["clock"] = clocks(clock_s)
    found["residency"] = residency_snapshot()
    return found


def main(argv: list[str] | None = None) -> None:
    import argparse
    parser = argparse.ArgumentParser(description="Read what this machine's CPUs do around a run; print JSON.")
    parser.add_argument("when", choices=("before", "after"))
    parser.add_argument("--window", type=float, default=2.0, help="seconds of CPU use read before the run (0: none)")
    parser.add_argument("--clock", type=float, default=0.0, help="seconds of busy loop per frequency domain (0: none)")
    parser.add_argument("--own-command", action="append", default=[], help="text on the cluster's command lines")
    parser.add_argument("--own-cgroup", action="append", default=[], help="text in the cluster's cgroup paths")
    args = parser.parse_args(argv)
    if args.when == "before":
        found = before(args.window, args.own_command, args.own_cgroup, args.clock)
    else:
        found = {"residency": residency_snapshot()}
    print(json.dumps(found, separators=(",", ":")))


if __name__ == "__main__":
    main()
