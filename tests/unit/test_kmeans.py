"""k-means' points, their known centres and the checks that judge the centres an engine found."""

import numpy as np
import pytest

from sbclab.data import blobs
from sbclab.errors import SbclabError
from sbclab.workloads import kmeans


def test_the_centres_are_apart_and_the_points_the_same_for_a_seed(tmp_path):
    true = blobs.centres(4, 3, seed=0)
    gaps = np.linalg.norm(true[:, None] - true[None], axis=-1) + np.eye(4) * 99
    assert gaps.min() >= blobs.SEPARATION
    a = blobs.write_text(tmp_path / "a.txt", 400, 4, 3, seed=0).read_text()
    b = blobs.write_text(tmp_path / "b.txt", 400, 4, 3, seed=0).read_text()
    assert a == b and len(a.splitlines()) == 400
    points = np.loadtxt(tmp_path / "a.txt", delimiter=",")
    nearest = np.argmin(np.linalg.norm(points[:, None] - true[None], axis=-1), axis=1)
    means = np.array([points[nearest == c].mean(axis=0) for c in range(4)])
    assert max(blobs.recovered(means, true)) < kmeans.tolerance(400, 4, 3)  # the groups' means are the centres


def test_the_checks_pass_the_true_centres_and_fail_a_merged_pair_or_a_missing_one():
    true = blobs.centres(4, 3, seed=0)
    assert all(c.passed for c in kmeans.checks(true[::-1] + 0.01, 2000, 4, 3, 0))
    merged = true.copy()
    merged[1] = (true[0] + true[1]) / 2
    assert not kmeans.checks(merged, 2000, 4, 3, 0)[1].passed
    short = kmeans.checks(true[:3], 2000, 4, 3, 0)
    assert not short[0].passed and not short[1].passed


def test_parameters_are_checked():
    workload = kmeans.KMeans()
    with pytest.raises(SbclabError, match="k must be"):
        workload.check_parameters({**workload.defaults(), "k": 1})
    with pytest.raises(SbclabError, match="fewer centres"):
        workload.check_parameters({**workload.defaults(), "k": 50, "dimensions": 1})
    assert workload.parameters(27_000)["points"] == 1000
