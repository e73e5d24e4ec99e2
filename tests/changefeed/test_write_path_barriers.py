"""Barriers ``{"resolved":[step,0]}`` (spec 004, "Virtual timestamps"; YDB's heartbeats)."""

from __future__ import annotations

import json
import random

from .feedutil import add_feed, records


def test_barriers_are_written_at_multiples_of_the_interval_in_every_partition_even_without_writes(session, clock):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    path = add_feed(session, "t", "f", mode="UPDATES",
                    extra="VIRTUAL_TIMESTAMPS = TRUE, BARRIERS_INTERVAL = Interval('PT10S'), TOPIC_MIN_ACTIVE_PARTITIONS = 3")
    feeds = session.db.feeds
    clock.advance(seconds=10)
    feeds.tick()
    feeds.tick()  # nothing new is due: no second barrier
    clock.advance(seconds=25)
    feeds.tick()
    reader = session.db.changefeeds
    now = clock.now_micros() // 1000
    for p in range(3):
        got = [json.loads(r.value) for r in records(reader, path, p)]
        steps = [g["resolved"] for g in got]
        first = 10_000 * ((now - 25_000) // 10_000)
        assert steps == [[first, 0], [10_000 * (now // 10_000), 0]]
        assert all(s[0] % 10_000 == 0 for s in steps)


def test_no_record_with_a_smaller_virtual_timestamp_follows_a_barrier_in_its_partition(session, clock):
    session.execute("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))")
    path = add_feed(session, "t", "f", mode="KEYS_ONLY",
                    extra="VIRTUAL_TIMESTAMPS = TRUE, BARRIERS_INTERVAL = Interval('PT1S'), TOPIC_MIN_ACTIVE_PARTITIONS = 2")
    rng = random.Random(7)
    for i in range(300):
        clock.advance(micros=rng.randrange(0, 400_000))
        if rng.random() < 0.1:
            clock.micros -= rng.randrange(0, 2_000_000)  # the wall clock may step back
        session.execute(f"INSERT INTO t (k, c, v) VALUES ({rng.randrange(10)}, {i}, 0)")
        if rng.random() < 0.3:
            session.db.feeds.tick(retention=False)
    reader = session.db.changefeeds
    barriers = 0
    for p in range(2):
        last = None
        for r in records(reader, path, p):
            v = json.loads(r.value)
            if "resolved" in v:
                barriers += 1
                assert last is None or v["resolved"] > last
                last = v["resolved"]
            elif last is not None:
                assert v["ts"] > last, (v, last)
    assert barriers > 10


def test_no_barriers_without_the_option_or_when_disabled(session, clock):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    plain = add_feed(session, "t", "plain", mode="UPDATES")
    off = add_feed(session, "t", "off", mode="UPDATES", extra="BARRIERS_INTERVAL = Interval('PT1S')")
    session.execute("ALTER TABLE t ALTER CHANGEFEED off DISABLE")
    clock.advance(seconds=5)
    session.db.feeds.tick()
    assert records(session.db.changefeeds, plain) == [] == records(session.db.changefeeds, off)
