"""The lakehouse job: a changefeed into a Delta replica (one MERGE per micro-batch, idempotent per batch id) or a
parquet change table; the Delta table checked against the base table with polars, an independent reader."""

from __future__ import annotations

import datetime

import pytest

import logtide
from logtide.spark.delta_sink import DeltaReplica, ReplicaShape, fold
from logtide.spark.lakehouse_job import DeltaBatches, lakehouse, query_id, source_options
from logtide.spark.options import OptionError


pytest.importorskip("deltalake")
pl = pytest.importorskip("polars")

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
TABLE = ("CREATE TABLE ks.{t} (pk int, ck text, a text, b int, l list<int>, m map<text, int>, ts timestamp, "
         "PRIMARY KEY (pk, ck))")
FEED = "ALTER TABLE ks.{t} ADD CHANGEFEED f WITH (MODE = '{mode}', FORMAT = 'JSON', TOPIC_MIN_ACTIVE_PARTITIONS = 2)"

# one micro-batch: several changes to one key, a delete then an insert of a key, partial updates, an update of
# a missing key (CQL creates the row), a column delete, a partition delete, a batch over two rows
FIRST = [
    "INSERT INTO ks.{t} (pk, ck, a, b, l, m, ts) VALUES (1, 'x', 'A', 1, [1, 2], {{'k': 1}}, '2024-01-02 03:04:05')",
    "UPDATE ks.{t} SET b = 2 WHERE pk = 1 AND ck = 'x'",
    "UPDATE ks.{t} SET l = l + [3], m['j'] = 2 WHERE pk = 1 AND ck = 'x'",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (2, 'y', 'B')",
    "DELETE FROM ks.{t} WHERE pk = 2 AND ck = 'y'",
    "INSERT INTO ks.{t} (pk, ck, b) VALUES (2, 'y', 5)",
    "UPDATE ks.{t} SET a = 'C' WHERE pk = 3 AND ck = 'z'",
    "INSERT INTO ks.{t} (pk, ck, a, b) VALUES (4, 'w', 'D', 4)",
    "DELETE a FROM ks.{t} WHERE pk = 4 AND ck = 'w'",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (6, 'u', 'E')",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (6, 'v', 'F')",
    "DELETE FROM ks.{t} WHERE pk = 6",
    "BEGIN BATCH INSERT INTO ks.{t} (pk, ck, a) VALUES (7, 'p', 'G'); UPDATE ks.{t} SET b = 8 WHERE pk = 8 AND ck = 'q';"
    " APPLY BATCH",
]
# the next micro-batch: partial updates of rows the replica has, deletes of them, a range delete
SECOND = [
    "UPDATE ks.{t} SET a = 'A2' WHERE pk = 1 AND ck = 'x'",
    "DELETE FROM ks.{t} WHERE pk = 3 AND ck = 'z'",
    "UPDATE ks.{t} SET b = 9, ts = '2025-06-07 08:09:10.123' WHERE pk = 2 AND ck = 'y'",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (9, 'a', 'H')",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (9, 'b', 'I')",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (9, 'c', 'J')",
    "DELETE FROM ks.{t} WHERE pk = 9 AND ck >= 'a' AND ck < 'c'",
    "UPDATE ks.{t} SET m = m - {{'k'}} WHERE pk = 1 AND ck = 'x'",
]
# a row made by UPDATE (no row marker) whose last column is deleted is gone; only the image modes say so
VANISHING = [
    "UPDATE ks.{t} SET b = 7 WHERE pk = 5 AND ck = 'v'",
    "UPDATE ks.{t} SET b = null WHERE pk = 5 AND ck = 'v'",
]
MODES = ["NEW_AND_OLD_IMAGES", "NEW_IMAGE", "UPDATES"]
# the feed's records from its first one, without a snapshot of the table: every change through the fold
EARLIEST = {"startingOffsets": "earliest"}


def row_id(r) -> tuple:
    """What identifies a row of the changefeed source: its record, and its role (an update is two rows)."""
    return r["_partition"], r["_offset"], r["_change_type"]


