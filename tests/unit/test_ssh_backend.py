"""The parts of the SSH transport that need no board: choosing a Java, the spec of an inventory, what
reaches a board's command line."""

import ipaddress
import os
import re
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from sbclab.cluster import inventory, nodeops, spec
from sbclab.cluster.inventory import BoardAccess
from sbclab.cluster.nodeops import cpu_busy_percent
from sbclab.cluster.remote import smallest_network
from sbclab.cluster.ssh import TIED, SshTransport
from sbclab.cluster.state import ClusterInfo, ClusterState
from sbclab.errors import SbclabError
from sbclab.stack import sizing
from sbclab.stack.daemons import Stack
from sbclab.stack.distribution import Distribution
from sbclab.stack.versions import STACKS
from sbclab.stack.java import pick_java
from sbclab.stack.record import StackRecord

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "inventory.yml"


def test_the_newest_supported_java_is_chosen():
    listing = ("/usr/lib/jvm/java-21-openjdk-arm64|openjdk version \"21.0.2\" 2024-01-16\n"
               "/usr/lib/jvm/java-11-openjdk-arm64|openjdk version \"11.0.22\" 2024-01-16\n"
               "/usr/lib/jvm/java-17-openjdk-arm64|openjdk version \"17.0.10\" 2024-01-16\n"
               "/opt/broken|\n")
    assert pick_java(listing, (11, 17)) == ("/usr/lib/jvm/java-17-openjdk-arm64", 'openjdk version "17.0.10" 2024-01-16')
    assert pick_java("/usr/lib/jvm/java-8|java version \"1.8.0_392\"\n/usr/lib/jvm/java-21|openjdk version \"21\"\n", (11, 17)) is None
    assert pick_java("", (11, 17)) is None


def test_an_inventory_gives_each_board_its_whole_profile():
    inv = inventory.load(EXAMPLE)
    s = spec.from_inventory(inv, name="pis")
    assert s.backend == "ssh" and s.scale.factor == 1.0 and s.workers == len(inv.workers)
    assert [n.name for n in s.nodes] == [h.name for h in inv.hosts]
    worker = s.worker_nodes[0]
    assert worker.address == inv.workers[0].address
    memory_mb, vcores = sizing.yarn_share(worker)
    assert memory_mb > 0 and vcores == int(worker.cpu_cores)
    assert sizing.yarn_share(s.master) == (0, 0)
    with pytest.raises(SbclabError, match="not usable"):
        spec.from_inventory(inv, name="Bad Name")


@pytest.fixture
def backend(tmp_path):
    inv = inventory.load(EXAMPLE)
    state = ClusterState(tmp_path / "state.json", spec.from_inventory(inv, name="pis"),
                         info=ClusterInfo(boards=BoardAccess(inventory=inv, known_hosts="/dev/null")))
    return SshTransport(state)


def test_a_board_gets_the_stacks_variables_only(backend):
    argv = backend.with_env({"PATH": "/usr/bin", "JAVA_HOME": "/j", "HADOOP_CONF_DIR": "/c", "HOME": "/root",
                              "SSH_AUTH_SOCK": "/tmp/agent", "SPARK_HOME": "/s"}, ["java", "-version"])
    assert argv == ["env", "PATH=/usr/bin", "JAVA_HOME=/j", "HADOOP_CONF_DIR=/c", "SPARK_HOME=/s", "java", "-version"]


def test_files_of_the_cluster_live_under_its_folder_on_each_board(backend):
    node = backend.spec.worker_nodes[0]
    root = Path(inventory.load(EXAMPLE).host(node.name).data_dir) / "sbclab" / "pis"
    local = Distribution(STACKS["lee-park-2026"], Path("/cache/hadoop-3.3.6"), Path("/cache/spark-3.5.0"), Path("/src/jobs/sbclab-jobs.jar"))
    stack = Stack(backend, local.relocated(Path("/opt/sbclab")), StackRecord(dist_dir="/opt/sbclab"))
    layout = stack.layout(node)
    assert (layout.conf_dir, layout.disk, layout.log_dir) == (root / "conf", root / "data", root / "logs")
    there = stack.dist
    assert (there.hadoop_classpath, there.spark_jars, there.jobs_jar) == (
        "/opt/sbclab/hadoop-3.3.6/lib/*", Path("/opt/sbclab/spark-3.5.0/jars"), Path("/opt/sbclab/sbclab-jobs.jar"))
    pattern = backend._pattern(node)
    assert re.search(pattern, f"java -Dhadoop.log.dir={root}/logs x")
    assert not re.search(pattern, f"pgrep -f -- {pattern}"), "the pattern does not match the command that greps for it"


