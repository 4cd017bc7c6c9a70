"""Real boards over SSH, played by Debian's OpenSSH server inside emulated nodes: each node's sshd has
its own network namespace, hostname, /etc/hosts and disk, and listens only on the node's address,
so nothing is sent outside the namespaces this test creates."""

import glob
import json
import os
import shutil
import socket
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner

from sbclab import cli
from sbclab.cluster import containers, inventory, nodes, reaper, spec as cluster_spec
from sbclab.cluster.inventory import BoardAccess
from sbclab.cluster.ssh import SshTransport
from sbclab.cluster.state import ClusterInfo, ClusterState
from sbclab.experiments import doctor
from sbclab.experiments.orchestrator import cluster_for
from sbclab.results.store import ResultsStore
from sbclab.stack import deploy, distribution
from sbclab.stack.distribution import Distribution
from sbclab.stack.versions import STACKS
from sbclab.stack.record import StackRecord
from sbclab.workloads import web

from .conftest import NOTHING, leaked, mechanics_spec, reachable, remove_if_left

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("sshd", path="/usr/sbin"),
                                reason="boards are played by sshd in emulated nodes (root, openssh-server)")

NAME = "issh"
LOOPBACK_NODE = "worker2"  # its /etc/hosts maps its own name to 127.0.1.1, as Debian's installer does
# The start of Raspberry Pi OS's (and Debian's) ~/.bashrc: nothing for a shell that is not interactive.
BOARD_BASHRC = "case $- in\n    *i*) ;;\n      *) return;;\nesac\n"


