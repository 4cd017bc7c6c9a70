"""TPC-H queries on Spark SQL over the generator's TBL files in HDFS.

Each table is read with its schema (the generator's '|'-separated text, a trailing empty column
after the last '|'); each query runs as its own Spark job, described "TPC-H Qn" so its stages can be
told apart in the event log, and its rows are saved as JSON lines to OUTPUT/qN for sbclab to check
against DuckDB's answer on the same data. The SBCLAB_RESULT line gives each query's seconds (from
the query's submission to its last row at the driver) and row count.

Usage: spark-submit tpch.py TABLES OUTPUT QUERIES_JSON
"""

import datetime
import decimal
import json
import sys
import time

from pyspark.sql import SparkSession


def plain(value):
    """A value as JSON can hold it: decimals as numbers, dates as ISO text."""
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return value


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: tpch.py TABLES OUTPUT QUERIES_JSON", file=sys.stderr)
        return 2
    tables, output, queries_file = argv
    with open(queries_file) as handle:
        given = json.load(handle)
    spark = SparkSession.builder.appName("sbclab TPC-H").getOrCreate()
    try:
        for name, schema in given["tables"].items():
            spark.read.csv(f"{tables}/{name}", schema=schema, sep="|").createOrReplaceTempView(name)
        seconds, rows = {}, {}
        for number, sql in given["queries"].items():
            spark.sparkContext.setJobDescription(f"TPC-H Q{number}")
            started = time.monotonic()
            found = spark.sql(sql).collect()
            seconds[f"q{number}"] = round(time.monotonic() - started, 3)
            rows[f"q{number}"] = len(found)
            lines = [json.dumps([plain(v) for v in row]) for row in found]
            spark.sparkContext.setJobDescription(f"TPC-H Q{number} saved")
            spark.sparkContext.parallelize(lines or [], 1).saveAsTextFile(f"{output}/q{number}")
        print("SBCLAB_RESULT " + json.dumps({"query_seconds": seconds, "rows": rows}), flush=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
