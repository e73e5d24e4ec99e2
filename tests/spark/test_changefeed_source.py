"""``logtide-changefeed``: changefeed topics into Spark, over Kafka and from a data directory (docs/spark.md "Source 3")."""

from __future__ import annotations

import datetime
import decimal
import json
import re
import threading
import time

import pytest

from logtide.changefeed.reader import DirectoryTopicReader
from logtide.changefeed.render import hash_partition
from logtide.spark.compat import has_admission_control

from .conftest import KEYSPACE_DDL, cluster, refused_stream, serve

KAFKA = re.compile(r"Kafka endpoint on (\S+):(\d+)")
UTC = datetime.timezone.utc

TYPED_DDL = ("CREATE TABLE ks.typed (pk int, ck text, a text, b bigint, d decimal, v varint, bl blob, ts timestamp, "
             "dt date, tm time, du duration, u uuid, ip inet, f float, db double, bo boolean, l list<int>, "
             "s set<text>, m map<int, text>, tu tuple<int, text>, ad frozen<addr>, st text static, "
             "PRIMARY KEY (pk, ck))")
# name -> (MODE, FORMAT, extra settings)
FEEDS = {
    "j_nao": ("NEW_AND_OLD_IMAGES", "JSON", ", VIRTUAL_TIMESTAMPS = TRUE, TOPIC_MIN_ACTIVE_PARTITIONS = 2"),
    "j_upd": ("UPDATES", "JSON", ""),
    "j_new": ("NEW_IMAGE", "JSON", ""),
    "j_old": ("OLD_IMAGE", "JSON", ""),
    "j_keys": ("KEYS_ONLY", "JSON", ""),
    "dbz_nao": ("NEW_AND_OLD_IMAGES", "DEBEZIUM_JSON", ", TOPIC_MIN_ACTIVE_PARTITIONS = 2"),
    "dbz_keys": ("KEYS_ONLY", "DEBEZIUM_JSON", ""),
    "ddb_nao": ("NEW_AND_OLD_IMAGES", "DYNAMODB_STREAMS_JSON", ""),
    "ddb_new": ("NEW_IMAGE", "DYNAMODB_STREAMS_JSON", ""),
}
FULL = {
    "a": "text é", "b": 9223372036854775807, "d": "12.340", "v": 123456789012345678901234567890, "bl": b"\x00\x01\xff",
    "ts": datetime.datetime(2022, 12, 12, 1, 2, 3, 456000), "dt": datetime.date(2022, 2, 22),
    "tm": 3723000000001, "u": "5bd4d7ce-6a1e-4f5c-9c4a-3a2f0e0f6b11", "ip": "127.0.0.1", "f": 0.5, "db": 0.1,
    "bo": True, "l": [3, 1, 2], "s": ["x", "y"], "m": {1: "one", 2: "two"}, "tu": (7, "seven"),
    "ad": {"street": "Main", "zip": 12345},
}
INSERT_FULL = ("INSERT INTO ks.typed (pk, ck, a, b, d, v, bl, ts, dt, tm, du, u, ip, f, db, bo, l, s, m, tu, ad) "
               "VALUES (1, 'one', 'text é', 9223372036854775807, 12.340, 123456789012345678901234567890, 0x0001ff, "
               "'2022-12-12T01:02:03.456Z', '2022-02-22', '01:02:03.000000001', 1y2mo3d4h5m6s7ms8us9ns, "
               "5bd4d7ce-6a1e-4f5c-9c4a-3a2f0e0f6b11, '127.0.0.1', 0.5, 0.1, true, [3, 1, 2], {'x', 'y'}, "
               "{1: 'one', 2: 'two'}, (7, 'seven'), {street: 'Main', zip: 12345})")
DURATION = {"months": 14, "days": 3, "nanoseconds": ((4 * 60 + 5) * 60 + 6) * 10**9 + 7008009}


def kafka_port(srv) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        m = next((KAFKA.search(x) for x in srv.lines if KAFKA.search(x)), None)
        if m:
            return int(m.group(2))
        time.sleep(0.05)
    raise AssertionError("no Kafka endpoint log line")


