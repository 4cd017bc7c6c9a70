"""Preflight of real boards: what the seeds learned the hard way, checked before an hour-long suite.

Every board is asked for its facts in one SSH round (a fixed script, values passed as arguments),
then each fact is judged here. A finding names the node, what was found and the fix; a blocker makes
`sbclab doctor` exit non-zero and stops a suite before it starts. Where the judgement comes from:

- free space on the data directory against the experiment's need: the input's replicas plus the
  workload's intermediate and output volume per input byte (Hadoop TeraSort about 4x, the seeds);
- RAM against the YARN containers sbclab gives the worker plus the reserve for the OS and daemons;
- a hostname that resolves to a loopback address makes Hadoop daemons bind there and be unreachable;
- a NodeManager registers under the name its worker's address reverse-resolves to, and the
  ResourceManager and the other workers' shuffles reach it by that name: every board must resolve
  every worker's name to that worker's address, or the first job waits for its AM for ever;
- Pi firmware: any `get_throttled` bit (under-voltage, capped, throttled, soft limit) spoils runs;
  the 2026 seed powered each Pi 5 with the official 27 W supply (5 A), whose limit the firmware
  reports in the device tree; a warm idle board will throttle under load;
- fstrim keeps SSD write speed steady between runs (the seeds trimmed before every run); an NVMe
  drive on PCIe gen 2 where the profile is gen 3 runs at half the link speed (dtparam=pciex1_gen=3).
"""

import time
from dataclasses import asdict, dataclass
from typing import Literal

from .. import profiles
from ..cluster import remote
from ..cluster.inventory import Host, Inventory
from ..errors import SbclabError
from ..stack import versions as stacks
from ..stack.sizing import worker_memory
from .plan import bytes_needed

Severity = Literal["ok", "warning", "blocker"]
CLOCK_OFFSET_WARN_S = 1.0
IDLE_TEMP_WARN_C = 60.0
PI5_FULL_SUPPLY_MA = 5000
SSD_INTERFACES = ("pcie", "usb3", "sata")

# Run by `sh -s DATA_DIR ADDRESS`: one `key=value` per line; nothing from the inventory is spliced into it.
FACTS_SCRIPT = r"""
dir="$1"
echo "hostname=$(hostname)"
echo "resolves=$(getent hosts "$(hostname)" | awk '{print $1; exit}')"
echo "name_of_address=$(getent hosts "$2" | awk '{print $2; exit}')"
if command -v java >/dev/null 2>&1; then echo "java=$(java -version 2>&1 | head -n 1)"; else echo "java="; fi
echo "python3=$(command -v python3)"
echo "python3_version=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)"
awk '/^MemTotal:/{print "mem_total_kb=" $2} /^MemAvailable:/{print "mem_available_kb=" $2}' /proc/meminfo
probe="$dir"
while [ ! -d "$probe" ] && [ "$probe" != "/" ]; do probe=$(dirname "$probe"); done
echo "data_dir_exists=$([ -d "$dir" ] && echo yes || echo no)"
echo "data_dir_free_kb=$(df -Pk "$probe" | awk 'NR==2{print $4}')"
echo "governor=$(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null)"
echo "thermal_millic=$(cat /sys/class/thermal/thermal_zone0/temp 2>/dev/null)"
echo "fstrim=$(command -v fstrim)"
echo "perf=$(command -v perf)"
if command -v vcgencmd >/dev/null 2>&1; then
  echo "throttled=$(vcgencmd get_throttled | cut -d= -f2)"
  echo "vc_temp=$(vcgencmd measure_temp | tr -dc '0-9.')"
fi
if [ -r /proc/device-tree/chosen/power/max_current ]; then
  echo "psu_max_current_ma=$(od -An -tu4 --endian=big /proc/device-tree/chosen/power/max_current | tr -d ' ')"
fi
echo "model=$(tr -d '\0' < /proc/device-tree/model 2>/dev/null)"
for d in /sys/class/nvme/nvme*; do
  [ -r "$d/device/current_link_speed" ] && echo "nvme_link=$(basename "$d") $(cat "$d/device/current_link_speed")"
done
echo "clock=$(date +%s.%N)"
"""


