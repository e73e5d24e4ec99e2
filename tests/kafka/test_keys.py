"""Every format's messages carry their row's key (docs/kafka.md "Messages"): logtide's choice beyond YDB."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from logtide.changefeed.render import hash_partition
from logtide.changefeed.values import dumps
from logtide.kafka.keys import dynamodb_key, json_key, key_function
from logtide.kafka.records import decode_batches, encode_rows

from .conftest import wait_for

scalars = st.one_of(st.integers(-2**63, 2**63 - 1), st.booleans(), st.none(),
                    st.text(alphabet=st.sampled_from('ab"\\[]{},:é\n\t\x00 '), max_size=12))
key_values = st.lists(st.recursive(scalars, lambda inner: st.lists(inner, max_size=3), max_leaves=6), min_size=1,
                      max_size=4)


@settings(max_examples=300, deadline=None)
@given(key_values, st.sampled_from(['"update":{}', '"erase":{}', '"newImage":{"v":"]}\\""}']))
def test_the_json_key_is_the_records_key_array_byte_for_byte(key, rest):
    key_json = dumps(key)
    record = f'{{"key":{key_json},{rest}}}'.encode()
    assert json_key(record) == key_json.encode()


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(alphabet="abé_", min_size=1, max_size=5),
                       st.one_of(st.fixed_dictionaries({"S": st.text(alphabet='a"\\}]{ ', max_size=8)}),
                                 st.fixed_dictionaries({"N": st.integers().map(str)}),
                                 st.fixed_dictionaries({"L": st.lists(st.fixed_dictionaries(
                                     {"N": st.integers().map(str)}), max_size=2)})),
                       min_size=1, max_size=3),
       st.text(alphabet='eu-"\\', max_size=6))
def test_the_dynamodb_key_is_the_records_keys_object(keys, region):
    record = dumps({"awsRegion": region, "dynamodb": {"ApproximateCreationDateTime": 1, "Keys": keys,
                                                      "NewImage": keys, "SequenceNumber": "1"}, "eventID": "x"})
    assert dynamodb_key(record.encode()) == dumps(keys).encode()


def test_barriers_schema_changes_and_other_formats_keep_a_null_or_their_stored_key():
    rows = [(0, 1, None, b'{"resolved":[5,0]}'), (1, 1, None, b'{"tableChanges":[]}'),
            (2, 1, None, b'{"key":[1],"update":{}}'), (3, 1, None, b'{"key":["unterminated'),
            (4, 1, b"stored", b'{"key":[2],"update":{}}')]
    encoded = decode_batches(encode_rows(rows, key_function("JSON")))
    assert [r.key for r in encoded] == [None, None, b"[1]", None, b"stored"]
    assert key_function("DEBEZIUM_JSON") is None and key_function(None) is None  # stored keys as they are


def consume_all(bootstrap: str, topic: str, partitions: int, count: int) -> list:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "keys", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list = []
    wait_for(lambda: got.extend(m for m in c.consume(50, 0.3) if not m.error()) or len(got) >= count,
             what=f"{count} messages")
    c.close()
    return got


def test_each_formats_messages_are_keyed_by_their_row_over_kafka(broker, changefeeds):
    s = changefeeds.session()
    s.execute("CREATE TABLE ks.k (a text, b int, c frozen<list<int>>, v text, PRIMARY KEY ((a, b), c))")
    formats = {"JSON": "fj", "DEBEZIUM_JSON": "fd", "DYNAMODB_STREAMS_JSON": "fy"}
    for fmt, name in formats.items():
        extra = ", SCHEMA_CHANGES = TRUE" if fmt == "JSON" else ""
        s.execute(f"ALTER TABLE ks.k ADD CHANGEFEED {name} WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = '{fmt}', "
                  f"TOPIC_MIN_ACTIVE_PARTITIONS = 3{extra})")
    rows = [("x\"]y", 1, [1, 2]), ("é", 2, [3]), ("plain", 3, []), ("x\"]y", 1, [1, 2])]
    for a, b, c in rows[:2]:
        s.execute("INSERT INTO ks.k (a, b, c, v) VALUES (?, ?, ?, 'v')", (a, b, c))
    s.execute("ALTER TABLE ks.k ADD w int")  # a schema-change record (JSON): a null key
    for a, b, c in rows[2:]:
        s.execute("INSERT INTO ks.k (a, b, c, v) VALUES (?, ?, ?, 'v')", (a, b, c))

    json_msgs = consume_all(broker.bootstrap, "ks.k.fj", 3, 7)  # a schema change goes to every partition
    changes = [m for m in json_msgs if b'"tableChanges"' not in m.value()]
    assert [m.key() for m in json_msgs if b'"tableChanges"' in m.value()] == [None] * 3
    for m in changes:
        key = json.loads(m.key())
        assert key == json.loads(m.value())["key"] and m.key() == dumps(key).encode()
        assert m.partition() == hash_partition(m.key().decode(), 3)  # YDB partitions by this very key
    assert sorted(tuple(json.loads(m.key())[:2]) for m in changes) == sorted((a, b) for a, b, _ in rows)

    for fmt, name in (("DEBEZIUM_JSON", "fd"), ("DYNAMODB_STREAMS_JSON", "fy")):
        msgs = consume_all(broker.bootstrap, f"ks.k.{name}", 3, 4)
        keys = {m.key() for m in msgs}
        assert None not in keys and len(keys) == 3  # the two writes of one row share their key
        for m in msgs:
            value = json.loads(m.value())
            if fmt == "DYNAMODB_STREAMS_JSON":
                assert json.loads(m.key()) == value["dynamodb"]["Keys"]
            else:
                assert json.loads(m.key())["payload"] == {k: value["payload"]["after"][k] for k in "abc"}
