"""What a board's sampler finds on the board itself, and its cost as the stop command reports it."""

import os

from sbclab.monitor import board_sampler, sampler


def test_the_sampler_finds_the_device_and_interface_a_board_target_only_names(tmp_path):
    st = os.stat(tmp_path)
    block = tmp_path / "sys" / "dev" / "block"
    block.mkdir(parents=True)
    device = tmp_path / "sys" / "devices" / "nvme0n1" / "nvme0n1p2"
    device.mkdir(parents=True)
    (block / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}").symlink_to(device)
    resolved = sampler.resolve_target({"device_of": str(tmp_path), "interface_of": "127.0.0.1"}, str(tmp_path / "sys"))
    assert resolved["device"] == "nvme0n1p2"
    assert resolved["interface"] == {"name": "lo"}
    assert resolved["cores"] == os.cpu_count()


def test_an_address_no_interface_holds_and_a_virtual_filesystem_give_nothing(tmp_path):
    resolved = sampler.resolve_target({"device_of": str(tmp_path / "missing"), "interface_of": "192.0.2.77"})
    assert resolved["device"] is None and resolved["interface"] is None


def test_the_samplers_cost_is_its_cpu_time_over_its_age():
    # utime 150 + stime 50 ticks at 100 Hz = 2 s of CPU; started at tick 100000 (1000 s), now 1200 s.
    stat = "4242 (python3) S 1 4242 4242 0 -1 4194560 900 0 0 0 150 50 0 0 20 0 1 0 100000 30000000 2500"
    assert board_sampler.cpu_share_from(f"{stat}\n1200.00 2300.00\n100\n") == 1.0
    assert board_sampler.cpu_share_from("100\n") is None, "the sampler had already gone"
