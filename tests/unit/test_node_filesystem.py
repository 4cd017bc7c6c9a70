"""An emulated node's ext4 block groups scale with the emulation, so fstrim's excess keeps its share."""

from sbclab.cluster import emulated


def test_block_groups_follow_the_scale_factor_within_mke2fs_bounds():
    assert emulated.blocks_per_group(1.0) == 32768 == emulated.blocks_per_group(1.5)
    assert emulated.blocks_per_group(0.0387) == 1264  # 5 MiB: a board's 128 MiB at the 8-worker scale
    assert emulated.blocks_per_group(0.0001) == 256
    assert all(emulated.blocks_per_group(f) % 8 == 0 for f in (0.5, 0.171, 0.0387, 0.003))
