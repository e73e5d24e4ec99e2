"""The lakehouse job on DEBEZIUM_JSON and DYNAMODB_STREAMS_JSON changefeeds (docs/spark.md "The lakehouse job":
every FORMAT works): the Delta replica equals the table, the parquet change table holds every record once."""

from __future__ import annotations

import datetime

import pytest

from .test_lakehouse import EARLIEST, db, row_id, run_until_caught_up  # noqa: F401 - db: the module's data directory

pytest.importorskip("deltalake")
pl = pytest.importorskip("polars")

TYPE = "CREATE TYPE IF NOT EXISTS ks.addr (street text, zip int)"
TABLE = ("CREATE TABLE ks.{t} (pk int, ck text, a text, b int, s set<text>, m map<text, int>, ad frozen<addr>, "
         "st text static, PRIMARY KEY (pk, ck))")
FEED = "ALTER TABLE ks.{t} ADD CHANGEFEED f WITH (MODE = '{mode}', FORMAT = '{format}', TOPIC_MIN_ACTIVE_PARTITIONS = 2)"
STATIC = ("st",)

# one micro-batch: inserts, updates, collection changes, a UDT, static columns, a column delete, a row
# delete, a range delete
FIRST = [
    "INSERT INTO ks.{t} (pk, ck, a, b, s, m, ad) VALUES (1, 'x', 'A', 1, {{'p', 'q'}}, {{'k': 1}}, "
    "{{street: 'Main', zip: 10}})",
    "UPDATE ks.{t} SET b = 2 WHERE pk = 1 AND ck = 'x'",
    "UPDATE ks.{t} SET s = s + {{'r'}}, m['j'] = 2 WHERE pk = 1 AND ck = 'x'",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (1, 'y', 'Y')",
    "UPDATE ks.{t} SET st = 'S1' WHERE pk = 1",
    "INSERT INTO ks.{t} (pk, ck, a, b, ad) VALUES (2, 'y', 'B', 3, {{street: 'Side', zip: null}})",
    "DELETE a FROM ks.{t} WHERE pk = 2 AND ck = 'y'",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (3, 'a', 'R1')",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (3, 'b', 'R2')",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (3, 'c', 'R3')",
    "DELETE FROM ks.{t} WHERE pk = 3 AND ck >= 'a' AND ck < 'c'",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (4, 'q', 'gone')",
    "DELETE FROM ks.{t} WHERE pk = 4 AND ck = 'q'",
    "INSERT INTO ks.{t} (pk, ck, a, st) VALUES (7, 'a', 'P', 'S7')",
    "UPDATE ks.{t} SET b = 7 WHERE pk = 8 AND ck = 'v'",  # a row without a row marker ...
    "UPDATE ks.{t} SET b = null WHERE pk = 8 AND ck = 'v'",  # ... is gone with its last column
]
# the next micro-batch: changes to rows the replica has, a static-only partition, an update of a missing row,
# a static column deleted, a partition deleted
SECOND = [
    "UPDATE ks.{t} SET st = 'S2' WHERE pk = 1",
    "UPDATE ks.{t} SET ad = {{street: 'New', zip: 11}}, s = s - {{'p'}} WHERE pk = 1 AND ck = 'x'",
    "DELETE FROM ks.{t} WHERE pk = 1 AND ck = 'y'",
    "DELETE b FROM ks.{t} WHERE pk = 2 AND ck = 'y'",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (4, 'q', 'again')",
    "UPDATE ks.{t} SET a = 'C' WHERE pk = 5 AND ck = 'n'",
    "INSERT INTO ks.{t} (pk, st) VALUES (6, 'only static')",
    "DELETE st FROM ks.{t} WHERE pk = 1",
    "DELETE FROM ks.{t} WHERE pk = 7",
]
FEEDS = [("DEBEZIUM_JSON", "NEW_AND_OLD_IMAGES"), ("DEBEZIUM_JSON", "NEW_IMAGE"),
         ("DYNAMODB_STREAMS_JSON", "NEW_AND_OLD_IMAGES")]


