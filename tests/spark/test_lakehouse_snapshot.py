"""A new Delta replica holds the rows written before its changefeed existed (docs/spark.md "The rows written before
the changefeed"): a snapshot of the table joined to the feed at the offsets read before it, or the feed's own
initial scan; the Delta table, read by polars, equals ``SELECT *`` of the table."""

from __future__ import annotations

import time

import pytest

from logtide.changefeed.reader import DirectoryTopicReader
from logtide.spark.changefeed_feed import load_feed
from logtide.spark.changefeed_options import ChangefeedSettings
from logtide.spark.lakehouse_job import new_replica_start, source_options
from logtide.spark.lakehouse_start import Start, choose, load, scan_is_whole
from logtide.spark.options import OptionError

from .test_lakehouse import FEED, db, run_until_caught_up  # noqa: F401 - db: the module's data directory
from .test_lakehouse_formats import STATIC, TABLE, TYPE, as_select_star, base_rows, rows_of

deltalake = pytest.importorskip("deltalake")
pl = pytest.importorskip("polars")

SNAPSHOT = "logtide.snapshot.startingOffsets"  # the commit metadata of a replica's snapshot
# the table before its changefeed exists: clustered rows, static columns, a static-only partition, collections,
# a UDT, a row without a row marker
BEFORE = [
    "INSERT INTO ks.{t} (pk, ck, a, b, s, m, ad) VALUES (1, 'x', 'A', 1, {{'p'}}, {{'k': 1}}, "
    "{{street: 'Main', zip: 10}})",
    "INSERT INTO ks.{t} (pk, ck, a, b) VALUES (1, 'y', 'Y', 2)",
    "UPDATE ks.{t} SET st = 'S1' WHERE pk = 1",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (2, 'z', 'Z')",
    "INSERT INTO ks.{t} (pk, st) VALUES (3, 'only static')",
    "UPDATE ks.{t} SET b = 4 WHERE pk = 4 AND ck = 'w'",
    "INSERT INTO ks.{t} (pk, ck, a, b, s) VALUES (5, 'v', 'V', 5, {{'e'}})",
]
# with the changefeed: partial updates and deletes of the rows written before, and new rows
AFTER = [
    "UPDATE ks.{t} SET b = 10 WHERE pk = 1 AND ck = 'x'",
    "UPDATE ks.{t} SET s = s + {{'q'}} WHERE pk = 1 AND ck = 'x'",
    "DELETE FROM ks.{t} WHERE pk = 1 AND ck = 'y'",
    "UPDATE ks.{t} SET st = 'S2' WHERE pk = 1",
    "DELETE FROM ks.{t} WHERE pk = 2",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (6, 'n', 'new')",
    "DELETE a FROM ks.{t} WHERE pk = 5 AND ck = 'v'",
]
# after the first run, which the second run resumes from its checkpoint
LATER = [
    "UPDATE ks.{t} SET a = 'A2' WHERE pk = 1 AND ck = 'x'",
    "DELETE FROM ks.{t} WHERE pk = 3",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (2, 'z', 'back')",
    "UPDATE ks.{t} SET b = 44 WHERE pk = 4 AND ck = 'w'",
    "UPDATE ks.{t} SET m['n'] = 9 WHERE pk = 5 AND ck = 'v'",
]
# committed after the stream's start was chosen and before the snapshot reads the table: the snapshot holds
# them and the stream applies them again, in order, over it
WINDOW = [
    "UPDATE ks.{t} SET a = 'w1' WHERE pk = 1 AND ck = 'x'",
    "DELETE FROM ks.{t} WHERE pk = 1 AND ck = 'y'",
    "UPDATE ks.{t} SET b = 7 WHERE pk = 1 AND ck = 'y'",
    "UPDATE ks.{t} SET a = 'w2', s = {{'w'}} WHERE pk = 1 AND ck = 'x'",
    "UPDATE ks.{t} SET s = s + {{'f'}}, st = 'S5' WHERE pk = 5 AND ck = 'v'",
    "DELETE FROM ks.{t} WHERE pk = 2 AND ck = 'z'",
    "INSERT INTO ks.{t} (pk, ck, a) VALUES (7, 'a', 'in the window')",
]


def write(session, statements: list[str], t: str) -> None:
    for q in statements:
        session.execute(q.format(t=t))


def assert_replica(session, t: str, target) -> None:
    """The Delta table (polars) is the table: static values in the static row only, equal to ``SELECT *``."""
    cols, want = base_rows(session, f"ks.{t}")
    replica = pl.read_delta(str(target)).to_dicts()
    for r in replica:
        assert all(r[c] is None for c in cols if c not in ("pk", "ck") and (c in STATIC) != (r["ck"] is None)), r
    assert rows_of(as_select_star(replica), cols) == want


