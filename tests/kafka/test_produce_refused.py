"""Produce to a changefeed topic is refused with POLICY_VIOLATION and a server log line saying why
(docs/kafka.md "APIs and versions served").  Before, TOPIC_AUTHORIZATION_FAILED made librdkafka report
"partition count changed from 2 to 0" first."""

from __future__ import annotations

import logging
import subprocess


def test_kcat_producing_to_a_changefeed_topic_is_told_it_is_a_policy_violation(broker, changefeeds, kcat_bin, caplog):
    feed = changefeeds.make("JSON", partitions=2)
    with caplog.at_level(logging.WARNING, logger="logtide.kafka"):
        done = subprocess.run([kcat_bin, "-b", broker.bootstrap, "-P", "-t", feed.topic], input=b"hello\n",
                              capture_output=True, timeout=60)
    err = done.stderr.decode()
    assert done.returncode != 0
    assert "Delivery failed for message: Broker: Policy violation" in err, err
    assert "partition count changed" not in err
    assert f"refusing Produce to {feed.topic} from /127.0.0.1 (client rdkafka): changefeed topic {feed.topic} is " \
           f"read-only: it is written by writes to its table ks.{feed.table}" in caplog.text
    assert all(p.end_offset == 0 for p in changefeeds.reader.partitions(feed.path))


def test_confluent_kafka_producer_gets_policy_violation_for_each_message(broker, changefeeds):
    from confluent_kafka import KafkaError, Producer
    feed = changefeeds.make("JSON", partitions=2)
    errors: list = []
    p = Producer({"bootstrap.servers": broker.bootstrap, "retries": 0})
    for i in range(3):
        p.produce(feed.topic, f"m{i}".encode(), partition=i % 2, on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(30) == 0
    assert [e.code() for e in errors] == [KafkaError.POLICY_VIOLATION] * 3
    assert not any(e.retriable() for e in errors)
    assert all(p.end_offset == 0 for p in changefeeds.reader.partitions(feed.path))


def test_produce_to_a_topic_that_does_not_exist_is_unknown_topic_or_partition(broker, changefeeds):
    """A topic that is not a changefeed: UNKNOWN_TOPIC_OR_PARTITION (with --auth, one the role may not read:
    TOPIC_AUTHORIZATION_FAILED, as every other API answers it)."""
    from logtide.kafka import errors as E
    from logtide.kafka.records import Record, encode_batch

    from .rawclient import RawClient
    c = RawClient(*broker.broker.advertised)
    batch = encode_batch([Record(0, 1, None, b"{}")])
    answer = c.request(0, 8, {"transactional_id": None, "acks": 1, "timeout_ms": 1000, "topic_data": [
        {"name": "ks.nothing.here", "partition_data": [{"index": 0, "records": batch}]}]})
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == E.UNKNOWN_TOPIC_OR_PARTITION
    c.close()
