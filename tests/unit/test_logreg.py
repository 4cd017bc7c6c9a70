"""Logistic regression's labelled points, their known hyperplane and the checks that judge the model an
engine found."""

import math

import numpy as np
import pytest
from scipy.special import expit, log_expit
from scipy.stats import norm

from sbclab import workloads
from sbclab.data import classes
from sbclab.errors import SbclabError
from sbclab.workloads import logreg

POINTS, DIMENSIONS, SEPARATION = 4000, 4, 3.0


def fitted(values: np.ndarray, labels: np.ndarray, iterations: int = 10) -> np.ndarray:
    """The maximum likelihood's model (intercept first) by Newton's method, as LogisticRegressionMR
    computes it."""
    design = np.column_stack([np.ones(len(values)), values])
    model = np.zeros(design.shape[1])
    for _ in range(iterations):
        p = expit(design @ model)
        model -= np.linalg.solve((design * (p * (1 - p))[:, None]).T @ design, design.T @ (p - labels))
    return model


@pytest.fixture(scope="module")
def truth():
    return classes.truth(DIMENSIONS, SEPARATION, seed=0)


@pytest.fixture(scope="module")
def good(truth):
    return fitted(*classes.drawn(truth, POINTS, seed=0))


def test_the_points_are_the_same_for_a_seed_and_lie_about_the_known_hyperplane(tmp_path, truth):
    assert np.linalg.norm(truth.normal) == pytest.approx(1.0)
    assert np.all(np.abs(truth.midpoint) <= classes.OFFSET)
    a = classes.write_text(tmp_path / "a.txt", POINTS, DIMENSIONS, SEPARATION, seed=0).read_text()
    b = classes.write_text(tmp_path / "b.txt", POINTS, DIMENSIONS, SEPARATION, seed=0).read_text()
    other = classes.write_text(tmp_path / "c.txt", POINTS, DIMENSIONS, SEPARATION, seed=1).read_text()
    assert a == b != other and len(a.splitlines()) == POINTS
    written = np.loadtxt(tmp_path / "a.txt", delimiter=",")
    values, labels = classes.drawn(truth, POINTS, seed=0)
    assert np.array_equal(written[:, 0], labels) and np.allclose(written[:, 1:], values, rtol=1e-5, atol=1e-5)
    assert set(a.split("\n")[0].split(",")[0]) <= {"0", "1"} and labels.sum() == POINTS / 2
    # Each class about its centre, the centres s apart along the normal.
    for label, sign in ((1, 1), (0, -1)):
        centre = truth.midpoint + sign * truth.weights / 2
        assert np.linalg.norm(values[labels == label].mean(axis=0) - centre) < 4 * math.sqrt(DIMENSIONS * 2 / POINTS)
    # The true hyperplane labels the points about as well as the Bayes accuracy says.
    right = np.mean((values @ truth.weights + truth.intercept > 0) == (labels == 1))
    assert abs(right - truth.bayes_accuracy) < 4 * math.sqrt(0.25 / POINTS)
    assert classes.points_for(38 * 10**6, DIMENSIONS) == 10**6 and classes.points_for(10, 3) == classes.FEWEST_POINTS


def test_a_models_accuracy_and_the_curvature_are_those_of_a_large_sample(truth):
    values, labels = classes.drawn(truth, 400_000, seed=3)
    turned = truth.weights + np.array([1.0, 0.0, -0.5, 0.2])
    for weights, intercept in ((truth.weights, truth.intercept), (turned, truth.intercept + 1.0)):
        sampled = np.mean((values @ weights + intercept > 0) == (labels == 1))
        assert classes.accuracy(weights, intercept, truth) == pytest.approx(sampled, abs=4 * math.sqrt(0.25 / 400_000))
    p = expit(values @ truth.weights + truth.intercept)
    assert truth.curvature == pytest.approx(np.mean(p * (1 - p)), rel=0.02)
    assert classes.accuracy(truth.weights, truth.intercept, truth) == pytest.approx(truth.bayes_accuracy)
    assert classes.accuracy(np.zeros(DIMENSIONS), 1.0, truth) == 0.5
    assert classes.accuracy(np.full(DIMENSIONS, np.nan), 0.0, truth) == 0.0


