"""Offsets out of range and unknown topics give each client its normal error (docs/kafka.md "Errors")."""

from __future__ import annotations

import subprocess

import pytest

from .conftest import kcat_path, wait_for


def write_then_expire(changefeeds, old: range, new: range):
    """A one-partition feed (RETENTION_PERIOD 10 s) whose ``old`` rows are written 20 s before its ``new`` ones,
    then retention run: the records of ``old`` are deleted for real."""
    feed = changefeeds.make("JSON", partitions=1, retention_period="Interval('PT10S')")
    for i in old:
        feed.write(i)
    changefeeds.advance(20)
    for i in new:
        feed.write(i)
    changefeeds.tick()
    return feed


@pytest.fixture
def expired_feed(changefeeds):
    """Records 0..4 deleted by retention: 5..9 remain."""
    feed = write_then_expire(changefeeds, range(5), range(5, 10))
    assert [(p.start_offset, p.end_offset) for p in changefeeds.reader.partitions(feed.path)] == [(5, 10)]
    return feed


def test_kafka_python_offset_below_retention_is_out_of_range_and_reset_works(broker, expired_feed):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import OffsetOutOfRangeError
    tp = TopicPartition(expired_feed.topic, 0)
    strict = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset=None)
    strict.assign([tp])
    strict.seek(tp, 2)
    with pytest.raises(OffsetOutOfRangeError):
        for _ in range(20):
            strict.poll(500)
    strict.close()
    resetting = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    resetting.assign([tp])
    resetting.seek(tp, 2)
    got: list[int] = []
    wait_for(lambda: got.extend(m.offset for ms in resetting.poll(200).values() for m in ms) or len(got) >= 5,
             what="records after the reset")
    assert got == [5, 6, 7, 8, 9]
    resetting.close()


def test_confluent_kafka_offset_past_the_end_is_out_of_range(broker, changefeeds):
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    feed = changefeeds.make("JSON", partitions=1)
    for i in range(3):
        feed.write(i)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "strict", "auto.offset.reset": "error"})
    c.assign([TopicPartition(feed.topic, 0, 50)])
    errors = []
    wait_for(lambda: (m := c.poll(0.5)) is not None and m.error() is not None and errors.append(m.error()) is None,
             what="the out-of-range error")
    assert errors[0].code() == KafkaError._AUTO_OFFSET_RESET and "Offset out of range" in errors[0].str()
    c.close()


def test_group_offset_committed_before_retention_resumes_at_the_start(broker, changefeeds):
    from confluent_kafka import Consumer
    feed = changefeeds.make("JSON", partitions=1, retention_period="Interval('PT10S')")
    for i in range(6):
        feed.write(i)
    changefeeds.reader.add_consumer(feed.path, "late")
    changefeeds.reader.commit(feed.path, "late", {0: 2})
    changefeeds.advance(20)
    for i in range(6, 10):
        feed.write(i)
    changefeeds.tick()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "late", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([feed.topic])
    offsets: list[int] = []

    def more() -> bool:
        m = c.poll(0.5)
        if m is not None and not m.error():
            offsets.append(m.offset())
        return len(offsets) >= 4

    wait_for(more, what="records from the retention start")
    assert offsets == [6, 7, 8, 9]
    c.close()


def test_unknown_topic(broker):
    from confluent_kafka import Consumer, KafkaError
    from kafka import KafkaConsumer
    kp = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    assert not kp.partitions_for_topic("no.such.topic")
    kp.close()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "u"})
    c.subscribe(["no.such.topic"])
    errors = []
    wait_for(lambda: (m := c.poll(0.5)) is not None and m.error() is not None and errors.append(m.error()) is None,
             what="the unknown topic error")
    assert errors[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    c.close()
    if kcat_path():
        done = subprocess.run([kcat_path(), "-b", broker.bootstrap, "-C", "-t", "no.such.topic", "-e"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and "Unknown topic or partition" in done.stderr
