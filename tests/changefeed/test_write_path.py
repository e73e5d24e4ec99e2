"""The write path: one record per changed row per statement, in the write's transaction (spec 004)."""

from __future__ import annotations

import json
import threading

import pytest

from logtide.changefeed.render import partition_of
from logtide.errors import InvalidRequest

from .feedutil import add_feed, records, values


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (k int, c int, v text, w int, l list<int>, s int static, PRIMARY KEY (k, c))")
    return session


def test_insert_update_and_row_delete_give_update_and_erase_records(t):
    path = add_feed(t, "t", "f")
    t.execute("INSERT INTO t (k, c, v) VALUES (1, 1, 'a')")
    t.execute("UPDATE t SET w = 5 WHERE k = 1 AND c = 1")
    t.execute("DELETE FROM t WHERE k = 1 AND c = 1")
    got = values(t.db.changefeeds, path)
    assert [{k: v for k, v in r.items() if k != "ts"} for r in got] == [
        {"key": [1, 1], "update": {}, "newImage": {"v": "a", "w": None, "l": None}},
        {"key": [1, 1], "update": {}, "newImage": {"v": "a", "w": 5, "l": None},
         "oldImage": {"v": "a", "w": None, "l": None}},
        {"key": [1, 1], "erase": {}, "oldImage": {"v": "a", "w": 5, "l": None}},
    ]


def test_updates_mode_holds_the_written_columns_and_column_delete_sets_null(t):
    path = add_feed(t, "t", "f", mode="UPDATES")
    t.execute("INSERT INTO t (k, c, v, l) VALUES (1, 1, 'a', [1])")
    t.execute("UPDATE t SET l = l + [2] WHERE k = 1 AND c = 1")
    t.execute("DELETE v FROM t WHERE k = 1 AND c = 1")
    assert values(t.db.changefeeds, path) == [
        {"key": [1, 1], "update": {"v": "a", "l": [1]}},
        {"key": [1, 1], "update": {"l": [1, 2]}},
        {"key": [1, 1], "update": {"v": None}},
    ]


def test_range_and_partition_deletes_give_one_erase_per_row_that_existed(t):
    for c in range(5):
        t.execute(f"INSERT INTO t (k, c, v) VALUES (1, {c}, 'x')")
    t.execute("INSERT INTO t (k, c, v) VALUES (2, 0, 'y')")
    path = add_feed(t, "t", "f", mode="KEYS_ONLY")
    t.execute("DELETE FROM t WHERE k = 1 AND c >= 1 AND c < 3")
    t.execute("DELETE FROM t WHERE k = 1 AND c > 10")  # nothing existed there: no record
    t.execute("DELETE FROM t WHERE k = 1")
    t.execute("DELETE FROM t WHERE k = 7")  # a partition that does not exist: no record
    assert values(t.db.changefeeds, path) == [
        {"key": [1, 1], "erase": {}}, {"key": [1, 2], "erase": {}},
        {"key": [1, 0], "erase": {}}, {"key": [1, 3], "erase": {}}, {"key": [1, 4], "erase": {}},
    ]


def test_static_column_changes_are_keyed_by_the_partition_key_with_null_clustering(t):
    path = add_feed(t, "t", "f")
    t.execute("UPDATE t SET s = 3 WHERE k = 1")
    t.execute("INSERT INTO t (k, c, v, s) VALUES (1, 1, 'a', 4)")
    t.execute("DELETE FROM t WHERE k = 1")
    got = [{k: v for k, v in r.items() if k != "ts"} for r in values(t.db.changefeeds, path)]
    assert got == [
        {"key": [1, None], "update": {}, "newImage": {"s": 3}},
        {"key": [1, None], "update": {}, "newImage": {"s": 4}, "oldImage": {"s": 3}},
        {"key": [1, 1], "update": {}, "newImage": {"v": "a", "w": None, "l": None}},
        {"key": [1, None], "erase": {}, "oldImage": {"s": 4}},
        {"key": [1, 1], "erase": {}, "oldImage": {"v": "a", "w": None, "l": None}},
    ]


def test_a_table_without_clustering_columns(session):
    session.execute("CREATE TABLE kv (k text PRIMARY KEY, v int)")
    path = add_feed(session, "kv", "f", mode="NEW_IMAGE")
    session.execute("INSERT INTO kv (k, v) VALUES ('a', 1)")
    session.execute("DELETE FROM kv WHERE k = 'a'")
    session.execute("DELETE FROM kv WHERE k = 'never'")  # a row DELETE is an erase even of a missing row
    assert [{k: v for k, v in r.items() if k != "ts"} for r in values(session.db.changefeeds, path)] == [
        {"key": ["a"], "update": {}, "newImage": {"v": 1}},
        {"key": ["a"], "erase": {}},
        {"key": ["never"], "erase": {}},
    ]


