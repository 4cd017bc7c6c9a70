"""A directed graph of known degree distribution for PageRank, the same for a seed everywhere.

Out-degrees follow a Zipf law (exponent OUT_EXPONENT, at least 1, so no node's rank dangles);
each out-link's target is drawn with a weight that falls as a power (TARGET_EXPONENT) of the
target's place in a random order of the nodes, so in-degrees are heavy-tailed too, as in a web
graph; a node's repeated targets are kept once and a link to itself goes to the next node. The text
is one line per node, `node<TAB>dst,dst,...`.
"""

from pathlib import Path

import numpy as np

OUT_EXPONENT = 2.5
TARGET_EXPONENT = 0.8
BYTES_PER_NODE = 17  # a line of the text at 10^5 nodes (1.9 out-links a node on average)


def nodes_for(size_bytes: int) -> int:
    return max(100, int(size_bytes // BYTES_PER_NODE))


def adjacency(nodes: int, seed: int = 0) -> list[np.ndarray]:
    """Each node's distinct out-link targets."""
    rng = np.random.default_rng(seed)
    degrees = np.minimum(rng.zipf(OUT_EXPONENT, size=nodes), nodes - 1)
    order = rng.permutation(nodes)
    weights = np.empty(nodes)
    weights[order] = (1.0 + np.arange(nodes)) ** -TARGET_EXPONENT
    targets = rng.choice(nodes, size=int(degrees.sum()), p=weights / weights.sum())
    sources = np.repeat(np.arange(nodes), degrees)
    targets = np.where(targets == sources, (targets + 1) % nodes, targets)
    bounds = np.concatenate([[0], np.cumsum(degrees)])
    return [np.unique(targets[bounds[i]:bounds[i + 1]]) for i in range(nodes)]


def write_text(path: Path, nodes: int, seed: int = 0) -> Path:
    """The graph as text at path (kept: the same nodes and seed give the same text)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        with open(partial, "w") as handle:
            for node, links in enumerate(adjacency(nodes, seed)):
                handle.write(f"{node}\t{','.join(map(str, links))}\n")
        partial.replace(path)
    return path


def pagerank(links: list[np.ndarray], iterations: int, damping: float) -> np.ndarray:
    """The ranks by power iteration, as the engines compute them (every node has an out-link)."""
    from scipy import sparse

    nodes = len(links)
    sources = np.repeat(np.arange(nodes), [len(t) for t in links])
    targets = np.concatenate(links)
    shares = 1.0 / np.array([len(t) for t in links], dtype=float)[sources]
    spread = sparse.csr_matrix((shares, (targets, sources)), shape=(nodes, nodes))
    ranks = np.full(nodes, 1.0 / nodes)
    for _ in range(iterations):
        ranks = (1.0 - damping) / nodes + damping * (spread @ ranks)
    return ranks
