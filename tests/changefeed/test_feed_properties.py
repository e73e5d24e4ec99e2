"""Hypothesis properties of changefeeds over random CQL workloads, static columns included (spec 004).

* replaying a NEW_AND_OLD_IMAGES JSON feed key by key rebuilds the table;
* each record's oldImage equals the previous newImage of its key;
* in every partition offsets are contiguous from 0, virtual timestamps never go down, and no
  record after a barrier has a smaller one (writes with an old USING TIMESTAMP included);
* a DEBEZIUM_JSON feed carries the same changes as the JSON feed (before/after = images + key, op);
* a NEW_IMAGE feed rebuilds it too, and an UPDATES feed (merging written columns) agrees with it.
"""

from __future__ import annotations

import json
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logtide
from logtide.changefeed.replay import barrier_breaks, image_chain_breaks, key_text, order_breaks, replay
from logtide.changefeed.values import dumps, to_json_value
from logtide.clock import ManualClock

from .feedutil import KS, records

TABLE = ("CREATE TABLE ks.t (pk int, ck int, s int static, v int, w text, m map<int, int>, st set<int>, l list<int>, "
         "PRIMARY KEY (pk, ck))")
VALUE_COLUMNS = ("l", "m", "st", "v", "w")

small = st.integers(0, 3)
maybe_int = st.one_of(st.none(), st.integers(-3, 3)).map(lambda v: "null" if v is None else str(v))
maybe_text = st.one_of(st.none(), st.sampled_from(["a", "b"])).map(lambda v: "null" if v is None else f"'{v}'")

assignment = st.one_of(
    maybe_int.map(lambda v: f"v = {v}"),
    maybe_text.map(lambda v: f"w = {v}"),
    st.builds(lambda k, v: f"m = m + {{{k}: {v}}}", small, small),
    st.builds(lambda k: f"m = m - {{{k}}}", small),
    st.builds(lambda a, b: f"m = {{{a}: {b}}}", small, small),
    st.builds(lambda e: f"st = st + {{{e}}}", small),
    st.builds(lambda e: f"st = st - {{{e}}}", small),
    st.builds(lambda e: f"l = l + [{e}]", small),
    st.builds(lambda e: f"l = [{e}] + l", small),
    st.just("l = null"),
)
insert = st.builds(
    lambda pk, ck, v, w: f"INSERT INTO ks.t (pk, ck, v, w) VALUES ({pk}, {ck}, {v}, {w})", small, small, maybe_int,
    maybe_text)
insert_collections = st.builds(
    lambda pk, ck, a: f"INSERT INTO ks.t (pk, ck, m, st, l) VALUES ({pk}, {ck}, {{{a}: {a}}}, {{{a}}}, [{a}, {a}])",
    small, small, small)
using = st.sampled_from(["", "", "", " USING TIMESTAMP 1"])  # an old timestamp: the write may not take effect
update = st.builds(
    lambda pk, ck, assigns, u: f"UPDATE ks.t{u} SET {', '.join(assigns)} WHERE pk = {pk} AND ck = {ck}",
    small, small, st.lists(assignment, min_size=1, max_size=3), using)
delete = st.one_of(
    st.builds(lambda pk, ck: f"DELETE FROM ks.t WHERE pk = {pk} AND ck = {ck}", small, small),
    st.builds(lambda pk, c, ck: f"DELETE {c} FROM ks.t WHERE pk = {pk} AND ck = {ck}", small,
              st.sampled_from(VALUE_COLUMNS), small),
    st.builds(lambda pk, ck: f"DELETE FROM ks.t WHERE pk = {pk} AND ck > {ck}", small, small),
    st.builds(lambda pk: f"DELETE FROM ks.t WHERE pk = {pk}", small),
)
static = st.one_of(
    st.builds(lambda pk, v: f"UPDATE ks.t SET s = {v} WHERE pk = {pk}", small, maybe_int),
    st.builds(lambda pk, ck, v: f"INSERT INTO ks.t (pk, ck, s) VALUES ({pk}, {ck}, {v})", small, small, maybe_int),
    st.builds(lambda pk: f"DELETE s FROM ks.t WHERE pk = {pk}", small),
)
single = st.one_of(insert, insert_collections, update, delete, static)
batch = st.lists(st.one_of(insert, update.filter(lambda q: "USING" not in q), delete), min_size=2, max_size=3).map(
    lambda stmts: "BEGIN UNLOGGED BATCH " + "; ".join(stmts) + "; APPLY BATCH")