class Env:
    """One ``logtide serve`` (CQL + Kafka) for the module, with its typed table's feeds written once."""

    def __init__(self, data) -> None:
        self.data = data
        self.srv = serve(data, "--kafka-port", "auto")
        self.kafka = f"127.0.0.1:{kafka_port(self.srv)}"
        self.cluster = cluster(self.srv.port)
        self.s = self.cluster.connect()

    def opts(self, topic: str, kafka: bool) -> dict:
        if kafka:
            return {"topic": topic, "bootstrap": self.kafka, "cqlPort": str(self.srv.port)}
        return {"topic": topic, "path": str(self.data)}

    def close(self) -> None:
        self.cluster.shutdown()
        self.srv.stop()


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    e = Env(tmp_path_factory.mktemp("cf-serve"))
    s = e.s
    s.execute(KEYSPACE_DDL.format("ks"))
    s.execute("CREATE TYPE ks.addr (street text, zip int)")
    s.execute(TYPED_DDL)
    for name, (mode, fmt, extra) in FEEDS.items():
        s.execute(f"ALTER TABLE ks.typed ADD CHANGEFEED {name} WITH (MODE = '{mode}', FORMAT = '{fmt}'{extra})")
    s.execute(INSERT_FULL)                                                          # 1: insert, every column
    s.execute("UPDATE ks.typed SET a = 'changed', b = null WHERE pk = 1 AND ck = 'one'")  # 2: update, b -> null
    s.execute("INSERT INTO ks.typed (pk, ck, a) VALUES (2, 'two', 'only a')")       # 3: insert, nulls elsewhere
    s.execute("DELETE FROM ks.typed WHERE pk = 1 AND ck = 'one'")                   # 4: delete
    yield e
    e.close()


def read(spark, opts: dict, **more):
    r = spark.read.format("logtide-changefeed")
    for k, v in {**opts, **more}.items():
        r = r.option(k, v)
    return r.load()


def by_change(rows) -> list:
    """Rows in commit order (the virtual timestamp when there is one, else partition/offset order suffices
    because the test writes keys 1 and 2 only)."""
    return sorted(rows, key=lambda r: (r._commit_timestamp, r._partition, r._offset))


def check_full(r, spark_row_values: bool = True) -> None:
    for name, want in FULL.items():
        got = r[name]
        if name == "m":
            got = dict(got)
        if name == "tu":
            got = (got["_1"], got["_2"])
        if name == "ad":
            got = got.asDict()
        if name == "v":
            assert got == decimal.Decimal(want)
            continue
        if name == "d":
            assert decimal.Decimal(got) == decimal.Decimal(want)
            continue
        if name == "bl":
            got = bytes(got)
        assert got == want, name
    assert r.du.asDict() == DURATION


# the record kinds of the four writes (insert, update, delete of pk 1; insert of pk 2), per FORMAT and MODE
OPERATIONS = {"JSON": ["update", "update", "erase", "update"], "DEBEZIUM_JSON": ["c", "u", "d", "c"],
              "DYNAMODB_STREAMS_JSON": ["INSERT", "MODIFY", "REMOVE", "INSERT"]}