def normal(v):
    """A value as the base table and the Delta table (read by polars) can both be compared."""
    if isinstance(v, datetime.datetime):
        return v.astimezone(datetime.timezone.utc).replace(tzinfo=None) if v.tzinfo else v
    if hasattr(v, "items"):
        return tuple(sorted((normal(k), normal(x)) for k, x in v.items())) or None
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, dict) and set(x) == {"key", "value"} for x in v):
        return tuple(sorted((normal(x["key"]), normal(x["value"])) for x in v))  # polars reads a map as key/value
    if isinstance(v, (list, tuple, set, frozenset)):
        items = [normal(x) for x in v]
        return (tuple(sorted(items)) if isinstance(v, (set, frozenset)) else tuple(items)) or None
    return v


def rows_of(dicts, columns) -> list[tuple]:
    return sorted((tuple(normal(d[c]) for c in columns) for d in dicts), key=repr)


def delta_rows(path, columns) -> list[tuple]:
    """The Delta table's rows, read by polars (its own parquet reader over the files the log lists)."""
    return rows_of(pl.read_delta(str(path)).to_dicts(), columns)


def base_rows(session, table: str) -> tuple[list[str], list[tuple]]:
    rs = session.execute(f"SELECT * FROM {table}")
    cols = list(rs.column_names)
    return cols, rows_of([dict(zip(cols, r)) for r in rs], cols)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    data = tmp_path_factory.mktemp("lakehouse") / "data"
    with logtide.open(data, synchronous="OFF") as d:
        d.session().execute(KS)
        d.data_dir = str(data)
        yield d


def run_until_caught_up(spark, **kwargs):
    q = lakehouse(spark, until_caught_up=True, **kwargs)
    q.awaitTermination()
    assert q.exception() is None, q.exception()
    return q


@pytest.mark.parametrize("mode", MODES)
def test_delta_replica_equals_the_table_after_each_micro_batch(spark, db, tmp_path, mode):
    t = f"t_{mode.lower()}"
    s = db.session()
    s.execute(TABLE.format(t=t))
    s.execute(FEED.format(t=t, mode=mode))
    target = tmp_path / "delta"
    for i, statements in enumerate([FIRST + (VANISHING if mode != "UPDATES" else []), SECOND]):
        for q in statements:
            s.execute(q.format(t=t))
        run_until_caught_up(spark, source=f"ks/{t}/f", data_dir=db.data_dir, target=target, format="delta",
                            options=EARLIEST)
        cols, want = base_rows(s, f"ks.{t}")
        assert delta_rows(target, cols) == want, f"after micro-batch {i}"
    from deltalake import DeltaTable

    dt = DeltaTable(str(target))
    assert dt.metadata().configuration.get("delta.enableChangeDataFeed") == "true"
    assert dt.transaction_version(f"logtide-lakehouse-{query_id(target / '_checkpoint')}") == 1
    assert len(dt.load_cdf(starting_version=0).read_all()) > 0  # the table's own change data feed


def test_a_micro_batch_run_again_changes_nothing(spark, db, tmp_path):
    s = db.session()
    s.execute(TABLE.format(t="rerun"))
    s.execute(FEED.format(t="rerun", mode="NEW_IMAGE"))
    for q in FIRST:
        s.execute(q.format(t="rerun"))
    target, ckpt = tmp_path / "delta", tmp_path / "ckpt"
    run_until_caught_up(spark, source="ks/rerun/f", data_dir=db.data_dir, target=target, format="delta",
                        checkpoint=ckpt, options=EARLIEST)
    from deltalake import DeltaTable

    version = DeltaTable(str(target)).version()
    cols, want = base_rows(s, "ks.rerun")
    batch = spark.read.format("logtide-changefeed").option("path", db.data_dir).option("topic", "ks/rerun/f").load()
    shape = ReplicaShape.of(batch.schema, "NEW_IMAGE")
    write = DeltaBatches(DeltaReplica(str(target), shape), str(ckpt))
    write(batch.limit(3), 0)  # batch 0 again, with other rows: it is in the table, so nothing happens
    assert DeltaTable(str(target)).version() == version
    assert delta_rows(target, cols) == want
    write(batch, 1)  # a new batch id is applied (replaying every record gives the same table)
    assert DeltaTable(str(target)).version() == version + 1
    assert delta_rows(target, cols) == want
    write(batch.limit(1), 1)
    assert DeltaTable(str(target)).version() == version + 1


