"""Initial table scan (spec 004, "Initial table scan"): interleaving with writes, progress, restart."""

from __future__ import annotations

import json
import threading
import time

import logtide

from .feedutil import KS, add_feed, values


def _scan_order(db, table: str = "t") -> list[int]:
    """The partition keys (int k) in the order the scanner visits them (token order)."""
    t = db.catalog.table("ks", table)
    with db.store.snapshot() as txn:
        return [t.partition_key[0].type.deserialize(pk) for _, pk, _ in txn.partitions(t.store_id)]


def _fill(session, n: int) -> None:
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    for k in range(n):
        session.execute(f"INSERT INTO t (k, v) VALUES ({k}, {k})")


def test_interleaving_follows_the_spec_exactly(session):
    _fill(session, 6)
    db = session.db
    db.feeds.pause()
    path = add_feed(session, "t", "f", extra="VIRTUAL_TIMESTAMPS = TRUE, INITIAL_SCAN = TRUE")
    snapshot = list(db.catalog.table("ks", "t").changefeeds[0].snapshot)
    assert db.changefeeds.describe(path).state == "INITIAL_SCAN"
    order = _scan_order(db)
    db.feeds.scan_step(partitions=2)
    scanned, unscanned = order[:2], order[2:]
    session.execute(f"UPDATE t SET v = 100 WHERE k = {scanned[0]}")      # a scanned row changes: only the update
    session.execute(f"UPDATE t SET v = 200 WHERE k = {unscanned[0]}")    # not scanned yet: source value, then update
    session.execute(f"UPDATE t SET v = 201 WHERE k = {unscanned[0]}")    # changed again: only the update
    session.execute(f"DELETE FROM t WHERE k = {unscanned[1]}")           # source value, then the erase
    session.execute("INSERT INTO t (k, v) VALUES (50, 50)")              # did not exist at the snapshot: update only
    while db.feeds.scan_step(partitions=1):
        pass
    assert db.changefeeds.describe(path).state == "ENABLED"
    got = values(db.changefeeds, path)
    by_key: dict[int, list[dict]] = {}
    for v in got:
        by_key.setdefault(v["key"][0], []).append(v)
    for k in range(6):
        first = by_key[k][0]
        assert first["newImage"] == {"v": k} and "oldImage" not in first and first["ts"] == snapshot  # source first
        assert sum(1 for v in by_key[k] if v["ts"] == snapshot) == 1  # exactly once
    assert [v["newImage"]["v"] for v in by_key[scanned[0]]] == [scanned[0], 100]
    assert [v.get("newImage", {}).get("v") for v in by_key[unscanned[0]]] == [unscanned[0], 200, 201]
    assert ["erase" in v for v in by_key[unscanned[1]]] == [False, True]
    assert [v["ts"] == snapshot for v in by_key[50]] == [False]
    assert len(got) == 6 + 1 + 2 + 1 + 1


def test_a_paused_worker_steps_no_scan_even_when_it_waited_for_the_lock_meanwhile(session):
    _fill(session, 4)
    db = session.db
    with db.write_lock:  # the worker's pass has begun and waits for the lock while the scans are paused
        stepped: list[bool] = []
        worker = threading.Thread(target=lambda: stepped.append(db.feeds.scan_step(unless_paused=True)))
        db.feeds.pause()
        path = add_feed(session, "t", "f", extra="INITIAL_SCAN = TRUE")
        worker.start()
    worker.join(60)
    assert stepped == [False]
    assert db.changefeeds.describe(path).state == "INITIAL_SCAN" and values(db.changefeeds, path) == []
    assert db.feeds.scan_step(partitions=4)  # a paused scan is still stepped by hand
    assert len(values(db.changefeeds, path)) == 4


def test_debezium_marks_scan_records_as_snapshot_reads(session):
    _fill(session, 3)
    path = add_feed(session, "t", "f", fmt="DEBEZIUM_JSON", extra="INITIAL_SCAN = TRUE")
    deadline = time.monotonic() + 60
    while session.db.changefeeds.describe(path).state != "ENABLED" and time.monotonic() < deadline:
        time.sleep(0.02)
    got = values(session.db.changefeeds, path)
    assert sorted(v["payload"]["after"]["k"] for v in got) == [0, 1, 2]
    assert {v["payload"]["op"] for v in got} == {"r"}
    assert all(v["payload"]["source"]["snapshot"] is True for v in got)


def test_static_rows_and_clustered_rows_are_scanned(session):
    session.execute("CREATE TABLE t (k int, c int, v int, s int static, PRIMARY KEY (k, c))")
    session.execute("INSERT INTO t (k, c, v, s) VALUES (1, 1, 1, 9)")
    session.execute("INSERT INTO t (k, c, v) VALUES (1, 2, 2)")
    session.db.feeds.pause()
    path = add_feed(session, "t", "f", mode="NEW_IMAGE", extra="INITIAL_SCAN = TRUE")
    while session.db.feeds.scan_step():
        pass
    assert values(session.db.changefeeds, path) == [
        {"key": [1, None], "update": {}, "newImage": {"s": 9}},
        {"key": [1, 1], "update": {}, "newImage": {"v": 1}},
        {"key": [1, 2], "update": {}, "newImage": {"v": 2}},
    ]


def test_no_barriers_during_the_scan_and_progress_is_visible(session, clock):
    _fill(session, 4)
    db = session.db
    db.feeds.pause()
    path = add_feed(session, "t", "f", mode="KEYS_ONLY",
                    extra="VIRTUAL_TIMESTAMPS = TRUE, BARRIERS_INTERVAL = Interval('PT1S'), INITIAL_SCAN = TRUE")
    db.feeds.scan_step(partitions=1)
    clock.advance(seconds=5)
    db.feeds.tick()
    assert not any("resolved" in v for v in values(db.changefeeds, path))
    row = session.execute("SELECT state, scan_partitions_done, scan_partitions_total FROM system_logtide.changefeeds").one()
    assert tuple(row) == ("INITIAL_SCAN", 1, 4)
    assert db.changefeeds.scan_progress(path) == (1, 4)
    while db.feeds.scan_step():
        pass
    db.feeds.tick()
    assert any("resolved" in v for v in values(db.changefeeds, path))
    row = session.execute("SELECT state, scan_partitions_done, scan_partitions_total FROM system_logtide.changefeeds").one()
    assert tuple(row) == ("ENABLED", 4, 4)


def test_an_empty_table_needs_no_scan(session):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    path = add_feed(session, "t", "f", extra="INITIAL_SCAN = TRUE")
    assert session.db.changefeeds.describe(path).state == "ENABLED"


def test_a_restart_resumes_the_scan_where_it_stopped(tmp_path):
    with logtide.open(tmp_path / "d", synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute("USE ks")
        _fill(s, 10)
        db.feeds.pause()
        path = add_feed(s, "t", "f", mode="KEYS_ONLY", extra="INITIAL_SCAN = TRUE")
        db.feeds.scan_step(partitions=4)
        s.execute("UPDATE t SET v = 0 WHERE k = 9")
    with logtide.open(tmp_path / "d", synchronous="OFF") as db:
        deadline = time.monotonic() + 60
        while db.changefeeds.describe(path).state != "ENABLED" and time.monotonic() < deadline:
            time.sleep(0.02)
        got = [json.dumps(v["key"]) for v in values(db.changefeeds, path)]
        assert sorted(got) == sorted([json.dumps([k]) for k in range(10)] + ["[9]"])
