"""The statements the replication snapshot writes for one row, in each mode (no Spark session needed):
``exact`` (a logtide source), ``elements`` (Cassandra 5.0) and ``approximate`` (ScyllaDB, Cassandra 4).
Golden output: ``snapshot_statements.txt``; docs/spark.md, "What the snapshot copies"."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import Row

from logtide.schema import types as T
from logtide.spark.cql_writes import TargetWriter
from logtide.spark.table_info import ColumnInfo, TableInfo

GOLDEN = Path(__file__).with_name("snapshot_statements.txt")
ADDR = T.UserType("ks", "addr", ("street", "n"), (T.TEXT, T.INT), False)
INFO = TableInfo("ks", "t", (ColumnInfo("pk", "partition_key", 0, T.INT), ColumnInfo("ck", "clustering", 0, T.INT),
                             ColumnInfo("l", "regular", -1, T.ListType(T.TEXT)),
                             ColumnInfo("m", "regular", -1, T.MapType(T.TEXT, T.INT)),
                             ColumnInfo("s", "regular", -1, T.SetType(T.TIMEUUID)),
                             ColumnInfo("st", "static", -1, T.INT),
                             ColumnInfo("u", "regular", -1, ADDR), ColumnInfo("v", "regular", -1, T.INT)))
# as Spark hands it over: a map in Spark's order, a set in the driver's (not CQL's) order; ``elements``
# rows have remaining TTLs where ``exact`` ones have original TTLs, which this test does not tell apart
ROW = Row(pk=1, ck=2, l=["a"], m={"b": 2, "a": 1},
          s=["00000000-0000-1001-8000-000000000001", "ffffffff-0000-1000-8000-000000000001"],
          st=7, u=Row(street=None, n=5), v=3,
          _writetime_l=[10], _writetime_m=[11, 12], _writetime_s=[13, 17], _writetime_st=14,
          _writetime_u=[None, 15], _writetime_v=16,
          _ttl_l=[None], _ttl_m=[100, None], _ttl_s=[None, None], _ttl_st=None, _ttl_u=[None, 50], _ttl_v=60,
          _listkeys_l=["00000000-0000-1000-8000-000000000002"], _marker_writetime=9, _marker_ttl=60)


def render() -> str:
    out = []
    for mode in ("exact", "elements", "approximate"):
        out.append(f"== {mode}")
        out.extend(f"{q}  -- {p!r}" for q, p in TargetWriter(INFO, "ks.dst", mode).snapshot_statements(ROW))
    return "\n".join(out) + "\n"


def test_snapshot_statements_per_mode_match_the_golden_text():
    assert render() == GOLDEN.read_text()
