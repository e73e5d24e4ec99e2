"""A damaged changefeed record reaches Kafka clients as CORRUPT_MESSAGE (2), never as altered data.

A real ``logtide serve`` serves a data directory in which one record (and one committed offset) had a bit
flipped while the server was stopped; every client gets the records before it, then an error for that
partition only (docs/kafka.md "Damaged records"), and the server logs it once.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import time

import pytest

from logtide.changefeed.reader import DirectoryTopicReader
from logtide.kafka import errors as E
from logtide.kafka.records import decode_batches
from tests.server.serveproc import Serve
from tests.storage.test_feed_checksums import DBZ_FEED, JSON_FEED, _alter_value, damage_record, locate, make_feeds

from .conftest import kcat_path, wait_for
from .rawclient import RawClient

KAFKA = re.compile(r"Kafka endpoint on (\S+):(\d+)")
TOPIC = DBZ_FEED.replace("/", ".")


class Damaged:
    """The served directory: ``DBZ_FEED`` (one partition) damaged at ``offset``; ``JSON_FEED``'s consumer
    ``billing`` has a damaged committed offset in partition 1."""

    def __init__(self, data) -> None:
        self.data = data
        make_feeds(data)
        with DirectoryTopicReader(data) as r:
            _, self.offset = locate(r, DBZ_FEED, 5)
            self.end = r.partitions(DBZ_FEED)[0].end_offset
            self.json_ends = [p.end_offset for p in r.partitions(JSON_FEED)]
        damage_record(data, DBZ_FEED, 0, self.offset)
        _alter_value(data, "feed_offsets", "name = CAST('billing' AS BLOB) AND part = 1")
        self.srv = Serve("--data-dir", str(data), "--kafka-port", "auto")
        self.srv.wait_listening()
        wait_for(lambda: any(KAFKA.search(x) for x in self.srv.lines), what="the Kafka endpoint")
        port = next(KAFKA.search(x) for x in self.srv.lines if KAFKA.search(x)).group(2)  # type: ignore[union-attr]
        self.bootstrap = f"127.0.0.1:{port}"
        self.port = int(port)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    d = Damaged(tmp_path_factory.mktemp("damaged") / "d")
    yield d
    assert d.srv.stop() == 0


def fetch(c: RawClient, topic: str, offsets: dict[int, int]) -> dict[int, dict]:
    body = {"replica_id": -1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                {"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 20} for p, o in offsets.items()]}]}
    _, r = c.call(1, 11, body)
    return {p["partition_index"]: p for p in c.decode(1, 11, r)["responses"][0]["partitions"]}


def test_fetch_answers_the_records_before_then_corrupt_message_and_the_other_partitions_still(served):
    c = RawClient("127.0.0.1", served.port)
    parts = fetch(c, TOPIC, {0: 0})
    assert parts[0]["error_code"] == E.NONE
    assert [x.offset for x in decode_batches(parts[0]["records"])] == list(range(served.offset))
    jtopic = JSON_FEED.replace("/", ".")
    for _ in range(3):  # asked again and again (as clients do): the same answer, one log line
        both = fetch(c, TOPIC, {0: served.offset})
        assert (both[0]["error_code"], both[0]["records"]) == (E.CORRUPT_MESSAGE, b"")
        assert both[0]["high_watermark"] == served.end
    others = fetch(c, jtopic, {0: 0, 1: 0})  # another topic of the same request path still answers
    assert [len(decode_batches(others[p]["records"])) for p in (0, 1)] == served.json_ends
    past = fetch(c, TOPIC, {0: served.offset + 1})  # a consumer may skip it
    assert [x.offset for x in decode_batches(past[0]["records"])] == list(range(served.offset + 1, served.end))
    c.close()
    logged = [x for x in served.srv.lines if "CORRUPT_MESSAGE" in x and f"offset {served.offset}" in x]
    assert len(logged) == 1, served.srv.lines
    assert f"Damaged record in changefeed {DBZ_FEED}, partition 0, offset {served.offset}: checksum mismatch" \
        in logged[0]


def test_kafka_python_raises_corrupt_record_error_after_the_records_before_it(served):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import CorruptRecordError
    c = KafkaConsumer(bootstrap_servers=served.bootstrap, enable_auto_commit=False)
    c.assign([TopicPartition(TOPIC, 0)])
    c.seek_to_beginning()
    got: list[int] = []
    with pytest.raises(CorruptRecordError):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for msgs in c.poll(timeout_ms=500).values():
                got += [m.offset for m in msgs]
    c.close()
    assert got == list(range(served.offset))


def test_confluent_kafka_delivers_the_error_at_the_damaged_offset(served):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": served.bootstrap, "group.id": "damage", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    got: list[int] = []
    err = None
    deadline = time.monotonic() + 60
    while err is None and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            err = m.error()
        else:
            got.append(m.offset())
    c.close()
    assert got == list(range(served.offset))
    assert err is not None and err.code() == E.CORRUPT_MESSAGE and f"failed at offset {served.offset}" in err.str()


def test_kcat_exits_with_the_brokers_error_after_the_records_before_it(served):
    kcat = kcat_path()
    if kcat is None:
        pytest.skip("kcat is not installed and could not be (apt-get install kcat)")
    out = subprocess.run([kcat, "-b", served.bootstrap, "-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e",
                          "-f", "%o\n"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert out.stdout.split() == [str(o) for o in range(served.offset)]
    assert "Broker: Invalid message" in out.stderr


def test_aiokafka_never_delivers_the_damaged_record_or_anything_after_it(served):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def consume() -> list[int]:
        c = AIOKafkaConsumer(bootstrap_servers=served.bootstrap, enable_auto_commit=False)
        await c.start()
        try:
            c.assign([TopicPartition(TOPIC, 0)])
            await c.seek_to_beginning()
            got: list[int] = []
            for _ in range(6):  # aiokafka logs "Unexpected error while fetching data: CorruptRecordError"
                for msgs in (await c.getmany(timeout_ms=500)).values():
                    got += [m.offset for m in msgs]
            return got
        finally:
            await c.stop()
    assert asyncio.run(consume()) == list(range(served.offset))


def test_list_offsets_and_offset_fetch_answer_corrupt_message_where_their_answer_rests_on_damage(served):
    c = RawClient("127.0.0.1", served.port)
    with DirectoryTopicReader(served.data) as r:
        when = r.read(DBZ_FEED, 0, served.offset - 1)[0].write_time_ms + 1  # the first at or after: the damaged one
    _, rd = c.call(2, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": TOPIC, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": when}]}]})
    part = c.decode(2, 5, rd)["topics"][0]["partitions"][0]
    assert part["error_code"] == E.CORRUPT_MESSAGE
    jtopic = JSON_FEED.replace("/", ".")
    _, rd = c.call(9, 5, {"group_id": "billing", "topics": [{"name": jtopic, "partition_indexes": [0, 1]}]})
    answer = c.decode(9, 5, rd)
    assert [p["error_code"] for p in answer["topics"][0]["partitions"]] == [E.CORRUPT_MESSAGE] * 2
    c.close()


def test_offset_fetch_of_every_topic_names_the_damage_and_other_groups_are_not_failed_by_it(served):
    c = RawClient("127.0.0.1", served.port)
    jtopic = JSON_FEED.replace("/", ".")
    _, rd = c.call(9, 5, {"group_id": "billing", "topics": None})  # every topic the group has offsets on
    answer = {t["name"]: t["partitions"] for t in c.decode(9, 5, rd)["topics"]}
    assert [(p["partition_index"], p["error_code"]) for p in answer[jtopic]] == \
           [(p, E.CORRUPT_MESSAGE) for p in range(len(served.json_ends))]
    # billing's damaged offset is billing's alone: another group on the same topic is answered normally
    _, rd = c.call(9, 5, {"group_id": "auditing", "topics": [{"name": jtopic, "partition_indexes": [0, 1]}]})
    parts = c.decode(9, 5, rd)["topics"][0]["partitions"]
    assert [(p["error_code"], p["committed_offset"]) for p in parts] == [(E.NONE, -1)] * 2
    c.close()



def test_offset_commit_over_a_damaged_offset_answers_corrupt_message_and_the_connection_serves_on(served):
    c = RawClient("127.0.0.1", served.port)
    jtopic = JSON_FEED.replace("/", ".")
    body = {"group_id": "billing", "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": -1,
            "topics": [{"name": jtopic, "partitions": [
                {"partition_index": 1, "committed_offset": 0, "committed_metadata": ""}]}]}
    _, rd = c.call(8, 2, body)
    parts = c.decode(8, 2, rd)["topics"][0]["partitions"]
    assert [(p["partition_index"], p["error_code"]) for p in parts] == [(1, E.CORRUPT_MESSAGE)]
    # nothing was written over it, and the same connection is still served
    _, rd = c.call(9, 5, {"group_id": "billing", "topics": [{"name": jtopic, "partition_indexes": [1]}]})
    assert [p["error_code"] for p in c.decode(9, 5, rd)["topics"][0]["partitions"]] == [E.CORRUPT_MESSAGE]
    c.close()
    assert not any("Traceback" in line for line in served.srv.lines)
