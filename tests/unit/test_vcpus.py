"""The virtual-core balancer's placement decisions, on a fake cgroup tree with scripted CPU times."""

import errno
import os
import subprocess
import sys
import threading
import time

import pytest

from sbclab.cluster import cgroups, vcpus


@pytest.fixture
def node(tmp_path):
    for i in range(4):
        (tmp_path / f"vcpu{i}").mkdir()
        (tmp_path / f"vcpu{i}" / "tasks").write_text("")
    (tmp_path / "tasks").write_text("")
    return tmp_path


@pytest.fixture
def fake_kernel(node, monkeypatch):
    """tasks files keep one TID per write, as a cgroup v1 tasks file does; CPU times come from a dict."""
    cpu = {}

    def move(tid, group):
        for other in [node, *node.glob("vcpu*")]:
            tids = [t for t in vcpus._tids(other) if t != tid]
            (other / "tasks").write_text("\n".join(map(str, tids)))
        (group / "tasks").write_text("\n".join(map(str, [*vcpus._tids(group), tid])))

    monkeypatch.setattr(vcpus, "_move", move)
    monkeypatch.setattr(vcpus, "_cpu_ns", lambda tid: cpu.get(tid))
    return cpu


def placement(node):
    return [sorted(vcpus._tids(node / f"vcpu{i}")) for i in range(4)]


def test_new_threads_are_spread_over_the_cores(node, fake_kernel):
    (node / "tasks").write_text("1\n2\n3\n4\n")
    fake_kernel.update({t: 0 for t in (1, 2, 3, 4)})
    vcpus.NodeBalancer(node).tick()
    assert sorted(len(p) for p in placement(node)) == [1, 1, 1, 1]
    assert vcpus._tids(node) == []


def test_busy_threads_sharing_a_core_are_separated(node, fake_kernel):
    (node / "vcpu3" / "tasks").write_text("10\n11\n12\n13\n")  # all created by one thread on one core
    balancer = vcpus.NodeBalancer(node)
    fake_kernel.update({10: 0, 11: 0, 12: 0, 13: 0})
    balancer.tick()
    fake_kernel.update({10: 50, 11: 50, 12: 50, 13: 50})
    balancer.tick()
    assert [len(p) for p in placement(node)] == [1, 1, 1, 1]


def test_threads_born_on_one_core_are_spread_at_the_next_tick(node, fake_kernel):
    (node / "vcpu0" / "tasks").write_text("1\n")  # sysbench's main thread
    balancer = vcpus.NodeBalancer(node)
    fake_kernel.update({1: 5})
    balancer.tick()
    (node / "vcpu0" / "tasks").write_text("1\n20\n21\n22\n23\n")  # its four workers, born on its core
    fake_kernel.update({20: 0, 21: 0, 22: 0, 23: 0})
    balancer.tick()  # no history of theirs yet: placed all the same
    assert sorted(len(p) for p in placement(node)) == [1, 1, 1, 2]


def test_idle_threads_stay_where_they_are(node, fake_kernel):
    (node / "vcpu0" / "tasks").write_text("1\n2\n")
    balancer = vcpus.NodeBalancer(node)
    fake_kernel.update({1: 5, 2: 5})
    balancer.tick()
    balancer.tick()  # no CPU used since: nothing moves
    assert placement(node)[0] == [1, 2]


def _big_little(node):
    """vcpu0-1 big cores of half a host core each, vcpu2-3 little ones of 0.15 (cgroup v1 files)."""
    for i, quota in enumerate((50_000, 50_000, 15_000, 15_000)):
        (node / f"vcpu{i}" / "cpu.cfs_quota_us").write_text(str(quota))
        (node / f"vcpu{i}" / "cpu.cfs_period_us").write_text("100000")


def test_on_cores_of_two_kinds_each_busy_thread_gets_a_core_the_busiest_a_big_one(node, fake_kernel):
    _big_little(node)
    (node / "vcpu3" / "tasks").write_text("10\n11\n12\n13\n")
    balancer = vcpus.NodeBalancer(node)
    fake_kernel.update({10: 0, 11: 0, 12: 0, 13: 0})
    balancer.tick()
    fake_kernel.update({10: 90, 11: 80, 12: 20, 13: 10})
    balancer.tick()
    # Sharing a big core would give two threads more than the little cores do, but a scheduler
    # leaves no core idle while threads wait: 8 threads on the RK3588's 8 cores is its all-core figure.
    big, little = placement(node)[:2], placement(node)[2:]
    assert big == [[10], [11]] and sorted(little) == [[12], [13]]


def test_a_lone_busy_thread_on_a_little_core_moves_to_a_big_one(node, fake_kernel):
    _big_little(node)
    (node / "vcpu2" / "tasks").write_text("7\n")
    (node / "vcpu0" / "tasks").write_text("8\n")
    balancer = vcpus.NodeBalancer(node)
    fake_kernel.update({7: 0, 8: 0})
    balancer.tick()
    fake_kernel.update({7: 100, 8: 0})
    balancer.tick()
    assert 7 in placement(node)[0] + placement(node)[1]