def _keygen(path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return (path.parent / f"{path.name}.pub").read_text()


@pytest.fixture(scope="module")
def boards(tmp_path_factory):
    """(cluster, folder, client key, {node: host public key}) with sshd serving on every node."""
    remove_if_left(NAME)
    assert leaked() == NOTHING
    folder = tmp_path_factory.mktemp("ssh")
    client_key = folder / "client"
    (folder / "authorized_keys").write_text(_keygen(client_key))
    host_keys = {}
    board_bashrc = folder / "bashrc"
    board_bashrc.write_text(BOARD_BASHRC)
    # The test board, not a Pi 5: a board's processes run outside the node's CPU limit anyway, and its
    # link and disk are shaped at the one-core board's larger factor (hpcc's bandwidth test sends
    # megabytes between the boards and took a minute at a Pi 5's share of this host).
    with cluster_for(mechanics_spec(NAME, subnet="10.218.0.0/24"), bare=True) as cluster, ExitStack() as servers:
        for node in cluster.spec.nodes:
            here = folder / node.name
            here.mkdir()
            host_keys[node.name] = _keygen(here / "host_key")
            # Every board knows the others by name, as a Pi cluster's /etc/hosts (or mDNS) does: YARN
            # names NodeManagers by their host names.
            own = "127.0.1.1" if node.name == LOOPBACK_NODE else node.address
            others = "".join(f"{n.address} {n.name}\n" for n in cluster.spec.nodes if n.name != node.name)
            (here / "hosts").write_text(f"127.0.0.1 localhost\n{own} {node.name}\n{others}")
            _write_container_settings(here, node.name)
            _write_sshd_config(here, folder, node.address)
            # A mount namespace of its own: the node's /etc/hosts is bound there and goes with it. As a slave:
            # another cluster's disks, mounted when it began, are unmounted here too when that cluster goes.
            # A board's own ~/.bashrc over this host's: bash sources it for every command sshd runs, and a
            # host's (a pyenv's init, say) would cost each of sbclab's commands a fifth of a CPU-second here.
            argv = ["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c",
                    f'mount --bind "$0" /etc/hosts && {_CGROUP_HIERARCHIES} && mkdir -p /run/sshd && '
                    '{ [ ! -e "$2" ] || mount --bind "$3" "$2"; } && exec /usr/sbin/sshd -D -e -f "$1"',
                    str(here / "hosts"), str(here / "sshd_config"), str(Path.home() / ".bashrc"), str(board_bashrc)]
            _start_sshd(cluster, servers, node, argv, here / "sshd.log")
        for node in cluster.spec.nodes:
            _wait_for_port(node.address, 22)
        try:
            yield cluster, folder, client_key, host_keys
        finally:
            for node in cluster.spec.nodes:
                shutil.rmtree(_board_run_root(node.name), ignore_errors=True)
    assert leaked() == NOTHING


def _start_sshd(cluster, servers: ExitStack, node, argv: list[str], log) -> None:
    """A board's sshd in its node's network namespace, stopped with everything in its mount namespace."""
    # Outside the node's CPU and memory limits: a board is a machine of its own, and the JVMs
    # these tests start would otherwise crawl on a fraction of this host's cores.
    sshd = cluster.transport.start(node, argv, dict(os.environ), log, label=f"sshd {node.name}", enter="network")
    servers.callback(cluster.transport.stop, sshd)
    # Whatever a failed test leaves on a board lives in its sshd's mount namespace, which
    # holds the node's disk mounted: it goes before the nodes do.
    servers.callback(_stop_namespace_of, sshd.pid)


def _cgroup_hierarchies() -> str:
    """The commands that mount this host's cgroup hierarchies again under the board's own sysfs (`ip netns
    exec` gives the node a sysfs without them), as a board has them: its Podman puts its containers there."""
    mounted = [line.split() for line in open("/proc/self/mounts")]
    steps = ["mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup"]
    for _, path, kind, options, *_ in mounted:
        if kind in ("cgroup", "cgroup2") and path.startswith("/sys/fs/cgroup/"):
            which = ",".join(o for o in options.split(",") if o not in ("rw", "ro", "relatime", "nosuid", "nodev", "noexec"))
            steps.append(f"mkdir -p {path} && mount -t {kind} {f'-o {which} ' if which else ''}{kind} {path}")
    return " && ".join(steps)


_CGROUP_HIERARCHIES = _cgroup_hierarchies()


def _board_run_root(node: str) -> str:
    return f"/run/sbclab-test-board-{NAME}-{node}"


def _write_container_settings(here, node: str) -> None:
    """A board's own Podman: its image store in the board's folder (so an image there is one sbclab sent),
    its state under /run, and crun as this host needs it (containers.oci_runtime); sshd gives every
    session these files (SetEnv), as a board's /etc/containers would."""
    crun = containers.oci_runtime(here)
    (here / "containers.conf").write_text(
        f'[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\ntmp_dir = "{_board_run_root(node)}/libpod"\n'
        f'runtime = "crun"\n[engine.runtimes]\ncrun = ["{shutil.which(crun) or crun}"]\n')
    (here / "storage.conf").write_text(
        f'[storage]\ndriver = "overlay"\ngraphroot = "{here / "containers"}"\nrunroot = "{_board_run_root(node)}/storage"\n')


def _write_sshd_config(here, folder, address: str) -> None:
    """A board's sshd: its node's address only, its own host key, the test's client key, no password."""
    (here / "sshd_config").write_text("\n".join([
        f"SetEnv CONTAINERS_CONF={here / 'containers.conf'} CONTAINERS_STORAGE_CONF={here / 'storage.conf'}",
        f"ListenAddress {address}", "Port 22", f"HostKey {here / 'host_key'}", "PidFile none",
        f"AuthorizedKeysFile {folder / 'authorized_keys'}", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password", "UsePAM no",
        "StrictModes no", "LogLevel VERBOSE", "Subsystem sftp /usr/lib/openssh/sftp-server", ""]))


def _stop_namespace_of(pid: int) -> None:
    try:
        namespace = os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return
    inside = []
    for proc in psutil.process_iter():
        try:
            if proc.pid != os.getpid() and os.readlink(f"/proc/{proc.pid}/ns/mnt") == namespace:
                inside.append(proc)
        except OSError:
            continue
    reaper.stop(inside, grace_s=2)


def _wait_for_port(address: str, port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex((address, port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"sshd on {address} did not come up")


def _inventory_file(boards, path, **extra) -> inventory.Inventory:
    cluster, folder, client_key, _ = boards
    def host(node):
        fields = {"ansible_host": node.address, "ansible_user": "root", "ansible_ssh_private_key_file": str(client_key),
                  "data_dir": str(cluster.transport.node_disk(node) / "sbclab"), **extra}
        return f"        {node.name}: {json.dumps(fields)}\n"
    text = ("all:\n  vars: {board: rpi5b, storage: nvme-p31-gen3}\n  children:\n"
            "    master:\n      hosts:\n" + host(cluster.spec.master) +
            "    workers:\n      hosts:\n" + "".join(host(w) for w in cluster.spec.worker_nodes))
    path.write_text(text)
    return inventory.load(path)


def _known_hosts(boards, path, swap: str | None = None):
    """known_hosts with every node's key; with swap, that node's line holds another node's key."""
    cluster, _, _, keys = boards
    names = [n.name for n in cluster.spec.nodes]
    lines = []
    for node in cluster.spec.nodes:
        key = keys[names[(names.index(node.name) + 1) % len(names)]] if node.name == swap else keys[node.name]
        lines.append(f"{node.address} {' '.join(key.split()[:2])}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _distribution_on_the_boards(tmp_path):
    """Hadoop and Spark already "on the boards" (they share this host's disk): a path on the node."""
    dist = tmp_path / "dist"
    dist.mkdir()
    local = distribution.installed()
    for home in (local.hadoop_home, local.spark_home):
        (dist / home.name).symlink_to(home)
    return dist


def _by(findings, node, check):
    return [f for f in findings if f.node == node and f.check == check]


def test_doctor_reaches_every_board_and_finds_the_loopback_hostname(boards, tmp_path):
    """`doctor --inventory` opens one SSH session per board and reports the 127.0.1.1 hostname entry as the only
    blocker."""
    inv = _inventory_file(boards, tmp_path / "hosts.yml")
    before = _logins(boards)
    findings = doctor.examine(inv, doctor.need_per_node("terasort", 16 * 10**6, 2), _known_hosts(boards, tmp_path / "kh"))
    assert _logins(boards) == before + 3, "one session per board, seen in its sshd's log"
    blocking = doctor.blockers(findings)
    assert [(f.node, f.check) for f in blocking] == [(LOOPBACK_NODE, "hostname")], blocking
    assert "127.0.1.1" in blocking[0].finding
    for node in ("master", "worker1", "worker2"):
        assert _by(findings, node, "reachable")[0].severity == "ok"
        assert _by(findings, node, "java")[0].severity == "ok"
        assert _by(findings, node, "data directory")[0].severity == "ok"
    assert _by(findings, "cluster", "clocks")[0].severity == "ok"


def test_doctor_finds_a_board_that_cannot_resolve_a_workers_name(boards, tmp_path):
    """worker1's NodeManager registers as 'worker1'; a master whose /etc/hosts lacks it is a blocker."""
    cluster, folder, _, _ = boards
    inv = _inventory_file(boards, tmp_path / "hosts.yml")
    master_hosts = folder / "master" / "hosts"
    original = master_hosts.read_text()
    try:
        with open(master_hosts, "w") as f:  # in place: the board's bind mount sees the same file
            f.write("".join(line for line in original.splitlines(keepends=True) if not line.endswith(" worker1\n")))
        findings = doctor.examine(inv, 0, _known_hosts(boards, tmp_path / "kh"))
    finally:
        with open(master_hosts, "w") as f:
            f.write(original)
    names = _by(findings, "master", "worker names")[0]
    assert names.severity == "blocker" and "'worker1' (worker1) resolves to nothing" in names.finding, names
    assert f"'{cluster.spec.node('worker1').address} worker1'" in names.fix
    assert _by(findings, "worker2", "worker names")[0].severity == "ok"


def test_doctor_finds_a_data_directory_too_small_for_the_experiment(boards, tmp_path):
    """TeraSort at 1 GB on two workers wants 3.5 GB per worker; the nodes' disks hold 2 GiB. The command
    says so and exits non-zero."""
    _inventory_file(boards, tmp_path / "hosts.yml")
    _known_hosts(boards, tmp_path / "kh")
    result = CliRunner().invoke(cli.main_group, ["doctor", "--inventory", str(tmp_path / "hosts.yml"), "--size", "1GB",
                                                 "--known-hosts", str(tmp_path / "kh"), "--json"])
    assert result.exit_code == 1, result.output
    found = json.loads(result.output)["findings"]
    too_small = [f for f in found if f["check"] == "data directory" and f["severity"] == "blocker"]
    assert {f["node"] for f in too_small} == {"worker1", "worker2"}
    assert all("3.26 GiB" in f["finding"] and f["fix"] for f in too_small)


def test_a_changed_host_key_is_refused_and_an_unknown_one_only_when_asked(boards, tmp_path):
    """A changed host key is always refused with its fix; an unknown one only with --accept-new-host-keys, then
    recorded."""
    inv = _inventory_file(boards, tmp_path / "hosts.yml")
    changed = doctor.examine(inv, 0, _known_hosts(boards, tmp_path / "kh", swap="worker1"), accept_new=True)
    refused = _by(changed, "worker1", "reachable")[0]
    assert refused.severity == "blocker" and "differs" in refused.finding and "ssh-keygen -R" in refused.fix
    assert _by(changed, "worker2", "reachable")[0].severity == "ok"

    empty = tmp_path / "empty_known_hosts"
    unknown = doctor.examine(inv, 0, empty)
    assert all(f.severity == "blocker" and "not seen" in f.finding for f in unknown if f.check == "reachable")
    accepted = doctor.examine(inv, 0, empty, accept_new=True)
    assert all(f.severity == "ok" for f in accepted if f.check == "reachable")
    assert len(empty.read_text().splitlines()) == 3
    assert all(f.severity == "ok" for f in doctor.examine(inv, 0, empty) if f.check == "reachable"), "recorded keys are known"


def _logins(boards) -> int:
    """Sessions the boards' sshd accepted so far, from their logs."""
    cluster, folder, _, _ = boards
    return sum((folder / n.name / "sshd.log").read_text(errors="replace").count("Accepted publickey")
               for n in cluster.spec.nodes)


def test_a_hostile_inventory_is_refused_before_any_connection(boards, tmp_path):
    """An inventory with a shell-injecting data directory is refused before any SSH session is opened."""
    cluster = boards[0]
    before = _logins(boards)
    marker = tmp_path / "ran"
    hostile = tmp_path / "hostile.yml"
    hostile.write_text("all:\n  children:\n    master: {hosts: {m: {ansible_host: %s}}}\n"
                       "    workers: {hosts: {w: {ansible_host: %s, data_dir: '/srv/x; touch %s'}}}\n"
                       % (cluster.spec.master.address, cluster.spec.worker_nodes[0].address, marker))
    result = CliRunner().invoke(cli.main_group, ["doctor", "--inventory", str(hostile)])
    assert result.exit_code != 0 and isinstance(result.exception, Exception)
    assert "data_dir" in str(result.exception)
    assert not marker.exists() and _logins(boards) == before


def test_the_distribution_goes_over_once_and_whole(boards, tmp_path):
    """A folder is streamed as tar and unpacked beside its place before it takes the name; a second
    deploy copies nothing; a changed file is copied again."""
    cluster = boards[0]
    inv = _inventory_file(boards, tmp_path / "hosts.yml")
    local = tmp_path / "local"
    for part, size in (("hadoop-3.3.6", 3 << 20), ("spark-3.5.0", 1 << 20)):
        (local / part / "lib").mkdir(parents=True)
        (local / part / "lib" / "a.jar").write_bytes(os.urandom(size))
        (local / part / "MANIFEST.json").write_text(json.dumps({"files": {"lib/a.jar": part}}))
    (local / "sbclab-jobs.jar").write_bytes(b"jobs")
    node = cluster.spec.worker_nodes[0]
    there = cluster.transport.node_disk(node) / "dist"
    transport = _ssh_transport(inv, _known_hosts(boards, tmp_path / "kh"))
    dist = Distribution(STACKS["lee-park-2026"], local / "hadoop-3.3.6", local / "spark-3.5.0", local / "sbclab-jobs.jar")
    log = tmp_path / "ship.log"
    try:
        board = transport.spec.node(node.name)
        first = deploy.ship(transport, board, dist, there, log)
        assert first == ["copied hadoop-3.3.6", "copied spark-3.5.0", "copied sbclab-jobs.jar"]
        assert (there / "hadoop-3.3.6" / "lib" / "a.jar").read_bytes() == (local / "hadoop-3.3.6" / "lib" / "a.jar").read_bytes()
        assert (there / "sbclab-jobs.jar").read_bytes() == b"jobs"
        assert sorted(p.name for p in there.iterdir()) == ["hadoop-3.3.6", "sbclab-jobs.jar", "spark-3.5.0"], "no partial folder left"
        assert deploy.ship(transport, board, dist, there, log) == []
        (local / "spark-3.5.0" / "MANIFEST.json").write_text(json.dumps({"files": {"lib/a.jar": "changed"}}))
        assert deploy.ship(transport, board, dist, there, log) == ["copied spark-3.5.0"]
    finally:
        transport.close()
        shutil.rmtree(there, ignore_errors=True)


def _stored(results):
    """The runs a command stored, none when it failed before storing any (its output then says why)."""
    return ResultsStore(results).runs() if results.exists() else []


def _assert_sampled_on_the_boards(cluster, store, run) -> None:
    """Each board sampled itself: its disk found from its data directory, its interface from its
    address, the job's marks in its samples, and the HDFS writes in its disk counters."""
    m = run.measurements
    assert set(m.nodes) == {n.name for n in cluster.spec.nodes}
    for name, figures in m.nodes.items():
        assert figures.samples >= 2 and figures.scope == "node", (name, figures)
        assert not {"disk", "net"} & set(figures.sampler_errors), (name, figures.sampler_errors)
    hdfs_written = run.counters["File System Counters"]["HDFS: Number of bytes written"]
    device = sum(m.nodes[w.name].disk_write_bytes for w in cluster.spec.worker_nodes)
    assert device >= 2.0 * hdfs_written, (device, hdfs_written)
    assert sum(m.nodes[w.name].net_tx_bytes for w in cluster.spec.worker_nodes) >= hdfs_written
    assert {p.source for p in m.power.values()} == {"model"}
    series = json.loads((store.root / m.series).read_text())
    labels = [k["label"] for k in series["marks"]]
    assert labels and labels[0].startswith("start ") and labels[-1].startswith("end "), labels
    for name, node in series["nodes"].items():
        assert node["device"].startswith("loop") and node["interface"] == "eth0", (name, node)


def _ssh_transport(inv, known_hosts):
    state = ClusterState(known_hosts.parent / "state.json", cluster_spec.from_inventory(inv, name="sshunit"),
                         info=ClusterInfo(boards=BoardAccess(inventory=inv, known_hosts=str(known_hosts))))
    return SshTransport(state)


def test_deploy_run_and_tear_down_over_ssh(boards, tmp_path):
    """The whole path on boards: preflight refuses the loopback hostname; once it is fixed, 'up'
    deploys and starts Hadoop over SSH, a second 'up' changes nothing, the main job runs and is
    valid, 'down' stops every daemon and keeps HDFS's data."""
    cluster, folder, _, _ = boards
    hosts_file = tmp_path / "hosts.yml"
    _inventory_file(boards, hosts_file)
    known = _known_hosts(boards, tmp_path / "kh")
    dist = _distribution_on_the_boards(tmp_path)
    # Quick-start JVMs, as the other tests of mechanics have them (test_monitoring measures the default ones).
    common = ["--inventory", str(hosts_file), "--known-hosts", str(known), "--dist-dir", str(dist), "--name", "boards",
              "--knob", "quick-start"]
    runner = CliRunner()
    loopback_hosts = folder / LOOPBACK_NODE / "hosts"
    original = loopback_hosts.read_text()
    try:
        refused = runner.invoke(cli.main_group, ["cluster", "up", *common])
        assert refused.exit_code != 0 and "hostname" in str(refused.exception) and LOOPBACK_NODE in str(refused.exception)
        assert "boards" not in ClusterState.names(), "nothing was deployed"
        with open(loopback_hosts, "w") as f:  # in place: the node's bind mount sees the same file
            f.write(original.replace("127.0.1.1", cluster.spec.node(LOOPBACK_NODE).address))

        up = runner.invoke(cli.main_group, ["cluster", "up", *common])
        assert up.exit_code == 0, (up.output, up.exception)
        state = ClusterState.load("boards")
        assert state.spec.backend == "ssh" and state.phase == "up"
        # The test's boards share this host's disk, so whichever board checks after another copied
        # the jar finds it there already.
        changes = StackRecord.load(state.root).deploy
        assert set(changes) == {n.name for n in cluster.spec.nodes}
        assert {c for got in changes.values() for c in got} == {f"copied {distribution.installed(check=False).jobs_jar.name}"}, changes
        daemons = sorted(e["pidfile"] for e in state.of_kind("remote_process"))
        assert len(daemons) == 3 + 2 * 2
        master_disk = cluster.transport.node_disk(cluster.spec.master) / "sbclab" / "sbclab" / "boards" / "data"
        assert (master_disk / "hdfs" / "namenode" / "current" / "VERSION").exists()
        # The web UIs and REST APIs listen on the boards' loopback (sbclab reached them through SSH);
        # what the daemons need of each other is on the boards' addresses.
        master, worker = cluster.spec.master, cluster.spec.worker_nodes[0]
        assert not any(reachable(master.address, port) for port in (8088, 9870, 19888))
        assert not any(reachable(worker.address, port) for port in (8042, 9864))
        assert reachable(master.address, 8020) and reachable(worker.address, 9866)
        # ... to the cluster's nodes and this host only: a packet filter on each board drops the rest.
        listed = cluster.transport.capture(worker, ["nft", "list", "table", "inet", "sbclab_boards"])
        assert listed.status == 0 and b"ct state new drop" in listed.stdout and master.address.encode() in listed.stdout

        again = runner.invoke(cli.main_group, ["cluster", "up", *common])
        assert again.exit_code == 0, (again.output, again.exception)
        assert "nothing changed" in again.output
        assert sorted(e["pidfile"] for e in ClusterState.load("boards").of_kind("remote_process")) == daemons

        results = tmp_path / "results"
        # The test boards share this host's /proc/stat, busy with the other tests: no waiting for it to idle.
        ran = runner.invoke(cli.main_group, ["run", *common, "--size", "8MB", "--pi-maps", "2", "--pi-samples", "1000",
                                             "--idle-baseline", "2", "--idle-wait", "0", "--results", str(results)])
        assert ran.exit_code == 0, (ran.output, ran.exception)
        store = ResultsStore(results)
        stored = store.runs()
        assert {(r.workload, r.engine) for r in stored} >= {("teragen", "hadoop"), ("terasort", "hadoop"), ("pi", "spark")}
        assert all(r.valid for r in stored), [(r.workload, r.validity) for r in stored]
        assert all(r.cluster.backend == "ssh" for r in stored)
        _assert_sampled_on_the_boards(cluster, store, next(r for r in stored if r.workload == "teragen"))
        assert not [e for e in ClusterState.load("boards").of_kind("remote_process") if "sampler" in e["label"]]
        assert not reaper.mentioning("/sampler/sampler.py"), "no sampler outlives its run"

        down = runner.invoke(cli.main_group, ["cluster", "down", "--name", "boards"])
        assert down.exit_code == 0, (down.output, down.exception)
        assert "boards" not in ClusterState.names()
        assert not reaper.mentioning(str(cluster.transport.node_disk(cluster.spec.master)) + "/sbclab/")
        assert (master_disk / "hdfs" / "namenode" / "current" / "VERSION").exists(), "the boards keep their data"
        assert cluster.transport.capture(worker, ["nft", "list", "table", "inet", "sbclab_boards"]).status != 0
    finally:
        if "boards" in ClusterState.names():
            nodes.down("boards", force=True, purge=True)
        with open(loopback_hosts, "w") as f:
            f.write(original)
        for node in cluster.spec.nodes:
            shutil.rmtree(cluster.transport.node_disk(node) / "sbclab" / "sbclab", ignore_errors=True)


def test_a_firmware_knob_is_refused_on_boards_that_are_no_pi5(boards, tmp_path):
    """`knobs apply` reads each board's model first: nothing is written to a board that is not a Pi 5."""
    _inventory_file(boards, tmp_path / "hosts.yml")
    known = _known_hosts(boards, tmp_path / "kh")
    result = CliRunner().invoke(cli.main_group, ["knobs", "apply", "pcie-gen3", "--inventory", str(tmp_path / "hosts.yml"),
                                                 "--known-hosts", str(known), "--hosts", "master,worker1"])
    assert result.exit_code == 1, result.output
    assert result.output.count("is not a Raspberry Pi 5") == 2 and "worker2" not in result.output


def _micro_on_the_boards(boards, tmp_path, name: str, *options: str):
    """`sbclab micro` on the test boards' inventory, on worker1, in the shortest steps: (its result, its results folder)."""
    _inventory_file(boards, tmp_path / "hosts.yml")
    known = _known_hosts(boards, tmp_path / "kh")
    results = tmp_path / "results"
    done = CliRunner().invoke(cli.main_group, [
        "micro", "--inventory", str(tmp_path / "hosts.yml"), "--known-hosts", str(known), "--name", name,
        "--node", "worker1", *options, "--step-seconds", str(web.SHORTEST_STEP_S), "--max-rate", "200",
        "--idle-baseline", "0", "--busy-max", "0",
        "--results", str(results)])
    return done, results


def test_node_benchmarks_run_on_the_boards_over_ssh(boards, tmp_path):
    """fio, iperf3, NetPIPE (TCP, and MPI launched from this host) and nginx under httperf run on the
    boards through SSH, sampled there, and leave nothing running (sysbench and stress-ng go the same way)."""
    cluster, _, _, _ = boards
    done, results = _micro_on_the_boards(boards, tmp_path, "bmicro", "--benchmarks", "storage,network,netpipe,web",
                                         "--seconds", "1", "--file-size", "16M", "--netpipe-upper", "16KiB",
                                         "--netpipe-perturbation", "0", "--netpipe-repeats", "20", "--doc-sizes", "4")
    runs = {(r.workload, r.engine): r for r in _stored(results)}
    assert done.exit_code == 0, (done.output[-3000:], done.exception,
                                 [(r.workload, r.validity) for r in runs.values() if not r.valid])
    assert set(runs) == {("storage", "node"), ("iperf", "node"), ("netpipe", "node"), ("netpipe", "mpi"), ("web", "node")}
    assert all(r.valid and r.cluster.backend == "ssh" for r in runs.values())
    runs = {**{workload: r for (workload, engine), r in runs.items() if engine == "node"},
            "netpipe-mpi": runs["netpipe", "mpi"]}
    assert runs["storage"].result["mb_s"]["seq-write"]["16m"] > 0
    assert runs["iperf"].result["to_master_mbit_s"] > 0 and runs["iperf"].result["from_master_mbit_s"] > 0
    assert runs["netpipe"].parameters["peer"] == "worker2" and runs["netpipe"].result["peak_mbit_s"] > 0
    assert runs["netpipe-mpi"].parameters["peer"] == "worker2" and runs["netpipe-mpi"].result["peak_mbit_s"] > 0
    assert runs["web"].parameters["client"] == "master" and runs["web"].result["peak_rate"] >= 100
    sampled = runs["storage"].measurements.nodes["worker1"]
    assert (sampled.disk_write_bytes or 0) > 0, ("sampled on the board", sampled)
    assert "bmicro" not in ClusterState.names()
    worker1 = cluster.spec.node("worker1")
    assert not reaper.mentioning(str(cluster.transport.node_disk(worker1) / "sbclab" / "sbclab" / "bmicro")), \
        "no benchmark or sampler left running"
    # On the boards: the node benchmarks' module may run its own servers on its cluster beside this one.
    boards = {cluster.transport.netns(n) for n in cluster.spec.nodes}
    servers = [p.info["cmdline"] for p in psutil.process_iter(["cmdline"])
               if (p.info["cmdline"] or [""])[0].split("/")[-1] in ("iperf3", "NPtcp")
               and set(subprocess.run(["ip", "netns", "identify", str(p.pid)], capture_output=True,
                                      text=True).stdout.split()) & boards]
    assert not servers, "iperf3's and NetPIPE's servers stopped with their runs (nginx's folder is the board's, above)"
    assert not glob.glob("/tmp/sbclab-bmicro-*"), "MPI's working folders gone from the boards"


def test_a_web_cell_runs_in_a_container_on_a_board_from_the_image_built_here(boards, tmp_path):
    """`micro --container` on boards: the node image built on this host is streamed to the board's own
    Podman (a store of its own), nginx serves from a container there beside the native run, and no
    container is left on the board."""
    _, folder, _, _ = boards
    done, results = _micro_on_the_boards(boards, tmp_path, "bweb", "--benchmarks", "web", "--container", "podman",
                                         "--doc-sizes", "1")
    runs = {r.cluster.runtime: r for r in _stored(results)}
    assert done.exit_code == 0, (done.output[-3000:], done.exception, [r.validity for r in runs.values() if not r.valid])
    assert set(runs) == {"native", "container"} and all(r.valid and r.cluster.backend == "ssh" for r in runs.values())
    served = runs["container"].result["container"]
    assert runs["container"].result["peak_rate"] > 0 and served["runtime"] == "podman"
    assert served["image_digest"].startswith("sha256:")
    tag = served["image"]
    board = ["podman", "--root", str(folder / "worker1" / "containers"), "--runroot",
             f"{_board_run_root('worker1')}/storage"]
    images = subprocess.run([*board, "images", "--format", "{{.Id}}"], capture_output=True, text=True)
    assert served["image_digest"].removeprefix("sha256:")[:12] in images.stdout, \
        ("the image went to the board's own store", tag, images.stdout, images.stderr)
    left = subprocess.run([*board, "ps", "--all", "--format", "{{.Names}}"], capture_output=True, text=True)
    assert left.returncode == 0 and not left.stdout.strip(), left.stdout
    assert "bweb" not in ClusterState.names()


def test_hpl_runs_across_two_boards_from_this_host(boards, tmp_path):
    """HPL with one rank on each of two boards: mpirun here, its daemons started through the node
    shell over SSH, the ranks talking between the boards; rank 0's output fetched from worker1."""
    _inventory_file(boards, tmp_path / "hosts.yml")
    known = _known_hosts(boards, tmp_path / "kh")
    results = tmp_path / "results"
    done = CliRunner().invoke(cli.main_group, [
        "hpl", "--inventory", str(tmp_path / "hosts.yml"), "--known-hosts", str(known), "--name", "bhpl",
        "--nodes", "2", "--n", "400", "--nb", "32", "--ranks-per-node", "1", "--idle-baseline", "0",
        "--busy-max", "0",
        "--results", str(results)])
    runs = _stored(results)
    assert done.exit_code == 0, (done.output[-3000:], done.exception, [r.validity for r in runs if not r.valid])
    [run] = runs
    assert run.valid and run.cluster.backend == "ssh" and run.parameters["hosts"] == ["worker1", "worker2"]
    assert (run.parameters["p"], run.parameters["q"]) == (1, 2) and run.result["rmax_gflops"] > 0
    assert "bhpl" not in ClusterState.names() and not reaper.mentioning("orted")
    assert not glob.glob("/tmp/sbclab-bhpl-*")


def test_an_experiment_runs_on_the_first_workers_of_the_inventory(boards, tmp_path):
    """`bench --inventory`: a 1-worker cell runs on the master and worker1 only, its airline input
    generated here and streamed to the board, and the shape's HDFS is purged when it ends."""
    cluster, folder, _, _ = boards
    _inventory_file(boards, tmp_path / "hosts.yml")
    known = _known_hosts(boards, tmp_path / "kh")
    dist = _distribution_on_the_boards(tmp_path)
    experiment = tmp_path / "boards.yaml"
    experiment.write_text("name: boards\ncluster: {name: bboards, knobs: [quick-start]}\nengines: [hadoop]\n"
                          "workloads: [wordcount]\n"
                          "workers: [1]\nsizes: [1MB]\nrepetitions: 1\nmonitor: {idle_baseline_s: 0, busy_window_s: 0}\n"
                          # The test boards share this host's /proc/stat, busy with the other tests.
                          "between_runs: {idle_timeout_s: 0}\n")
    results = tmp_path / "results"
    loopback_hosts = folder / LOOPBACK_NODE / "hosts"
    original = loopback_hosts.read_text()
    try:
        with open(loopback_hosts, "w") as f:
            f.write(original.replace("127.0.1.1", cluster.spec.node(LOOPBACK_NODE).address))
        done = CliRunner().invoke(cli.main_group, [
            "bench", str(experiment), "--inventory", str(tmp_path / "hosts.yml"), "--known-hosts", str(known),
            "--dist-dir", str(dist), "--results", str(results)])
    finally:
        with open(loopback_hosts, "w") as f:
            f.write(original)
    runs = [r for r in _stored(results) if r.cell]
    assert done.exit_code == 0, (done.output[-3000:], done.exception, [(r.workload, r.validity) for r in runs])
    assert [(r.cell["workers"], [n.name for n in r.cluster.nodes], r.cluster.backend) for r in runs] == \
        [(1, ["master", "worker1"], "ssh")]
    assert all(r.valid for r in runs), [r.validity for r in runs]
    assert all(r.measurements and r.measurements.nodes for r in runs)
    assert "bboards" not in ClusterState.names()
    for node in cluster.spec.nodes:
        root = cluster.transport.node_disk(node) / "sbclab" / "sbclab" / "bboards"
        assert not root.exists(), f"each shape's HDFS and logs were purged from {node.name}"
    assert not reaper.mentioning("/sbclab/bboards/")
