"""The CFS period an emulated node's groups get."""

from sbclab.cluster import cgroups


def test_a_sixth_of_a_core_gets_the_shortest_period_its_one_millisecond_quota_allows():
    period = cgroups.cfs_period_us(1 / 6)
    assert period == 6000 and int(period / 6) >= cgroups.MIN_QUOTA_US


def test_large_shares_stop_at_five_milliseconds_and_tiny_ones_at_a_hundred():
    assert cgroups.cfs_period_us(0.667) == cgroups.MIN_PERIOD_US
    assert cgroups.cfs_period_us(4) == cgroups.MIN_PERIOD_US
    assert cgroups.cfs_period_us(0.005) == cgroups.MAX_PERIOD_US
    assert cgroups.cfs_period_us(0) == cgroups.MAX_PERIOD_US
