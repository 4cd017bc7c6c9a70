"""Labelled points of two Gaussian classes either side of a known hyperplane, for logistic regression;
the same for a seed everywhere.

The hyperplane's unit normal u is a random direction and its midpoint m a point of [-OFFSET, OFFSET]^d;
class 1's points are m + (s/2)u plus standard Gaussian noise in every coordinate, class 0's
m - (s/2)u plus the same, half the points each, s the separation in noise units. Two classes of one
covariance give a logistic posterior exactly: log P(1|x)/P(0|x) = s u·(x - m), so the true model is
weights s·u and intercept -s u·m, no classifier does better than the Bayes accuracy Φ(s/2), and any
linear one's accuracy on the classes (not on a sample) has a closed form (`accuracy`).
The text is one point a line, `label,x1,x2,...` (label 0 or 1), in a random order.
"""

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np


OFFSET = 2.0
BYTES_PER_COORDINATE = 9  # "-3.14159," at six significant figures, about
BYTES_PER_LABEL = 2  # "1,"
FEWEST_POINTS = 1000
CHUNK_POINTS = 100_000  # points drawn and written at a time: memory stays flat whatever the size


# Φ and the logistic function from math and numpy, checked against scipy's in tests/unit/test_logreg.py:
# scipy's statistics take most of a second to import, which every sbclab command that lists the
# workloads (this module is logistic regression's) would pay.
def normal_cdf(x: float) -> float:
    """Φ(x), the standard normal's distribution function."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))  # erfc: no cancellation in the lower tail


def log_logistic(z: np.ndarray) -> np.ndarray:
    """log(1 / (1 + e^-z)), without overflow at either end."""
    return -np.logaddexp(0.0, -z)


@dataclass(frozen=True)
class Classes:
    normal: np.ndarray  # the hyperplane's unit normal, towards class 1
    midpoint: np.ndarray
    separation: float

    @property
    def dimensions(self) -> int:
        return len(self.normal)

    @property
    def weights(self) -> np.ndarray:
        return self.separation * self.normal

    @property
    def intercept(self) -> float:
        return float(-self.separation * self.normal @ self.midpoint)

    @property
    def bayes_accuracy(self) -> float:
        return normal_cdf(self.separation / 2)

    @cached_property
    def curvature(self) -> float:
        """E[p(1-p)] over both classes under the true model: the log-likelihood's curvature a point,
        along any direction of unit variance across the classes (a coordinate orthogonal to the normal).

        The true log-odds z = s u·(x - m) is N(±s²/2, s²) in class 1 and 0, and p(1-p) is even in z,
        so one Gauss-Hermite quadrature over class 1's does."""
        nodes, weights = np.polynomial.hermite_e.hermegauss(80)
        s = self.separation
        z = s * s / 2 + s * nodes
        return float(weights @ np.exp(log_logistic(z) + log_logistic(-z)) / weights.sum())


def truth(dimensions: int, separation: float, seed: int = 0) -> Classes:
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=dimensions)
    while np.linalg.norm(direction) < 1e-6:  # never in practice; a zero vector has no direction
        direction = rng.normal(size=dimensions)
    return Classes(direction / np.linalg.norm(direction), rng.uniform(-OFFSET, OFFSET, size=dimensions),
                   float(separation))


def points_for(size_bytes: int, dimensions: int) -> int:
    return max(FEWEST_POINTS, int(size_bytes // (BYTES_PER_COORDINATE * dimensions + BYTES_PER_LABEL)))


def _chunks(classes: Classes, points: int, seed: int):
    """The points and their labels a chunk at a time, so a large input never sits in memory whole."""
    rng = np.random.default_rng(seed + 1)
    for start in range(0, points, CHUNK_POINTS):
        count = min(CHUNK_POINTS, points - start)
        label = (np.arange(start, start + count) % 2).astype(float)
        centre = classes.midpoint + np.outer(label - 0.5, classes.weights)
        order = rng.permutation(count)
        yield (centre + rng.normal(size=(count, classes.dimensions)))[order], label[order]


def drawn(classes: Classes, points: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The points and their labels, in the order write_text writes them."""
    values, labels = zip(*_chunks(classes, points, seed))
    return np.concatenate(values), np.concatenate(labels)


def write_text(path: Path, points: int, dimensions: int, separation: float, seed: int = 0) -> Path:
    """The points as text at path (kept: the same figures give the same text)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        with open(partial, "w") as out:
            for values, labels in _chunks(truth(dimensions, separation, seed), points, seed):
                np.savetxt(out, np.column_stack([labels, values]), fmt=["%d"] + ["%.6g"] * dimensions, delimiter=",")
        partial.replace(path)
    return path


def accuracy(weights: np.ndarray, intercept: float, classes: Classes) -> float:
    """The share of the classes' points (all of them, not a sample) a linear model labels right.

    w·x + b is Gaussian in each class, with mean w·c + b at the class's centre c and standard
    deviation |w|, so class 1 is right with probability Φ((w·c1 + b)/|w|) and class 0 with
    Φ(-(w·c0 + b)/|w|)."""
    scale = float(np.linalg.norm(weights))
    if not (np.isfinite(scale) and np.isfinite(intercept)):
        return 0.0
    if scale == 0.0:
        return 0.5  # every point given the same label
    half = classes.weights / 2
    one = (weights @ (classes.midpoint + half) + intercept) / scale
    zero = (weights @ (classes.midpoint - half) + intercept) / scale
    return (normal_cdf(float(one)) + normal_cdf(-float(zero))) / 2


def cosine(weights: np.ndarray, classes: Classes) -> float:
    scale = float(np.linalg.norm(weights))
    return float(weights @ classes.normal / scale) if np.isfinite(scale) and scale > 0 else -1.0


def on_points(weights: np.ndarray, intercept: float, classes: Classes, points: int,
              seed: int = 0) -> tuple[float, float]:
    """A model's mean log-loss and accuracy on the points it was fitted to, drawn again from their seed
    a chunk at a time (the text rounds them to six figures, far below what either figure shows)."""
    loss, right = 0.0, 0
    for values, labels in _chunks(classes, points, seed):
        margin = values @ weights + intercept
        loss -= float(log_logistic(margin * (2 * labels - 1)).sum())
        right += int(((margin > 0) == (labels > 0.5)).sum())
    return loss / points, right / points
