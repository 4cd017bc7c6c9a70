"""Checks delay_by_carrier.py's output against plain Python over the same input, read from HDFS with
`hdfs dfs -cat` (sbclab puts the cluster's commands on the PATH of a job's validation).

Usage: check_delay_by_carrier.py INPUT OUTPUT; exit status 0 when every carrier's flights and mean agree.
"""

import math
import subprocess
import sys
from collections import defaultdict

CARRIER, ARR_DELAY = 8, 14


def cat(path: str) -> str:
    return subprocess.run(["hdfs", "dfs", "-cat", f"{path}/*"], capture_output=True, text=True, check=True).stdout


def main(source: str, output: str) -> int:
    flights, total = defaultdict(int), defaultdict(float)
    for line in cat(source).splitlines():
        fields = line.split(",")
        if len(fields) > ARR_DELAY and fields[0] != "Year" and fields[ARR_DELAY] != "NA":
            flights[fields[CARRIER]] += 1
            total[fields[CARRIER]] += float(fields[ARR_DELAY])
    got = {}
    for line in cat(output).splitlines():
        carrier, count, mean = line.split(",")
        got[carrier] = (int(count), float(mean))
    wrong = [c for c in flights.keys() | got.keys()
             if c not in got or c not in flights or got[c][0] != flights[c]
             or not math.isclose(got[c][1], total[c] / flights[c], rel_tol=1e-9, abs_tol=1e-9)]
    print(f"{len(flights)} carriers, {sum(flights.values())} flights; {len(wrong)} differ: {sorted(wrong)[:5]}")
    return 1 if wrong or not flights else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
