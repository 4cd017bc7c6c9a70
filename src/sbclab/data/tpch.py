"""TPC-H's tables and six of its queries, as one text for Spark SQL and DuckDB, and its generator.

The data comes from tpchgen-cli (a TPC-H generator in Rust, a Python wheel): the same scale factor
gives the same rows on every machine, so the cluster's tables and the reference DuckDB reads on this
host are the same data. The queries are TPC-H's Q1, Q3, Q5, Q6, Q9 and Q18 with the specification's
validation parameters; where a query orders by a value that can tie, a key is added to the order so
both engines must return the same rows in the same order.
"""

import shutil
import subprocess
import sys
from pathlib import Path

MONEY = "DECIMAL(15,2)"
# (column, type) per table in TPC-H's order; the generator ends every line with a '|', read as one
# more, empty column.
TABLES: dict[str, list[tuple[str, str]]] = {
    "region": [("r_regionkey", "INT"), ("r_name", "STRING"), ("r_comment", "STRING")],
    "nation": [("n_nationkey", "INT"), ("n_name", "STRING"), ("n_regionkey", "INT"), ("n_comment", "STRING")],
    "part": [("p_partkey", "INT"), ("p_name", "STRING"), ("p_mfgr", "STRING"), ("p_brand", "STRING"),
             ("p_type", "STRING"), ("p_size", "INT"), ("p_container", "STRING"), ("p_retailprice", MONEY),
             ("p_comment", "STRING")],
    "supplier": [("s_suppkey", "INT"), ("s_name", "STRING"), ("s_address", "STRING"), ("s_nationkey", "INT"),
                 ("s_phone", "STRING"), ("s_acctbal", MONEY), ("s_comment", "STRING")],
    "partsupp": [("ps_partkey", "INT"), ("ps_suppkey", "INT"), ("ps_availqty", "INT"), ("ps_supplycost", MONEY),
                 ("ps_comment", "STRING")],
    "customer": [("c_custkey", "INT"), ("c_name", "STRING"), ("c_address", "STRING"), ("c_nationkey", "INT"),
                 ("c_phone", "STRING"), ("c_acctbal", MONEY), ("c_mktsegment", "STRING"), ("c_comment", "STRING")],
    "orders": [("o_orderkey", "BIGINT"), ("o_custkey", "INT"), ("o_orderstatus", "STRING"), ("o_totalprice", MONEY),
               ("o_orderdate", "DATE"), ("o_orderpriority", "STRING"), ("o_clerk", "STRING"),
               ("o_shippriority", "INT"), ("o_comment", "STRING")],
    "lineitem": [("l_orderkey", "BIGINT"), ("l_partkey", "INT"), ("l_suppkey", "INT"), ("l_linenumber", "INT"),
                 ("l_quantity", MONEY), ("l_extendedprice", MONEY), ("l_discount", MONEY), ("l_tax", MONEY),
                 ("l_returnflag", "STRING"), ("l_linestatus", "STRING"), ("l_shipdate", "DATE"),
                 ("l_commitdate", "DATE"), ("l_receiptdate", "DATE"), ("l_shipinstruct", "STRING"),
                 ("l_shipmode", "STRING"), ("l_comment", "STRING")],
}
TRAILING = ("_end", "STRING")

QUERIES: dict[int, str] = {
    1: """select l_returnflag, l_linestatus, sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price,
  sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
  sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, avg(l_quantity) as avg_qty,
  avg(l_extendedprice) as avg_price, avg(l_discount) as avg_disc, count(*) as count_order
from lineitem where l_shipdate <= date '1998-09-02'
group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus""",
    3: """select l_orderkey, sum(l_extendedprice * (1 - l_discount)) as revenue, o_orderdate, o_shippriority
from customer, orders, lineitem
where c_mktsegment = 'BUILDING' and c_custkey = o_custkey and l_orderkey = o_orderkey
  and o_orderdate < date '1995-03-15' and l_shipdate > date '1995-03-15'
group by l_orderkey, o_orderdate, o_shippriority
order by revenue desc, o_orderdate, l_orderkey limit 10""",
    5: """select n_name, sum(l_extendedprice * (1 - l_discount)) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey and c_nationkey = s_nationkey
  and s_nationkey = n_nationkey and n_regionkey = r_regionkey and r_name = 'ASIA'
  and o_orderdate >= date '1994-01-01' and o_orderdate < date '1995-01-01'
group by n_name order by revenue desc, n_name""",
    6: """select sum(l_extendedprice * l_discount) as revenue from lineitem
where l_shipdate >= date '1994-01-01' and l_shipdate < date '1995-01-01'
  and l_discount between 0.05 and 0.07 and l_quantity < 24""",
    9: """select nation, o_year, sum(amount) as sum_profit from (
  select n_name as nation, extract(year from o_orderdate) as o_year,
    l_extendedprice * (1 - l_discount) - ps_supplycost * l_quantity as amount
  from part, supplier, lineitem, partsupp, orders, nation
  where s_suppkey = l_suppkey and ps_suppkey = l_suppkey and ps_partkey = l_partkey and p_partkey = l_partkey
    and o_orderkey = l_orderkey and s_nationkey = n_nationkey and p_name like '%green%') as profit
group by nation, o_year order by nation, o_year desc""",
    18: """select c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice, sum(l_quantity) as total_qty
from customer, orders, lineitem
where o_orderkey in (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 300)
  and c_custkey = o_custkey and o_orderkey = l_orderkey
group by c_name, c_custkey, o_orderkey, o_orderdate, o_totalprice
order by o_totalprice desc, o_orderdate, o_orderkey limit 100""",
}
DEFAULT_QUERIES = tuple(QUERIES)
# The generator's bytes at scale factor 1 (tpchgen-cli's TBL files: 10.58 MB at 0.01).
BYTES_PER_SCALE_FACTOR = 1.058e9
SMALLEST_SCALE_FACTOR = 0.001


def scale_factor(size_bytes: int) -> float:
    """The scale factor whose tables hold about size_bytes (four significant figures)."""
    found = max(SMALLEST_SCALE_FACTOR, size_bytes / BYTES_PER_SCALE_FACTOR)
    return float(f"{found:.4g}")


def spark_schema(table: str) -> str:
    """The table's columns as Spark SQL DDL, the generator's trailing column last."""
    return ", ".join(f"{name} {kind}" for name, kind in [*TABLES[table], TRAILING])


def duckdb_columns(table: str) -> dict[str, str]:
    return {name: "VARCHAR" if kind == "STRING" else kind for name, kind in [*TABLES[table], TRAILING]}


def generator() -> str:
    """The tpchgen-cli installed beside this Python (sbclab depends on it)."""
    beside = Path(sys.executable).parent / "tpchgen-cli"
    found = str(beside) if beside.exists() else shutil.which("tpchgen-cli")
    if not found:
        raise FileNotFoundError("tpchgen-cli is not installed beside sbclab ('pip install tpchgen-cli')")
    return found


def generate_command(table: str, scale: float) -> list[str]:
    """One table at a scale factor, as TBL text on standard output."""
    return [generator(), "--scale-factor", f"{scale:g}", "--tables", table, "--stdout"]


def generate_files(folder: Path, scale: float) -> Path:
    """Every table as a TBL file in folder (kept: the same scale factor gives the same files)."""
    done = folder / ".complete"
    if not done.exists():
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([generator(), "--scale-factor", f"{scale:g}", "--output-dir", str(folder)],
                       check=True, capture_output=True)
        done.write_text(f"{scale:g}\n")
    return folder
