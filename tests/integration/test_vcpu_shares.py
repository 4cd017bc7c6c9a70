"""A busy thread on an emulated node runs at one board core's speed: alone, and beside one busy
thread per core. Each thread's CPU time from its birth over the wall time since is held against its
virtual core's quota."""

import os
import time
from pathlib import Path

import psutil
import pytest

from sbclab import profiles
from sbclab.cluster import calibration, cgroups, nodes, spec

from .conftest import NOTHING, leaked

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="virtual cores need the emulated backend (root)"),
              pytest.mark.measurement]

# Four cores, at the scale of a three-node cluster of them on this host (on the 2-core CI host a core is
# a sixth of a host core).
BOARD = "rpi4b"
SECONDS = 4
# A core's quota comes a period (100 ms) at a time, and a thread born mid-period spends some of its
# parent's core's quota before the balancer moves it to one of its own: over 4 s, measured 1.02-1.04
# alone and 0.97-1.03 four together. A lone thread that ran under the whole node's quota until first
# placed measured 1.11-1.24. (At fidelity's smaller scale, 4 ms per period, the same start costs more
# of the window: 1.03-1.08 alone, against 1.07-1.19 before.)
LOW, HIGH = 0.85, 1.10


def _cpu_s(tid: int) -> float:
    return int(Path(f"/proc/{tid}/task/{tid}/schedstat").read_text().split()[0]) / 1e9


def _age_s(tid: int) -> float:
    # Field 22 of stat, after the command name in parentheses (which may hold spaces).
    started = int(Path(f"/proc/{tid}/stat").read_text().rpartition(")")[2].split()[19])
    return time.clock_gettime(time.CLOCK_BOOTTIME) - started / os.sysconf("SC_CLK_TCK")


def busy_shares(transport, node, threads: int, settled_s: float = 0) -> list[float]:
    """Host cores each of `threads` busy loops used from its birth, SECONDS after they all started; with
    settled_s, over the SECONDS after that many instead (each thread on the core it keeps)."""
    argv = ["sh", "-c", f"for i in {' '.join(map(str, range(threads)))}; do (while :; do :; done) & done; wait"]
    session = transport.start(node, argv, transport.base_env(node), transport.node_dir(node) / "busy.log", label="busy")
    try:
        shell = psutil.Process(session.pid)
        deadline = time.monotonic() + 30
        # The node's launcher runs `hostname` as a child of the same process before it becomes the script.
        while shell.cmdline() != argv or len(loops := shell.children()) < threads:
            assert time.monotonic() < deadline and session.poll() is None, "the busy loops did not start"
            time.sleep(0.01)
        if not settled_s:
            time.sleep(SECONDS)
            return [_cpu_s(p.pid) / _age_s(p.pid) for p in loops]
        time.sleep(settled_s)
        before, start = [_cpu_s(p.pid) for p in loops], time.monotonic()
        time.sleep(SECONDS)
        return [(_cpu_s(p.pid) - b) / (time.monotonic() - start) for p, b in zip(loops, before)]
    finally:
        transport.stop(session, grace_s=1)


def test_one_busy_thread_gets_one_cores_share_alone_and_each_of_n_gets_one():
    assert leaked() == NOTHING
    host = calibration.current()
    factor = spec.build(backend="emulated", board=BOARD, storage="microsd", workers=2, calibration=host).scale.factor
    shaped = spec.build(name="vshares", backend="emulated", board=BOARD, storage="microsd", workers=1,
                        subnet="10.237.0.0/24", disk_bytes=2**30, calibration=host, scale_factor=factor)
    node = shaped.worker_nodes[0]
    cores = profiles.board(BOARD).cores
    with nodes.bare(shaped) as transport:
        share = cgroups.NodeCgroup(shaped.name, node.name).smallest_share()
        alone = busy_shares(transport, node, 1)
        together = busy_shares(transport, node, cores)
    assert leaked() == NOTHING

    ratios = {"alone": [round(s / share, 3) for s in alone], "together": [round(s / share, 3) for s in together]}
    assert all(LOW <= r <= HIGH for r in ratios["alone"] + ratios["together"]), (share, ratios)


def test_on_a_big_little_board_one_thread_runs_on_a_big_core_and_eight_on_all_eight():
    """The ROCK 5B's four Cortex-A76 and four Cortex-A55 virtual cores: one busy thread gets a big core's
    quota, eight get one core each, four big and four little (its profile's all-core figure)."""
    assert leaked() == NOTHING
    board = profiles.board("rock5b")
    shaped = spec.build(name="vbiglit", backend="emulated", board=board.name, storage="nvme", workers=1,
                        subnet="10.239.0.0/24", disk_bytes=2**30, calibration=calibration.current())
    node = shaped.worker_nodes[0]
    with nodes.bare(shaped) as transport:
        quotas = sorted((cgroups.share_of(core) for core in cgroups.NodeCgroup(shaped.name, node.name).vcpu_dirs()),
                        reverse=True)
        alone = busy_shares(transport, node, 1)
        # Once placed: a thread born on a big core spends some of its quota before it moves to a little
        # one, up to 16 % of a little core's 4 s here (the test above counts that start on cores alike).
        together = sorted(busy_shares(transport, node, board.cores, settled_s=1), reverse=True)
    assert leaked() == NOTHING

    assert quotas[3] / quotas[4] == pytest.approx(1 / board.core_classes[1].speed, rel=0.02)
    ratios = {"alone": round(alone[0] / quotas[0], 3),
              "together": [round(s / q, 3) for s, q in zip(together, quotas)]}
    assert all(LOW <= r <= HIGH for r in [ratios["alone"], *ratios["together"]]), (quotas, ratios)