@dataclass(frozen=True)
class Finding:
    node: str
    check: str
    severity: Severity
    finding: str
    fix: str = ""


def parse_facts(text: str) -> dict[str, str]:
    facts: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            key = key.strip()
            facts[key] = f"{facts[key]}\n{value.strip()}" if key in facts else value.strip()
    return facts


def _number(facts: dict, key: str) -> float | None:
    try:
        return float(facts.get(key, ""))
    except ValueError:
        return None


def _pcie_generation(speed: str) -> int | None:
    """current_link_speed '8.0 GT/s PCIe' -> 3 (2.5 GT/s gen 1, 5 gen 2, 8 gen 3, 16 gen 4)."""
    try:
        rate = float(speed.split()[0])
    except (ValueError, IndexError):
        return None
    return {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5}.get(rate)


def python_finding(version: str) -> tuple[str, Severity, str, str]:
    """The board's python3 against the oldest Python each stack's PySpark runs on."""
    have = tuple(int(part) for part in version.split(".")[:2] if part.isdigit())
    too_old = [s for s in map(stacks.get, stacks.runnable()) if have < s.python]
    if not too_old:
        return "python3", "ok", f"python3 {version}", ""
    return ("python3", "warning",
            f"python3 {version} is older than PySpark needs on the " + ", ".join(
                f"{s.name} stack ({'.'.join(map(str, s.python))})" for s in too_old),
            "Install a newer python3 on the board, or run PySpark workloads on another stack.")