def test_fold_applies_a_keys_records_in_offset_order():
    import pyarrow as pa

    shape = ReplicaShape(("pk",), ("a", "b"), full_images=False)
    rows = [  # (partition, offset, pk, a, b, change type, changed columns), not in offset order
        (0, 3, 1, None, 5, "update_postimage", ["b"]),
        (0, 1, 1, "x", 1, "insert", ["a", "b"]),
        (0, 2, 1, "x", 1, "delete", []),
        (1, 7, 2, "z", 3, "update_preimage", ["a"]),  # the values before: skipped
        (1, 7, 2, "y", None, "update_postimage", ["a"]),
    ]
    batch = pa.table({
        "_partition": pa.array([r[0] for r in rows], pa.int32()), "_offset": [r[1] for r in rows],
        "pk": pa.array([r[2] for r in rows], pa.int32()), "a": [r[3] for r in rows],
        "b": pa.array([r[4] for r in rows], pa.int32()), "_change_type": [r[5] for r in rows],
        "_changed_columns": [r[6] for r in rows]})
    out = sorted(fold(batch, shape).to_pylist(), key=lambda r: r["pk"])
    assert out == [
        # deleted, then b written: the row is (1, null, 5) whatever the target held
        {"pk": 1, "a": None, "b": 5, "_logtide_delete": False, "_logtide_set_0": True, "_logtide_set_1": True},
        # a partial update: only a is set, b keeps the target's value
        {"pk": 2, "a": "y", "b": None, "_logtide_delete": False, "_logtide_set_0": True, "_logtide_set_1": False},
    ]


def test_parquet_change_table_holds_every_change_record_once(spark, db, tmp_path):
    s = db.session()
    s.execute(TABLE.format(t="changes"))
    s.execute(FEED.format(t="changes", mode="NEW_AND_OLD_IMAGES"))
    target = tmp_path / "parquet"
    for q in FIRST + SECOND:
        s.execute(q.format(t="changes"))
    run_until_caught_up(spark, source="ks/changes/f", data_dir=db.data_dir, target=target, format="parquet",
                        max_records_per_trigger=20)  # several micro-batches, each a commit in _spark_metadata
    records = spark.read.format("logtide-changefeed").option("path", db.data_dir).option("topic", "ks/changes/f").load()
    table = spark.read.parquet(str(target))
    assert table.columns == records.columns + ["commit_date"]
    want = {row_id(r): r.asDict(recursive=True) for r in records.collect()}
    got = [r.asDict(recursive=True) for r in table.collect()]
    assert len(got) == len(want) > len(FIRST)
    for row in got:  # every record once, all its columns, dated by its commit time (UTC)
        assert row.pop("commit_date") == row["_commit_timestamp"].date()
        assert row == want[row_id(row)]
    assert {p.name.split("=")[0] for p in target.iterdir() if "=" in p.name} == {"commit_date"}
    assert len(list((target / "_spark_metadata").iterdir())) > 1


def test_bad_sources_and_formats_are_refused_by_name(spark, db, tmp_path):
    with pytest.raises(OptionError, match="--source: expected kafka://"):
        source_options("cql://h:1/ks.t")
    with pytest.raises(OptionError, match="--format"):
        lakehouse(spark, "ks/x/f", tmp_path / "t", "orc", data_dir=db.data_dir)
    assert source_options("kafka://u%40x:p@h1:9092,h2:9093/ks/t/f") == {
        "topic": "ks/t/f", "bootstrap": "h1:9092,h2:9093", "username": "u@x", "password": "p"}
    s = db.session()
    s.execute("CREATE TABLE ks.keys (k int PRIMARY KEY, v int)")
    s.execute("ALTER TABLE ks.keys ADD CHANGEFEED f WITH (MODE = 'KEYS_ONLY', FORMAT = 'JSON')")
    with pytest.raises(OptionError, match="KEYS_ONLY changefeed carries no new values"):
        lakehouse(spark, "ks/keys/f", tmp_path / "t", "delta", data_dir=db.data_dir)
    s.execute("ALTER TABLE ks.keys ADD CHANGEFEED g WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON')")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "file.txt").write_text("x")
    with pytest.raises(OptionError, match="is not a Delta table"):
        lakehouse(spark, "ks/keys/g", tmp_path / "other", "delta", data_dir=db.data_dir)