def test_a_new_thread_goes_to_an_idle_big_core(node, fake_kernel):
    _big_little(node)
    balancer = vcpus.NodeBalancer(node)
    balancer.tick()
    (node / "tasks").write_text("30\n")
    fake_kernel.update({30: 0})
    balancer.place_newcomers()
    assert 30 in placement(node)[0] + placement(node)[1]


def test_the_balancer_stops_when_the_node_is_gone(tmp_path):
    assert vcpus.NodeBalancer(tmp_path / "gone").tick() is False


def test_the_balancer_says_when_its_first_tick_is_done(tmp_path):
    """cluster up waits for this before anything is measured: a thread started earlier would run on the whole
    node's quota."""
    group, ready = tmp_path / "node", tmp_path / "ready"
    group.mkdir()
    runner = threading.Thread(target=vcpus.main, args=(["--node-group", str(group), "--ready", str(ready),
                                                        "--interval", "0.01"],))
    runner.start()
    deadline = time.monotonic() + 10
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ready.read_text().strip() == str(os.getpid())
    group.rmdir()
    runner.join(timeout=10)
    assert not runner.is_alive(), "the balancer ends with its groups"


def test_threads_born_between_ticks_are_placed_before_the_next_and_stay(node, fake_kernel):
    (node / "vcpu0" / "tasks").write_text("1\n")  # sysbench's main thread
    balancer = vcpus.NodeBalancer(node)
    fake_kernel.update({1: 5})
    balancer.tick()
    (node / "vcpu0" / "tasks").write_text("1\n20\n21\n22\n23\n")
    fake_kernel.update({20: 0, 21: 0, 22: 0, 23: 0})
    balancer.place_newcomers()
    assert sorted(len(p) for p in placement(node)) == [1, 1, 1, 2]
    where = {tid: i for i, tids in enumerate(placement(node)) for tid in tids}
    fake_kernel.update({20: 50, 21: 50, 22: 50, 23: 50})
    balancer.tick()  # one busy worker per core already: nothing moves
    assert {tid: i for i, tids in enumerate(placement(node)) for tid in tids} == where
    assert len({where[t] for t in (20, 21, 22, 23)}) == 4


def test_threads_arriving_on_a_node_idle_at_its_first_tick_are_spread(node, fake_kernel):
    balancer = vcpus.NodeBalancer(node)
    balancer.tick()  # a bare node: nothing runs yet
    (node / "vcpu2" / "tasks").write_text("7\n8\n")
    fake_kernel.update({7: 0, 8: 0})
    balancer.tick()
    assert sorted(len(p) for p in placement(node)) == [0, 0, 1, 1]


@pytest.fixture
def v1_node(tmp_path, monkeypatch):
    """A v1 hierarchy of one node with four virtual cores, some holding threads already."""
    monkeypatch.setattr(cgroups, "ROOT", tmp_path)
    for controller in cgroups.V1_CONTROLLERS:
        (tmp_path / controller / "sbclab" / "lab" / "worker1").mkdir(parents=True)
    group = cgroups.NodeCgroup("lab", "worker1")
    for i, tids in enumerate(["1 2", "3", "4 5 6", "7 8"]):
        (group.cpu_dir() / f"vcpu{i}").mkdir()
        (group.cpu_dir() / f"vcpu{i}" / "tasks").write_text(tids.replace(" ", "\n"))
    return group


def test_a_process_joins_the_node_on_its_least_crowded_core(v1_node):
    v1_node.join()
    written = {p.relative_to(cgroups.ROOT).as_posix(): p.read_text()
               for p in cgroups.ROOT.rglob("cgroup.procs")}
    # Never the node's own cpu group, where one thread could use the quota of all four cores.
    assert written == {"cpu/sbclab/lab/worker1/vcpu1/cgroup.procs": "0",
                       "cpuacct/sbclab/lab/worker1/cgroup.procs": "0",
                       "memory/sbclab/lab/worker1/cgroup.procs": "0",
                       "pids/sbclab/lab/worker1/cgroup.procs": "0"}


def test_a_node_without_virtual_cores_yet_is_joined_whole(v1_node):
    for core in v1_node.vcpu_dirs():
        (core / "tasks").unlink()
        core.rmdir()
    v1_node.join()
    assert (v1_node.cpu_dir() / "cgroup.procs").read_text() == "0"