def test_a_batch_is_one_transaction_sharing_one_virtual_timestamp(t, clock):
    path = add_feed(t, "t", "f", mode="KEYS_ONLY", extra="VIRTUAL_TIMESTAMPS = TRUE")
    t.execute("BEGIN BATCH INSERT INTO t (k, c) VALUES (1, 1); INSERT INTO t (k, c) VALUES (2, 1); APPLY BATCH")
    clock.advance(seconds=1)
    t.execute("INSERT INTO t (k, c) VALUES (1, 2)")
    got = values(t.db.changefeeds, path)
    assert got[0]["ts"] == got[1]["ts"]
    assert got[2]["ts"][0] == got[0]["ts"][0] + 1000
    assert got[2]["ts"][1] > got[0]["ts"][1]
    assert got[0]["ts"][0] == clock.now_micros() // 1000 - 1000  # step: commit time in milliseconds


def test_virtual_timestamps_follow_commit_order_not_the_write_timestamp(t, clock):
    path = add_feed(t, "t", "f", mode="KEYS_ONLY", extra="VIRTUAL_TIMESTAMPS = TRUE")
    t.execute("INSERT INTO t (k, c) VALUES (1, 1)")
    t.execute("INSERT INTO t (k, c) VALUES (1, 2) USING TIMESTAMP 5")  # a late write with an old timestamp
    clock.micros -= 10_000_000  # the clock steps back: steps never decrease
    t.execute("INSERT INTO t (k, c) VALUES (1, 3)")
    ts = [tuple(r["ts"]) for r in values(t.db.changefeeds, path)]
    assert ts == sorted(ts) and len(set(ts)) == 3
    assert ts[2][0] == ts[1][0]


def test_concurrent_statements_in_one_group_commit_each_get_their_own_tx_id(t):
    path = add_feed(t, "t", "f", mode="KEYS_ONLY", extra="VIRTUAL_TIMESTAMPS = TRUE")
    barrier = threading.Barrier(8)

    def writer(i: int) -> None:
        s = t.db.session("ks")
        barrier.wait()
        for j in range(20):
            s.execute(f"INSERT INTO t (k, c) VALUES ({i}, {j})")
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    recs = records(t.db.changefeeds, path)
    assert [r.offset for r in recs] == list(range(160))
    ts = [tuple(json.loads(r.value)["ts"]) for r in recs]
    assert ts == sorted(ts) and len(set(ts)) == 160


def test_a_failed_statement_writes_no_record(t):
    path = add_feed(t, "t", "f", mode="KEYS_ONLY")
    with pytest.raises(InvalidRequest):
        t.execute("UPDATE t SET l[5] = 1 WHERE k = 1 AND c = 1")  # list index out of bounds: fails after reading
    t.execute("INSERT INTO t (k, c) VALUES (1, 1)")
    assert [r.offset for r in records(t.db.changefeeds, path)] == [0]


def test_one_write_feeds_every_changefeed_and_the_cdc_log_in_one_commit(session):
    session.execute("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c)) "
                    "WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}")
    a = add_feed(session, "t", "a", mode="UPDATES")
    b = add_feed(session, "t", "b", mode="NEW_AND_OLD_IMAGES", fmt="DEBEZIUM_JSON")
    c = add_feed(session, "t", "c", mode="OLD_IMAGE", fmt="DYNAMODB_STREAMS_JSON")
    session.execute("INSERT INTO t (k, c, v) VALUES (1, 1, 1)")
    session.execute("UPDATE t SET v = 2 WHERE k = 1 AND c = 1")
    reader = session.db.changefeeds
    assert len(values(reader, a)) == len(values(reader, b)) == len(values(reader, c)) == 2
    assert [r["payload"]["op"] for r in values(reader, b)] == ["c", "u"]
    assert [r["eventName"] for r in values(reader, c)] == ["MODIFY", "MODIFY"]
    log = list(session.execute("SELECT \"cdc$operation\" FROM t_scylla_cdc_log"))
    assert len(log) == 5  # insert: delta, postimage; update: preimage, delta, postimage
    deb = records(reader, b)
    assert json.loads(deb[0].key) == {"payload": {"k": 1, "c": 1}}


