"""Orderings an emulated node must keep whatever the host: the media's and the boards' ranks of the seeds."""

import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import pytest

from sbclab.cluster import calibration, cgroups, nodes, spec, tools

from .conftest import NOTHING, leaked

# What these tests assert is what an emulated node measures: make test runs them alone on the host.
pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="shaping needs the emulated backend (root)"),
              pytest.mark.measurement]


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


def _figures(transport, node) -> dict:
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


def measure_side_by_side(shapes: dict[str, tuple[str, str, str, str]], host, factor) -> dict[str, dict]:
    """Each shape's figures, its node measured at the same time as the others': each holds a small share
    of a host core and its own throttled disk, so they do not meet, and the three take the time of one."""
    # Writes the tests before left in this host's page cache are flushed now, not during a node's
    # buffered write, whose end_fsync would then wait for them too.
    os.sync()
    with ExitStack() as made:
        on = {}
        for key, (name, board, storage, subnet) in shapes.items():
            shaped, node = node_of(name, board, storage, subnet, host, factor)
            on[key] = (made.enter_context(nodes.bare(shaped)), node)
        with ThreadPoolExecutor(len(on)) as pool:
            return dict(zip(on, pool.map(lambda pair: _figures(*pair), on.values())))


def test_nvme_beats_microsd_and_pi5_beats_pi4(host):
    """At one common scale factor the seeds' orders hold: NVMe writes and reads faster than microSD, a Pi 5 core
    outruns a Pi 4 core."""
    assert leaked() == NOTHING
    figures = measure_side_by_side({"pi5_nvme": ("ordnvme", "rpi5b", "nvme", "10.221.0.0/24"),
                                    "pi5_sd": ("ordsd", "rpi5b", "microsd", "10.222.0.0/24"),
                                    "pi4_sd": ("ordpi4", "rpi4b", "microsd", "10.223.0.0/24")},
                                   host, common_factor(host))
    assert leaked() == NOTHING
    pi5_nvme, pi5_sd, pi4_sd = figures["pi5_nvme"], figures["pi5_sd"], figures["pi4_sd"]

    assert pi5_nvme["buffered_write_mb_s"] > 2 * pi5_sd["buffered_write_mb_s"], (pi5_nvme, pi5_sd)
    assert pi5_nvme["random_read_iops"] > 1.5 * pi5_sd["random_read_iops"], (pi5_nvme, pi5_sd)
    assert pi5_sd["sysbench_1_thread"] > 1.3 * pi4_sd["sysbench_1_thread"], (pi5_sd, pi4_sd)


def test_a_node_buffers_what_its_board_would_and_caches_its_scaled_share(host):
    """Past its board's dirty buffer (scaled like its disk) a node writes at its medium's rate, not at
    memory speed; its page cache is held to the scaled share of its free memory, and a process that
    needs more than that limit gets it instead of being killed."""
    assert leaked() == NOTHING
    # A 1 GB RPi 3B: its dirty buffer takes 12 s to drain at its card's rate, an 8 GB Pi 5's 33 s.
    shaped, node = node_of("dirtysd", "rpi3b", "microsd-evo", "10.224.0.0/24", host, common_factor(host))
    with nodes.bare(shaped) as transport:
        on = tools.on_node(transport, node)
        target = transport.node_disk(node) / "written"
        size_mb = 5 * node.dirty_bytes // 4 // 2**20
        started = time.monotonic()
        status, _, err = on(["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={size_mb}", "status=none"])
        elapsed = time.monotonic() - started
        assert status == 0, err
        on(["rm", "-f", str(target)])
        # Writers are throttled from three quarters of the buffer on, so half of it reaches the card at
        # its shaped rate before dd returns (at memory speed the whole would take a fraction of a second).
        assert size_mb * 2**20 / elapsed < 5 * node.disk_write_bytes_s, (size_mb, elapsed, node.disk_write_bytes_s)

        group = cgroups.NodeCgroup(shaped.name, node.name)
        limit_file = group.memory_dir() / ("memory.limit_in_bytes" if group.version == 1 else "memory.high")
        limit = int(limit_file.read_text())  # the governor has ticked many times during dd
        assert limit < node.memory_bytes * min(0.9, 2 * shaped.scale.factor + 0.1), (limit, node.memory_bytes)
        grow = limit + 256 * 2**20
        # Joined to the node's memory group only: the node's CPU share would make the allocation itself slow.
        allocator = subprocess.Popen([sys.executable, "-c", f"input(); b = bytearray({grow}); print(len(b))"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        (group.memory_dir() / "cgroup.procs").write_text(str(allocator.pid))
        out, _ = allocator.communicate("\n", timeout=120)
        assert allocator.returncode == 0 and int(out) == grow
        assert group.oom_kills() == 0
    assert leaked() == NOTHING
