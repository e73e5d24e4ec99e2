"""The topic reader: partitions, reads, waits, consumers and their offsets (YDB's topic model, spec 004)."""

from __future__ import annotations

import threading
import time

import pytest

import logtide
from logtide.changefeed.api import UnknownConsumer, UnknownTopic
from logtide.changefeed.reader import DirectoryTopicReader
from logtide.errors import InvalidRequest

from .feedutil import KS, add_feed


@pytest.fixture
def feed(session):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v text)")
    return session, add_feed(session, "t", "f", mode="UPDATES", extra="TOPIC_MIN_ACTIVE_PARTITIONS = 2")


def _fill(session, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        session.execute(f"INSERT INTO t (k, v) VALUES ({i}, 'v{i}')")


def test_describe_and_topics_address_the_topic_by_path_and_by_kafka_name(feed):
    session, path = feed
    r = session.db.changefeeds
    d = r.describe(path)
    assert (d.path, d.keyspace, d.table, d.name, d.partitions, d.mode, d.format, d.state, d.retention_seconds) == \
           ("ks/t/f", "ks", "t", "f", 2, "UPDATES", "JSON", "ENABLED", 86400)
    assert d.kafka_name == "ks.t.f"
    assert r.describe("ks.t.f") == d == r.describe("/ks/t/f")
    assert r.topics() == [d]
    for bad in ("ks/t/nope", "ks/t", "nope", "ks/x/f"):
        with pytest.raises(UnknownTopic):
            r.describe(bad)


def test_partitions_hold_contiguous_offsets_from_zero(feed):
    session, path = feed
    _fill(session, 30)
    r = session.db.changefeeds
    parts = r.partitions(path)
    assert [p.partition for p in parts] == [0, 1]
    assert sum(p.end_offset for p in parts) == 30 and all(p.start_offset == 0 for p in parts)
    for p in parts:
        recs = r.read(path, p.partition, 0)
        assert [x.offset for x in recs] == list(range(p.end_offset))
        assert all(x.partition == p.partition and x.key is None for x in recs)
    with pytest.raises(UnknownTopic):
        r.read(path, 2, 0)


def test_read_limits_by_count_and_bytes_but_returns_at_least_one(feed):
    session, path = feed
    _fill(session, 20)
    r = session.db.changefeeds
    p = max(r.partitions(path), key=lambda p: p.end_offset)
    assert len(r.read(path, p.partition, 0, max_records=3)) == 3
    assert len(r.read(path, p.partition, 0, max_bytes=1)) == 1
    assert [x.offset for x in r.read(path, p.partition, 2, max_records=2)] == [2, 3]
    assert r.read(path, p.partition, p.end_offset) == []
    assert r.read(path, p.partition, -5, max_records=1)[0].offset == 0


def test_read_rows_are_the_records_of_read_as_bare_tuples(feed):
    session, path = feed
    _fill(session, 20)
    r = session.db.changefeeds
    for p in r.partitions(path):
        for offset, n, limit in ((0, 1000, 1 << 20), (2, 3, 1 << 20), (0, 1000, 1), (-5, 2, 1 << 20)):
            assert r.read_rows(path, p.partition, offset, n, limit) == \
                [(x.offset, x.write_time_ms, x.key, x.value) for x in r.read(path, p.partition, offset, n, limit)]
    with pytest.raises(UnknownTopic):
        r.read_rows(path, 2, 0)


def test_offset_for_time(feed, clock):
    session, path = feed
    session.execute("INSERT INTO t (k, v) VALUES (1, 'a')")
    t0 = clock.now_micros() // 1000
    clock.advance(seconds=5)
    session.execute("INSERT INTO t (k, v) VALUES (1, 'b')")
    r = session.db.changefeeds
    from logtide.changefeed.render import partition_of
    p = partition_of((1,), session.db.catalog.table("ks", "t"), 2)
    assert r.offset_for_time(path, p, 0) == 0
    assert r.offset_for_time(path, p, t0 + 1) == 1
    assert r.offset_for_time(path, p, t0 + 60_000) == 2
    assert [x.write_time_ms for x in r.read(path, p, 0)] == [t0, t0 + 5000]


def test_wait_wakes_on_commit_and_times_out_without_one(feed):
    session, path = feed
    r = session.db.changefeeds
    ends = {p.partition: p.end_offset for p in r.partitions(path)}
    assert r.wait(path, ends, 0.05) is False

    def later() -> None:
        time.sleep(0.2)
        session.db.session("ks").execute("INSERT INTO t (k, v) VALUES (1, 'x')")
    th = threading.Thread(target=later)
    th.start()
    assert r.wait(path, ends, 60) is True
    th.join()


def test_consumers_commit_durable_offsets_that_survive_restart(tmp_path):
    with logtide.open(tmp_path / "d", synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        path = add_feed(s, "ks.t", "f", mode="KEYS_ONLY")
        r = db.changefeeds
        r.add_consumer(path, "c", important=True)
        r.add_consumer(path, "d")
        with pytest.raises(InvalidRequest, match="already exists"):
            r.add_consumer(path, "c")
        assert r.committed(path, "c") == {}
        for i in range(3):
            s.execute(f"INSERT INTO ks.t (k, v) VALUES ({i}, 0)")
        r.commit(path, "c", {0: 2})
        with pytest.raises(UnknownConsumer):
            r.commit(path, "nope", {0: 1})
        with pytest.raises(UnknownConsumer):
            r.committed(path, "nope")
        with pytest.raises(UnknownTopic):
            r.commit(path, "c", {3: 1})
    with logtide.open(tmp_path / "d", synchronous="OFF") as db:
        r = db.changefeeds
        assert r.committed(path, "c") == {0: 2}
        infos = {c.name: c for c in r.consumers(path)}
        assert infos["c"].important and not infos["d"].important
        assert infos["c"].committed == {0: 2} and infos["d"].committed == {}
        r.drop_consumer(path, "c")
        with pytest.raises(UnknownConsumer):
            r.drop_consumer(path, "c")
        assert [c.name for c in r.consumers(path)] == ["d"]


def test_read_from_starts_a_new_consumer_at_the_first_record_written_after_it(feed, clock):
    session, path = feed
    session.execute("INSERT INTO t (k, v) VALUES (1, 'a')")
    clock.advance(seconds=10)
    session.execute("INSERT INTO t (k, v) VALUES (1, 'b')")
    r = session.db.changefeeds
    r.add_consumer(path, "late", read_from_ms=clock.now_micros() // 1000 - 1000)
    from logtide.changefeed.render import partition_of
    p = partition_of((1,), session.db.catalog.table("ks", "t"), 2)
    assert r.committed(path, "late")[p] == 1


def test_a_directory_reader_reads_and_commits_while_the_database_is_open(feed):
    session, path = feed
    _fill(session, 10)
    r = session.db.changefeeds
    r.add_consumer(path, "c")
    with DirectoryTopicReader(session.db.path) as dr:
        assert dr.partitions(path) == r.partitions(path)
        assert dr.read(path, 0, 0) == r.read(path, 0, 0)
        dr.commit(path, "c", {0: 1, 1: 1})
        assert r.committed(path, "c") == {0: 1, 1: 1}
        ends = {p.partition: p.end_offset for p in dr.partitions(path)}
        assert dr.wait(path, ends, 0.05) is False
        _fill(session, 1, start=100)
        assert dr.wait(path, ends, 30) is True
        session.execute("ALTER TABLE t ADD CHANGEFEED g WITH (MODE = 'UPDATES', FORMAT = 'JSON')")
        assert [d.path for d in dr.topics()] == ["ks/t/f", "ks/t/g"]  # the catalog is re-read when it changes
