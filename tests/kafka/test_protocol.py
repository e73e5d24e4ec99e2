"""The broker at the protocol level: unsupported requests, Produce, ApiVersions, fetch sessions, groups tooling."""

from __future__ import annotations

import time

from logtide.kafka import errors as E
from logtide.kafka.codec import Reader, Writer, encode_varint
from logtide.kafka.messages import APIS
from logtide.kafka.records import Record, decode_batches, encode_batch

from .conftest import wait_for
from .rawclient import RawClient, request_frame


def connect(broker) -> RawClient:
    host, port = broker.broker.advertised
    return RawClient(host, port)


def test_unknown_api_key_and_version_get_unsupported_version_and_the_connection_stays(broker):
    c = connect(broker)
    cid, r = c.call(57, 0, b"")  # not an API logtide serves
    assert cid == 1 and r.int16() == E.UNSUPPORTED_VERSION
    cid, r = c.call(1, 18, b"\x00" * 10)  # Fetch v18 is newer than the definitions logtide has
    assert cid == 2 and r.int16() == E.UNSUPPORTED_VERSION
    cid, r = c.call(18, 9, b"")  # ApiVersions: error 35 and the v0 body listing what is served
    answer = c.decode(18, 0, r)
    assert answer["error_code"] == E.UNSUPPORTED_VERSION
    assert {(a["api_key"], a["min_version"], a["max_version"]) for a in answer["api_keys"]} >= {
        (1, 4, 17), (3, 0, 12), (8, 0, 9), (9, 0, 9), (11, 0, 9), (18, 0, 4)}
    cid, r = c.call(18, 4, {"client_software_name": "raw", "client_software_version": "1"})
    assert c.decode(18, 4, r)["error_code"] == E.NONE  # flexible v4, answered with response header v0
    c.close()


def test_produce_is_refused_with_policy_violation(broker, changefeeds):
    feed = changefeeds.make("JSON", partitions=1)
    batch = encode_batch([Record(0, 1, None, b"{}")])
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 1000,
            "topic_data": [{"name": feed.topic, "partition_data": [{"index": 0, "records": batch}]}]}
    c = connect(broker)
    _, r = c.call(0, 8, body)
    part = c.decode(0, 8, r)["responses"][0]["partition_responses"][0]
    assert part["error_code"] == E.POLICY_VIOLATION and "read-only" in part["error_message"]
    c.send(request_frame(0, 8, dict(body, acks=0), 99))  # acks=0: no answer at all
    _, r = c.call(3, 1, {"topics": []})
    assert c.decode(3, 1, r)["topics"] == []
    assert changefeeds.reader.partitions(feed.path)[0].end_offset == 0
    c.close()


def test_topics_are_answered_under_the_name_asked(broker, changefeeds):
    feed = changefeeds.make("JSON", partitions=2)
    c = connect(broker)
    _, r = c.call(3, 8, {"topics": None})
    assert [t["name"] for t in c.decode(3, 8, r)["topics"]] == [feed.topic]
    _, r = c.call(3, 8, {"topics": [{"name": feed.path}, {"name": "ks.nope.x"}]})
    topics = c.decode(3, 8, r)["topics"]
    assert [(t["name"], t["error_code"], len(t["partitions"])) for t in topics] == [
        (feed.path, E.NONE, 2), ("ks.nope.x", E.UNKNOWN_TOPIC_OR_PARTITION, 0)]
    c.close()


def test_fetch_answers_without_a_session_and_with_stable_offsets_at_the_high_watermark(broker, changefeeds):
    feed = changefeeds.make("DEBEZIUM_JSON", partitions=1)
    for i in range(3):
        feed.write(i)
    c = connect(broker)
    body = {"replica_id": -1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 1,
            "session_id": 0, "session_epoch": 0, "topics": [{"topic": feed.topic, "partitions": [
                {"partition": 0, "fetch_offset": 1, "partition_max_bytes": 1 << 20}]}]}
    _, r = c.call(1, 11, body)
    answer = c.decode(1, 11, r)
    assert answer["error_code"] == E.NONE and answer["session_id"] == 0
    part = answer["responses"][0]["partitions"][0]
    assert (part["high_watermark"], part["last_stable_offset"], part["log_start_offset"]) == (3, 3, 0)
    assert part["aborted_transactions"] == [] and part["preferred_read_replica"] == -1
    recs = decode_batches(part["records"])
    assert [feed.row_id(x.key, x.value) for x in recs] == [1, 2] and [x.offset for x in recs] == [1, 2]
    c.close()