@pytest.mark.parametrize("mode", ["NEW_AND_OLD_IMAGES", "UPDATES"])
def test_each_row_is_read_once_for_the_log_and_every_feed_and_never_after_the_write(session, monkeypatch, mode):
    from logtide.engine import touched as session_module
    session.execute("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c)) "
                    "WITH cdc = {'enabled': true, 'preimage': true}")
    for name in ("a", "b", "c"):
        add_feed(session, "t", name, mode=mode)
    calls = []
    original, original_stored = session_module.TxnRowReader.row, session_module.stored_row

    def counting(self, table, pk, token, ck, static):  # a read before the write (conditions, lists, counters)
        calls.append((ck, static))
        return original(self, table, pk, token, ck, static)

    def counting_stored(txn, table, token, pk, ck, static):  # the capture stage's read of a touched row
        calls.append((ck, static))
        return original_stored(txn, table, token, pk, ck, static)
    monkeypatch.setattr(session_module.TxnRowReader, "row", counting)
    monkeypatch.setattr(session_module, "stored_row", counting_stored)
    session.execute("UPDATE t SET v = 2 WHERE k = 1 AND c = 1")
    # once before the write, shared by the log and three feeds; the new images come from the merged row
    assert calls == [(calls[0][0], False)]


def test_records_are_sharded_by_key_and_keep_per_key_order(session):
    session.execute("CREATE TABLE t (k bigint PRIMARY KEY, v int)")
    path = add_feed(session, "t", "f", mode="NEW_IMAGE", extra="TOPIC_MIN_ACTIVE_PARTITIONS = 4")
    for rnd in range(3):
        for k in range(40):
            session.execute(f"INSERT INTO t (k, v) VALUES ({k}, {rnd})")
    reader = session.db.changefeeds
    table = session.db.catalog.table("ks", "t")
    used = set()
    for p in reader.partitions(path):
        seen: dict[int, list[int]] = {}
        for r in records(reader, path, p.partition):
            v = json.loads(r.value)
            assert partition_of(tuple(v["key"]), table, 4) == p.partition
            seen.setdefault(v["key"][0], []).append(v["newImage"]["v"])
            used.add(p.partition)
        assert all(vs == [0, 1, 2] for vs in seen.values())
    assert used == {0, 1, 2, 3}


def test_truncate_writes_no_records(t):
    path = add_feed(t, "t", "f")
    t.execute("INSERT INTO t (k, c) VALUES (1, 1)")
    t.execute("TRUNCATE t")
    assert len(values(t.db.changefeeds, path)) == 1


def test_images_leave_out_expired_and_shadowed_cells(t, clock):
    """The images come from the row records the write merged: an expired cell is null in both, a row whose
    every cell expired has no old image, and an older write under a newer row delete shows nothing."""
    path = add_feed(t, "t", "f")
    t.execute("INSERT INTO t (k, c, v, w) VALUES (1, 1, 'a', 1) USING TTL 10")
    t.execute("UPDATE t USING TTL 5 SET w = 2 WHERE k = 1 AND c = 1")
    clock.advance(seconds=6)  # w expired, v and the row marker live
    t.execute("UPDATE t SET l = [7] WHERE k = 1 AND c = 1")
    clock.advance(seconds=10)  # everything written with a TTL expired: only l is left
    t.execute("UPDATE t SET v = 'b' WHERE k = 1 AND c = 1")
    t.execute("UPDATE t USING TTL 1 SET w = 3 WHERE k = 2 AND c = 1")
    clock.advance(seconds=2)  # the row of k = 2 expired whole
    t.execute("UPDATE t SET w = 4 WHERE k = 2 AND c = 1")
    t.execute("DELETE FROM t USING TIMESTAMP 9000000000000000 WHERE k = 3 AND c = 1")
    t.execute("UPDATE t USING TIMESTAMP 1 SET w = 5 WHERE k = 3 AND c = 1")  # shadowed by the row delete
    got = [{k: v for k, v in r.items() if k != "ts"} for r in values(t.db.changefeeds, path)]
    assert got[2:] == [
        {"key": [1, 1], "update": {}, "newImage": {"v": "a", "w": None, "l": [7]},
         "oldImage": {"v": "a", "w": None, "l": None}},
        {"key": [1, 1], "update": {}, "newImage": {"v": "b", "w": None, "l": [7]},
         "oldImage": {"v": None, "w": None, "l": [7]}},
        {"key": [2, 1], "update": {}, "newImage": {"v": None, "w": 3, "l": None}},
        {"key": [2, 1], "update": {}, "newImage": {"v": None, "w": 4, "l": None}},
        {"key": [3, 1], "erase": {}},
        {"key": [3, 1], "update": {}},
    ]