def normal(v):
    """A value as the base table (cassandra-driver) and the Delta table (polars) can both be compared: maps and
    UDTs as sorted (name, value) pairs, sets sorted, empty collections null."""
    if isinstance(v, datetime.datetime):
        return v.astimezone(datetime.timezone.utc).replace(tzinfo=None) if v.tzinfo else v
    if hasattr(v, "_fields"):  # a UDT value from cassandra-driver (a named tuple)
        return tuple(sorted((f, normal(getattr(v, f))) for f in v._fields))
    if hasattr(v, "items"):
        return tuple(sorted((normal(k), normal(x)) for k, x in v.items())) or None
    if type(v).__name__ == "SortedSet":  # cassandra-driver's set
        return tuple(sorted(normal(x) for x in v)) or None
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, dict) and set(x) == {"key", "value"} for x in v):
        return tuple(sorted((normal(x["key"]), normal(x["value"])) for x in v))  # polars reads a map as key/value
    if isinstance(v, (list, tuple, set, frozenset)):
        items = [normal(x) for x in v]
        return (tuple(sorted(items)) if isinstance(v, (set, frozenset, list)) else tuple(items)) or None
    return v


def rows_of(dicts, columns) -> list[tuple]:
    return sorted((tuple(normal(d[c]) for c in columns) for d in dicts), key=repr)


def as_select_star(rows: list[dict]) -> list[dict]:
    """The replica's rows as ``SELECT *`` shows the table: a partition's static row (null clustering key)
    lends its static columns to the partition's rows and is shown alone only when the partition has none
    (docs/spark.md: static columns are a row of their own in the replica)."""
    statics = {r["pk"]: {c: r[c] for c in STATIC} for r in rows if r["ck"] is None}
    rows_of_pk = {r["pk"] for r in rows if r["ck"] is not None}
    out = [{**r, **statics.get(r["pk"], {c: None for c in STATIC})} for r in rows if r["ck"] is not None]
    return out + [r for r in rows if r["ck"] is None and r["pk"] not in rows_of_pk
                  and any(r[c] is not None for c in STATIC)]


def base_rows(session, table: str) -> tuple[list[str], list[tuple]]:
    rs = session.execute(f"SELECT * FROM {table}")
    cols = list(rs.column_names)
    return cols, rows_of([dict(zip(cols, r)) for r in rs], cols)


@pytest.mark.parametrize("fmt,mode", FEEDS)
def test_delta_replica_and_parquet_change_table_of_a_feed_in_this_format(spark, db, tmp_path, fmt, mode):  # noqa: F811
    t = f"{fmt.split('_')[0].lower()}_{mode.lower()}"
    s = db.session()
    s.execute(TYPE)
    s.execute(TABLE.format(t=t))
    s.execute(FEED.format(t=t, mode=mode, format=fmt))
    delta = tmp_path / "delta"
    for i, statements in enumerate([FIRST, SECOND]):
        for q in statements:
            s.execute(q.format(t=t))
        run_until_caught_up(spark, source=f"ks/{t}/f", data_dir=db.data_dir, target=delta, format="delta",
                            options=EARLIEST)  # every record through the fold and the MERGE
        cols, want = base_rows(s, f"ks.{t}")
        replica = pl.read_delta(str(delta)).to_dicts()
        for r in replica:  # static values live in the static row (null clustering key) only
            others = [c for c in cols if c not in ("pk", "ck")]
            assert all(r[c] is None for c in others if (c in STATIC) != (r["ck"] is None)), r
        got = rows_of(as_select_star(replica), cols)
        assert got == want, f"after micro-batch {i}"

    parquet = tmp_path / "parquet"
    run_until_caught_up(spark, source=f"ks/{t}/f", data_dir=db.data_dir, target=parquet, format="parquet",
                        max_records_per_trigger=7)  # several micro-batches
    records = spark.read.format("logtide-changefeed").option("path", db.data_dir).option("topic", f"ks/{t}/f").load()
    want = {row_id(r): r.asDict(recursive=True) for r in records.collect()}
    got = [r.asDict(recursive=True) for r in spark.read.parquet(str(parquet)).collect()]
    assert len(got) == len(want) >= len(FIRST) + len(SECOND)
    assert len({row_id(r) for r in got}) == len(got)
    for row in got:  # every record once, with all its columns
        assert row.pop("commit_date") == row["_commit_timestamp"].date()
        assert row == want[row_id(row)]
    old_images = {"insert", "update_preimage"} if mode == "NEW_AND_OLD_IMAGES" else set()  # rows need old images
    assert {r["_change_type"] for r in got} == {"update_postimage", "delete"} | old_images
