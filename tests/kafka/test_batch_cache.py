"""Encoded record batches kept and read ahead for Fetch: the same bytes, never stale (logtide/kafka/batches.py)."""

from __future__ import annotations

import time

from logtide.kafka.batches import BatchCache
from logtide.kafka.records import decode_batches, encode_topic_records


def _end(reader, path: str, partition: int) -> int:
    return next(p.end_offset for p in reader.partitions(path) if p.partition == partition)


def test_a_kept_batch_is_the_batch_read_afresh_and_a_second_read_costs_no_encoding(changefeeds):
    feed = changefeeds.make("JSON", partitions=1)
    for i in range(20):
        feed.write(i)
    reader = changefeeds.reader
    cache = BatchCache(reader)
    try:
        end = _end(reader, feed.path, 0)
        first = cache.read(feed.path, 0, 0, 1 << 20, end)
        assert first == encode_topic_records(reader.read(feed.path, 0, 0, 5000, 1 << 20))
        assert cache.read(feed.path, 0, 0, 1 << 20, end) == first
        assert (cache.hits, cache.misses) == (1, 1)
        assert cache.read(feed.path, 0, end, 1 << 20, end) == b""  # nothing at the end: long polling waits
    finally:
        cache.close()


def test_the_next_batch_is_read_ahead_while_the_first_is_served(changefeeds):
    feed = changefeeds.make("JSON", partitions=1)
    for i in range(30):
        feed.write(i)
    reader = changefeeds.reader
    cache = BatchCache(reader)
    try:
        end = _end(reader, feed.path, 0)
        small = 200  # bytes: a few records per batch
        first = decode_batches(cache.read(feed.path, 0, 0, small, end))
        nxt = first[-1].offset + 1
        deadline = time.monotonic() + 60
        while (feed.path, 0, nxt) not in cache._batches and time.monotonic() < deadline:
            time.sleep(0.01)
        second = decode_batches(cache.read(feed.path, 0, nxt, small, end))
        assert cache.hits == 1 and second[0].offset == nxt
        assert [r.offset for r in second] == [r.offset for r in reader.read(feed.path, 0, nxt, 5000, small)]
    finally:
        cache.close()


def test_a_changefeed_dropped_and_re_created_under_the_same_path_is_read_afresh(changefeeds):
    feed = changefeeds.make("JSON", partitions=1)
    for i in range(5):
        feed.write(i)
    reader = changefeeds.reader
    cache = BatchCache(reader)
    try:
        old = decode_batches(cache.read(feed.path, 0, 0, 1 << 20, _end(reader, feed.path, 0)))
        s = changefeeds.session()
        s.execute(f"ALTER TABLE ks.{feed.table} DROP CHANGEFEED feed")
        s.execute(f"ALTER TABLE ks.{feed.table} ADD CHANGEFEED feed WITH (MODE = 'NEW_AND_OLD_IMAGES', "
                  "FORMAT = 'JSON', TOPIC_MIN_ACTIVE_PARTITIONS = 1)")
        for i in range(100, 105):
            feed.write(i)
        new = decode_batches(cache.read(feed.path, 0, 0, 1 << 20, _end(reader, feed.path, 0)))
        assert [r.value for r in new] == [r.value for r in reader.read(feed.path, 0, 0, 5000, 1 << 20)]
        assert [r.value for r in new] != [r.value for r in old]
    finally:
        cache.close()