@pytest.mark.parametrize("feed", sorted(FEEDS))
def test_every_format_and_mode_is_parsed_into_the_rows_of_deltas_change_data_feed(spark, env, feed):
    mode, fmt, _ = FEEDS[feed]
    rows = read(spark, env.opts(f"ks/typed/{feed}", kafka=False)).collect()
    rows = [r for r in rows if r.pk == 1] + [r for r in rows if r.pk == 2]
    value_cols = sorted(FULL) + ["du", "st"]
    old_images = mode in ("OLD_IMAGE", "NEW_AND_OLD_IMAGES")
    # Delta's change types, the same for every FORMAT: an update that carries its old image is a preimage row
    # and a postimage row of one record; without old images a CQL write (an upsert) is an update_postimage
    if old_images:
        assert [r._change_type for r in rows] == ["insert", "update_preimage", "update_postimage", "delete", "insert"]
        ins, pre, upd, dele, ins2 = rows
        assert (pre._partition, pre._offset) == (upd._partition, upd._offset)
    else:
        assert [r._change_type for r in rows] == ["update_postimage", "update_postimage", "delete", "update_postimage"]
        ins, upd, dele, ins2 = rows
        pre = None
    assert [(r.pk, r.ck) for r in (ins, upd, dele, ins2)] == [(1, "one")] * 3 + [(2, "two")]
    # the record's own kind, in its own column
    operations = OPERATIONS[fmt]
    if mode in ("KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE") and fmt != "JSON":
        operations = [{"c": "u", "INSERT": "MODIFY"}.get(o, o) for o in operations]  # c and INSERT need old images
    assert [r._operation for r in (ins, upd, dele, ins2)] == operations
    if mode in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES"):
        check_full(ins)
        assert ins._changed_columns == sorted(c for c in value_cols if c != "st")
        assert upd.a == "changed" and upd.b is None and upd.l == [3, 1, 2]
        assert ins2.a == "only a" and ins2.b is None and ins2.l is None
    elif mode == "UPDATES":
        check_full(ins)
        assert upd.a == "changed" and upd.b is None and upd.l is None  # not written: null
        assert set(upd._changed_columns) == {"a", "b"}
        assert ins2._changed_columns == ["a"]
    else:
        assert all(r[c] is None for r in (ins, upd, ins2) for c in value_cols) and not ins._changed_columns
    assert dele._changed_columns == []
    if old_images:  # the preimage and the delete row hold the values before, as in Delta
        check_full(pre)
        check_full(upd._old)
        assert dele.a == dele._old.a == "changed" and dele.b is None
        assert ins._old is None and ins2._old is None
    else:
        assert all(dele[c] is None for c in value_cols)
        assert all(r._old is None for r in rows)
    # _commit_version: the commit's txId, shared by a record's rows and increasing commit after commit
    if fmt == "DEBEZIUM_JSON" or feed == "j_nao":
        vts = [(r._virtual_timestamp.step, r._virtual_timestamp.tx_id) for r in (ins, upd, dele)]
        assert vts == sorted(vts) and len(set(vts)) == 3
        assert all(r._commit_version == r._virtual_timestamp.tx_id for r in rows)
        assert ins._commit_version < upd._commit_version < dele._commit_version
    else:  # no virtual timestamp in the records: the commit's step (its time in milliseconds)
        assert all(r._virtual_timestamp is None for r in rows)
        assert all(r._commit_version == round(r._commit_timestamp.replace(tzinfo=UTC).timestamp() * 1000)
                   for r in rows)
    if pre is not None:
        assert pre._commit_version == upd._commit_version and pre._commit_timestamp == upd._commit_timestamp
    assert all(r._commit_timestamp.year >= 2026 for r in rows)


def test_the_kafka_form_reads_what_the_path_form_reads_with_raw_records(spark, env):
    for feed in ("j_nao", "dbz_nao", "ddb_nao"):
        local = read(spark, env.opts(f"ks/typed/{feed}", kafka=False), raw="true").collect()
        over_kafka = read(spark, env.opts(f"ks.typed.{feed}", kafka=True), raw="true").collect()
        assert sorted(map(tuple, over_kafka), key=repr) == sorted(map(tuple, local), key=repr)
        assert len(local) == 5 and all(json.loads(r._raw) for r in local)  # 4 records, an update in 2 rows


# -- streaming, offsets, consumers ----------------------------------------------------------------

@pytest.fixture(scope="module")
def events(env):
    """ks.events with a 3-partition NEW_IMAGE feed; rows 0..29 written."""
    env.s.execute("CREATE TABLE ks.events (id int PRIMARY KEY, v int)")
    env.s.execute("ALTER TABLE ks.events ADD CHANGEFEED ev WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', "
                  "TOPIC_MIN_ACTIVE_PARTITIONS = 3)")
    write_events(env, 0, 30)
    return env


def write_events(env, start: int, n: int) -> None:
    ins = env.s.prepare("INSERT INTO ks.events (id, v) VALUES (?, ?)")
    for i in range(start, start + n):
        env.s.execute(ins, (i, i * 10))


def ends(env, topic: str) -> dict[int, int]:
    with DirectoryTopicReader(env.data) as r:
        return {p.partition: p.end_offset for p in r.partitions(topic)}


def run_stream(spark, opts: dict, out, checkpoint, **more):
    r = spark.readStream.format("logtide-changefeed")
    for k, v in {**opts, "startingOffsets": "earliest", **more}.items():
        r = r.option(k, v)
    q = (r.load().writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
         .trigger(availableNow=True).start())
    q.awaitTermination(600)
    assert q.exception() is None
    return q


