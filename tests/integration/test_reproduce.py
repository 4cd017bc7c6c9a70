"""`sbclab reproduce` end to end on real emulated nodes: a seed's table run, set beside the published
one in the seed's layout, written as CSV, recomputed in the report, and only rendered when run again.

The 2026 seed's Table 4 (sysbench CPU events/s by threads on an RPi 4B and an RPi 5B) runs on bare
nodes, so it is the cheapest of the seed's tables that exercises the whole command; it is circular
(the boards' profiles hold the published figures), which the output says.
"""

import csv
import os
import subprocess
import sys

from sbclab.results.store import ResultsStore

from .conftest import NOTHING, leaked


def _reproduce(results, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sbclab", "reproduce", "lee-park-2026", "table4", "--repetitions", "2",
                           "--results", str(results), *extra], capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "COLUMNS": "200"})


def test_a_seed_table_is_run_and_set_beside_the_published_one(tmp_path):
    results = tmp_path / "results"
    done = _reproduce(results)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "Table 4" in out and "published | ours" in out and "circular" in out
    runs = list(ResultsStore(results).runs())
    assert len(runs) == 4 and all(r.valid for r in runs)
    assert {r.cluster.board for r in runs} == {"rpi4b", "rpi5b"}
    rows = list(csv.DictReader(open(results / "reproduction" / "leepark2026-table4.csv")))
    measured = [r for r in rows if r["ours_mean"]]
    assert measured and all(int(r["n"]) == 2 and float(r["ours_ci_low"]) > 0 for r in measured)
    assert all(r["scale_factor"] for r in measured)  # an emulated cell shows its factor

    again = _reproduce(results)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(list(ResultsStore(results).runs())) == 4  # stored runs are rendered, not run again
    assert leaked() == NOTHING
