"""Changefeed record shapes per MODE x FORMAT, the spec's examples, Debezium keys, DynamoDB records, partitions."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from pathlib import Path

import pytest
from cassandra.util import Date

from logtide.schema.changefeed_options import ChangefeedOptions
from logtide.changefeed.render import RowChange, image, partition_of, render, render_barrier
from logtide.query.read import stored_partitions

GOLDEN = Path(__file__).parent / "golden"
MODES = ("KEYS_ONLY", "UPDATES", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES")
FORMATS = ("JSON", "DEBEZIUM_JSON", "DYNAMODB_STREAMS_JSON")
STEP, TX, WRITE_MS, SEQ = 1670792400890, 562949953607163, 1670792400891, 5


@pytest.fixture
def make_table(db, session):
    def make(ddl: str):
        session.execute(ddl)
        name = ddl.split("(")[0].split()[-1].split(".")[-1]
        return db.catalog.table("ks", name)
    return make


def blocks(path: Path) -> dict[str, str]:
    out, name = {}, None
    for line in path.read_text().splitlines():
        if line.startswith("### "):
            name = line[4:].strip()
            out[name] = ""
        elif name is not None and not line.startswith("#"):
            out[name] += line + "\n"
    return {k: v.strip() for k, v in out.items()}


def spec(name: str):
    return json.loads(blocks(GOLDEN / "spec_records.txt")[name])


def value(r) -> dict:
    return json.loads(r.value)


# the spec's examples -------------------------------------------------------------------------------------

def test_spec_updates_mode_update(make_table):
    t = make_table("CREATE TABLE ks.s1 (id int, name text, payload text, date date, other int, PRIMARY KEY (id, name))")
    ch = RowChange("update", (1, "one"), None, None, {"payload": "lorem ipsum", "date": Date(datetime.date(2022, 2, 22))})
    r = render(t, ChangefeedOptions("UPDATES", "JSON"), ch, STEP, TX, WRITE_MS, SEQ)
    assert value(r) == spec("updates_mode_update")
    assert r.value == b'{"key":[1,"one"],"update":{"date":"2022-02-22","payload":"lorem ipsum"}}'
    assert r.key is None


def test_spec_erase(make_table):
    t = make_table("CREATE TABLE ks.s2 (id int, name text, payload text, PRIMARY KEY (id, name))")
    ch = RowChange("erase", (2, "two"), {"payload": "x"}, None, {})
    for mode in ("KEYS_ONLY", "UPDATES", "NEW_IMAGE"):
        r = render(t, ChangefeedOptions(mode, "JSON"), ch, STEP, TX, WRITE_MS, SEQ)
        assert value(r) == spec("erase")
        assert r.value == b'{"key":[2,"two"],"erase":{}}'


def test_spec_row_snapshots(make_table):
    t = make_table('CREATE TABLE ks.s3 (a int, b int, c int, "textColumn" text, "intColumn" int, "boolColumn" boolean, '
                   "PRIMARY KEY ((a, b), c))")
    old = {"textColumn": None, "intColumn": 100, "boolColumn": False}
    new = {"textColumn": "value1", "intColumn": 101, "boolColumn": True}
    r = render(t, ChangefeedOptions("NEW_AND_OLD_IMAGES", "JSON"), RowChange("update", (1, 2, 3), old, new,
               {"textColumn": "value1", "intColumn": 101}), STEP, TX, WRITE_MS, SEQ)
    assert value(r) == spec("row_snapshots")
    assert r.value == (b'{"key":[1,2,3],"update":{},'
                       b'"newImage":{"boolColumn":true,"intColumn":101,"textColumn":"value1"},'
                       b'"oldImage":{"boolColumn":false,"intColumn":100,"textColumn":null}}')


def test_spec_virtual_timestamps(make_table):
    t = make_table("CREATE TABLE ks.s4 (id int PRIMARY KEY, created timestamp, customer text)")
    ch = RowChange("update", (1,), None, None, {"created": datetime.datetime(2022, 12, 12), "customer": "Name123"})
    r = render(t, ChangefeedOptions("UPDATES", "JSON", virtual_timestamps=True), ch, 1670792400890, 562949953607163,
               WRITE_MS, SEQ)
    assert value(r) == spec("virtual_timestamps")
    assert r.value == (b'{"key":[1],"update":{"created":"2022-12-12T00:00:00.000000Z","customer":"Name123"},'
                       b'"ts":[1670792400890,562949953607163]}')


def test_spec_barrier():
    assert render_barrier(1670792500000) == b'{"resolved":[1670792500000,0]}'
    assert json.loads(render_barrier(1670792500000)) == spec("barrier")


def test_spec_cli_sample_key_past_2_63(make_table):
    t = make_table("CREATE TABLE ks.s5 (id varint PRIMARY KEY, created timestamp, customer text)")
    ch = RowChange("update", (13195699997286404932,), None, None,
                   {"created": datetime.datetime(2022, 6, 24, 11, 35), "customer": "Name366"})
    r = render(t, ChangefeedOptions("UPDATES", "JSON"), ch, STEP, TX, WRITE_MS, SEQ)
    assert value(r) == spec("cli_sample")
    assert r.value.startswith(b'{"key":[13195699997286404932],')


# every MODE x FORMAT -------------------------------------------------------------------------------------

CHANGES = {
    "insert": RowChange("update", (1, "a"), None, {"note": "x", "v": 10}, {"v": 10, "note": "x"}),
    "update": RowChange("update", (1, "a"), {"note": "x", "v": 10}, {"note": None, "v": 11}, {"v": 11, "note": None}),
    "erase": RowChange("erase", (1, "a"), {"note": None, "v": 11}, None, {}),
    "scan": RowChange("update", (2, "b"), None, {"note": "s", "v": None}, {"note": "s", "v": None}, snapshot=True),
}


def matrix_lines(t) -> list[str]:
    lines = []
    for fmt in FORMATS:
        for mode in MODES:
            if mode == "UPDATES" and fmt != "JSON":
                continue
            opts = ChangefeedOptions(mode, fmt, virtual_timestamps=fmt == "JSON" and mode == "KEYS_ONLY",
                                     aws_region="eu-north-1" if fmt == "DYNAMODB_STREAMS_JSON" else "",
                                     partitions=4)
            for name, ch in CHANGES.items():
                r = render(t, opts, ch, STEP, TX, WRITE_MS, SEQ)
                lines.append(f"{fmt} {mode} {name} partition={r.partition}")
                if r.key is not None:
                    lines.append("  key   " + r.key.decode())
                lines.append("  value " + r.value.decode())
    return lines


def test_every_mode_and_format(make_table):
    t = make_table("CREATE TABLE ks.t (id int, name text, v int, note text, PRIMARY KEY (id, name))")
    path = GOLDEN / "records.txt"
    text = "\n".join(matrix_lines(t)) + "\n"
    if os.environ.get("LOGTIDE_REGOLD"):
        path.write_text(text)
    assert text == path.read_text()


# the rules behind the matrix ----------------------------------------------------------------------------

@pytest.fixture
def t(make_table):
    return make_table("CREATE TABLE ks.t (id int, name text, v int, note text, PRIMARY KEY (id, name))")


def rec(t, mode, fmt, change, **kw):
    return value(render(t, ChangefeedOptions(mode, fmt, **kw), change, STEP, TX, WRITE_MS, SEQ))


def test_json_images_leave_out_key_columns_and_show_nulls(t):
    r = rec(t, "NEW_AND_OLD_IMAGES", "JSON", CHANGES["update"])
    assert r["newImage"] == {"note": None, "v": 11} and r["oldImage"] == {"note": "x", "v": 10}


def test_json_images_only_for_rows_that_exist(t):
    assert "oldImage" not in rec(t, "NEW_AND_OLD_IMAGES", "JSON", CHANGES["insert"])
    assert "newImage" not in rec(t, "NEW_AND_OLD_IMAGES", "JSON", CHANGES["erase"])
    assert rec(t, "OLD_IMAGE", "JSON", CHANGES["insert"]) == {"key": [1, "a"], "update": {}}


def test_updates_mode_carries_written_columns_only(t):
    ch = RowChange("update", (1, "a"), {"note": "x", "v": 1}, {"note": "x", "v": 2}, {"v": 2})
    assert rec(t, "UPDATES", "JSON", ch) == {"key": [1, "a"], "update": {"v": 2}}
    deleted = RowChange("update", (1, "a"), None, None, {"note": None})
    assert rec(t, "UPDATES", "JSON", deleted) == {"key": [1, "a"], "update": {"note": None}}


def test_ts_only_with_virtual_timestamps(t):
    assert "ts" not in rec(t, "KEYS_ONLY", "JSON", CHANGES["insert"])
    assert rec(t, "KEYS_ONLY", "JSON", CHANGES["insert"], virtual_timestamps=True)["ts"] == [STEP, TX]


@pytest.mark.parametrize("mode,change,op", [
    ("NEW_AND_OLD_IMAGES", "insert", "c"), ("NEW_AND_OLD_IMAGES", "update", "u"), ("NEW_AND_OLD_IMAGES", "erase", "d"),
    ("NEW_AND_OLD_IMAGES", "scan", "r"), ("NEW_IMAGE", "insert", "u"), ("OLD_IMAGE", "insert", "u"),
    ("KEYS_ONLY", "insert", "u"), ("KEYS_ONLY", "erase", "d"), ("KEYS_ONLY", "scan", "r"),
])
def test_debezium_op(t, mode, change, op):
    assert rec(t, mode, "DEBEZIUM_JSON", CHANGES[change])["payload"]["op"] == op


def test_debezium_before_and_after_include_key_columns(t):
    p = rec(t, "NEW_AND_OLD_IMAGES", "DEBEZIUM_JSON", CHANGES["update"])["payload"]
    assert p["before"] == {"id": 1, "name": "a", "note": "x", "v": 10}
    assert p["after"] == {"id": 1, "name": "a", "note": None, "v": 11}


def test_debezium_source_as_ydb_fills_it(t):
    src = rec(t, "NEW_IMAGE", "DEBEZIUM_JSON", CHANGES["scan"])["payload"]["source"]
    assert src == {"connector": "ydb", "version": "1.0.0", "ts_ms": WRITE_MS, "step": STEP, "txId": TX,
                   "snapshot": True}


def test_debezium_keys_only_has_op_and_source(t):
    assert set(rec(t, "KEYS_ONLY", "DEBEZIUM_JSON", CHANGES["update"])["payload"]) == {"op", "source"}


def test_debezium_kafka_key(t):
    r = render(t, ChangefeedOptions("KEYS_ONLY", "DEBEZIUM_JSON"), CHANGES["erase"], STEP, TX, WRITE_MS, SEQ)
    assert r.key == b'{"payload":{"id":1,"name":"a"}}'


@pytest.mark.parametrize("mode,change,name", [
    ("NEW_AND_OLD_IMAGES", "insert", "INSERT"), ("NEW_AND_OLD_IMAGES", "update", "MODIFY"),
    ("NEW_AND_OLD_IMAGES", "erase", "REMOVE"), ("NEW_IMAGE", "insert", "MODIFY"), ("KEYS_ONLY", "erase", "REMOVE"),
])
def test_dynamodb_event_name(t, mode, change, name):
    assert rec(t, mode, "DYNAMODB_STREAMS_JSON", CHANGES[change])["eventName"] == name


def test_dynamodb_record(t):
    r = rec(t, "NEW_AND_OLD_IMAGES", "DYNAMODB_STREAMS_JSON", CHANGES["update"], aws_region="eu-north-1")
    keys = {"id": {"N": "1"}, "name": {"S": "a"}}
    assert r == {
        "awsRegion": "eu-north-1",
        "dynamodb": {"ApproximateCreationDateTime": WRITE_MS, "Keys": keys,
                     "NewImage": {**keys, "v": {"N": "11"}},
                     "OldImage": {**keys, "note": {"S": "x"}, "v": {"N": "10"}},
                     "SequenceNumber": "000000000000000000005", "StreamViewType": "NEW_AND_OLD_IMAGES"},
        "eventID": f"{t.store_id}-5", "eventName": "MODIFY", "eventSource": "ydb:document-table",
        "eventVersion": "1.0",
    }


def test_dynamodb_sequence_number_has_at_least_21_digits(t):
    big = render(t, ChangefeedOptions("KEYS_ONLY", "DYNAMODB_STREAMS_JSON"), CHANGES["insert"], STEP, TX, WRITE_MS,
                 10**22)
    assert value(big)["dynamodb"]["SequenceNumber"] == str(10**22)


def test_records_are_compact_json(t):
    for fmt in FORMATS:
        r = render(t, ChangefeedOptions("NEW_AND_OLD_IMAGES", fmt), CHANGES["update"], STEP, TX, WRITE_MS, SEQ)
        assert b": " not in r.value and b", " not in r.value


def test_static_row_change_keys_render_null_clustering(make_table):
    t = make_table("CREATE TABLE ks.st (p int, c int, s int static, v int, PRIMARY KEY (p, c))")
    ch = RowChange("update", (7, None), None, {"s": 1}, {"s": 1})
    assert rec(t, "NEW_IMAGE", "JSON", ch) == {"key": [7, None], "update": {}, "newImage": {"s": 1}}
    assert rec(t, "NEW_IMAGE", "DEBEZIUM_JSON", ch)["payload"]["after"] == {"p": 7, "c": None, "s": 1}
    assert rec(t, "NEW_IMAGE", "DYNAMODB_STREAMS_JSON", ch)["dynamodb"]["Keys"] == {"p": {"N": "7"}}


# partitions ----------------------------------------------------------------------------------------------

def independent_partition(key_json: str, n: int) -> int:
    h = int(hashlib.md5(key_json.encode()).hexdigest(), 16)
    return min(h // ((2**128 - 1) // n), n - 1)


@pytest.mark.parametrize("key,key_json,expected", [
    ((1, "one"), '[1,"one"]', {1: 0, 2: 1, 3: 2, 4: 3, 7: 6, 10: 9}),
    ((2, "two"), '[2,"two"]', {1: 0, 2: 1, 3: 2, 4: 3, 7: 5, 10: 8}),
])
def test_partition_fixed_vectors(make_table, key, key_json, expected):
    t = make_table("CREATE TABLE ks.p (id int, name text, v int, PRIMARY KEY (id, name))")
    for n, p in expected.items():
        assert independent_partition(key_json, n) == p
        assert partition_of(key, t, n) == p


def test_partition_of_a_key_past_2_63(make_table):
    t = make_table("CREATE TABLE ks.p2 (id varint PRIMARY KEY, v int)")
    # md5('[13195699997286404932]') = 9890c5332f01815feed172bf67426989
    assert [partition_of((13195699997286404932,), t, n) for n in (1, 2, 3, 4, 7, 10)] == [0, 1, 1, 2, 4, 5]


def test_record_partition_is_the_key_partition(t):
    for n in (1, 3, 8):
        for k in range(20):
            ch = RowChange("update", (k, str(k)), None, None, {})
            for fmt, mode in (("JSON", "UPDATES"), ("DEBEZIUM_JSON", "KEYS_ONLY"), ("DYNAMODB_STREAMS_JSON", "KEYS_ONLY")):
                r = render(t, ChangefeedOptions(mode, fmt, partitions=n), ch, STEP, TX, WRITE_MS, SEQ)
                assert r.partition == partition_of((k, str(k)), t, n) == independent_partition(f'[{k},"{k}"]', n)


# images from stored rows --------------------------------------------------------------------------------

def test_image_of_stored_rows(db, session, make_table):
    t = make_table("CREATE TABLE ks.i (p int, c int, s int static, v int, m map<int, text>, l list<int>, "
                   "PRIMARY KEY (p, c))")
    session.execute("INSERT INTO ks.i (p, c, s, v, m, l) VALUES (1, 2, 5, 3, {1: 'a', 2: 'b'}, [9, 8])")
    session.execute("INSERT INTO ks.i (p, c) VALUES (1, 3)")
    rows = read_rows(db, t)
    clustering = [r for r in rows if not r.static]
    assert image(t, clustering[0]) == {"v": 3, "m": {1: "a", 2: "b"}, "l": [9, 8]}
    assert image(t, clustering[1]) == {"v": None, "m": None, "l": None}
    assert image(t, clustering[0], ["v"]) == {"v": 3}
    static = [r for r in rows if r.static]
    assert image(t, static[0]) == {"s": 5}
    assert image(t, None) is None


def read_rows(db, t) -> list:
    """Every live row (static rows included) of a table, as ``LiveRow`` objects."""
    out = []
    with db.store.snapshot() as txn:
        for part in stored_partitions(t, txn, db.now_seconds(), None, True, None, True):
            static = part.static_row()
            if static is not None:
                out.append(static)
            out.extend(part.rows(None, None))
    return out


# JSON records straight from serialized values (the write path's) ------------------------------------------

ROW_TYPES = {"a": "int", "b": "bigint", "c": "varint", "d": "text", "e": "ascii", "f": "boolean", "g": "double",
             "h": "frozen<list<int>>", "i": "frozen<map<text, int>>", "j": "blob", "k": "uuid", "l": "smallint",
             "m": "list<int>", "n": "list<text>"}


def _row_value(draw, name: str):
    from hypothesis import strategies as st
    kind = ROW_TYPES[name]
    if draw(st.integers(0, 4)) == 0:
        return None
    if kind in ("int", "bigint", "smallint") and draw(st.integers(0, 5)) == 0:
        return b""  # the empty value
    strategies = {
        "int": st.integers(-2**31, 2**31 - 1), "bigint": st.integers(-2**63, 2**63 - 1),
        "varint": st.integers(-2**80, 2**80), "smallint": st.integers(-2**15, 2**15 - 1),
        "text": st.text(max_size=6), "ascii": st.text(st.characters(max_codepoint=127), max_size=6),
        "boolean": st.booleans(), "double": st.floats(allow_nan=False),
        "frozen<list<int>>": st.lists(st.integers(-5, 5), max_size=3),
        "list<int>": st.lists(st.integers(-2**31, 2**31 - 1), max_size=3), "list<text>": st.lists(st.text(max_size=3),
                                                                                                 max_size=3),
        "frozen<map<text, int>>": st.dictionaries(st.text(max_size=3), st.integers(-5, 5), max_size=2),
        "blob": st.binary(max_size=4), "uuid": st.uuids()}
    return draw(strategies[kind])


def test_json_records_from_serialized_values_are_those_of_the_row_change(make_table):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from logtide.changefeed.json_format import JsonRecords
    cols = ", ".join(f"{n} {t}" for n, t in ROW_TYPES.items())
    t = make_table(f"CREATE TABLE ks.rows (pk int, ck text, s int static, {cols}, PRIMARY KEY (pk, ck))")
    by_name = {c.name: c for c in t.columns}

    def ser(name, v):
        return v if v is None or v == b"" and ROW_TYPES[name] != "blob" else by_name[name].type.serialize(v)

    @settings(max_examples=150, deadline=None)
    @given(st.data())
    def check(data):
        pk, ck = data.draw(st.integers(-9, 9)), data.draw(st.text(max_size=3))
        images = [None if data.draw(st.booleans()) and i == 0 else {n: _row_value(data.draw, n) for n in ROW_TYPES}
                  for i in range(2)]
        if images[0] is not None and data.draw(st.booleans()):  # some values left as they were
            images[1] = {n: images[0][n] if data.draw(st.booleans()) else v for n, v in (images[1] or {}).items()}
        erase = images[1] is None or data.draw(st.integers(0, 3)) == 0
        old, new = images[0], None if erase else images[1]
        raw = [None if img is None else [ser(c.name, img[c.name]) for c in JsonRecords(t, ChangefeedOptions(
            "NEW_IMAGE", "JSON")).row_columns] for img in (old, new)]
        key = (by_name["pk"].type.serialize(pk), by_name["ck"].type.serialize(ck))
        for mode in ("KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES"):
            jr = JsonRecords(t, ChangefeedOptions(mode, "JSON"))
            values = [None if img is None else {c.name: (None if b is None else c.type.deserialize(b))
                                                for c, b in zip(jr.row_columns, r)} for img, r in zip((old, new), raw)]
            change = RowChange("erase" if erase else "update", (pk, ck), values[0], values[1], {})
            key_json, text = jr.row_record(erase, key, raw[0], raw[1], STEP, TX)
            assert key_json == jr.key_json(change.key)
            assert text == jr.record(change, key_json, STEP, TX)
    check()