def snapshots(target) -> list[dict]:
    """The replica's snapshot commits (Delta history entries carrying the snapshot's metadata)."""
    return [h for h in deltalake.DeltaTable(str(target)).history() if SNAPSHOT in h]


def table_with_feed(db, t: str, mode: str, extra: str = "") -> object:
    s = db.session()
    s.execute(TYPE)
    s.execute(TABLE.format(t=t))
    write(s, BEFORE, t)
    s.execute(FEED.format(t=t, mode=mode).rstrip(")") + extra + ")")
    return s


@pytest.mark.parametrize("mode", ["NEW_AND_OLD_IMAGES", "UPDATES"])
def test_a_new_replica_holds_the_rows_written_before_the_changefeed(spark, db, tmp_path, mode):
    t = f"before_{mode.lower()}"
    s = table_with_feed(db, t, mode)
    write(s, AFTER, t)
    target = tmp_path / "delta"
    run_until_caught_up(spark, source=f"ks/{t}/f", data_dir=db.data_dir, target=target, format="delta")
    assert_replica(s, t, target)
    [snap] = snapshots(target)
    start = load(target / "_checkpoint")
    assert start is not None and start.snapshot and start.copied
    assert snap[SNAPSHOT] == start.starting_offsets()
    write(s, LATER, t)  # the next run resumes from the checkpoint: no second snapshot
    run_until_caught_up(spark, source=f"ks/{t}/f", data_dir=db.data_dir, target=target, format="delta")
    assert_replica(s, t, target)
    assert len(snapshots(target)) == 1


def test_changes_committed_while_the_snapshot_is_read_end_applied_once(spark, db, tmp_path):
    t = "window"
    s = table_with_feed(db, t, "UPDATES")  # partial updates: re-applied over the snapshot they must still add up
    target = tmp_path / "delta"
    settings = ChangefeedSettings.parse(source_options(f"ks/{t}/f", db.data_dir))
    start = new_replica_start(settings, load_feed(settings), target / "_checkpoint")  # as the job chooses it
    assert start.snapshot and not start.copied and start.offsets is not None
    write(s, WINDOW, t)
    run_until_caught_up(spark, source=f"ks/{t}/f", data_dir=db.data_dir, target=target, format="delta")
    assert_replica(s, t, target)
    [snap] = snapshots(target)
    assert snap[SNAPSHOT] == start.starting_offsets()  # the stream began where the start said, before the window
    merged = [h for h in deltalake.DeltaTable(str(target)).history() if h["operation"] == "MERGE"]
    assert merged and merged[0]["version"] > snap["version"]  # the window's records, after the snapshot


def test_a_changefeed_whose_initial_scan_is_whole_is_read_from_its_first_record(spark, db, tmp_path):
    t = "scanned"
    s = table_with_feed(db, t, "NEW_IMAGE", ", INITIAL_SCAN = TRUE")
    deadline = time.monotonic() + 120
    with DirectoryTopicReader(db.data_dir) as reader:
        while reader.describe(f"ks/{t}/f").state == "INITIAL_SCAN" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert reader.describe(f"ks/{t}/f").state == "ENABLED"
    write(s, AFTER, t)
    target = tmp_path / "delta"
    run_until_caught_up(spark, source=f"ks/{t}/f", data_dir=db.data_dir, target=target, format="delta")
    assert_replica(s, t, target)
    assert snapshots(target) == []  # the scan records are the table's rows: no snapshot
    assert load(target / "_checkpoint") == Start(None, snapshot=False)


def test_a_topic_known_only_by_its_schema_is_refused_naming_initial_scan():
    settings = ChangefeedSettings.parse({"topic": "ks/t/f", "bootstrap": "127.0.0.1:1", "mode": "NEW_IMAGE",
                                         "format": "JSON", "tableSchema": "k int, v int, PRIMARY KEY (k)"})
    info = load_feed(settings)  # no catalog and no CQL: the table cannot be read
    with pytest.raises(OptionError, match="INITIAL_SCAN = TRUE from its first record"):
        choose(info, [(0, 5)], "ks/t/f")
    scanned = type(info)(info.shape, True, False, initial_scan=True, scanning=False)
    assert scan_is_whole(scanned, [(0, 5), (0, 0)]) and choose(scanned, [(0, 5)], "ks/t/f") == Start(None, False)
    assert not scan_is_whole(scanned, [(3, 5)])  # retention removed records of the scan
    assert not scan_is_whole(type(info)(info.shape, True, False, initial_scan=True, scanning=True), [(0, 5)])
