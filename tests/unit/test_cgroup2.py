"""The cgroup v2 shaping code on a fake unified hierarchy: a node's memory, CPU quota and virtual
cores as threaded groups, its disk by io.max, and the balancer moving threads through cgroup.threads.
(`make test-cgroup2` runs it on a real v2 kernel.)"""

import threading

import pytest

from sbclab.cluster import cgroups, vcpus


@pytest.fixture
def unified(tmp_path, monkeypatch):
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    monkeypatch.setattr(cgroups, "ROOT", tmp_path)
    return tmp_path


def test_a_node_is_a_threaded_subtree_with_one_group_per_board_core(unified):
    group = cgroups.NodeCgroup("lab", "worker1")
    assert group.version == 2
    group.create(2**30)
    node = unified / "sbclab" / "lab" / "worker1"
    assert (node / "memory.max").read_text() == str(2**30)
    assert "+memory" in (unified / "sbclab" / "lab" / "cgroup.subtree_control").read_text()
    group.limit_cpu(1.2, [1.0] * 4)
    assert (node / "cpu.max").read_text() == "120000 100000"
    assert (node / "cgroup.subtree_control").read_text() == "+cpu"
    cores = group.vcpu_dirs()
    assert [c.name for c in cores] == ["vcpu0", "vcpu1", "vcpu2", "vcpu3"]
    assert all((c / "cgroup.type").read_text() == "threaded" and (c / "cpu.max").read_text() == "30000 100000"
               for c in cores)
    assert group.smallest_share() == pytest.approx(0.3)


def test_cores_of_two_kinds_get_quotas_in_proportion_to_their_speeds(unified):
    """A big.LITTLE board: two fast virtual cores and two at 0.3 of their speed share the node's quota."""
    group = cgroups.NodeCgroup("lab", "worker1")
    group.create(2**30)
    group.limit_cpu(1.3, [1.0, 1.0, 0.3, 0.3])
    node = unified / "sbclab" / "lab" / "worker1"
    assert (node / "cpu.max").read_text() == "130000 100000"
    assert [(c / "cpu.max").read_text() for c in group.vcpu_dirs()] == \
        ["50000 100000", "50000 100000", "15000 100000", "15000 100000"]
    assert group.smallest_share() == pytest.approx(0.15)


def test_a_one_core_node_is_limited_by_its_own_group_alone(unified):
    group = cgroups.NodeCgroup("lab", "worker1")
    group.create(2**30)
    group.limit_cpu(0.4)
    assert group.vcpu_dirs() == [] and group.smallest_share() == pytest.approx(0.4)


def test_cpu_periods_move_with_their_shares_and_come_back(unified):
    group = cgroups.NodeCgroup("lab", "worker1")
    group.create(2**30)
    group.limit_cpu(0.004, [1.0])  # a Pi 1 B's share: under 1 ms per 100 ms, a longer period
    saved = group.cpu_limits()
    quota, period = saved[group.cpu_dir()]
    assert period > cgroups.CFS_PERIOD_US and quota >= cgroups.MIN_QUOTA_US
    short = group.on_period(cgroups.polling_period_us(group.smallest_share()))
    group.apply_limits(short)
    assert group.cpu_limits() == short
    group.apply_limits(saved)
    assert group.cpu_limits() == saved


def test_a_nodes_disk_is_throttled_by_io_max_on_its_own_group(unified):
    group = cgroups.NodeCgroup("lab", "worker1")
    group.create(2**30)
    cgroups.throttle_device(group, "7:3", 90 * 10**6, 60 * 10**6, 5000, 3000)
    assert (unified / "sbclab" / "lab" / "worker1" / "io.max").read_text() == \
        "7:3 rbps=90000000 wbps=60000000 riops=5000 wiops=3000"


def test_the_balancer_places_threads_through_cgroup_threads(tmp_path):
    node = tmp_path / "worker1"
    for i in range(2):
        (node / f"vcpu{i}").mkdir(parents=True)
        (node / f"vcpu{i}" / "cgroup.threads").write_text("")
    stop = threading.Event()
    workers = [threading.Thread(target=stop.wait) for _ in range(2)]
    for w in workers:
        w.start()
    try:
        tids = [w.native_id for w in workers]
        (node / "cgroup.threads").write_text("\n".join(map(str, tids)) + "\n")
        balancer = vcpus.NodeBalancer(node)
        assert balancer.tick()
        # A cgroup.threads file takes one thread id per write; the fake keeps the last one written.
        placed = [(node / f"vcpu{i}" / "cgroup.threads").read_text() for i in range(2)]
        assert sorted(placed) == sorted(map(str, tids)), placed
    finally:
        stop.set()
        for w in workers:
            w.join()


def test_a_process_joins_a_threaded_core_of_its_node_not_the_domain(unified):
    group = cgroups.NodeCgroup("lab", "worker1")
    group.create(2**30)
    group.limit_cpu(1.2, [1.0] * 2)
    node = unified / "sbclab" / "lab" / "worker1"
    (node / "vcpu0" / "cgroup.threads").write_text("11\n12\n")
    (node / "vcpu1" / "cgroup.threads").write_text("13\n")
    group.join()
    # A whole process written to a threaded group's cgroup.procs moves in; memory and io stay the node's.
    assert (node / "vcpu1" / "cgroup.procs").read_text() == "0"
    assert not (node / "cgroup.procs").exists() and not (node / "vcpu0" / "cgroup.procs").exists()