def test_the_checks_pass_the_maximum_likelihoods_model(truth, good):
    assert all(c.passed for c in logreg.checks(good, POINTS, truth))
    kept = logreg.figures(good, POINTS, truth, seed=0)
    assert kept["cosine"] > math.cos(logreg.allowed_angle(POINTS, truth))
    assert logreg.least_accuracy(POINTS, truth) <= kept["accuracy"] <= truth.bayes_accuracy
    values, labels = classes.drawn(truth, POINTS, seed=0)
    # The maximum likelihood's log-loss on its own points is the least: below the true model's.
    true_loss, _ = classes.on_points(truth.weights, truth.intercept, truth, POINTS, seed=0)
    assert kept["loss"] <= true_loss
    assert kept["training_accuracy"] == pytest.approx(np.mean((values @ good[1:] + good[0] > 0) == (labels == 1)),
                                                      abs=1e-6)


def rotated(weights: np.ndarray, normal: np.ndarray, degrees: float) -> np.ndarray:
    """weights turned by degrees away from normal, keeping their length."""
    across = np.linalg.svd(normal[None, :])[2][1]  # a unit vector orthogonal to the normal
    angle = math.radians(degrees)
    return np.linalg.norm(weights) * (math.cos(angle) * normal + math.sin(angle) * across)


def test_the_checks_fail_a_turned_normal_a_lost_intercept_swapped_labels_and_no_model(truth, good):
    names = [c.name for c in logreg.checks(good, POINTS, truth)]
    turned = np.concatenate([[good[0]], rotated(good[1:], truth.normal, 30)])
    failed = [c.name for c in logreg.checks(turned, POINTS, truth) if not c.passed]
    assert failed == names[1:]  # both the direction and the accuracy
    # Through the origin: the right direction, the wrong place.
    failed = [c.name for c in logreg.checks(np.concatenate([[0.0], good[1:]]), POINTS, truth) if not c.passed]
    assert failed == ["accuracy near the Bayes accuracy"]
    assert [c.passed for c in logreg.checks(-good, POINTS, truth)] == [True, False, False]
    for broken in (good[:-1], np.append(good, 1.0), np.array([]), np.where(np.arange(len(good)) == 2, np.nan, good)):
        assert not any(c.passed for c in logreg.checks(broken, POINTS, truth))
        assert "weights" not in logreg.figures(broken, POINTS, truth, seed=0)


def test_the_allowed_angle_narrows_with_more_points_and_one_dimension_checks_the_sign():
    truth = classes.truth(DIMENSIONS, SEPARATION)
    assert logreg.allowed_angle(4 * POINTS, truth) == pytest.approx(logreg.allowed_angle(POINTS, truth) / 2)
    assert logreg.least_accuracy(POINTS, truth) < logreg.least_accuracy(4 * POINTS, truth) < truth.bayes_accuracy
    line = classes.truth(1, SEPARATION, seed=2)
    assert [c.passed for c in logreg.checks(np.array([line.intercept, *line.weights]), POINTS, line)] == [True] * 3
    assert not logreg.checks(np.array([-line.intercept, *-line.weights]), POINTS, line)[1].passed


def test_parameters_are_checked_with_one_sentence_and_what_to_do():
    workload = workloads.get("logreg")
    params = workload.parameters(54_000)
    assert params["points"] == 1421 and params["iterations"] == 20
    workload.check_parameters(params)
    for change, words in (({"dimensions": 0}, "dimensions must be"), ({"iterations": True}, "iterations must be"),
                          ({"separation": 5}, "separation"), ({"separation": "3"}, "separation"),
                          ({"seed": 1.5}, "seed must be")):
        with pytest.raises(SbclabError, match=words) as raised:
            workload.check_parameters({**params, **change})
        assert raised.value.hint
    # Too few points for the dimensions: the size that would do.
    small = workload.parameters(54_000, {"dimensions": 50})
    with pytest.raises(SbclabError, match="cannot place a hyperplane in 50 dimensions") as raised:
        workload.check_parameters(small)
    needed = int(raised.value.message.split("at least ")[1].split(" bytes")[0].replace(",", ""))
    workload.check_parameters(workload.parameters(needed, {"dimensions": 50}))


def test_the_normal_distribution_and_the_log_logistic_are_scipys_to_the_last_digits():
    """Φ and log σ from math and numpy (so that listing the workloads imports no scipy) against scipy's own,
    far into both tails, where a naive log(1 / (1 + e^-z)) overflows."""
    for x in (-8.0, -3.5, -1.0, 0.0, 0.3, 2.0, 6.0):
        assert classes.normal_cdf(x) == pytest.approx(norm.cdf(x), rel=1e-12, abs=1e-300)
    z = np.array([-800.0, -40.0, -1.0, 0.0, 1.5, 40.0, 800.0])
    assert np.allclose(classes.log_logistic(z), log_expit(z), rtol=1e-12, atol=0)
