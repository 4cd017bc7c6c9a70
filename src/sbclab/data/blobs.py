"""Points around known centres for k-means, the same for a seed everywhere.

k centres are drawn in [-SPREAD, SPREAD]^d, redrawn until every two are at least SEPARATION apart;
each point is a centre (in turn) plus Gaussian noise of standard deviation NOISE in every
coordinate, so the centres a k-means finds can be compared with the ones the points came from.
The text is one point a line, `x1,x2,...`, in a random order.
"""

from pathlib import Path

import numpy as np

SPREAD, SEPARATION, NOISE = 10.0, 5.0, 0.5
BYTES_PER_COORDINATE = 9  # "-3.14159," at six significant figures, about


def centres(k: int, dimensions: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    for _ in range(10_000):
        found = rng.uniform(-SPREAD, SPREAD, size=(k, dimensions))
        gaps = np.linalg.norm(found[:, None, :] - found[None, :, :], axis=-1) + np.eye(k) * 1e9
        if gaps.min() >= SEPARATION:
            return found
    raise ValueError(f"{k} centres {SEPARATION} apart do not fit {dimensions} dimensions of [-{SPREAD}, {SPREAD}]")


def points_for(size_bytes: int, dimensions: int) -> int:
    return max(100, int(size_bytes // (BYTES_PER_COORDINATE * dimensions)))


def write_text(path: Path, points: int, k: int, dimensions: int, seed: int = 0) -> Path:
    """The points as text at path (kept: the same figures give the same text)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(seed + 1)
        around = centres(k, dimensions, seed)
        chosen = np.arange(points) % k
        values = around[chosen] + rng.normal(0.0, NOISE, size=(points, dimensions))
        values = values[rng.permutation(points)]
        partial = path.with_suffix(".partial")
        np.savetxt(partial, values, fmt="%.6g", delimiter=",")
        partial.replace(path)
    return path


def recovered(found: np.ndarray, true: np.ndarray) -> list[float]:
    """Each true centre's distance to the nearest centre found (a found centre may serve only one)."""
    left = list(range(len(found)))
    distances = []
    for centre in true:
        if not left:
            distances.append(float("inf"))
            continue
        gaps = [float(np.linalg.norm(found[i] - centre)) for i in left]
        best = int(np.argmin(gaps))
        distances.append(gaps[best])
        left.pop(best)
    return distances
