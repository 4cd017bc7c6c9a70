import pytest

from datetime import datetime, timezone

from sbclab.cluster import spec
from sbclab.cluster.calibration import DiskFigures, HostCalibration
from sbclab.errors import SbclabError
from sbclab.stack import lifecycle, sizing
from sbclab.stack.choices import StackChoices

GiB = 2**30


def build(**kw):
    defaults = dict(backend="emulated", workers=2, cores=2, memory_bytes=24 * GiB)
    defaults.update(kw)
    return spec.build(**defaults)


def test_master_and_workers_get_their_own_addresses():
    s = build()
    assert [n.name for n in s.nodes] == ["master", "worker1", "worker2"]
    assert [n.address for n in s.nodes] == ["10.213.0.10", "10.213.0.11", "10.213.0.12"]
    assert s.master.role == "master" and len(s.worker_nodes) == 2


def test_uncalibrated_one_factor_scales_cpu_disk_and_link_together():
    s = build()  # 3 Pi 5 nodes = 12 cores on a 2-core host
    assert s.scale.factor == pytest.approx(2 / 12, rel=1e-4)
    assert not s.scale.calibrated and "uncalibrated" in s.scale.note
    w = s.worker_nodes[0]
    assert w.cpu_cores == pytest.approx(4 * 2 / 12, rel=1e-3)
    assert w.disk_write_bytes_s == pytest.approx(814.47e6 * 2 / 12)
    assert w.link_mbit_s == pytest.approx(1000 * 2 / 12)


def host(events_per_core=29479.0, write=1190.0, read=2262.0, iops=33000.0, veth=28000.0):
    return HostCalibration(host_key="k", measured_at=datetime(2026, 1, 1, tzinfo=timezone.utc), cpu_model="x",
                           cores=2, kernel="k", sysbench={2000: {1: events_per_core, 2: 2 * events_per_core}},
                           disk=DiskFigures(seq_read_mb_s=read, seq_write_mb_s=write, rand_read_iops=iops,
                                            rand_write_iops=iops),
                           disk_path="/", veth_mbps=veth, tool_versions={})


def test_calibrated_cpu_quota_follows_sysbench_per_core():
    s = build(calibration=host())
    speed = 24699.51 / 29479.0
    assert s.scale.core_speed == pytest.approx(speed, rel=1e-4)
    assert s.scale.factor == pytest.approx(2 / (12 * speed), rel=1e-4)
    assert s.scale.limited_by == "cpu"
    # The whole host is shared out, and each node gets its board's cores at the board's speed.
    assert sum(n.cpu_cores for n in s.nodes) == pytest.approx(2, rel=1e-3)


def test_a_slow_host_disk_lowers_the_one_factor():
    s = build(calibration=host(write=100.0))
    assert s.scale.limited_by == "disk write"
    assert s.scale.factor == pytest.approx(100 / (3 * 814.47), rel=1e-4)
    # CPU is slowed by the same factor, so CPU:disk ratios hold.
    assert s.worker_nodes[0].cpu_cores == pytest.approx(4 * 24699.51 / 29479.0 * s.scale.factor, rel=1e-3)


def test_a_fixed_scale_above_what_the_host_gives_is_refused():
    with pytest.raises(SbclabError) as err:
        build(calibration=host(), scale_factor=0.9)
    assert "--scale" in str(err.value)
    assert build(calibration=host(), scale_factor=0.1).scale.factor == 0.1


def test_a_big_enough_host_gives_full_profiles():
    s = build(cores=64, memory_bytes=256 * GiB)
    assert s.scale.factor == 1 and s.scale.memory_factor == 1
    assert s.worker_nodes[0].memory_bytes == 8 * GiB


def test_yarn_never_overcommits_the_board():
    s = build()
    for w in s.worker_nodes:
        memory_mb, vcores = sizing.yarn_share(w)
        board = sizing.board_memory_bytes(w)
        given = sizing.worker_memory(board)
        assert memory_mb * 2**20 <= board - given.reserved_mb * 2**20
        assert memory_mb % given.smallest_container_mb == 0
        assert vcores == 4
    assert sizing.yarn_share(s.master) == (0, 0)


def test_a_master_of_another_board_is_shaped_to_its_own_profile_beside_the_workers():
    """A Pi 5 master beside RK3588 workers: each node has its own board's cores, memory and medium, all
    on the one factor the host can give the whole mix."""
    s = build(board="rock5b", storage="nvme-p31-gen3", master_board="rpi5b", master_storage="microsd")
    assert (s.master.board, s.master.storage) == ("rpi5b", "microsd-pro-plus")
    assert {(w.board, w.storage) for w in s.worker_nodes} == {("rock5b", "nvme-p31-gen3")} and s.board == "rock5b"
    # 4 Pi 5 cores and 2 RK3588s of 4 big and 4 little cores (5.23 big ones' worth) on a 2-core host,
    # uncalibrated: one big board core, one host core.
    rk3588 = 4 + 4 * 0.30656
    assert s.scale.factor == pytest.approx(2 / (4 + 2 * rk3588), rel=1e-3)
    assert s.master.cpu_cores == pytest.approx(4 * s.scale.factor, rel=1e-3)
    assert s.worker_nodes[0].cpu_cores == pytest.approx(rk3588 * s.scale.factor, rel=1e-3)
    assert s.worker_nodes[0].memory_bytes == pytest.approx(2 * s.master.memory_bytes, abs=2)  # 16 GB beside 8 GB
    assert "master rpi5b" in s.scale.note
    same = build(board="rock5b", storage="nvme-p31-gen3", master_board="rock5b")
    assert len({(n.board, n.storage) for n in same.nodes}) == 1, "the workers' medium unless another is given"


