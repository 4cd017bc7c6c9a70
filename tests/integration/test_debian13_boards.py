"""Boards running Debian 13 (trixie), as a freshly flashed Raspberry Pi OS does today: each board's
sshd runs chrooted into a trixie root filesystem built here from Debian packages (mmdebstrap, with
the OpenJDK 21 trixie packages), in a mount namespace of its own inside an emulated node. sbclab
finds the boards' Java 21 for the current stack and runs Pi on both engines there; the 2026 seed's stack
(Java 11 or 17, which trixie does not package) is refused with the reason, and takes a JDK from this
host (--jdk), copied once."""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from contextlib import ExitStack
from pathlib import Path

import pytest
from click.testing import CliRunner

from sbclab import cli, paths
from sbclab.cluster import inventory, nodes
from sbclab.cluster.state import ClusterState
from sbclab.experiments.orchestrator import cluster_for
from sbclab.results.store import ResultsStore
from sbclab.stack import deploy, distribution, versions

from .conftest import NOTHING, leaked, mechanics_spec, remove_if_left
from .test_ssh_boards import _keygen, _ssh_transport, _start_sshd, _wait_for_port, _write_sshd_config

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mmdebstrap"),
                                reason="Debian 13 boards are chroots built with mmdebstrap in emulated nodes (root)")

NAME = "ideb13"  # the emulated nodes the boards' sshd run in
BOARDS = "bdeb13"  # the cluster sbclab makes of the boards
# What a Debian 13 board needs for sbclab: SSH, Python for its sampler, ps, ip, nft, and the Java trixie packages.
PACKAGES = ("openssh-server", "python3", "procps", "iproute2", "nftables", "openjdk-21-jre-headless")
# The host's own JDK for the stack trixie packages no Java for (Debian's links its conf/ into /etc).
HOST_JDK = Path("/usr/lib/jvm/java-17-openjdk-amd64")

# Run in the sshd's own mount namespace: the trixie root with this board's /tmp, /run, /proc, devices,
# /etc/hosts, disk, and the test's folder and the cache (where the distribution lives) at their own paths.
CHROOTED_SSHD = r'''
set -e
root="$0"; hosts="$1"; config="$2"; shift 3
mount -t tmpfs tmpfs "$root/tmp"; mount -t tmpfs tmpfs "$root/run"; mkdir -p "$root/run/sshd"
mount -t proc proc "$root/proc"; mount --rbind /sys "$root/sys"; mount --rbind /dev "$root/dev"
mount --bind "$hosts" "$root/etc/hosts"
for path in "$@"; do mkdir -p "$root$path"; mount --bind "$path" "$root$path"; done
exec chroot "$root" /usr/sbin/sshd -D -e -f "$config"
'''


def _trixie_root() -> Path:
    """The trixie root filesystem, built once per package list and kept in the cache."""
    recipe = hashlib.sha256(json.dumps(["trixie", *PACKAGES]).encode()).hexdigest()[:12]
    root = paths.cache_dir() / "test-roots" / f"trixie-{recipe}"
    if (root / "usr" / "sbin" / "sshd").exists():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix="build-", dir=root.parent))
    try:
        subprocess.run(["mmdebstrap", "--mode=root", "--variant=apt", f"--include={','.join(PACKAGES)}",
                        "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/man/*",
                        "--dpkgopt=path-exclude=/usr/share/locale/*", '--essential-hook=mkdir -p "$1"/usr/share/man/man1',
                        "trixie", str(building / "root"), "http://deb.debian.org/debian"],
                       check=True, capture_output=True, timeout=1200, env={**os.environ, "TMPDIR": str(building)})
        (building / "root").rename(root)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return root


@pytest.fixture(scope="module")
def trixie_boards(tmp_path_factory):
    """(cluster, folder, client key, host keys) of a master and a worker whose sshd runs in trixie."""
    root = _trixie_root()
    remove_if_left(NAME)
    assert leaked() == NOTHING
    folder = tmp_path_factory.mktemp("deb13")
    client_key = folder / "client"
    (folder / "authorized_keys").write_text(_keygen(client_key))
    host_keys = {}
    with cluster_for(mechanics_spec(NAME, subnet="10.231.0.0/24", workers=1), bare=True) as cluster, \
            ExitStack() as servers:
        for node in cluster.spec.nodes:
            here = folder / node.name
            here.mkdir()
            host_keys[node.name] = _keygen(here / "host_key")
            (here / "hosts").write_text("127.0.0.1 localhost\n" + "".join(f"{n.address} {n.name}\n"
                                                                         for n in cluster.spec.nodes))
            _write_sshd_config(here, folder, node.address)
            shared = [str(cluster.transport.node_disk(node)), str(folder), str(paths.cache_dir())]
            # As a slave: another cluster's disks, mounted when it began, are unmounted here too when that cluster goes.
            argv = ["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c", CHROOTED_SSHD, str(root),
                    str(here / "hosts"), str(here / "sshd_config"), *shared]
            _start_sshd(cluster, servers, node, argv, here / "sshd.log")
        for node in cluster.spec.nodes:
            _wait_for_port(node.address, 22)
        yield cluster, folder, client_key, host_keys
    assert leaked() == NOTHING


