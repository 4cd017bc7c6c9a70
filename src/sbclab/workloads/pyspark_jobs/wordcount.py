"""WordCount in PySpark, the counterpart of sbclab's JVM WordCount (java/jobs): the same tokens as
Hadoop's example (java.util.StringTokenizer's default delimiters), the same `word<TAB>count` output
and the same SBCLAB_RESULT line, so the two differ only in the language the functions run in.

Usage: spark-submit wordcount.py INPUT OUTPUT PARTITIONS
"""

import json
import operator
import re
import sys

from pyspark import SparkConf, SparkContext

TOKEN = re.compile(r"[^ \t\n\r\f]+")


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[2].isdigit() or int(argv[2]) < 1:
        print("usage: wordcount.py INPUT OUTPUT PARTITIONS (a positive number)", file=sys.stderr)
        return 2
    source, output, partitions = argv[0], argv[1], int(argv[2])
    sc = SparkContext(conf=SparkConf().setAppName("sbclab PySpark WordCount"))
    try:
        tokens, distinct, total_count = sc.accumulator(0), sc.accumulator(0), sc.accumulator(0)

        def pairs(line: str):
            words = TOKEN.findall(line)
            tokens.add(len(words))
            return ((word, 1) for word in words)

        def written(pair: tuple[str, int]) -> str:
            # Counted where the lines are written, so the totals describe the output itself.
            distinct.add(1)
            total_count.add(pair[1])
            return f"{pair[0]}\t{pair[1]}"

        sc.textFile(source).flatMap(pairs).reduceByKey(operator.add, partitions).map(written).saveAsTextFile(output)
        print("SBCLAB_RESULT " + json.dumps({"tokens": tokens.value, "distinct": distinct.value,
                                             "total_count": total_count.value}), flush=True)
    finally:
        sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