@pytest.mark.parametrize("kw, chosen, words", [
    ({}, dict(preset="fast"), "stock"),
    (dict(memory_bytes=4 * GiB), {}, "host with at least"),
])
def test_shapes_the_stack_cannot_run_are_refused_with_advice(kw, chosen, words):
    with pytest.raises(SbclabError) as err:
        lifecycle.check(build(**kw), StackChoices(**chosen))
    assert words in str(err.value)


def test_processes_backend_keeps_every_node_on_loopback():
    s = build(backend="processes")
    assert {n.address for n in s.nodes} == {"127.0.0.1"}


@pytest.mark.parametrize("kw, words", [
    (dict(name="Bad Name"), "Cluster name"),
    (dict(subnet="8.8.8.0/24"), "private"),
    (dict(subnet="10.1.2.3/24"), "network address"),
    (dict(board="rpi9"), "rpi5b"),
    (dict(storage="tape"), "nvme"),
    (dict(board="rpi4b", storage="nvme"), "cannot be attached"),
    (dict(workers=0), "between 1 and 64"),
])
def test_bad_shapes_are_refused_with_advice(kw, words):
    with pytest.raises(SbclabError) as err:
        build(**kw)
    assert words in str(err.value)


def test_random_writes_the_loop_devices_cannot_deliver_are_said_to_be_the_hosts():
    calibrated = host()
    nvme = dict(workers=2, board="rpi5b", storage="nvme")
    assert "random writes" not in build(calibration=calibrated, **nvme).scale.note
    slow = calibrated.model_copy(update={"disk": calibrated.disk.model_copy(update={"loop_rand_write_iops": 2000.0})})
    s = build(calibration=slow, **nvme)
    shaped = sum(n.disk_write_iops for n in s.nodes)
    assert f"about 2,000 IOPS in all, {2000 / shaped:.0%} of the" in s.scale.note
    assert s.scale.factor == build(calibration=calibrated, **nvme).scale.factor  # labelled, not rescaled


def test_a_master_that_is_a_worker_is_one_of_the_workers_and_keeps_its_daemons_beside_its_containers():
    combined = build(layout="master-is-worker", board="rpi4b-4gb", storage="microsd-evo")
    separate = build(board="rpi4b-4gb", storage="microsd-evo")
    assert [n.name for n in combined.nodes] == ["master", "worker1"]
    assert combined.workers == 2 and [n.name for n in combined.worker_nodes] == ["master", "worker1"]
    assert combined.master.runs_tasks and not separate.master.runs_tasks
    # Two boards share the host instead of three, so each gets more of it.
    assert combined.scale.factor == pytest.approx(separate.scale.factor * 3 / 2, rel=1e-3)
    master_mb, _ = sizing.yarn_share(combined.master)
    worker_mb, _ = sizing.yarn_share(combined.worker_nodes[1])
    assert 0 < master_mb < worker_mb and sizing.yarn_share(separate.master) == (0, 0)
    alone = build(layout="master-is-worker", workers=1, board="rpi4b-4gb", storage="microsd-evo")
    assert [n.name for n in alone.nodes] == ["master"] and alone.worker_nodes == [alone.master]


def test_a_desktop_master_is_shaped_to_its_own_profile_beside_board_workers():
    s = build(layout="desktop-master", board="rpi4b-4gb", storage="microsd-evo")
    assert s.master.board == spec.DESKTOP_MASTER and s.master.storage == spec.DESKTOP_MASTER_STORAGE
    assert {w.board for w in s.worker_nodes} == {"rpi4b-4gb"} and s.board == "rpi4b-4gb"
    # 6 desktop cores and 2 x 4 Pi cores on a 2-core host, one factor for all of them.
    assert s.scale.factor == pytest.approx(2 / 14, rel=1e-3)
    assert s.master.cpu_cores == pytest.approx(6 * s.scale.factor, rel=1e-3)
    assert s.master.memory_bytes == 2 * s.worker_nodes[0].memory_bytes
    assert "master desktop-i5-9600k" in s.scale.note and "never measured in desktop-i5-9600k" in s.scale.note


@pytest.mark.parametrize("kw, words", [
    (dict(layout="side-by-side"), "Choose one of: separate-master"),
    (dict(layout="master-is-worker", master_board="rpi5b"), "master of its own"),
    (dict(master_storage="floppy"), "storage"),
    (dict(layout="desktop-master", master_board="nope"), "Unknown board profile"),
])
def test_bad_layouts_are_refused_with_advice(kw, words):
    with pytest.raises(SbclabError) as err:
        build(**kw)
    assert words in err.value.message + err.value.hint