def _files(boards, tmp_path) -> tuple[Path, Path, Path]:
    """(inventory, known_hosts, distribution folder) for the trixie boards."""
    cluster, folder, client_key, keys = boards
    def host(node):
        fields = {"ansible_host": node.address, "ansible_user": "root", "ansible_ssh_private_key_file": str(client_key),
                  "data_dir": str(cluster.transport.node_disk(node) / "sbclab")}
        return f"        {node.name}: {json.dumps(fields)}\n"
    hosts = tmp_path / "hosts.yml"
    hosts.write_text("all:\n  vars: {board: rpi5b, storage: nvme-p31-gen3}\n  children:\n    master:\n      hosts:\n"
                     + host(cluster.spec.master) + "    workers:\n      hosts:\n"
                     + "".join(host(w) for w in cluster.spec.worker_nodes))
    known = tmp_path / "kh"
    known.write_text("".join(f"{n.address} {' '.join(keys[n.name].split()[:2])}\n" for n in cluster.spec.nodes))
    # The distribution already "on the boards" (the cache is bound into each chroot at its own path).
    dist = tmp_path / "dist"
    dist.mkdir()
    for stack in ("current", "lee-park-2026"):
        local = distribution.installed(stack, check=False)
        for home in (local.hadoop_home, local.spark_home):
            if not (dist / home.name).exists():
                (dist / home.name).symlink_to(home)
    return hosts, known, dist


def test_the_current_stack_runs_on_trixies_own_java_21(trixie_boards, tmp_path):
    """`bench --inventory` with the current stack on the trixie boards: deployed with the boards' own
    Java 21, Pi runs on MapReduce and on Spark 4 and is valid, and each run records the boards' Debian 13
    and Java; the shape's daemons, HDFS and logs go when it ends."""
    hosts, known, dist = _files(trixie_boards, tmp_path)
    experiment = tmp_path / "trixie.yaml"
    experiment.write_text(f"name: trixie\ncluster: {{name: {BOARDS}, knobs: [quick-start]}}\nstacks: [current]\n"
                          "workloads: [pi]\nengines: [hadoop, spark]\nworkers: [1]\nrepetitions: 1\n"
                          "parameters: {pi: {maps: 2, samples_per_map: 1000}}\nmonitor: {idle_baseline_s: 0, busy_window_s: 0}\n")
    results = tmp_path / "results"
    try:
        done = CliRunner().invoke(cli.main_group, ["bench", str(experiment), "--inventory", str(hosts), "--known-hosts",
                                                   str(known), "--dist-dir", str(dist), "--results", str(results)])
        stored = ResultsStore(results).runs() if results.exists() else []
        assert done.exit_code == 0, (done.output[-3000:], done.exception, [(r.workload, r.validity) for r in stored])
    finally:
        if BOARDS in ClusterState.names():
            nodes.down(BOARDS, force=True, purge=True)
    assert BOARDS not in ClusterState.names()
    assert {(r.workload, r.engine) for r in stored} == {("pi", "hadoop"), ("pi", "spark")}
    current = versions.get("current")
    for run in stored:
        assert run.valid and run.cluster.stack == "current", (run.engine, run.validity)
        assert (run.versions["hadoop"], run.versions["spark"]) == (current.hadoop, current.spark)
        for node in run.cluster.nodes:
            assert "trixie" in node.system["os"] and '"21.' in node.system["java"], (node.name, node.system)
    assert abs(next(r for r in stored if r.engine == "spark").result["estimate"] - 3.14) < 0.2


def test_the_seeds_stack_is_refused_on_trixie_and_takes_a_jdk_from_this_host(trixie_boards, tmp_path):
    """lee-park-2026 runs on Java 11 or 17; trixie packages 21 and 25: `up` says so before starting
    anything. Given the host's JDK 17 (--jdk), each board gets it once: a second deploy copies nothing."""
    hosts, known, dist = _files(trixie_boards, tmp_path)
    refused = CliRunner().invoke(cli.main_group, [
        "cluster", "up", "--inventory", str(hosts), "--known-hosts", str(known), "--dist-dir", str(dist), "--name", BOARDS,
        "--stack", "lee-park-2026"])
    assert refused.exit_code != 0 and BOARDS not in ClusterState.names()
    said = str(refused.exception)
    assert "Debian GNU/Linux 13 (trixie), which packages Java 21 or 25" in said and "--jdk" in said, said

    transport = _ssh_transport(inventory.load(hosts), known)
    try:
        stack = versions.get("lee-park-2026")
        worker = transport.spec.worker_nodes[0]
        transport.make_dirs(worker, [transport.cluster_root(worker) / "pids"])
        (home, version), changed = deploy.ensure_java(transport, worker, stack, HOST_JDK, dist, tmp_path / "jdk.log")
        assert '"17.' in version and home.startswith(str(dist / "jdk-")) and changed[0].startswith("copied JDK")
        again = deploy.ensure_java(transport, worker, stack, HOST_JDK, dist, tmp_path / "jdk.log")
        assert again == ((home, version), []), "the JDK is copied once"
    finally:
        transport.close()
