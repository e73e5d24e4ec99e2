"""Small frames cannot make big requests (docs/kafka.md "Limits"): arrays and strings are bounded by the bytes
left in the frame and by the array elements one request may hold, and a request's work by the topics it names.

The figures asserted are counts and sizes, never times: before these bounds, a 2 MB Metadata request naming
a million empty topics built 467 MB of Python objects and took 29.5 s of one core.
"""

from __future__ import annotations

import logging
import struct
import tracemalloc
from typing import Any

import pytest

from logtide.kafka import BackgroundKafka, KafkaConfig
from logtide.kafka.codec import MalformedFrame, Reader, TooManyElements, Writer
from logtide.kafka.messages import APIS

from .conftest import wait_for
from .rawclient import RawClient, request_frame

MILLION = 1_000_000


def million_empty_topics() -> bytes:
    """A Metadata v1 body naming 1 000 000 topics of empty names: 2 MB (4 bytes of count, 2 bytes a name)."""
    return struct.pack(">i", MILLION) + b"\x00\x00" * MILLION


def test_a_million_empty_topic_names_are_refused_before_any_is_decoded():
    body = million_empty_topics()
    assert len(body) == 2_000_004
    r = Reader(body, elements=10_000)
    tracemalloc.start()
    try:
        with pytest.raises(TooManyElements, match="more array elements than the 10000 still allowed"):
            APIS[3].requests[1].decode(r)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert r.pos == 4 and peak < 64 * 1024  # only the count was read; no topic was built


def test_an_array_longer_than_the_bytes_left_can_hold_is_malformed():
    w = Writer()  # Fetch v4: replica id, max wait, min bytes, max bytes, isolation, then topics
    w.int32(-1), w.int32(0), w.int32(1), w.int32(1 << 20), w.int8(0)
    w.int32(100_000)  # topics: each needs a name (2 bytes) and a partitions count (4): 600 000 bytes
    w.buf += b"\x00" * 1000
    with pytest.raises(MalformedFrame, match="array of 100000 elements of at least 6 bytes in 1000 bytes"):
        APIS[1].requests[4].decode(Reader(bytes(w.buf)))
    w = Writer()  # Fetch v12 (compact): the same, with a varint count
    w.int32(-1), w.int32(0), w.int32(1), w.int32(1 << 20), w.int8(0), w.int32(0), w.int32(-1)
    w.uvarint(100_001)
    w.buf += b"\x00" * 1000
    with pytest.raises(MalformedFrame, match="array of 100000 elements of at least 3 bytes in 1000 bytes"):
        APIS[1].requests[12].decode(Reader(bytes(w.buf)))


def test_strings_bytes_and_tagged_fields_must_fit_in_the_frame():
    w = Writer()
    w.int16(30_000)  # a group id of 30 000 bytes in a 12-byte frame
    w.buf += b"x" * 10
    with pytest.raises(MalformedFrame, match="frame ends early"):
        APIS[12].requests[0].decode(Reader(bytes(w.buf)))
    w = Writer()  # Heartbeat v4: compact strings, then a tagged-field count no frame could hold
    w.string("g", compact=True), w.int32(1), w.string("m", compact=True), w.string(None, compact=True)
    w.uvarint(MILLION)
    with pytest.raises(MalformedFrame, match="1000000 tagged fields in 0 bytes"):
        APIS[12].requests[4].decode(Reader(bytes(w.buf)))


def test_the_element_budget_counts_every_array_of_a_request():
    body = {"group_id": "g", "topics": [{"name": f"t{i}", "partition_indexes": list(range(50))} for i in range(200)]}
    data = bytes(APIS[9].requests[1].encode(body).buf)  # 200 topics + 10 000 partition indexes
    assert len(APIS[9].requests[1].decode(Reader(data, elements=10_200))["topics"]) == 200
    with pytest.raises(TooManyElements):
        APIS[9].requests[1].decode(Reader(data, elements=10_199))


class CountingReader:
    """A TopicReader that counts the lookups a request makes."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.reader, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kw: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return attr(*args, **kw)
        return counted


def test_a_broker_closes_a_connection_sending_a_million_topics_and_keeps_serving(changefeeds, caplog):
    feed = changefeeds.make("JSON", partitions=1)
    feed.write(1)
    counting = CountingReader(changefeeds.reader)
    with BackgroundKafka(counting, KafkaConfig(port=0)) as b, caplog.at_level(logging.INFO, "logtide.kafka"):
        host, port = b.broker.advertised
        c = RawClient(host, port)
        tracemalloc.start()
        try:
            c.send(request_frame(3, 1, million_empty_topics()))
            assert c.recv_frame() is None  # closed, as Kafka closes a connection whose request does not parse
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        c.close()
        assert peak < 16 << 20  # the 2 MB frame read and dropped; 467 MB before the bounds
        assert counting.calls.get("describe", 0) == 0  # no topic was looked up
        wait_for(lambda: "more array elements than the 10000 still allowed" in caplog.text, what="the log line")
        c = RawClient(host, port)  # the broker keeps serving
        _, r = c.call(3, 1, {"topics": [{"name": feed.topic}]})
        assert [t["name"] for t in c.decode(3, 1, r)["topics"]] == [feed.topic]
        c.close()


def test_a_request_naming_one_topic_many_times_looks_it_up_and_commits_to_it_once(changefeeds):
    feed = changefeeds.make("JSON", partitions=2)
    feed.write(1)
    counting = CountingReader(changefeeds.reader)
    with BackgroundKafka(counting, KafkaConfig(port=0)) as b:
        host, port = b.broker.advertised
        c = RawClient(host, port)
        _, r = c.call(3, 9, {"topics": [{"name": feed.topic}] * 5000})
        assert [t["name"] for t in c.decode(3, 9, r)["topics"]] == [feed.topic]  # each topic answered once
        assert counting.calls["describe"] == 1
        counting.calls.clear()
        fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "topics": [
            {"topic": feed.topic, "partitions": [{"partition": 5, "fetch_offset": 0, "partition_max_bytes": 1}]}
        ] * 4000}
        _, r = c.call(1, 11, fetch)
        assert len(c.decode(1, 11, r)["responses"]) == 4000
        assert (counting.calls["describe"], counting.calls["partitions"]) == (1, 1)
        counting.calls.clear()
        listing = {"replica_id": -1, "topics": [
            {"name": feed.topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}] * 4000}
        _, r = c.call(2, 5, listing)
        assert {p["offset"] for t in c.decode(2, 5, r)["topics"] for p in t["partitions"]} == {
            changefeeds.reader.partitions(feed.path)[0].end_offset}
        assert (counting.calls["describe"], counting.calls["partitions"]) == (1, 1)
        counting.calls.clear()
        commit = {"group_id": "many", "generation_id_or_member_epoch": -1, "member_id": "", "topics": [
            {"name": feed.topic, "partitions": [{"partition_index": i % 2, "committed_offset": 0}]}
            for i in range(4000)]}
        _, r = c.call(8, 7, commit)  # one durable commit for the topic, not 4000
        assert {p["error_code"] for t in c.decode(8, 7, r)["topics"] for p in t["partitions"]} == {0}
        assert counting.calls["commit"] == 1
        counting.calls.clear()
        _, r = c.call(9, 5, {"group_id": "many", "topics": [{"name": feed.topic, "partition_indexes": [0, 1]}] * 3000})
        assert len(c.decode(9, 5, r)["topics"]) == 3000 and counting.calls["committed"] == 1
        c.close()