def test_mpi_ranks_keep_to_one_network_holding_every_board_and_daemons_to_their_addresses(backend):
    workers = backend.spec.worker_nodes
    networks = backend.mpi_networks(workers)
    addresses = [n.address for n in workers]
    assert len(networks.ranks) == 1 and not networks.ranks[0].endswith("/32")
    assert all(ipaddress.ip_address(a) in ipaddress.ip_network(networks.ranks[0]) for a in addresses)
    assert {f"{a}/32" for a in addresses} <= set(networks.daemons)
    assert smallest_network(["192.168.1.10", "192.168.1.200"]) == "192.168.1.0/24"
    assert smallest_network(["10.0.0.9", "10.0.0.12"]) == "10.0.0.8/29"


def test_a_boards_cpu_use_is_everything_but_idle_iowait_and_steal():
    before = "cpu  100 0 100 700 100 0 0 0 0 0"
    after = "cpu  250 0 150 850 150 0 0 0 0 0"  # 200 busy, 200 idle or waiting
    assert cpu_busy_percent(before, after) == 50.0
    assert cpu_busy_percent(before, before) == 0.0
    stolen = "cpu  250 0 150 850 150 0 0 400 0 0"  # the hypervisor took 400 ticks: not the board's work
    assert cpu_busy_percent(before, stolen) == 25.0


def test_a_machine_that_does_not_answer_counts_as_busy():
    master = SimpleNamespace(name="master")

    class Silent:
        shares_host = True
        spec = SimpleNamespace(master=master, nodes=[master])

        def memory_group(self, node):
            return None

        def capture(self, node, argv, env=None, timeout_s=120):
            raise SbclabError("gone", "")
    assert nodeops.busy_percent(Silent(), 0.1) == 100.0


def test_nodes_with_cgroups_are_idle_by_their_own_use_whatever_the_host_does():
    """A node's CPU time against its quota: another test's cluster busy on the host does not count."""
    class Group:
        def __init__(self, per_read_ns):
            self.used, self.step = 0, per_read_ns

        def cpu_usage_ns(self):
            self.used += self.step
            return self.used
    nodes = [SimpleNamespace(name="master", cpu_cores=0.5), SimpleNamespace(name="worker1", cpu_cores=0.25)]
    groups = {"master": Group(0), "worker1": Group(25_000_000)}  # 25 ms of CPU over a 0.1-s window
    transport = SimpleNamespace(spec=SimpleNamespace(nodes=nodes), memory_group=lambda node: groups[node.name])
    busy = nodeops.busy_percent(transport, 0.1)
    assert 80 < busy <= 100  # worker1 used nearly its quarter core; the host's own load never read
    groups["worker1"] = Group(0)
    assert nodeops.busy_percent(transport, 0.1) == 0.0


def _alive_marked(mark: str) -> list[int]:
    return [p.pid for p in psutil.process_iter(["cmdline"]) if mark in " ".join(p.info["cmdline"] or [])]


def test_a_tied_command_goes_with_its_connection_even_when_it_ignores_term():
    """What sshd does when a connection drops, played by a pipe: the command's stdin closes, and its
    whole session goes, a child that ignores SIGTERM included (as an idle iperf3 server does)."""
    mark = f"sbclab-tied-{os.getpid()}"
    command = f"sh -c 'trap \"\" TERM; exec sleep 30' {mark} & sleep 30"
    r, w = os.pipe()
    proc = subprocess.Popen(["sh", "-c", TIED, "sh", command.replace("sleep 30' ", f"sleep 30 # {mark}' ")], stdin=r)
    os.close(r)
    try:
        deadline = time.monotonic() + 5
        while len(_alive_marked(mark)) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive_marked(mark), "the command started"
        os.close(w)  # the connection went
        assert proc.wait(timeout=10) != 0
        deadline = time.monotonic() + 5
        while _alive_marked(mark) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive_marked(mark), "nothing of the command's session is left"
    finally:
        for pid in _alive_marked(mark):
            os.kill(pid, 9)


def test_a_tied_command_that_ends_gives_its_output_and_status():
    r, w = os.pipe()
    try:
        done = subprocess.run(["sh", "-c", TIED, "sh", "echo hi; exit 7"], stdin=r, capture_output=True, timeout=10)
    finally:
        os.close(r)
        os.close(w)
    assert (done.stdout, done.returncode) == (b"hi\n", 7)
