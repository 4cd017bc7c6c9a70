"""PageRank's generated graph and its reference ranks, and the checks that judge an engine's."""

import numpy as np
import pytest

from sbclab.data import graph
from sbclab.errors import SbclabError
from sbclab.workloads import pagerank


def test_the_graph_is_the_same_for_a_seed_and_no_node_dangles():
    a, b = graph.adjacency(2000, seed=3), graph.adjacency(2000, seed=3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert all(len(t) >= 1 and i not in t for i, t in enumerate(a))
    indegree = np.bincount(np.concatenate(a), minlength=2000)
    assert indegree.max() > 20 * indegree.mean()  # heavy-tailed, as the weights make it


def test_the_reference_ranks_of_a_small_graph_are_known():
    cycle = [np.array([1]), np.array([2]), np.array([0])]
    assert graph.pagerank(cycle, 10, 0.85) == pytest.approx([1 / 3] * 3)
    star = [np.array([1, 2]), np.array([0]), np.array([0])]
    ranks = graph.pagerank(star, 200, 0.85)
    # The stationary ranks: r0 = 0.05 + 0.85 (r1 + r2), r1 = r2 = 0.05 + 0.85 r0 / 2.
    assert ranks[0] == pytest.approx(0.4864864864, rel=1e-6) and ranks[1] == pytest.approx(ranks[2])


def test_the_checks_fail_on_a_missing_node_a_changed_rank_and_ranks_that_do_not_sum_to_one():
    want = np.array([0.5, 0.3, 0.2])
    assert all(c.passed for c in pagerank.compare({0: 0.5, 1: 0.3, 2: 0.2}, want))
    missing = pagerank.compare({0: 0.5, 1: 0.5}, want)
    assert not missing[0].passed
    changed = pagerank.compare({0: 0.5, 1: 0.3000001, 2: 0.1999999}, want)
    assert not changed[1].passed and changed[2].passed
    assert not pagerank.compare({0: 0.6, 1: 0.3, 2: 0.2}, want)[2].passed


def test_iterations_and_damping_are_checked():
    workload = pagerank.PageRank()
    with pytest.raises(SbclabError, match="iterations"):
        workload.check_parameters({"iterations": 0, "damping": 0.85})
    with pytest.raises(SbclabError, match="damping"):
        workload.check_parameters({"iterations": 5, "damping": 1.5})
    assert workload.parameters(17_000)["nodes"] == 1000
