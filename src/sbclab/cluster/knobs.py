"""The Raspberry Pi knobs the seeds turned, as data: what each changes, where, and what it cost or
gained them. `sbclab knobs` lists them; none is applied unless asked for by name.

Three kinds, by where the change lives:
- cluster knobs (crc-off, fstrim) are part of a cluster's spec, given with `--knob` at `cluster up`
  or `run`: a configuration property, or a step before every run;
- board knobs (pcie-gen3, overclock) are lines in a Pi's firmware configuration, written by
  `sbclab knobs apply` over SSH between marker comments (so they are found and reverted exactly)
  and taking effect at the next boot;
- master-separate is the cluster's layout (`--layout`): the master on a node of its own, unless it is
  laid out as a worker too (master-is-worker).
Every run records the knobs its cluster had (results/schema.py ClusterShape.knobs).
"""

from dataclasses import dataclass
from pathlib import Path

from ..errors import SbclabError


@dataclass(frozen=True)
class Knob:
    name: str
    what: str
    change: str          # the exact line, property or command
    where: str           # the file or moment it goes
    reboot: bool
    source: str
    risk: str = ""


KNOBS = (
    Knob("pcie-gen3", "run the Pi 5's PCIe x1 link at gen 3 (8 GT/s) instead of gen 2",
         "dtparam=nvme\ndtparam=pciex1_gen=3", "/boot/firmware/config.txt", True,
         "Lee & Park 2026, PCIe 2.0 vs 3.0 (Table 22: 446.5 vs 869.47 MB/s sequential read; TeraSort 1.01x)",
         "gen 3 is not certified by the Raspberry Pi Foundation; a drive that errors at gen 3 needs gen 2 back"),
    Knob("overclock", "raise the Pi 5's ARM clock (the rpi5b-oc profile: 3.0 GHz)",
         "arm_freq=3000\nover_voltage_delta=50000", "/boot/firmware/config.txt", True,
         "Lee & Park 2026, CPU overclocking (sysbench 1.25x, Table 23)",
         "four of the seed's nine boards booted at 3.0 GHz; needs a fan (72.9 C average under stress) and the 27 W supply"),
    Knob("fstrim", "trim the data directory's SSD before each run, so write speed does not drift",
         "fstrim -v DATA_DIR", "before every run", False,
         "Lee & Park 2026 and Lee, Oh & Park 2021 (fstrim before/after to measure intermediate data)"),
    Knob("crc-off", "skip HDFS checksums (the 2021 seed saved 7 % CPU in TeraSort 2 GB: 52.5 % vs 59.5 %)",
         "dfs.checksum.type=NULL", "hdfs-site.xml", False,
         "Lee, Oh & Park 2021, Sec. VII-B and Fig. 10",
         "HDFS no longer detects corrupted blocks; for measurements, not for data you keep"),
    Knob("quick-start", "start short jobs sooner: every JVM of the cluster (daemons, clients, MapReduce "
         "tasks, Spark's driver and executors) with the C1 compiler only, Spark's JVMs mapping the class-data "
         "archive 'stack fetch' recorded (where the nodes run this host's Java), no Spark driver web UI",
         "-XX:TieredStopAtLevel=1\n-XX:SharedArchiveFile=CACHE/classdata/spark-VERSION/JAVA.jsa, its classpath "
         "jar first (spark.*.extraClassPath)\nspark.ui.enabled=false",
         "every java command line, the task JVMs' options and spark-defaults.conf", False,
         "sbclab (docs/notes.md): a short-lived Hadoop client used 40 % less CPU to start; a tiny Spark "
         "job's JVMs 23 % less with the archive",
         "long jobs lose the C2 compiler's peak speed: for teaching and tests on tiny data, not for measurements"),
    Knob("open-ports", "leave the daemons' ports on boards open to the LAN instead of to the cluster's own nodes "
         "and this host",
         "no nftables table sbclab_CLUSTER on the boards", "cluster up on boards", False,
         "sbclab (docs/boards.md): Hadoop's RPC ports take anyone who reaches them, with simple authentication",
         "anyone on the LAN can then read HDFS and run code as the cluster's user"),
    Knob("master-separate", "keep the master's daemons on a board of their own, not on a worker",
         "the cluster's layout: separate-master or desktop-master, not master-is-worker", "--layout", False,
         "Lee, Oh & Park 2021 (29 % less I/O traffic, 42.2 % less memory on the workers)"),
)


def get(name: str) -> Knob:
    for knob in KNOBS:
        if knob.name == name:
            return knob
    raise SbclabError(f"There is no knob '{name}'.", f"Knobs: {', '.join(k.name for k in KNOBS)}.")


CLUSTER_KNOBS = ("crc-off", "fstrim", "quick-start", "open-ports")
BOARD_KNOBS = ("pcie-gen3", "overclock")
# A Pi's firmware configuration: Raspberry Pi OS Bookworm's path first, then older releases'.
CONFIG_TXT = ("/boot/firmware/config.txt", "/boot/config.txt")


def check_cluster_knobs(names) -> tuple[str, ...]:
    """The cluster knobs asked for, in catalogue order; a board knob or an unknown name is refused."""
    for name in names:
        knob = get(name)
        if knob.name in BOARD_KNOBS:
            raise SbclabError(f"'{name}' changes a board's firmware configuration, not a cluster.",
                              f"Apply it with 'sbclab knobs apply {name} --inventory hosts.yml' and reboot the boards.")
        if knob.name not in CLUSTER_KNOBS:
            raise SbclabError(f"'{name}' is not applied by sbclab: {knob.where}.",
                              f"Knobs given with --knob: {', '.join(CLUSTER_KNOBS)}.")
    return tuple(k for k in CLUSTER_KNOBS if k in set(names))


