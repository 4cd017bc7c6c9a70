"""TPC-H's reference answers (DuckDB on the generator's tables) and the comparison that judges Spark's."""

import pytest

from sbclab.data import tpch
from sbclab.errors import SbclabError
from sbclab.workloads import tpch as workload


def test_duckdb_answers_every_query_at_the_smallest_scale_factor():
    found = workload.reference_answers(0.001, list(tpch.QUERIES))
    assert [len(found[q]) for q in (1, 6)] == [4, 1]
    flags = [(row[0], row[1]) for row in found[1]]
    assert flags == sorted(flags) and {"A", "N", "R"} >= {f for f, _ in flags}
    assert all(len(row) == 10 for row in found[1]) and found[6][0][0] > 0


def test_the_comparison_fails_on_a_changed_value_a_missing_row_and_an_order():
    want = [["A", "F", 10.0, "1995-01-01"], ["N", "O", 20.0, "1996-01-01"]]
    assert workload.same_rows([["A", "F", 10.0000000001, "1995-01-01"], want[1]], want) is None
    assert "column 3" in workload.same_rows([["A", "F", 10.5, "1995-01-01"], want[1]], want)
    assert "1 rows, DuckDB 2" == workload.same_rows(want[:1], want)
    assert "row 1" in workload.same_rows(want[::-1], want)
    assert "column 4" in workload.same_rows([["A", "F", 10.0, "1995-01-02"], want[1]], want)


def test_sizes_become_scale_factors_and_unknown_queries_are_refused():
    assert tpch.scale_factor(1_058_000_000) == 1.0 and tpch.scale_factor(10**6) == 0.001
    assert workload.Tpch().parameters(10_580_000)["scale_factor"] == 0.01
    with pytest.raises(SbclabError, match="sbclab runs 1, 3, 5, 6, 9, 18"):
        workload.Tpch().check_parameters({"queries": "1,2"})
    assert "l_shipdate DATE" in tpch.spark_schema("lineitem") and tpch.spark_schema("region").endswith("_end STRING")