def judge(host: Host, facts: dict[str, str], need_bytes: int) -> list[Finding]:
    """The findings for one board from its facts."""
    out: list[Finding] = []

    def add(check: str, severity: Severity, finding: str, fix: str = "") -> None:
        out.append(Finding(host.name, check, severity, finding, fix))

    board = profiles.board(host.board)
    medium = profiles.storage(host.storage)

    java = facts.get("java", "")
    if java:
        add("java", "ok", java)
    else:
        add("java", "blocker", "no java on the PATH",
            "Run 'sbclab cluster up --inventory ...', which installs the Java the board's distribution packages "
            "for the stack, or give one with --jdk.")

    if "python3" in facts and not facts["python3"]:
        add("python3", "warning", "no python3: the per-node sampler and PySpark jobs cannot run on this board",
            "apt-get install python3 (Raspberry Pi OS has it), or run with --no-sampling.")
    elif facts.get("python3_version"):
        add(*python_finding(facts["python3_version"]))
    forwarding = facts.get("forwarding")
    if forwarding and forwarding != "yes":
        add("ssh forwarding", "blocker", f"sshd refuses port forwarding ({forwarding}); sbclab reads the web UIs, "
            "which listen on the board's loopback, through it",
            "Allow it in the board's /etc/ssh/sshd_config (AllowTcpForwarding local), or deploy with --expose-web-uis.")
    elif forwarding:
        add("ssh forwarding", "ok", "sshd forwards ports")

    resolves = facts.get("resolves", "")
    if resolves.startswith("127.") or resolves == "::1":
        add("hostname", "blocker", f"'{facts.get('hostname')}' resolves to {resolves}, a loopback address",
            f"Map the hostname to {host.address} in /etc/hosts (Debian and Raspberry Pi OS put 127.0.1.1 there); "
            "Hadoop daemons would otherwise listen where no other node can reach them.")
    else:
        add("hostname", "ok", f"'{facts.get('hostname')}' resolves to {resolves or 'nothing locally (DNS)'}")

    free_kb = _number(facts, "data_dir_free_kb")
    if free_kb is None:
        add("data directory", "blocker", f"cannot read the free space of {host.data_dir}", "Check the path and its filesystem.")
    else:
        free = int(free_kb * 1024)
        where = host.data_dir if facts.get("data_dir_exists") == "yes" else f"{host.data_dir} (not there yet; its parent's filesystem)"
        if free < need_bytes:
            add("data directory", "blocker", f"{where} has {free / 2**30:.2f} GiB free, the experiment needs "
                f"{need_bytes / 2**30:.2f} GiB on this node", "Free space, give the host a larger data_dir, "
                "use smaller sizes or more workers.")
        else:
            add("data directory", "ok", f"{free / 2**30:.2f} GiB free for {need_bytes / 2**30:.2f} GiB needed")

    total_kb = _number(facts, "mem_total_kb")
    if host.role == "worker" and total_kb:
        total = int(total_kb * 1024)
        try:
            memory = worker_memory(total)
            add("memory", "ok", f"{total / 2**30:.1f} GiB: {memory.containers_mb} MB for containers after "
                f"{memory.reserved_mb} MB reserved for the OS, DataNode and NodeManager")
        except SbclabError as err:
            add("memory", "blocker", err.message, err.hint or "")
        if total < 0.8 * board.ram_gib * 2**30:
            add("memory", "warning", f"{total / 2**30:.1f} GiB, the {board.name} profile says {board.ram_gib:g} GiB",
                "Choose the board profile with this RAM (sbclab profiles list) so reports describe the board you have.")

    governor = facts.get("governor", "")
    if governor == "powersave":
        add("cpu governor", "warning", "powersave keeps the CPU at its lowest clock",
            "Use ondemand or performance (echo performance | sudo tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor).")
    elif governor:
        add("cpu governor", "ok", governor)

    throttled = facts.get("throttled")
    if throttled is not None:
        try:
            bits = int(throttled, 16)
        except ValueError:
            bits = None
        if bits:
            add("throttling", "blocker", f"vcgencmd get_throttled = {throttled} (under-voltage, capped or throttled since boot)",
                "Use an adequate power supply and cooling, then reboot to clear the bits.")
        elif bits == 0:
            add("throttling", "ok", "get_throttled = 0x0")
    temp = _number(facts, "vc_temp")
    if temp is None and _number(facts, "thermal_millic") is not None:
        temp = _number(facts, "thermal_millic") / 1000
    if temp is not None:
        limit = min(IDLE_TEMP_WARN_C, (board.soft_temp_c or IDLE_TEMP_WARN_C) - 10)
        if temp >= limit:
            add("temperature", "warning", f"{temp:.1f} °C at idle", "Add a heatsink or fan before running: the board will throttle under load.")
        else:
            add("temperature", "ok", f"{temp:.1f} °C")

    supply = _number(facts, "psu_max_current_ma")
    if supply is not None and "Raspberry Pi 5" in facts.get("model", ""):
        if supply < PI5_FULL_SUPPLY_MA:
            add("power supply", "warning", f"the supply negotiated {supply / 1000:g} A; a Pi 5 under load with NVMe wants 5 A (27 W)",
                "Use the official 27 W USB-C supply (the 2026 seed's setup).")
        else:
            add("power supply", "ok", f"{supply / 1000:g} A")

    if medium.interface in SSD_INTERFACES:
        if facts.get("fstrim"):
            add("fstrim", "ok", facts["fstrim"])
        else:
            add("fstrim", "warning", "fstrim is missing: SSD write speed drifts between runs without trims",
                "apt-get install util-linux (fstrim is part of it).")
    if "perf" in facts:  # boards examined before runs measured their clock said nothing of perf
        if facts["perf"]:
            add("measured clock", "ok", f"{facts['perf']} counts the clock the cores run at before each run")
        else:
            add("measured clock", "warning", "perf is missing: runs record the clock cpufreq and the firmware report, "
                "not the one the cores run at", "sudo apt-get install linux-perf")
    for line in filter(None, facts.get("nvme_link", "").splitlines()):
        device, _, speed = line.partition(" ")
        generation = _pcie_generation(speed)
        wanted = 3 if "gen3" in medium.name else None
        if wanted and generation and generation < wanted:
            add("pcie", "warning", f"{device} links at PCIe gen {generation} ({speed}), the profile {medium.name} is gen {wanted}",
                "Add dtparam=pciex1_gen=3 to /boot/firmware/config.txt and reboot, or use the gen-2 storage profile.")
        elif generation:
            add("pcie", "ok", f"{device}: gen {generation}")
    return out


