"""Retention (spec 004, "Record retention period"): expired records go, read or not; offsets are never reused."""

from __future__ import annotations

import logtide

from .feedutil import KS, add_feed


def _setup(session):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    return add_feed(session, "t", "f", mode="UPDATES", extra="RETENTION_PERIOD = Interval('PT1H')")


def test_expired_records_are_deleted_and_readers_see_the_offset_skip(session, clock):
    path = _setup(session)
    for i in range(3):
        session.execute(f"INSERT INTO t (k, v) VALUES (1, {i})")
    clock.advance(seconds=1800)
    for i in range(2):
        session.execute(f"INSERT INTO t (k, v) VALUES (1, {10 + i})")
    r = session.db.changefeeds
    r.add_consumer(path, "reader")  # not important: it holds nothing
    r.commit(path, "reader", {0: 1})
    clock.advance(seconds=1801)
    session.db.feeds.tick()
    assert [(p.start_offset, p.end_offset) for p in r.partitions(path)] == [(3, 5)]
    got = r.read(path, 0, r.committed(path, "reader")[0])
    assert got[0].offset == 3  # the skip: more than one past the last offset read
    clock.advance(seconds=3600)
    session.db.feeds.tick()
    assert [(p.start_offset, p.end_offset) for p in r.partitions(path)] == [(5, 5)]
    session.execute("INSERT INTO t (k, v) VALUES (1, 99)")
    assert [x.offset for x in r.read(path, 0, 0)] == [5]  # offsets are never reused


def test_important_consumers_hold_what_they_have_not_committed(session, clock):
    path = _setup(session)
    r = session.db.changefeeds
    r.add_consumer(path, "imp", important=True)
    for i in range(4):
        session.execute(f"INSERT INTO t (k, v) VALUES (1, {i})")
    clock.advance(seconds=7200)
    session.db.feeds.tick()
    assert r.partitions(path)[0].start_offset == 0
    r.commit(path, "imp", {0: 2})
    session.db.feeds.tick()
    assert r.partitions(path)[0].start_offset == 2
    r.drop_consumer(path, "imp")
    session.db.feeds.tick()
    assert [(p.start_offset, p.end_offset) for p in r.partitions(path)] == [(4, 4)]


def test_offsets_continue_after_everything_expired_and_a_restart(tmp_path, clock):
    with logtide.open(tmp_path / "d", clock=clock, synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute("USE ks")
        path = _setup(s)
        for i in range(3):
            s.execute(f"INSERT INTO t (k, v) VALUES (1, {i})")
        clock.advance(seconds=4000)
        db.feeds.tick()
        assert db.changefeeds.partitions(path)[0].start_offset == 3
    with logtide.open(tmp_path / "d", clock=clock, synchronous="OFF") as db:
        db.session().execute("INSERT INTO ks.t (k, v) VALUES (1, 5)")
        assert [(p.start_offset, p.end_offset) for p in db.changefeeds.partitions(path)] == [(3, 4)]


def test_the_background_worker_applies_retention(session, clock):
    import time
    path = _setup(session)
    session.execute("INSERT INTO t (k, v) VALUES (1, 1)")
    clock.advance(seconds=3601)
    feeds = session.db.feeds
    feeds.retention_every = 0.0
    deadline = time.monotonic() + 60
    while session.db.changefeeds.partitions(path)[0].start_offset == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session.db.changefeeds.partitions(path)[0].start_offset == 1
