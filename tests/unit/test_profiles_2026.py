"""The boards and medium of 2026: no seed measured them, so every figure must name the public
measurement it comes from or say how it was worked out, and a board of two core classes is shaped
as two kinds of virtual cores whose sum is its all-core figure."""

import re
from datetime import datetime, timezone

import pytest

from sbclab import profiles
from sbclab.cluster import spec
from sbclab.cluster.calibration import DiskFigures, HostCalibration
from sbclab.profiles.model import Board

BOARDS_2026 = ["rpi5b-16gb", "cm5-8gb", "cm5-16gb", "pi500plus", "rock5b"]
MEDIA_2026 = ["nvme-rpi-ssd-256"]
PI5_FAMILY = ["rpi5b-16gb", "cm5-8gb", "cm5-16gb", "pi500plus"]
BOARD_FIGURES = ["cores", "clock_ghz", "ram_gib", "price_usd", "idle_watts", "load_watts", "nic_mbps",
                 "network_mbps", "power_supply_watts", "soft_temp_c", "flops_per_cycle", "sysbench",
                 "storage_interfaces"]
MEDIUM_FIGURES = ["capacity_gb", "price_usd"]


pytestmark = pytest.mark.usefixtures("shipped_profiles_only")


def named_in_sources(profile, figure: str) -> bool:
    """A sources key names the figure the way the shipped files write it: alone, in a comma list, or
    followed by what of it the source covers ("on_board.rpi5b seq/rand MB/s")."""
    return any(figure in re.split(r"[,\s]+", key) for key in profile.sources)


def named_in_derived(profile, figure: str) -> bool:
    # Storage has no derivation() of its own; a derived key lists figures as a board's does.
    return any(figure in (part.strip() for part in key.split(",")) for key in profile.derived)


def accounted_for(profile, figure: str) -> bool:
    return named_in_sources(profile, figure) or named_in_derived(profile, figure)


@pytest.mark.parametrize("name", BOARDS_2026)
def test_each_board_of_2026_loads(name):
    assert profiles.board(name).name == name


@pytest.mark.parametrize("name", MEDIA_2026)
def test_each_medium_of_2026_loads(name):
    assert profiles.storage(name).name == name


@pytest.mark.parametrize("name", BOARDS_2026)
def test_every_figure_of_a_2026_board_is_sourced_or_derived(name):
    board = profiles.board(name)
    held = [f for f in BOARD_FIGURES if getattr(board, f) not in (None, [], {})]
    missing = [f for f in held if not accounted_for(board, f)]
    assert not missing, f"{name}: no source or derivation for {missing}"
    for key, derived in board.derived.items():
        assert derived.source.strip() and derived.uncertainty.strip(), f"{name} {key}"


@pytest.mark.parametrize("name", MEDIA_2026)
def test_every_figure_of_a_2026_medium_is_sourced_or_derived(name):
    medium = profiles.storage(name)
    held = [f for f in MEDIUM_FIGURES if getattr(medium, f) is not None]
    held += [f"on_board.{board}" for board in medium.on_board]
    missing = [f for f in held if not accounted_for(medium, f)]
    assert not missing, f"{name}: no source or derivation for {missing}"
    # Prices move, so a medium's is a derived figure like every shipped medium's.
    assert medium.price_usd is None or medium.derived.get("price_usd")


@pytest.mark.parametrize("name", BOARDS_2026)
def test_new_boards_convert_to_the_seeds_boards_at_the_seeds_max_prime(name):
    # The planner compares boards only at one --cpu-max-prime; a figure at another would leave the
    # new board unranked against rpi5b and rpi4b.
    board = profiles.board(name)
    assert board.sysbench.max_prime == profiles.board("rpi5b").sysbench.max_prime == 2000
    assert board.sysbench.metric == "events_per_s"
    assert board.derivation("sysbench"), f"{name}: no published run at 2000, so the figure is derived"


@pytest.mark.parametrize("name", ["rpi5b-16gb", "cm5-16gb", "pi500plus", "rock5b"])
def test_the_16_gb_boards_have_16_gib(name):
    assert profiles.board(name).ram_gib == 16


def test_the_8_gb_compute_module_has_8_gib():
    assert profiles.board("cm5-8gb").ram_gib == 8


