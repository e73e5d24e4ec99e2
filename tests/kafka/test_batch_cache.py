"""Encoded record batches kept and read ahead for Fetch: the same bytes, never stale (logtide/kafka/batches.py)."""

from __future__ import annotations

import time

import pytest

from logtide.kafka.batches import BatchCache
from logtide.kafka.records import decode_batches, encode_topic_records


@pytest.fixture
def cache(changefeeds):
    c = BatchCache(changefeeds.reader)
    yield c
    c.close()


def _feed(changefeeds, rows: range):
    feed = changefeeds.make("JSON", partitions=1)
    for i in rows:
        feed.write(i)
    return feed


def _end(reader, path: str) -> int:
    return reader.partitions(path)[0].end_offset


def test_a_kept_batch_is_the_batch_read_afresh_and_a_second_read_costs_no_encoding(changefeeds, cache):
    feed, reader = _feed(changefeeds, range(20)), changefeeds.reader
    end = _end(reader, feed.path)
    first = cache.read(feed.path, 0, 0, 1 << 20, end)
    assert first == encode_topic_records(reader.read(feed.path, 0, 0, 5000, 1 << 20))
    assert cache.read(feed.path, 0, 0, 1 << 20, end) == first
    assert (cache.hits, cache.misses) == (1, 1)
    assert cache.read(feed.path, 0, end, 1 << 20, end) == b""  # nothing at the end: long polling waits


def test_the_next_batch_is_read_ahead_while_the_first_is_served(changefeeds, cache):
    feed, reader = _feed(changefeeds, range(30)), changefeeds.reader
    end = _end(reader, feed.path)
    small = 200  # bytes: a few records per batch
    nxt = decode_batches(cache.read(feed.path, 0, 0, small, end))[-1].offset + 1
    deadline = time.monotonic() + 60
    while (feed.path, 0, nxt) not in cache._batches and time.monotonic() < deadline:
        time.sleep(0.01)
    second = decode_batches(cache.read(feed.path, 0, nxt, small, end))
    assert cache.hits == 1 and second[0].offset == nxt
    assert [r.offset for r in second] == [r.offset for r in reader.read(feed.path, 0, nxt, 5000, small)]


def test_a_changefeed_dropped_and_re_created_under_the_same_path_is_read_afresh(changefeeds, cache):
    feed, reader = _feed(changefeeds, range(5)), changefeeds.reader
    old = decode_batches(cache.read(feed.path, 0, 0, 1 << 20, _end(reader, feed.path)))
    s = changefeeds.session()
    s.execute(f"ALTER TABLE ks.{feed.table} DROP CHANGEFEED feed")
    s.execute(f"ALTER TABLE ks.{feed.table} ADD CHANGEFEED feed WITH (MODE = 'NEW_AND_OLD_IMAGES', "
              "FORMAT = 'JSON', TOPIC_MIN_ACTIVE_PARTITIONS = 1)")
    for i in range(100, 105):
        feed.write(i)
    new = decode_batches(cache.read(feed.path, 0, 0, 1 << 20, _end(reader, feed.path)))
    assert [r.value for r in new] == [r.value for r in reader.read(feed.path, 0, 0, 5000, 1 << 20)]
    assert [r.value for r in new] != [r.value for r in old]
