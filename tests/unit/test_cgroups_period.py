"""The CFS periods of an emulated node: 100 ms, and for MPI the shortest its quotas allow."""

from sbclab.cluster import cgroups


def test_a_sixth_of_a_core_polls_under_the_shortest_period_its_one_millisecond_quota_allows():
    period = cgroups.polling_period_us(1 / 6)
    assert period == 6000 and int(period / 6) >= cgroups.MIN_QUOTA_US


def test_large_shares_stop_at_five_milliseconds_and_tiny_ones_at_the_default():
    assert cgroups.polling_period_us(0.667) == cgroups.MIN_PERIOD_US
    assert cgroups.polling_period_us(4) == cgroups.MIN_PERIOD_US
    assert cgroups.polling_period_us(0.005) == cgroups.CFS_PERIOD_US == 100_000
    assert cgroups.polling_period_us(0) == cgroups.CFS_PERIOD_US
