"""PageRank on Spark's RDDs: the counterpart of sbclab's MapReduce PageRank on the same adjacency
lists (`node<TAB>dst,dst,...`, every node with at least one out-link).

Every iteration: rank = (1 - d) / N + d * (the shares of its in-links' ranks, each split evenly over
its out-links); a node no link reaches keeps (1 - d) / N. Ranks are saved as `node<TAB>rank` with
every digit Python's repr keeps, for sbclab to check against a power iteration on the master.

Usage: spark-submit pagerank.py INPUT OUTPUT ITERATIONS DAMPING PARTITIONS
"""

import json
import operator
import sys

from pyspark import SparkConf, SparkContext


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print("usage: pagerank.py INPUT OUTPUT ITERATIONS DAMPING PARTITIONS", file=sys.stderr)
        return 2
    source, output, iterations, damping, partitions = argv[0], argv[1], int(argv[2]), float(argv[3]), int(argv[4])
    sc = SparkContext(conf=SparkConf().setAppName("sbclab PageRank"))
    try:
        links = sc.textFile(source).map(lambda line: line.split("\t")).filter(lambda f: len(f) == 2) \
            .map(lambda f: (f[0], f[1].split(","))).partitionBy(partitions).cache()
        nodes = links.count()
        base = (1.0 - damping) / nodes
        ranks = links.mapValues(lambda _: 1.0 / nodes)
        for i in range(iterations):
            sc.setJobDescription(f"PageRank iteration {i + 1} of {iterations}")
            shares = links.join(ranks).flatMap(
                lambda kv: ((target, kv[1][1] / len(kv[1][0])) for target in kv[1][0]))
            # Every node, reached or not, keeps its place: a zero for each beside the shares it got.
            ranks = links.mapValues(lambda _: 0.0).union(shares).reduceByKey(operator.add, partitions) \
                .mapValues(lambda total: base + damping * total)
        ranks.map(lambda kv: f"{kv[0]}\t{kv[1]!r}").saveAsTextFile(output)
        print("SBCLAB_RESULT " + json.dumps({"nodes": nodes, "iterations": iterations}), flush=True)
    finally:
        sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
