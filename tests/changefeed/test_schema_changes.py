"""Schema-change records of ``SCHEMA_CHANGES = TRUE`` changefeeds (docs/changefeeds.md, "Schema-change records")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import logtide

from .feedutil import KS, add_feed, records, values

GOLDEN = Path(__file__).parent / "golden" / "schema_changes.txt"
SC = "SCHEMA_CHANGES = TRUE, VIRTUAL_TIMESTAMPS = TRUE"


def normalized(value: str) -> str:
    """A record with its virtual timestamp and schema version (the ALTER's txId) replaced by names."""
    d = json.loads(value)
    for change in d.get("tableChanges", ()):
        assert "ts" not in d or change["table"]["schemaVersion"] == d["ts"][1]  # the schema version is the txId
        change["table"]["schemaVersion"] = "TX"
    if "ts" in d:
        d["ts"] = ["STEP", "TX"]
    return json.dumps(d, separators=(",", ":"))


def golden(name: str) -> list[str]:
    """The golden records of section ``== name ==`` of golden/schema_changes.txt."""
    text = GOLDEN.read_text()
    section = text.split(f"== {name} ==\n", 1)[1].split("\n== ", 1)[0]
    return [line for line in section.splitlines() if line.strip()]


def test_add_drop_and_rename_columns_write_the_new_schema(session):
    session.execute("CREATE TABLE t (k int, c text, v int, PRIMARY KEY (k, c))")
    path = add_feed(session, "t", "f", mode="KEYS_ONLY", extra=SC)
    session.execute("ALTER TABLE t ADD w list<frozen<map<text, bigint>>>")
    session.execute("ALTER TABLE t DROP v")
    session.execute("ALTER TABLE t RENAME c TO cc")
    session.execute("ALTER TABLE t WITH comment = 'no column changed: no record'")
    got = [normalized(r.value.decode()) for r in records(session.db.changefeeds, path)]
    assert got == golden("add, drop, rename")


def test_every_partition_gets_the_record_ordered_with_the_data_records(session):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    path = add_feed(session, "t", "f", mode="KEYS_ONLY", extra=SC + ", TOPIC_MIN_ACTIVE_PARTITIONS = 3")
    for k in range(6):
        session.execute(f"INSERT INTO t (k, v) VALUES ({k}, {k})")
    session.execute("ALTER TABLE t ADD w text")
    for k in range(6):
        session.execute(f"INSERT INTO t (k, w) VALUES ({k}, 'x')")
    reader = session.db.changefeeds
    alters = []
    for p in reader.partitions(path):
        recs = [json.loads(r.value) for r in records(reader, path, p.partition)]
        offsets = [r.offset for r in records(reader, path, p.partition)]
        assert offsets == list(range(len(recs)))
        stamps = [r["ts"] for r in recs]
        assert stamps == sorted(stamps)  # commit order within the partition
        schema = [i for i, r in enumerate(recs) if "tableChanges" in r]
        assert len(schema) == 1  # exactly one per partition
        i = schema[0]
        assert all(r["ts"] < recs[i]["ts"] for r in recs[:i]) and all(r["ts"] > recs[i]["ts"] for r in recs[i + 1:])
        assert len(recs[:i]) == len(recs[i + 1:])  # the first write of each key before it, the second after
        alters.append(recs[i])
    assert len(alters) == 3 and all(a == alters[0] for a in alters)


def test_a_feed_without_schema_changes_and_a_disabled_one_get_nothing(session):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    plain = add_feed(session, "t", "plain", mode="KEYS_ONLY")
    off = add_feed(session, "t", "off", mode="KEYS_ONLY", extra="SCHEMA_CHANGES = FALSE")
    gone = add_feed(session, "t", "gone", mode="KEYS_ONLY", extra="SCHEMA_CHANGES = TRUE")
    yes = add_feed(session, "t", "yes", mode="KEYS_ONLY", extra="SCHEMA_CHANGES = TRUE")
    session.execute("ALTER TABLE t ALTER CHANGEFEED gone DISABLE")
    session.execute("ALTER TABLE t ADD w int")
    reader = session.db.changefeeds
    assert values(reader, plain) == values(reader, off) == values(reader, gone) == []
    assert [normalized(json.dumps(v)) for v in values(reader, yes)] == golden("without virtual timestamps")


def test_a_user_type_change_that_alters_the_table_is_a_schema_change(session):
    session.execute("CREATE TYPE addr (street text)")
    session.execute("CREATE TABLE t (k int PRIMARY KEY, a frozen<addr>)")
    session.execute("CREATE TABLE u (k int PRIMARY KEY, v int)")
    path = add_feed(session, "t", "f", mode="KEYS_ONLY", extra=SC)
    other = add_feed(session, "u", "f", mode="KEYS_ONLY", extra=SC)
    session.execute("ALTER TYPE addr ADD zip int")
    assert [normalized(json.dumps(v)) for v in values(session.db.changefeeds, path)] == golden("user type")
    assert values(session.db.changefeeds, other) == []  # u does not hold the type


def write_insert_then_alter(db) -> str:
    """ks.t with a SCHEMA_CHANGES feed: one INSERT, then ALTER TABLE ADD w; returns the topic path."""
    s = db.session()
    s.execute(KS)
    s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
    path = add_feed(s, "ks.t", "f", mode="KEYS_ONLY", extra=SC)
    s.execute("INSERT INTO ks.t (k, v) VALUES (1, 1)")
    s.execute("ALTER TABLE ks.t ADD w int")
    return path


def test_schema_change_records_survive_a_restart_and_later_stamps_are_larger(tmp_path):
    d = tmp_path / "data"
    with logtide.open(d, synchronous="FULL") as db:
        path = write_insert_then_alter(db)
        before = values(db.changefeeds, path)
    with logtide.open(d) as db:
        s = db.session()
        assert values(db.changefeeds, path) == before
        s.execute("ALTER TABLE ks.t DROP w")
        s.execute("INSERT INTO ks.t (k, v) VALUES (2, 2)")
        after = values(db.changefeeds, path)
    assert after[:2] == before and [("tableChanges" in r) for r in after] == [False, True, True, False]
    assert [r["ts"] for r in after] == sorted(r["ts"] for r in after)
    assert after[2]["tableChanges"][0]["table"]["schemaVersion"] > after[1]["tableChanges"][0]["table"]["schemaVersion"]
    assert after[2]["tableChanges"][0]["table"]["columns"] == {"k": "int", "v": "int"}


def test_topic_read_and_the_kafka_endpoint_show_them_as_ordinary_records(tmp_path, capsys):
    from kafka import KafkaConsumer, TopicPartition

    from logtide.cli import main
    from logtide.kafka import BackgroundKafka, KafkaConfig

    d = tmp_path / "data"
    with logtide.open(d, synchronous="OFF") as db:
        path = write_insert_then_alter(db)
        db.session().execute("INSERT INTO ks.t (k, v) VALUES (2, 2)")
        expected = [r.value for r in records(db.changefeeds, path)]
        with BackgroundKafka(db.changefeeds, KafkaConfig(port=0)) as broker:
            c = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
            tp = TopicPartition(path.replace("/", "."), 0)
            c.assign([tp])
            got: list[bytes] = []
            for _ in range(100):
                got.extend(m.value for ms in c.poll(200).values() for m in ms)
                if len(got) >= 3:
                    break
            c.close()
    assert got == expected and b"tableChanges" in got[1]
    assert main(["topic", "read", path, "--data-dir", str(d), "--format", "newline-delimited"]) == 0
    assert capsys.readouterr().out.splitlines() == [v.decode() for v in expected]
    assert re.match(rb'\{"tableChanges":\[\{"table":\{"schemaVersion":\d+,', expected[1])


def test_replay_and_the_feed_properties_skip_schema_changes_and_keep_their_order(session):
    from logtide.changefeed.replay import barrier_breaks, image_chain_breaks, order_breaks, replay

    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    path = add_feed(session, "t", "f", extra=SC)
    session.execute("INSERT INTO t (k, v) VALUES (1, 1)")
    session.execute("ALTER TABLE t ADD w int")
    session.execute("UPDATE t SET w = 2 WHERE k = 1")
    recs = values(session.db.changefeeds, path)
    assert "tableChanges" in recs[1]
    assert replay(recs) == {"[1]": {"v": 1, "w": 2}}
    assert image_chain_breaks(recs) == [] and order_breaks(recs) == [] and barrier_breaks(recs) == []


def test_a_write_resolved_before_an_alter_but_committed_after_it_follows_the_new_schema_and_feeds(session):
    """A statement looks its table up before it waits for the write lock; an ALTER may commit in between."""
    import threading
    import time

    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    path = add_feed(session, "t", "f", extra=SC)
    add_feed(session, "t", "old")
    old_id = session.db.catalog.table("ks", "t").changefeeds[1].feed_id
    db = session.db
    writer = db.session("ks")
    with db.write_lock:  # the writer resolves its table, then queues behind this lock
        th = threading.Thread(target=writer.execute, args=("INSERT INTO t (k, v) VALUES (1, 1)",))
        th.start()
        deadline = time.monotonic() + 60
        while not db.committer._queue and time.monotonic() < deadline:
            time.sleep(0.01)
        assert db.committer._queue, "the writer is waiting for the write lock"
        session.execute("ALTER TABLE t ADD w text")
        new_path = add_feed(session, "t", "g")
        session.execute("ALTER TABLE t DROP CHANGEFEED old")
    th.join(60)
    recs = values(db.changefeeds, path)
    assert [set(r) for r in recs] == [{"tableChanges", "ts"}, {"key", "update", "newImage", "ts"}]
    assert recs[1]["newImage"] == {"v": 1, "w": None}  # after the schema change, in the new shape
    assert values(db.changefeeds, new_path) == [{"key": [1], "update": {}, "newImage": {"v": 1, "w": None}}]
    with db.store.snapshot() as txn:
        assert txn.sql("SELECT COUNT(*) FROM feed_records WHERE feed_id = ?", (old_id,))[0][0] == 0
