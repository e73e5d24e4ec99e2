"""Real changefeeds over the Kafka protocol: listing, barriers, offsets shared with `logtide topic` (docs/kafka.md)."""

from __future__ import annotations

import json
import subprocess
import sys

from logtide.kafka import errors as E

from .conftest import wait_for
from .rawclient import RawClient


def topic_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logtide", "topic", *args], capture_output=True, text=True,
                          timeout=120)


def consumer_rows(path: str, data_dir: str) -> dict[tuple[str, int], tuple[int, int]]:
    """``logtide topic consumer list``: (consumer, partition) -> (committed, end)."""
    done = topic_cli("consumer", "list", path, "--data-dir", data_dir)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[1:] if line.strip()]
    return {(r[0], int(r[2])): (int(r[3]), int(r[4])) for r in rows}


def test_metadata_lists_every_changefeed_and_forgets_a_dropped_one(broker, changefeeds):
    from kafka import KafkaConsumer
    a = changefeeds.make("JSON", partitions=3)
    b = changefeeds.make("DEBEZIUM_JSON", partitions=1)
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    assert {a.topic, b.topic} <= c.topics()
    assert c.partitions_for_topic(a.topic) == {0, 1, 2} and c.partitions_for_topic(b.topic) == {0}
    c.close()
    changefeeds.session().execute(f"ALTER TABLE ks.{b.table} DROP CHANGEFEED feed")
    raw = RawClient(*broker.broker.advertised)
    _, r = raw.call(3, 8, {"topics": None})
    assert [t["name"] for t in raw.decode(3, 8, r)["topics"]] == [a.topic]
    _, r = raw.call(3, 8, {"topics": [{"name": b.topic}, {"name": a.path}]})
    assert [(t["name"], t["error_code"]) for t in raw.decode(3, 8, r)["topics"]] == [
        (b.topic, E.UNKNOWN_TOPIC_OR_PARTITION), (a.path, E.NONE)]
    raw.close()


def test_barriers_arrive_as_ordinary_messages_between_records(broker, changefeeds):
    from kafka import KafkaConsumer, TopicPartition
    feed = changefeeds.make("JSON", partitions=1, barriers_interval="Interval('PT1S')", virtual_timestamps="TRUE")
    feed.write(1)
    changefeeds.advance(2)
    changefeeds.tick()  # a barrier is due: the worker's pass writes it now
    feed.write(2)
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    tp = TopicPartition(feed.topic, 0)
    c.assign([tp])
    got: list[dict] = []
    wait_for(lambda: got.extend(json.loads(m.value) for ms in c.poll(200).values() for m in ms) or len(got) >= 3,
             what="two records and a barrier")
    c.close()
    kinds = ["resolved" if "resolved" in m else m["key"][0] for m in got]
    assert kinds[0] == 1 and 2 in kinds and "resolved" in kinds
    barrier = next(m for m in got if "resolved" in m)
    record = next(m for m in got if m.get("key") == [2])
    assert barrier["resolved"][1] == 0 and record["ts"] > barrier["resolved"]  # virtual timestamps order them


def test_group_offsets_are_the_changefeed_consumers_both_ways(broker, changefeeds, tmp_path):
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as TP
    feed = changefeeds.make("JSON", partitions=2)
    for i in range(10):
        feed.write(i)
    data_dir = str(tmp_path / "data")
    # a Kafka group creates the changefeed consumer on first use; `logtide topic consumer list` shows its commit
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "kgroup", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([feed.topic])
    got: list[int] = []
    wait_for(lambda: got.extend(feed.row_id(m.key(), m.value()) for m in c.consume(10, 0.3) if not m.error())
             or len(got) >= 10, what="every record")
    c.commit(asynchronous=False)
    c.close()
    ends = {p.partition: p.end_offset for p in changefeeds.reader.partitions(feed.path)}
    rows = consumer_rows(feed.path, data_dir)
    assert {p: rows[("kgroup", p)] for p in ends} == {p: (n, n) for p, n in ends.items()}
    # the reverse: a consumer added and read by `logtide topic` is the Kafka group of that name
    assert topic_cli("consumer", "add", feed.path, "--consumer", "cli", "--data-dir", data_dir).returncode == 0
    done = topic_cli("read", feed.topic, "--consumer", "cli", "--format", "newline-delimited", "--limit", "3", "--data-dir", data_dir)
    assert done.returncode == 0, done.stderr
    committed = dict(changefeeds.reader.committed(feed.path, "cli"))
    assert sum(committed.values()) == 3
    k = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cli", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})  # for a partition the CLI committed nothing in
    seen = k.committed([TP(feed.topic, p) for p in ends], timeout=30)
    assert {tp.partition: tp.offset for tp in seen if tp.offset >= 0} == committed
    k.subscribe([feed.topic])
    rest: list[int] = []
    wait_for(lambda: rest.extend(feed.row_id(m.key(), m.value()) for m in k.consume(10, 0.3) if not m.error())
             or len(rest) >= 7, what="the records the CLI did not read")
    k.close()
    assert len(rest) == 7 and len(set(rest)) == 7  # nothing the CLI committed comes again