def _begin(name: str) -> str:
    return f"# sbclab knob {name}: begin"


def _end(name: str) -> str:
    return f"# sbclab knob {name}: end"


def applied_in(config_txt: str) -> list[str]:
    """The board knobs sbclab wrote into a config.txt (by their marker comments)."""
    return [name for name in BOARD_KNOBS if _begin(name) in config_txt.splitlines()]


def with_knob(config_txt: str, name: str) -> str:
    """config.txt with the knob's lines in a marked block at the end, under [all] so no conditional
    section above ([pi4], [cm5]) swallows them; unchanged when the block is already there."""
    knob = get(name)
    if name not in BOARD_KNOBS:
        raise SbclabError(f"'{name}' is not a firmware knob.", f"Firmware knobs: {', '.join(BOARD_KNOBS)}.")
    if name in applied_in(config_txt):
        return config_txt
    text = config_txt if config_txt.endswith("\n") or not config_txt else config_txt + "\n"
    return text + "\n".join([_begin(name), "[all]", *knob.change.splitlines(), _end(name)]) + "\n"


def without_knob(config_txt: str, name: str) -> str:
    """config.txt without the knob's marked block (the rest exactly as it was)."""
    out, inside = [], False
    for line in config_txt.splitlines(keepends=True):
        if line.rstrip("\n") == _begin(name):
            inside = True
        elif inside and line.rstrip("\n") == _end(name):
            inside = False
        elif not inside:
            out.append(line)
    return "".join(out)


# Which firmware configuration the board has, its model, whether it changed since the last boot.
_FIRMWARE = r"""
for f in "$@"; do [ -f "$f" ] && { echo "config=$f"; echo "changed_after_boot=$([ "$(stat -c %Y "$f")" -gt "$(awk '/^btime/{print $2}' /proc/stat)" ] && echo yes || echo no)"; break; }; done
echo "model=$(tr -d '\0' < /proc/device-tree/model 2>/dev/null)"
"""

# New text on stdin replaces $1 whole (written beside, then renamed), as root or through sudo -n;
# the board's original is kept once as $1.sbclab-backup.
_REPLACE = r"""
if [ "$(id -u)" = 0 ]; then as_root=""; else as_root="sudo -n"; fi
[ -e "$1.sbclab-backup" ] || $as_root cp -p "$1" "$1.sbclab-backup" || exit 5
$as_root sh -c 'cat > "$1.sbclab-new" && mv "$1.sbclab-new" "$1"' sh "$1"
"""


def firmware(conn) -> dict[str, str]:
    """The board's config.txt path (if any), its model, and whether config.txt changed since boot."""
    facts = {}
    for line in conn.shell(_FIRMWARE, list(CONFIG_TXT)).stdout.splitlines():
        key, _, value = line.partition("=")
        facts[key] = value.strip()
    return facts


def in_effect(conn) -> list[str]:
    """The board knobs in the board's config.txt, each marked when it changed after the last boot."""
    facts = firmware(conn)
    if not facts.get("config"):
        return []
    with conn.sftp().open(facts["config"], "r") as f:
        text = f.read().decode(errors="replace")
    pending = " (pending reboot)" if facts.get("changed_after_boot") == "yes" else ""
    return [f"{name}{pending}" for name in applied_in(text)]


def apply_on_board(conn, name: str, revert: bool = False) -> str:
    """Write (or with revert, remove) a firmware knob in one board's config.txt; what was done."""
    facts = firmware(conn)
    board = conn.host.name
    model = facts.get("model") or "unknown"
    if "Raspberry Pi 5" not in model:
        raise SbclabError(f"{board} is not a Raspberry Pi 5 (model: {model}); {name} is a Pi 5 setting.",
                          "Leave this board out of the inventory you apply it with.")
    path = facts.get("config")
    if not path:
        raise SbclabError(f"{board} has no firmware configuration ({' or '.join(CONFIG_TXT)}).",
                          "Check that the boot partition is mounted.")
    with conn.sftp().open(path, "r") as f:
        text = f.read().decode()
    changed = without_knob(text, name) if revert else with_knob(text, name)
    if changed == text:
        return "not there; nothing to remove" if revert else "already there; nothing changed"
    done = conn.run(["sh", "-c", _REPLACE, "sh", path], stdin=changed, timeout_s=60)
    if done.status != 0:
        raise SbclabError(f"Cannot write {path} on {board}: {(done.stderr or done.stdout).strip() or f'exit {done.status}'}.",
                          f"Connect as root, or let {conn.host.user} run sudo without a password.")
    return (f"removed from {path}" if revert else f"written to {path} (original in {Path(path).name}.sbclab-backup)") + \
        "; reboot the board for it to take effect"


def of_cluster(state) -> dict[str, list[str]]:
    """Each knob the cluster has -> the nodes it is on: the spec's cluster knobs on every node, the
    master on a node of its own wherever nodes are separate machines or namespaces and it runs no
    tasks, and the firmware
    knobs found on the boards."""
    spec = state.spec
    everyone = [n.name for n in spec.nodes]
    found = {name: everyone for name in spec.knobs}
    if spec.backend != "processes" and not spec.master.runs_tasks:
        found["master-separate"] = [spec.master.name]
    for node, names in state.info.board_knobs.items():
        for name in names:
            found.setdefault(name, []).append(node)
    return found