def test_stream_restarts_from_its_checkpoint_and_delivers_each_record_once_committing_the_consumer(
        spark, events, tmp_path):
    env = events
    opts = env.opts("ks.events.ev", kafka=True)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    cap = {"maxRecordsPerTrigger": "12"} if has_admission_control() else {}  # Spark 4.2+, refused before
    if not cap:
        reader = spark.readStream.format("logtide-changefeed").options(**opts, maxRecordsPerTrigger="12")
        assert "option maxRecordsPerTrigger: needs Spark 4.2 or later" in refused_stream(reader, tmp_path / "c0")
    q = run_stream(spark, opts, out, ckpt, consumer="sparky", **cap)
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 30
    if cap:
        assert max(sizes) <= 12 and len(sizes) >= 3  # admission control cut the batches
    write_events(env, 30, 20)
    run_stream(spark, opts, out, ckpt, consumer="sparky", **cap)
    rows = spark.read.parquet(str(out)).collect()
    assert sorted(r.id for r in rows) == list(range(50))
    assert len({(r._partition, r._offset) for r in rows}) == 50
    assert all(r.v == r.id * 10 and r._change_type == "update_postimage" for r in rows)
    # Spark calls commit(end) of a batch when it starts the next one: the consumer (what `logtide topic
    # consumer list` shows) holds every batch but the last of this run
    with DirectoryTopicReader(env.data) as reader:
        committed = dict(reader.committed("ks/events/ev", "sparky"))
    end = ends(env, "ks/events/ev")
    assert set(committed) == set(end) and all(committed[p] <= end[p] for p in end)
    assert sum(committed.values()) >= (50 - 12 if cap else 30)
    # the path form streams the same rows
    local = tmp_path / "local"
    run_stream(spark, env.opts("ks/events/ev", kafka=False), local, tmp_path / "ckpt2")
    assert sorted(map(tuple, spark.read.parquet(str(local)).collect())) == sorted(map(tuple, rows))