@pytest.fixture
def metered(v1_node, monkeypatch):
    """The v1 node with quotas on its cores (a quarter of a host core each) and a CPU meter it reads."""
    monkeypatch.setattr(cgroups, "version", lambda: 1)
    for core in v1_node.vcpu_dirs():
        (core / "cpu.cfs_quota_us").write_text("25000")
        (core / "cpu.cfs_period_us").write_text("100000")
    meter = cgroups.ROOT / "cpuacct" / v1_node.relative / "cpuacct.usage"
    meter.write_text("0")
    reads = []
    cpu = {tid: 0 for tid in range(1, 9)}
    monkeypatch.setattr(vcpus, "_cpu_ns", lambda tid: reads.append(tid) or cpu.get(tid))

    def move(tid, group):  # a v1 tasks file: written one TID at a time, the thread leaving its old group
        for core in v1_node.vcpu_dirs():
            (core / "tasks").write_text("\n".join(str(t) for t in vcpus._tids(core) if t != tid))
        (group / "tasks").write_text("\n".join(map(str, [*vcpus._tids(group), tid])))
    monkeypatch.setattr(vcpus, "_move", move)
    balancer = vcpus.NodeBalancer(v1_node.cpu_dir())
    assert balancer.usage_path == meter, "found in cpuacct's own hierarchy"
    return balancer, meter, reads, cpu


def _tick(balancer, meter, used_ns):
    meter.write_text(str(int(meter.read_text()) + used_ns))
    time.sleep(0.01)
    return balancer.tick()


def test_a_quiet_node_is_not_read_thread_by_thread(metered):
    balancer, meter, reads, _ = metered
    balancer.tick()
    _tick(balancer, meter, 0)  # the meter's first reading
    reads.clear()
    assert _tick(balancer, meter, 0) and balancer.stale
    assert reads == [], "a tick of a node that used nothing reads no thread's CPU time"


def test_a_busy_node_is_balanced_after_one_tick_that_takes_its_threads_times_afresh(metered, v1_node):
    balancer, meter, reads, cpu = metered
    balancer.tick()
    _tick(balancer, meter, 0)
    _tick(balancer, meter, 0)  # quiet: skipped
    cpu.update({4: 10**9, 5: 10**9, 6: 10**9})  # three threads on one core: busy, most of it while skipped
    reads.clear()
    _tick(balancer, meter, 10**12)
    assert reads and not balancer.stale
    assert sorted(vcpus._tids(v1_node.cpu_dir() / "vcpu2")) == [4, 5, 6], "times spanning skipped ticks move nothing"
    cpu.update({4: 2 * 10**9, 5: 2 * 10**9, 6: 2 * 10**9})
    _tick(balancer, meter, 10**12)
    assert len(vcpus._tids(v1_node.cpu_dir() / "vcpu2")) == 1, "balanced on the next tick's own times"


def test_a_node_whose_cpu_time_cannot_be_read_is_always_read_in_full(node, fake_kernel):
    balancer = vcpus.NodeBalancer(node)
    assert balancer.usage_path is None
    balancer.tick()
    balancer.tick()
    assert not balancer._quiet(balancer.cores) and not balancer.stale


def test_a_v2_nodes_cpu_time_is_read_from_its_cpu_stat(tmp_path, monkeypatch):
    monkeypatch.setattr(cgroups, "ROOT", tmp_path)
    monkeypatch.setattr(cgroups, "version", lambda: 2)
    group = cgroups.NodeCgroup("lab", "worker1")
    group.cpu_dir().mkdir(parents=True)
    (group.cpu_dir() / "cpu.stat").write_text("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n")
    assert cgroups.usage_file(group.cpu_dir()) == group.cpu_dir() / "cpu.stat"
    assert group.cpu_usage_ns() == 1_500_000
    (group.cpu_dir() / "cpu.stat").unlink()
    assert group.cpu_usage_ns() is None


def test_a_threads_cpu_time_is_read_through_a_descriptor_kept_open_until_it_ends(monkeypatch):
    """The same figures as reading the file afresh; a process that ended reads as None and its descriptor
    is closed; descriptors of threads the balancers no longer know are closed; with no descriptor left
    to keep, the file is read the long way."""
    monkeypatch.setattr(vcpus, "_schedstats", {})
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        first = vcpus._cpu_ns(busy.pid)
        kept = vcpus._schedstats[busy.pid]
        time.sleep(0.2)
        second = vcpus._cpu_ns(busy.pid)
        fresh = int(vcpus._read(f"/proc/{busy.pid}/task/{busy.pid}/schedstat").split()[0])
        assert 0 < first < second <= fresh and vcpus._schedstats[busy.pid] == kept
    finally:
        busy.kill()
        busy.wait()
    assert vcpus._cpu_ns(busy.pid) is None and busy.pid not in vcpus._schedstats
    with pytest.raises(OSError):
        os.fstat(kept)

    me = threading.get_native_id()
    assert vcpus._cpu_ns(me) > 0 and me in vcpus._schedstats
    vcpus._keep_schedstats_of(set())
    assert vcpus._schedstats == {}

    def no_descriptor_left(*args):
        raise OSError(errno.EMFILE, "Too many open files")
    monkeypatch.setattr(vcpus.os, "open", no_descriptor_left)
    monkeypatch.setattr(vcpus, "_read", lambda path: b"123 4 5\n")
    assert vcpus._cpu_ns(me) == 123 and vcpus._schedstats == {}
