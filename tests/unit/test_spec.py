import pytest

from sbclab.cluster import spec
from sbclab.errors import SbclabError

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


def test_one_factor_scales_cpu_disk_and_link_together():
    s = build()  # 3 Pi 5 nodes = 12 cores on a 2-core host
    assert s.scale.factor == pytest.approx(2 / 12, rel=1e-4)
    w = s.worker_nodes[0]
    assert w.cpu_cores == pytest.approx(4 * 2 / 12, rel=1e-3)
    assert w.disk_write_bytes_s == pytest.approx(814.47e6 * 2 / 12)
    assert w.link_mbit_s == pytest.approx(1000 * 2 / 12)


def test_a_big_enough_host_gives_full_profiles():
    s = build(cores=64, memory_bytes=256 * GiB)
    assert s.scale.factor == 1 and s.scale.memory_factor == 1
    assert s.worker_nodes[0].memory_bytes == 8 * GiB


def test_yarn_never_overcommits_the_node():
    s = build()
    for w in s.worker_nodes:
        assert w.yarn_memory_mb * 2**20 <= w.memory_bytes - spec.WORKER_RESERVED_MB * 2**20
        assert w.yarn_memory_mb % spec.MIN_ALLOCATION_MB == 0
        assert w.yarn_vcores == 4
    assert s.master.yarn_memory_mb == 0


def test_processes_backend_keeps_every_node_on_loopback():
    s = build(backend="processes")
    assert {n.address for n in s.nodes} == {"127.0.0.1"}


@pytest.mark.parametrize("kw, words", [
    (dict(name="Bad Name"), "Cluster name"),
    (dict(subnet="8.8.8.0/24"), "private"),
    (dict(subnet="10.1.2.3/24"), "network address"),
    (dict(board="rpi9"), "rpi5b"),
    (dict(storage="tape"), "nvme"),
    (dict(workers=0), "between 1 and 64"),
    (dict(preset="fast"), "stock"),
    (dict(memory_bytes=4 * GiB), "RAM"),
])
def test_bad_shapes_are_refused_with_advice(kw, words):
    with pytest.raises(SbclabError) as err:
        build(**kw)
    assert words in str(err.value)