# Run with the workers' names as arguments: `name address` per line, the address empty when unresolved.
RESOLVE_SCRIPT = r"""
for n in "$@"; do echo "$n $(getent hosts "$n" | awk '{print $1; exit}')"; done
"""


def worker_names(inventory: Inventory, facts: dict[str, dict[str, str]]) -> dict[str, str]:
    """worker -> the name its address reverse-resolves to on itself (what its NodeManager registers as)."""
    return {w.name: facts[w.name]["name_of_address"] for w in inventory.workers
            if facts.get(w.name, {}).get("name_of_address")}


def name_findings(inventory: Inventory, names: dict[str, str], resolved: dict[str, dict[str, str]]) -> list[Finding]:
    """Whether each board resolves each worker's name to that worker's address."""
    out = []
    for board, found in resolved.items():
        wrong = []
        for worker in inventory.workers:
            name = names.get(worker.name)
            if name and found.get(name) != worker.address:
                wrong.append((worker, name, found.get(name)))
        if wrong:
            listing = "; ".join(f"'{n}' ({w.name}) resolves to {got or 'nothing'}, not {w.address}" for w, n, got in wrong)
            lines = ", ".join(f"'{w.address} {n}'" for w, n, _ in wrong)
            out.append(Finding(board, "worker names", "blocker", listing + " (YARN reaches NodeManagers by these names)",
                               f"Add the line(s) {lines} to /etc/hosts on {board}, or use mDNS (avahi-daemon) on every board."))
        else:
            out.append(Finding(board, "worker names", "ok", f"resolves all {len(names)} worker name(s)"))
    return out


def clock_findings(offsets: dict[str, float]) -> list[Finding]:
    if len(offsets) < 2:
        return []
    spread = max(offsets.values()) - min(offsets.values())
    if spread > CLOCK_OFFSET_WARN_S:
        return [Finding("cluster", "clocks", "warning",
                        f"node clocks differ by {spread:.2f} s ({', '.join(f'{n} {o:+.2f} s' for n, o in offsets.items())})",
                        "Enable time synchronisation on every board (timedatectl set-ntp true); phases of runs are compared across nodes.")]
    return [Finding("cluster", "clocks", "ok", f"node clocks within {spread:.3f} s")]


def need_per_node(workload: str | None, size_bytes: int | None, workers: int, preset: str = "stock") -> int:
    """A worker's share of what the cluster's disks hold for the workload at that size."""
    if not workload or not size_bytes:
        return 0
    return bytes_needed(workload, size_bytes, workers, preset) // workers


def _forwarding(conn: remote.Connection) -> str:
    """'yes' when the board's sshd opens a forwarded channel (to its own SSH port), else why not."""
    try:
        channel = conn.client.get_transport().open_channel(
            "direct-tcpip", (conn.host.address, conn.host.port), ("127.0.0.1", 0), timeout=10)
    except Exception as err:  # noqa: BLE001 - paramiko raises several kinds; each is the answer
        return str(err) or type(err).__name__
    channel.close()
    return "yes"