def test_starting_and_ending_offsets_and_timestamps_choose_the_records(spark, events):
    env = events
    total = sum(ends(env, "ks/events/ev").values())
    for kafka in (False, True):
        opts = env.opts("ks/events/ev", kafka=kafka)
        assert read(spark, opts).count() == total
        assert read(spark, opts, startingOffsets="latest").count() == 0
        assert read(spark, opts, startingOffsets='{"0": 2, "2": 1}').count() == total - 3
        got = read(spark, opts, startingOffsets='{"0": 1, "1": -2, "2": -1}', endingOffsets='{"0": 3, "1": 2}')
        assert sorted((r._partition, r._offset) for r in got.collect()) == [(0, 1), (0, 2), (1, 0), (1, 1)]
    first = read(spark, env.opts("ks/events/ev", kafka=False)).orderBy("_commit_timestamp").collect()
    cut = first[len(first) // 2]._commit_timestamp.replace(tzinfo=UTC)
    ms = int(cut.timestamp() * 1000)
    for kafka in (False, True):
        later = read(spark, env.opts("ks/events/ev", kafka=kafka), startingTimestamp=str(ms),
                     startingOffsetsByTimestampStrategy="latest").collect()
        assert {r.id for r in later} == {r.id for r in first if r._commit_timestamp.replace(tzinfo=UTC) >= cut}


@pytest.mark.parametrize("options, message", [
    ({"topic": "ks/events/ev"}, "exactly one of the options kafka.bootstrap.servers (or bootstrap"),
    ({"topic": "ks/events", "path": "."}, "option topic: expected keyspace/table/changefeed"),
    ({"topic": "ks/events/ev", "path": "@", "startingOffsets": "first"}, "option startingOffsets"),
    ({"topic": "ks/events/ev", "path": "@", "maxRecordsPerTrigger": "0"}, "option maxRecordsPerTrigger"),
    ({"topic": "ks/events/ev", "path": "@", "colour": "red"}, "unknown option 'colour'"),
    ({"topic": "ks/events/nope", "path": "@"}, "option topic"),
    ({"topic": "ks/typed/dbz_nao", "path": "@", "consistent": "true"}, "option consistent: needs FORMAT = 'JSON'"),
    ({"topic": "ks/typed/j_nao", "path": "@", "consistent": "true"}, "option consistent: the changefeed has no barriers"),
])
def test_bad_options_fail_with_a_message_naming_the_option(spark, events, options, message):
    opts = {k: (str(events.data) if v == "@" else v) for k, v in options.items()}
    with pytest.raises(Exception) as e:
        read(spark, opts).schema
    assert message in str(e.value)


# -- Spark's Kafka source option names (and logtide's earlier ones, kept as aliases) ------------------

def spark_kafka(env, **more) -> dict:
    """The Spark Kafka source's names for what ``env.opts(..., kafka=True)`` says with logtide's earlier ones."""
    return {"kafka.bootstrap.servers": env.kafka, "cqlPort": str(env.srv.port), **more}


def rows_of(df) -> list:
    return sorted(map(tuple, df.collect()))


def test_spark_kafka_source_names_read_what_the_earlier_names_read(spark, events):
    env = events
    old = env.opts("ks/events/ev", kafka=True)
    everything = rows_of(read(spark, old))
    assert len(everything) == sum(ends(env, "ks/events/ev").values())
    for topic in ({"subscribe": "ks.events.ev"}, {"subscribePattern": r"ks\.events\.e."},
                  {"assign": '{"ks.events.ev": [0, 1, 2]}'}):
        assert rows_of(read(spark, spark_kafka(env, **topic))) == everything, topic
    new = spark_kafka(env, subscribe="ks.events.ev")
    # offsets: {"0": 2} (earlier) and Spark's {"topic": {"0": 2}}, -2 earliest, -1 latest
    assert rows_of(read(spark, old, startingOffsets='{"0": 2, "2": 1}', endingOffsets='{"0": 3, "1": -1}')) == \
        rows_of(read(spark, new, startingOffsets='{"ks.events.ev": {"0": 2, "2": 1}}',
                     endingOffsets='{"ks.events.ev": {"0": 3, "1": -1}}'))
    # assign reads the partitions it names
    two = rows_of(read(spark, spark_kafka(env, assign='{"ks.events.ev": [0, 2]}')))
    at = read(spark, old).columns.index("_partition")
    assert two == [r for r in everything if r[at] in (0, 2)] and 0 < len(two) < len(everything)
    # startingTimestamp (ms, every partition) and startingOffsetsByTimestamp (Spark's JSON) choose the same records
    first = read(spark, old).orderBy("_commit_timestamp").collect()
    cut = first[len(first) // 2]._commit_timestamp.replace(tzinfo=UTC)
    ms = int(cut.timestamp() * 1000)
    later = {r.id for r in first if r._commit_timestamp.replace(tzinfo=UTC) >= cut}
    by_ts = json.dumps({"ks.events.ev": {str(p): ms for p in range(3)}})
    for opts in ({**old, "startingTimestamp": str(ms)}, {**new, "startingOffsetsByTimestamp": by_ts}):
        got = read(spark, opts, startingOffsetsByTimestampStrategy="latest").collect()
        assert {r.id for r in got} == later
    # endingTimestamp / endingOffsetsByTimestamp: what was written before the time
    for opts in ({**new, "endingTimestamp": str(ms)}, {**new, "endingOffsetsByTimestamp": by_ts}):
        assert {r.id for r in read(spark, opts).collect()} == {r.id for r in first} - later


def test_a_start_time_after_every_record_fails_as_in_spark_unless_the_strategy_is_latest(spark, events):
    new = {"subscribe": "ks.events.ev", "path": str(events.data), "startingTimestamp": str(2**42)}
    with pytest.raises(Exception) as e:
        read(spark, new).collect()
    assert "No offset matched from request of topic-partition ks.events.ev-0 and timestamp 4398046511104" in str(e.value)
    assert read(spark, new, startingOffsetsByTimestampStrategy="latest").count() == 0


def test_kafka_prefixed_options_go_to_the_kafka_client(spark, events):
    env = events
    new = spark_kafka(env, subscribe="ks.events.ev")
    assert rows_of(read(spark, new, **{"kafka.socket.timeout.ms": "30000", "kafka.client.id": "sparky"})) == \
        rows_of(read(spark, env.opts("ks/events/ev", kafka=True)))
    with pytest.raises(Exception) as e:
        read(spark, new, **{"kafka.no.such.setting": "1", "tableSchema": "id int PRIMARY KEY, v int",
                            "mode": "NEW_IMAGE", "format": "JSON"}).collect()
    assert "the Kafka client refused the kafka. options (" in str(e.value) and "no.such.setting" in str(e.value)


def test_max_offsets_per_trigger_caps_batches_as_max_records_per_trigger_did(spark, events, tmp_path):
    if not has_admission_control():
        pytest.skip("admission control of Python streams needs Spark 4.2+ (refusal tested above)")
    env = events
    sizes = {}
    for name, opts in (("maxRecordsPerTrigger", env.opts("ks/events/ev", kafka=True)),
                       ("maxOffsetsPerTrigger", spark_kafka(env, subscribe="ks.events.ev"))):
        q = run_stream(spark, opts, tmp_path / name / "out", tmp_path / name / "ckpt", **{name: "7"})
        sizes[name] = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
        out = rows_of(spark.read.parquet(str(tmp_path / name / "out")))
        sizes[name + " rows"] = out
    assert sizes["maxRecordsPerTrigger"] == sizes["maxOffsetsPerTrigger"] and max(sizes["maxOffsetsPerTrigger"]) <= 7
    assert sizes["maxRecordsPerTrigger rows"] == sizes["maxOffsetsPerTrigger rows"]


def test_min_offsets_per_trigger_waits_for_records_or_max_trigger_delay(spark, events, tmp_path):
    if not has_admission_control():
        pytest.skip("admission control of Python streams needs Spark 4.2+")
    env = events
    total = sum(ends(env, "ks/events/ev").values())
    r = spark.readStream.format("logtide-changefeed").options(
        **spark_kafka(env, subscribe="ks.events.ev"), startingOffsets="earliest", minOffsetsPerTrigger="100000",
        maxTriggerDelay="4s")
    began = time.monotonic()
    q = (r.load().writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ckpt"))
         .trigger(processingTime="500 milliseconds").start())
    try:
        first_rows = None
        while time.monotonic() - began < 300:
            if any(p["numInputRows"] for p in q.recentProgress):
                first_rows = time.monotonic() - began
                break
            time.sleep(0.2)
        assert q.exception() is None
        # fewer than minOffsetsPerTrigger records wait: the first batch comes after maxTriggerDelay, whole
        assert first_rows is not None and first_rows >= 4
        assert sum(p["numInputRows"] for p in q.recentProgress) == total
    finally:
        q.stop()


def test_names_of_both_conventions_for_one_thing_or_foreign_topics_are_refused(spark, events):
    base = {"path": str(events.data)}
    for opts, message in (
            ({"subscribe": "ks.events.ev", "topic": "ks/events/ev"}, "exactly one of the options subscribe"),
            ({"subscribe": "ks.events.ev,ks.typed.j_new"}, "option subscribe: one changefeed topic is read"),
            ({"subscribePattern": r"ks\..*"}, "must match exactly one changefeed topic"),
            ({"assign": '{"ks.events.ev": [7]}'}, "option assign: the topic has 3 partitions, got partition 7"),
            ({"subscribe": "ks.events.ev", "startingOffsets": '{"ks.other.ev": {"0": 1}}'},
             "option startingOffsets: topic 'ks.other.ev' is not the topic read (ks.events.ev)"),
            ({"subscribe": "ks.events.ev", "maxOffsetsPerTrigger": "5", "maxRecordsPerTrigger": "5"},
             "options maxOffsetsPerTrigger and maxRecordsPerTrigger mean the same"),
            ({"subscribe": "ks.events.ev", "kafka.group.id": "g"}, "Kafka option 'group.id' is not supported"),
            ({"subscribe": "ks.events.ev", "endingOffsets": '{"ks.events.ev": {"0": -2}}'},
             "option endingOffsets: the ending offset cannot be earliest"),
            ({"subscribe": "ks.events.ev", "colour": "red"}, "unknown option 'colour' (known options: "
                                                             "kafka.bootstrap.servers, subscribe, subscribePattern")):
        with pytest.raises(Exception) as e:
            read(spark, {**base, **opts}).collect()
        assert message in str(e.value), opts


@pytest.fixture(scope="module")
def expired(tmp_path_factory):
    """A data directory whose changefeed ks/t/f (one partition) lost offsets 0..2 to retention (3 and 4 remain)."""
    import logtide
    from logtide.clock import ManualClock

    clock = ManualClock()
    data = tmp_path_factory.mktemp("expired") / "data"
    with logtide.open(data, clock=clock, synchronous="OFF") as db:
        s = db.session()
        s.execute(KEYSPACE_DDL.format("ks"))
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', "
                  "RETENTION_PERIOD = Interval('PT1H'))")
        for i in range(3):
            s.execute(f"INSERT INTO ks.t (k, v) VALUES ({i}, {i})")
        clock.advance(seconds=1800)
        for i in range(3, 5):
            s.execute(f"INSERT INTO ks.t (k, v) VALUES ({i}, {i})")
        clock.advance(seconds=1801)
        db.feeds.tick()
        assert [(p.start_offset, p.end_offset) for p in db.changefeeds.partitions("ks/t/f")] == [(3, 5)]
    return data


@pytest.mark.parametrize("starting", ['{"0": 0}', '{"ks.t.f": {"0": 0}}'])
def test_records_lost_to_retention_fail_the_read_unless_fail_on_data_loss_is_false(spark, expired, tmp_path,
                                                                                    starting):
    opts = {"subscribe": "ks.t.f", "path": str(expired), "startingOffsets": starting}
    with pytest.raises(Exception) as e:
        read(spark, opts).collect()
    text = str(e.value)
    assert "Partition ks.t.f-0's offsets 0 to 2 were removed before they were read. Some data may have been lost" \
        in text and 'set the source option "failOnDataLoss" to "false"' in text and "Traceback (most recent" not in \
        text.split("DataLossError:")[-1]
    assert sorted(r.k for r in read(spark, opts, failOnDataLoss="false").collect()) == [3, 4]
    # a stream fails the same way
    stream = spark.readStream.format("logtide-changefeed").options(**opts)
    assert "were removed before they were read" in refused_stream(stream, tmp_path / "ckpt")


# -- barrier-consistent micro-batches --------------------------------------------------------------

def pairs_in_two_partitions(n: int, partitions: int) -> list[tuple[int, int]]:
    """(a, b) keys whose records land in different partitions."""
    out, k = [], 1000
    while len(out) < n:
        a, b = k, k + 1
        if hash_partition(f"[{a}]", partitions) != hash_partition(f"[{b}]", partitions):
            out.append((a, b))
        k += 2
    return out


def test_consistent_micro_batches_hold_whole_transactions_at_global_barriers(spark, env):
    s = env.s
    s.execute("CREATE TABLE ks.acct (id int PRIMARY KEY, v int)")
    s.execute("ALTER TABLE ks.acct ADD CHANGEFEED cf WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON', "
              "VIRTUAL_TIMESTAMPS = TRUE, BARRIERS_INTERVAL = Interval('PT1S'), TOPIC_MIN_ACTIVE_PARTITIONS = 4)")
    pairs = pairs_in_two_partitions(200, 4)
    stop = threading.Event()

    def writer() -> None:  # until the stream has cut enough micro-batches
        i = 0
        while not stop.is_set():
            a, b = pairs[i % len(pairs)]
            i += 1
            s.execute(f"BEGIN BATCH INSERT INTO ks.acct (id, v) VALUES ({a}, {i}); "
                      f"INSERT INTO ks.acct (id, v) VALUES ({b}, {i}); APPLY BATCH")
            time.sleep(0.01)
    batches: list[list] = []

    def collect(df, batch_id) -> None:  # one row per change (an update's preimage row left out)
        batches.append([(r.id, r.v, r._virtual_timestamp.step, r._virtual_timestamp.tx_id)
                        for r in df.where("_change_type != 'update_preimage'").collect()])
    q = (spark.readStream.format("logtide-changefeed").options(**env.opts("ks.acct.cf", kafka=True))
         .option("consistent", "true").option("startingOffsets", "earliest").load()
         .writeStream.foreachBatch(collect).trigger(processingTime="300 milliseconds").start())
    w = threading.Thread(target=writer)
    w.start()
    try:
        deadline = time.monotonic() + 120
        while len([b for b in batches if b]) < 3 and time.monotonic() < deadline and q.exception() is None:
            time.sleep(0.2)
        assert q.exception() is None
    finally:
        stop.set()
        w.join()
        q.stop()
    assert len([b for b in batches if b]) >= 3
    check_whole_transactions(batches)
    if has_admission_control():
        check_capped_consistent_batches(spark, env)
    # a batch read stops at the global barrier too: whole transactions only
    rows = read(spark, env.opts("ks/acct/cf", kafka=False), consistent="true").where(
        "_change_type != 'update_preimage'").collect()
    per_tx: dict[int, int] = {}
    for r in rows:
        per_tx[r._virtual_timestamp.tx_id] = per_tx.get(r._virtual_timestamp.tx_id, 0) + 1
    assert rows and set(per_tx.values()) == {2}


def check_capped_consistent_batches(spark, env) -> None:
    """With maxRecordsPerTrigger a micro-batch ends at an earlier global barrier (one barrier interval at least)."""
    capped: list[list] = []

    def collect_capped(df, batch_id) -> None:
        capped.append([(r.id, r.v, r._virtual_timestamp.step, r._virtual_timestamp.tx_id)
                       for r in df.where("_change_type != 'update_preimage'").collect()])
    q = (spark.readStream.format("logtide-changefeed").options(**env.opts("ks/acct/cf", kafka=False))
         .option("consistent", "true").option("startingOffsets", "earliest").option("maxRecordsPerTrigger", "20")
         .load().writeStream.foreachBatch(collect_capped).trigger(availableNow=True).start())
    q.awaitTermination(600)
    assert q.exception() is None
    check_whole_transactions(capped)
    sizes = [len(b) for b in capped if b]
    assert len(sizes) >= 3 and max(sizes) < sum(sizes)
    # each batch holds at most 20 records, or else the records up to the first global barrier (1 s apart)
    assert all(len(b) <= 20 or max(r[2] for r in b) - min(r[2] for r in b) < 2000 for b in capped if b)


def check_whole_transactions(batches: list[list]) -> None:
    """Each transaction is in one micro-batch, whole; batches follow each other in virtual-timestamp order."""
    seen: dict[int, int] = {}
    for n, rows in enumerate(batches):
        txs: dict[int, list] = {}
        for id_, v, step, tx in rows:
            txs.setdefault(tx, []).append((id_, v))
        for tx, members in txs.items():
            assert len(members) == 2, f"micro-batch {n} holds a part of transaction {tx}: {members}"
            assert tx not in seen, f"transaction {tx} in micro-batches {seen[tx]} and {n}"
            seen[tx] = n
        earlier = [r[2:] for b in batches[:n] for r in b]
        if rows and earlier:  # every row of a later batch is newer than every row of an earlier one
            assert min(r[2:] for r in rows) > max(earlier)


# -- values: the inverse of docs/changefeeds.md "CQL to JSON", without Spark ------------------------

def _values():
    import uuid
    from cassandra.util import Date, Duration, SortedSet, Time

    d = datetime.datetime(2022, 12, 12, 1, 2, 3, 456000)
    return [
        ("text", "é ü"), ("int", -5), ("bigint", 2**63 - 1), ("varint", 10**30), ("decimal", decimal.Decimal("-0.0500")),
        ("double", 0.1), ("double", float("inf")), ("float", float("-inf")), ("boolean", False), ("blob", b"\x00\xff"),
        ("timestamp", d), ("date", Date(datetime.date(2022, 2, 22))),
        ("time", Time(3723000000001)), ("duration", Duration(-14, -3, -1500000000)), ("uuid", uuid.UUID(int=7)),
        ("inet", "::1"), ("list<int>", [3, 1]),
        ("set<text>", SortedSet(["a", "b"])), ("set<int>", SortedSet([1, 2])), ("set<blob>", SortedSet([b"x"])),
        ("set<boolean>", SortedSet([True])), ("set<double>", SortedSet([float("nan")])),
        ("map<int, text>", {1: "one", 2: "two"}), ("map<date, int>", {Date(datetime.date(2022, 2, 22)): 1}),
        ("map<frozen<tuple<int, text>>, int>", {(1, "a"): 5}), ("tuple<int, text, double>", (1, None, 2.5)),
        ("frozen<list<frozen<map<text, bigint>>>>", [{"a": 1}, {}]),
        ("vector<float, 2>", [1.5, -2.0]), ("vector<text, 2>", ["a", ""]),
    ]


@pytest.mark.parametrize("dynamo", [False, True])
def test_record_values_convert_back_to_the_spark_values_of_their_cql_types(dynamo):
    from logtide.changefeed.values import dumps, to_attribute_value, to_json_value
    from logtide.schema import types as T
    from logtide.spark import types as ST
    from logtide.spark.changefeed_values import from_attribute, from_json

    def same(a, b) -> bool:
        if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
            return True
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, tuple) and isinstance(b, tuple):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        return a == b

    for type_text, value in _values():
        t = T.parse_type_string(type_text)
        want = ST.converter(t)(value)
        if dynamo:
            got = from_attribute(t)(json.loads(dumps(to_attribute_value(t, value))))
        else:
            got = from_json(t)(json.loads(dumps(to_json_value(t, value))))
        if type_text == "decimal":  # records drop trailing fractional zeros
            got, want = decimal.Decimal(got), decimal.Decimal(want)
        assert same(got, want), (type_text, got, want)