def test_the_rk3588_board_has_eight_cores_of_two_classes_whose_sum_is_its_all_core_figure():
    board = profiles.board("rock5b")
    assert board.cores == 8 and board.nic_mbps == 2500
    assert [(c.name, c.cores) for c in board.core_classes] == [("Cortex-A76", 4), ("Cortex-A55", 4)]
    derived = board.derivation("sysbench")
    text = derived.source + " " + derived.uncertainty
    assert "Cortex-A76" in text and "Cortex-A55" in text and "7,407.8" in text
    by_threads = board.sysbench.by_threads
    # A little core's speed is the derivation's A55 figure over the big core's 1-thread figure, and
    # the node's cores together do what the board does on all eight.
    assert board.core_classes[1].speed == pytest.approx(7407.8 / by_threads[1], rel=1e-4)
    assert board.core_capacity * by_threads[1] == pytest.approx(by_threads[8], rel=0.01)
    # Up to four threads run on the big cores alone: each adds a whole A76.
    assert by_threads[4] == pytest.approx(4 * by_threads[1], rel=0.01)
    assert by_threads[16] == by_threads[8] > by_threads[4]


@pytest.mark.parametrize("classes, words", [
    ([{"name": "A76", "cores": 4, "speed": 1}], "hold 4 cores, not the board's 8"),
    ([{"name": "A55", "cores": 4, "speed": 0.3}, {"name": "A76", "cores": 4, "speed": 1}], "fastest first"),
])
def test_core_classes_that_do_not_add_up_are_refused(classes, words):
    raw = profiles.board("rock5b").model_dump(exclude={"name"})
    with pytest.raises(ValueError, match=words):
        Board.model_validate({**raw, "core_classes": classes})


def test_the_rk3588_flops_per_cycle_spread_both_core_classes_over_eight_cores():
    board = profiles.board("rock5b")
    a76, a55 = 4 * 2.4 * 8, 4 * 1.8 * 2
    assert board.flops_per_cycle == pytest.approx((a76 + a55) / (board.cores * board.clock_ghz))
    assert "Cortex-A55" in board.derivation("flops_per_cycle").source


@pytest.mark.parametrize("name", PI5_FAMILY)
def test_pi_5_family_boards_share_the_pi_5s_io_and_cpu(name):
    board, pi5 = profiles.board(name), profiles.board("rpi5b")
    assert board.io_like == "rpi5b"
    assert board.sysbench == pi5.sysbench and board.clock_ghz == pi5.clock_ghz
    medium = profiles.storage("nvme-rpi-ssd-256")
    assert medium.measured_on(board.io_like)
    assert medium.figures_on(board.io_like) == medium.on_board["rpi5b"]


def test_the_raspberry_pi_ssd_sits_between_the_p31_at_gen_2_and_gen_3():
    ssd = profiles.storage("nvme-rpi-ssd-256").figures_on("rpi5b")
    gen2 = profiles.storage("nvme-p31-gen2").figures_on("rpi5b")
    gen3 = profiles.storage("nvme-p31-gen3").figures_on("rpi5b")
    assert gen2.seq_read < ssd.seq_read < gen3.seq_read
    assert ssd.read_iops == pytest.approx(58.76e6 / 4096)


def stand_in_host() -> HostCalibration:
    return HostCalibration(host_key="k", measured_at=datetime(2026, 1, 1, tzinfo=timezone.utc), cpu_model="x",
                           cores=2, kernel="k", sysbench={2000: {1: 40486.63, 2: 68290.74}},
                           disk=DiskFigures(seq_read_mb_s=1988.0, seq_write_mb_s=2270.0, rand_read_iops=17284.0,
                                            rand_write_iops=15541.0),
                           disk_path="/", veth_mbps=15356.0, tool_versions={})


@pytest.mark.parametrize("name", BOARDS_2026)
def test_a_two_worker_cluster_of_each_board_can_be_shaped_on_a_two_core_host(name):
    shaped = spec.build(backend="emulated", board=name, storage="nvme-rpi-ssd-256", workers=2, cores=2,
                        memory_bytes=24 * 2**30, calibration=stand_in_host())
    board = profiles.board(name)
    assert shaped.scale.core_speed == pytest.approx(board.sysbench_events(1) / 40486.63, rel=1e-4)
    assert sum(n.cpu_cores for n in shaped.nodes) <= 2.001
    # Three 16 GB nodes do not fit 24 GiB less the host's share: memory gets a factor of its own.
    assert (shaped.scale.memory_factor < 1) == (board.ram_gib * 3 > 22)
    measured_here = profiles.storage("nvme-rpi-ssd-256").measured_on(board.io_like or board.name)
    assert ("never measured in" in shaped.scale.note) != measured_here