def examine(inventory: Inventory, need_bytes: int = 0, known_hosts=remote.DEFAULT_KNOWN_HOSTS,
            accept_new: bool = False) -> list[Finding]:
    """Every board's findings, unreachable boards as blockers, then the names and clocks across boards."""
    def gather(conn: remote.Connection):
        before = time.time()
        outcome = conn.shell(FACTS_SCRIPT, [conn.host.data_dir, conn.host.address])
        after = time.time()
        facts = parse_facts(outcome.stdout)
        facts["forwarding"] = _forwarding(conn)
        clock = _number(facts, "clock")
        return facts, (clock - (before + after) / 2) if clock is not None else None

    connections = remote.connect(list(inventory.hosts), known_hosts, accept_new)
    reachable = [c for c in connections.values() if isinstance(c, remote.Connection)]
    try:
        gathered = remote.in_parallel(reachable, gather, lambda c: c.host.name)
        findings: list[Finding] = []
        offsets: dict[str, float] = {}
        facts_of: dict[str, dict[str, str]] = {}
        for host in inventory.hosts:
            got = connections[host.name] if isinstance(connections[host.name], SbclabError) else gathered[host.name]
            if isinstance(got, SbclabError):
                findings.append(Finding(host.name, "reachable", "blocker", got.message, got.hint or ""))
                continue
            facts, offset = got
            facts_of[host.name] = facts
            findings.append(Finding(host.name, "reachable", "ok", f"{host.user}@{host.address}:{host.port}"))
            findings += judge(host, facts, need_bytes if host.role == "worker" else 0)
            if offset is not None:
                offsets[host.name] = offset
        names = worker_names(inventory, facts_of)
        if names:
            def resolve(conn: remote.Connection) -> dict[str, str]:
                lines = conn.shell(RESOLVE_SCRIPT, sorted(set(names.values()))).stdout.splitlines()
                return {name: address for name, _, address in (line.partition(" ") for line in lines)}
            resolved = remote.in_parallel([c for c in reachable if c.host.name in facts_of], resolve, lambda c: c.host.name)
            findings += name_findings(inventory, names, {b: r for b, r in resolved.items() if isinstance(r, dict)})
        return findings + clock_findings(offsets)
    finally:
        for conn in reachable:
            conn.close()


def blockers(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "blocker"]


def as_dicts(findings: list[Finding]) -> list[dict]:
    return [asdict(f) for f in findings]


def preflight(inventory: Inventory, workload: str | None, size_bytes: int | None, preset: str = "stock",
              known_hosts=remote.DEFAULT_KNOWN_HOSTS, accept_new: bool = False, deploying: bool = False,
              say=lambda message: None, hadoop: bool = True, tunnels: bool = True,
              need_bytes: int | None = None) -> list[Finding]:
    """doctor before a deploy or a suite: its warnings said, its blockers refused with their fixes.

    deploying: a missing Java is no blocker, since deploying installs one. Without hadoop (node
    benchmarks), what only Hadoop needs (Java, host names, forwarding) blocks nothing; without tunnels
    (web UIs exposed on the boards' addresses), neither does sshd's refusal to forward ports.
    need_bytes: each worker's disk need, when the caller knows it (an experiment's largest cell)."""
    need = need_per_node(workload, size_bytes, len(inventory.workers), preset) if need_bytes is None else need_bytes
    findings = examine(inventory, need, known_hosts, accept_new)
    excused = {"java"} if deploying else set()
    if not hadoop:
        excused |= {"java", "hostname", "worker names", "ssh forwarding"}
    if not tunnels:
        excused.add("ssh forwarding")
    blocking = [f for f in blockers(findings) if f.check not in excused]
    for f in findings:
        if f.severity == "warning":
            say(f"warning: {f.node}: {f.check}: {f.finding}" + (f" ({f.fix})" if f.fix else ""))
    if blocking:
        first = blocking[0]
        more = f" and {len(blocking) - 1} more blocker(s)" if len(blocking) > 1 else ""
        raise SbclabError(f"Preflight: {first.node}: {first.check}: {first.finding}{more}.",
                          f"{first.fix} See them all with 'sbclab doctor --inventory {inventory.source}'.".strip())
    return findings
