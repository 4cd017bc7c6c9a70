"""Every outcome of a reproduced shape's test, driven by intervals chosen to reach it."""

import pytest

from sbclab.analysis import judgement
from sbclab.analysis.stats import Derived
from sbclab.analysis.judgement import DIFFERS, HOLDS, INCONCLUSIVE, NOT_MEASURED, judge


def test_an_interval_reaching_no_speedup_is_inconclusive_where_the_old_rule_said_holds():
    # The demo's Table 16 line before: published 1.89 inside our 1.00-1.93, "holds".
    found = judge("speedup", 1.89, Derived(1.73, 1.0, 1.93, runs=2))
    assert found.verdict == INCONCLUSIVE and found.runs_needed and found.runs_needed > 2
    assert "about" in found.detail and "runs per cell" in found.detail


def test_within_twenty_percent_of_ours_is_no_longer_enough():
    # Ours 1.55 with a wide interval: the old "within 20 % of ours" held it against 1.88.
    assert judge("speedup", 1.88, Derived(1.55, 1.2, 2.0, runs=3)).verdict == INCONCLUSIVE


def test_holds_needs_the_whole_interval_within_the_margin():
    found = judge("speedup", 1.89, Derived(1.85, 1.75, 1.95, runs=5))
    assert found.verdict == HOLDS and "excludes no effect" in found.detail and found.runs_needed is None


def test_differs_needs_the_whole_interval_outside_the_margin():
    # The Spark Pi: 1.03 [0.68-1.57] against the seed's 1.88 (margin: 1.63-2.16).
    found = judge("speedup", 1.88, Derived(1.03, 0.68, 1.57, runs=3))
    assert found.verdict == DIFFERS and "outside" in found.detail


def test_an_interval_straddling_the_margin_is_inconclusive_with_the_runs_to_decide_it():
    wide = judge("storage gain", 2.25, Derived(2.2, 1.7, 2.85, runs=3))
    narrower = judge("storage gain", 2.25, Derived(2.2, 1.9, 2.55, runs=3))
    assert wide.verdict == narrower.verdict == INCONCLUSIVE
    assert wide.runs_needed > narrower.runs_needed >= 4


def test_a_value_on_the_margin_cannot_be_decided_by_any_number_of_runs():
    low = 1.89 / 1.15
    found = judge("speedup", 1.89, Derived(low, low * 0.9, low * 1.1, runs=3))
    assert found.verdict == INCONCLUSIVE and found.runs_needed is None and "boundary" in found.detail


def test_a_seed_finding_no_effect_holds_on_equivalence_alone():
    # The 2026 seed's Pi on microSD over NVMe: 249 / 246, which it calls equal.
    found = judge("storage gain", 249 / 246, Derived(1.0, 0.97, 1.03, runs=5))
    assert found.verdict == HOLDS and "margin of no effect" in found.detail
    assert judge("storage gain", 249 / 246, Derived(1.6, 1.4, 1.8, runs=5)).verdict == DIFFERS


def test_an_order_holds_above_one_differs_below_and_is_otherwise_inconclusive():
    assert judge("higher", 1.0, Derived(1.2, 1.1, 1.3, runs=3)).verdict == HOLDS
    assert judge("higher", 1.0, Derived(0.8, 0.7, 0.9, runs=3)).verdict == DIFFERS
    found = judge("higher", 1.0, Derived(1.05, 0.9, 1.2, runs=3))
    assert found.verdict == INCONCLUSIVE and found.runs_needed > 3


def test_a_level_has_no_null_and_is_judged_on_equivalence():
    assert judge("level", 20.0, Derived(22.0, 21.0, 23.0, runs=3)).verdict == HOLDS
    assert judge("level", 20.0, Derived(60.0, 55.0, 65.0, runs=3)).verdict == DIFFERS


def test_intermediate_data_per_byte_has_the_null_zero():
    assert judge("intermediate per input byte", 1.5, Derived(1.45, 1.3, 1.6, runs=3)).verdict == HOLDS
    assert judge("intermediate per input byte", 1.5, Derived(0.2, 0.1, 0.3, runs=3)).verdict == DIFFERS


def test_one_run_or_none_decides_nothing():
    one = judge("speedup", 1.89, Derived(1.9, runs=1))
    assert one.verdict == INCONCLUSIVE and one.runs_needed == 3
    assert judge("speedup", 1.89, None).verdict == NOT_MEASURED


def test_every_kind_states_its_null_margin_and_why():
    lines = judgement.tests_text()
    named = [kind for line in lines for kind in line.split(":")[0].split(", ")]
    assert sorted(named) == sorted(judgement.TESTS)  # every kind once, kinds of one test on one line
    assert all(" — " in line and "null" in line and "margin" in line for line in lines)
    assert judgement.band("speedup", 2.0) == pytest.approx((2 / 1.15, 2.3))
