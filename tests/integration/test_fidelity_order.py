"""Orderings an emulated node must keep whatever the host: the media's and the boards' ranks of the seeds."""

import os

import pytest

from sbclab.cluster import calibration, nodes, spec, tools

from .conftest import NOTHING, leaked

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="shaping needs the emulated backend (root)")


@pytest.fixture(scope="module")
def host():
    return calibration.current()


def node_of(name, board, storage, subnet, host, factor):
    shaped = spec.build(name=name, backend="emulated", board=board, storage=storage, workers=1, subnet=subnet,
                        disk_bytes=2**30, calibration=host, scale_factor=factor)
    return shaped, shaped.worker_nodes[0]


def common_factor(host) -> float:
    return min(spec.build(backend="emulated", board=b, storage=s, workers=2, calibration=host).scale.factor
               for b, s in (("rpi5b", "nvme"), ("rpi4b", "microsd")))


def measure(name, board, storage, subnet, host, factor):
    shaped, node = node_of(name, board, storage, subnet, host, factor)
    with nodes.bare(shaped) as transport:
        on = tools.on_node(transport, node)
        disk = transport.node_disk(node) / "fio"
        transport.make_dirs(node, [disk])
        # 16 MB files: each job lays its file out first, at the medium's throttled speed, and a
        # microSD card at the common factor writes a few MB/s.
        return {
            # Buffered writes, flushed at the end: what HDFS and shuffle files do.
            "buffered_write_mb_s": tools.fio_job(on, disk, "write", "write", "1m", "16M", 2, direct=False)["mb_s"],
            "random_read_iops": tools.fio_job(on, disk, "randread", "randread", "4k", "16M", 2)["iops"],
            "sysbench_1_thread": tools.sysbench_cpu(on, 2000, 1, 2),
        }


def test_nvme_beats_microsd_and_pi5_beats_pi4(host):
    """At one common scale factor the seeds' orders hold: NVMe writes and reads faster than microSD, a Pi 5 core
    outruns a Pi 4 core."""
    assert leaked() == NOTHING
    factor = common_factor(host)
    pi5_nvme = measure("ordnvme", "rpi5b", "nvme", "10.221.0.0/24", host, factor)
    pi5_sd = measure("ordsd", "rpi5b", "microsd", "10.222.0.0/24", host, factor)
    pi4_sd = measure("ordpi4", "rpi4b", "microsd", "10.223.0.0/24", host, factor)
    assert leaked() == NOTHING

    assert pi5_nvme["buffered_write_mb_s"] > 2 * pi5_sd["buffered_write_mb_s"], (pi5_nvme, pi5_sd)
    assert pi5_nvme["random_read_iops"] > 1.5 * pi5_sd["random_read_iops"], (pi5_nvme, pi5_sd)
    assert pi5_sd["sysbench_1_thread"] > 1.3 * pi4_sd["sysbench_1_thread"], (pi5_sd, pi4_sd)