def long_poll(c: RawClient, topic: str, meanwhile) -> dict:
    """A Fetch v4 from offset 0 waiting up to 20 s, ``meanwhile()`` run while it waits; its partition's answer."""
    body = {"replica_id": -1, "max_wait_ms": 20000, "min_bytes": 1, "max_bytes": 1 << 20, "topics": [
        {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}
    c.send(request_frame(1, 4, body, 7))
    time.sleep(0.3)
    meanwhile()
    frame = c.recv_frame()
    assert frame is not None
    r = Reader(frame)
    assert r.int32() == 7
    return c.decode(1, 4, r)["responses"][0]["partitions"][0]


def test_fetch_long_polls_until_a_record_arrives(broker, changefeeds):
    feed = changefeeds.make("JSON", partitions=1)
    c = connect(broker)
    part = long_poll(c, feed.topic, lambda: feed.write(42))
    assert [feed.row_id(x.key, x.value) for x in decode_batches(part["records"])] == [42]
    c.close()


def test_a_changefeed_dropped_during_a_long_poll_is_answered_as_unknown_and_the_connection_stays(broker,
                                                                                               changefeeds):
    feed = changefeeds.make("JSON", partitions=1)
    c = connect(broker)
    part = long_poll(c, feed.topic,
                     lambda: changefeeds.session().execute(f"ALTER TABLE ks.{feed.table} DROP CHANGEFEED feed"))
    assert part["error_code"] == E.UNKNOWN_TOPIC_OR_PARTITION
    _, r = c.call(3, 1, {"topics": None})  # the connection still serves
    assert c.decode(3, 1, r)["brokers"][0]["node_id"] == 0
    c.close()


def test_list_offsets_earliest_latest_and_by_time(broker, changefeeds):
    from kafka import KafkaConsumer, TopicPartition
    feed = changefeeds.make("JSON", partitions=1, retention_period="Interval('PT150S')")
    feed.write(0)
    changefeeds.advance(100)
    for i in range(1, 3):
        feed.write(i)
    changefeeds.advance(100)
    middle = changefeeds.now_ms()
    for i in range(3, 5):
        feed.write(i)
    changefeeds.tick()  # record 0 is 200 s old: deleted
    tp = TopicPartition(feed.topic, 0)
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    assert c.beginning_offsets([tp]) == {tp: 1} and c.end_offsets([tp]) == {tp: 5}
    found = c.offsets_for_times({tp: middle})[tp]
    assert found.offset == 3 and found.timestamp >= middle
    assert c.offsets_for_times({tp: middle + 3_600_000})[tp] is None
    c.close()


def test_groups_are_listed_and_described_for_tooling(broker, changefeeds):
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaConsumer
    feed = changefeeds.make("JSON", partitions=2)
    feed.write(1)
    consumer = KafkaConsumer(feed.topic, bootstrap_servers=broker.bootstrap, group_id="tooling",
                             auto_offset_reset="earliest", heartbeat_interval_ms=300)
    wait_for(lambda: consumer.poll(200) and True, what="the consumer to join")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups().result(60)
    assert "tooling" in [g.group_id for g in listed.valid]
    described = admin.describe_consumer_groups(["tooling"])["tooling"].result(60)
    assert str(described.state) == "ConsumerGroupState.STABLE" and len(described.members) == 1
    assert [tp.partition for tp in described.members[0].assignment.topic_partitions] == [0, 1]
    consumer.close()


def test_varints_and_compact_forms_round_trip():
    for v in (0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -2**31, 2**62, -2**63):
        assert Reader(encode_varint(v)).varint() == v
    w = Writer()
    w.string("héllo", compact=True)
    w.string(None, compact=True)
    w.bytes_(b"\x00\x01", compact=True)
    w.array_length(3, compact=True)
    r = Reader(bytes(w.buf))
    assert r.string(compact=True) == "héllo" and r.string(nullable=True, compact=True) is None
    assert r.bytes_(compact=True) == b"\x00\x01" and r.uvarint() == 4


def test_one_generated_class_per_message_and_version_from_kafkas_definitions():
    fetch = APIS[1]
    assert [c.__name__ for c in fetch.requests.values()] == [f"FetchRequest_v{v}" for v in range(4, 18)]
    assert fetch.responses[11].CODEC.keys == ("throttle_time_ms", "error_code", "session_id", "responses")
    assert fetch.responses[4].CODEC.keys == ("throttle_time_ms", "responses")
    assert fetch.responses[16].CODEC.keys == ("throttle_time_ms", "error_code", "session_id", "responses",
                                              "node_endpoints")  # a tagged field (tag 0) last
    assert APIS[18].requests[3].FLEXIBLE and not APIS[18].requests[2].FLEXIBLE
    assert fetch.requests[12].FLEXIBLE and not fetch.requests[11].FLEXIBLE


def test_topic_ids_name_topics_stay_across_restarts_and_change_when_a_changefeed_is_recreated(changefeeds):
    import uuid

    from logtide.kafka import BackgroundKafka, KafkaConfig
    feed = changefeeds.make("JSON", partitions=1)
    feed.write(1)

    def topic_id() -> uuid.UUID:
        with BackgroundKafka(changefeeds.reader, KafkaConfig(port=0)) as b:
            c = connect(b)
            _, r = c.call(3, 12, {"topics": [{"name": feed.topic, "topic_id": None}]})
            (topic,) = c.decode(3, 12, r)["topics"]
            c.close()
        return topic["topic_id"]

    first = topic_id()
    assert first.int != 0 and topic_id() == first  # a new broker (a restart) gives the same id
    with BackgroundKafka(changefeeds.reader, KafkaConfig(port=0)) as b:
        c = connect(b)
        _, r = c.call(3, 12, {"topics": [{"name": None, "topic_id": first}, {"name": None, "topic_id": uuid.uuid4()}]})
        assert [(t["name"], t["error_code"]) for t in c.decode(3, 12, r)["topics"]] == [
            (feed.topic, E.NONE), (None, E.UNKNOWN_TOPIC_ID)]
        _, r = c.call(3, 10, {"topics": [{"name": None, "topic_id": first}]})  # by id only from v12, as Kafka
        assert [t["error_code"] for t in c.decode(3, 10, r)["topics"]] == [E.INVALID_REQUEST]
        fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "session_epoch": -1,
                 "topics": [{"topic_id": first, "partitions": [
                     {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}
        _, r = c.call(1, 17, fetch)
        (answer,) = c.decode(1, 17, r)["responses"]
        assert answer["topic_id"] == first and answer["partitions"][0]["error_code"] == E.NONE
        assert [feed.row_id(x.key, x.value) for x in decode_batches(answer["partitions"][0]["records"])] == [1]
        s = changefeeds.session()
        s.execute(f"ALTER TABLE ks.{feed.table} DROP CHANGEFEED feed")
        s.execute(f"ALTER TABLE ks.{feed.table} ADD CHANGEFEED feed WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON')")
        _, r = c.call(1, 17, fetch)  # the old id names no topic now
        assert c.decode(1, 17, r)["responses"][0]["partitions"][0]["error_code"] == E.UNKNOWN_TOPIC_ID
        _, r = c.call(3, 12, {"topics": [{"name": feed.topic, "topic_id": None}]})
        assert c.decode(3, 12, r)["topics"][0]["topic_id"] not in (first, uuid.UUID(int=0))
        c.close()
