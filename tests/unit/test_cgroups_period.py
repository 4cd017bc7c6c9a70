"""The CFS periods of an emulated node: 100 ms, and for MPI the shortest its quotas allow."""

from sbclab.cluster import cgroups


def test_a_sixth_of_a_core_polls_under_the_shortest_period_its_one_millisecond_quota_allows():
    period = cgroups.polling_period_us(1 / 6)
    assert period == 6000 and int(period / 6) >= cgroups.MIN_QUOTA_US


def test_large_shares_stop_at_five_milliseconds_and_tiny_ones_at_the_default():
    assert cgroups.polling_period_us(0.667) == cgroups.MIN_PERIOD_US
    assert cgroups.polling_period_us(4) == cgroups.MIN_PERIOD_US
    # A share too small for 1 ms of 100: the node's own longer period, never a larger share.
    assert cgroups.polling_period_us(0.005) == cgroups.node_period_us(0.005) == 200_000
    assert cgroups.polling_period_us(0) == cgroups.CFS_PERIOD_US


def test_a_node_too_small_for_a_1_ms_quota_gets_a_longer_period_not_a_larger_share():
    assert cgroups.node_period_us(0.25) == cgroups.CFS_PERIOD_US
    assert cgroups.node_period_us(0.01) == cgroups.CFS_PERIOD_US  # exactly 1 ms of 100
    period = cgroups.node_period_us(0.005)  # Baun's RPi B on this kind of host
    assert period == 200_000 and round(0.005 * period) == cgroups.MIN_QUOTA_US
    assert cgroups.node_period_us(0.0001) == cgroups.MAX_PERIOD_US