step = st.tuples(st.one_of(single, single, single, batch), st.integers(0, 1500), st.booleans())


def table_state(session) -> dict[str, dict]:
    """The table as a NEW_AND_OLD_IMAGES feed shows rows: key text -> JSON values of the non-key columns."""
    t = session.db.catalog.table("ks", "t")
    cols = {c.name: c.type for c in t.columns}
    out = {}
    for row in session.execute("SELECT * FROM ks.t"):
        r = row._asdict()
        if r["s"] is not None:  # the static row: keyed by the partition key, null clustering
            out[key_text({"key": [r["pk"], None]})] = {"s": r["s"]}
        if r["ck"] is not None:
            key = json.loads(dumps([r["pk"], r["ck"]]))
            out[key_text({"key": key})] = {name: json.loads(dumps(to_json_value(cols[name], r[name])))
                                           for name in VALUE_COLUMNS}
    return out


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, min_size=1, max_size=25), st.integers(1, 3))
def test_feeds_rebuild_the_table_and_keep_their_promises(workload, partitions):
    clock = ManualClock()
    with tempfile.TemporaryDirectory() as d:
        db = logtide.open(d + "/data", clock=clock, synchronous="OFF")
        try:
            s = db.session()
            s.execute(KS)
            s.execute(TABLE)
            s.execute("ALTER TABLE ks.t ADD CHANGEFEED images WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON', "
                      "VIRTUAL_TIMESTAMPS = TRUE, BARRIERS_INTERVAL = Interval('PT1S'), "
                      f"TOPIC_MIN_ACTIVE_PARTITIONS = {partitions})")
            s.execute("ALTER TABLE ks.t ADD CHANGEFEED newonly WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON')")
            s.execute("ALTER TABLE ks.t ADD CHANGEFEED updates WITH (MODE = 'UPDATES', FORMAT = 'JSON')")
            s.execute("ALTER TABLE ks.t ADD CHANGEFEED dbz WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'DEBEZIUM_JSON', "
                      f"TOPIC_MIN_ACTIVE_PARTITIONS = {partitions})")
            for statement, advance_ms, tick in workload:
                s.execute(statement)
                clock.advance(micros=advance_ms * 1000)
                if tick:
                    db.feeds.tick(retention=False)
            db.feeds.tick(retention=False)

            reader = db.changefeeds
            expected = table_state(s)
            full = [json.loads(r.value) for r in records(reader, "ks/t/images")]
            assert replay(full) == expected
            assert image_chain_breaks(full) == []
            for p in reader.partitions("ks/t/images"):
                stored = records(reader, "ks/t/images", p.partition)
                assert [r.offset for r in stored] == list(range(p.end_offset))
                values = [json.loads(r.value) for r in stored]
                assert barrier_breaks(values) == []
                assert order_breaks(values) == []
            new = [json.loads(r.value) for r in records(reader, "ks/t/newonly")]
            assert replay(new, "NEW_IMAGE") == expected
            upd = [json.loads(r.value) for r in records(reader, "ks/t/updates")]
            merged = {k: {c: row.get(c) for c in (("s",) if k.endswith(",null]") else VALUE_COLUMNS)}
                      for k, row in replay(upd, "UPDATES").items()}
            assert {k: merged.get(k) for k in expected} == expected
            # rows an UPDATES feed cannot tell apart from vanished ones: every column null
            assert all(set(row.values()) == {None} for k, row in merged.items() if k not in expected)
            dbz = [r for r in records(reader, "ks/t/dbz")]
            data = [r for r in full if "resolved" not in r]
            assert len(dbz) == len(data)
            for j, d in zip(data, dbz):
                key = dict(zip(("pk", "ck"), j["key"]))
                p = json.loads(d.value)["payload"]
                assert json.loads(d.key) == {"payload": key}
                assert p.get("before") == (None if "oldImage" not in j else {**key, **j["oldImage"]})
                assert p.get("after") == (None if "newImage" not in j else {**key, **j["newImage"]})
                assert p["op"] == ("d" if "erase" in j else "u" if "oldImage" in j else "c")
                assert [p["source"]["step"], p["source"]["txId"]] == j["ts"]
        finally:
            db.close()
