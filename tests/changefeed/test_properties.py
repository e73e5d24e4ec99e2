"""Hypothesis properties of a NEW_AND_OLD_IMAGES feed over random workloads of every statement kind (spec 004).

* replaying the feed key by key (newImage replaces, erase removes) rebuilds the table, static rows included;
* each record's oldImage equals the previous newImage of its key (absent when the row did not exist);
* offsets are contiguous and virtual timestamps never decrease within a partition.
"""

from __future__ import annotations

import json
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logtide
from logtide.changefeed.render import image
from logtide.changefeed.values import dumps, to_json_value
from logtide.clock import ManualClock
from logtide.query.read import stored_partitions

from .feedutil import KS, records

TABLE = "CREATE TABLE ks.t (pk int, ck int, s int static, v int, w text, m map<int, int>, l list<int>, PRIMARY KEY (pk, ck))"

small = st.integers(0, 3)
val = st.one_of(st.none(), st.integers(-3, 3)).map(lambda v: "null" if v is None else str(v))
assign = st.one_of(
    st.builds(lambda v: f"v = {v}", val),
    st.builds(lambda w: f"w = {w}", st.sampled_from(["null", "'a'", "'b'"])),
    st.builds(lambda k, v: f"m = m + {{{k}: {v}}}", small, small),
    st.builds(lambda k: f"m = m - {{{k}}}", small),
    st.builds(lambda e: f"l = l + [{e}]", small),
    st.just("l = null"),
)
static_assign = st.builds(lambda v: f"s = {v}", val)
using = st.sampled_from(["", "", "", " USING TIMESTAMP 1"])  # an old timestamp: the write may not take effect

dml = st.one_of(
    st.builds(lambda pk, ck, v, u: f"INSERT INTO ks.t (pk, ck, v) VALUES ({pk}, {ck}, {v}){u}", small, small, val, using),
    st.builds(lambda pk, ck, a, u: f"UPDATE ks.t{u} SET {', '.join(a)} WHERE pk = {pk} AND ck = {ck}",
              small, small, st.lists(assign, min_size=1, max_size=3), using),
    st.builds(lambda pk, a: f"UPDATE ks.t SET {a} WHERE pk = {pk}", small, static_assign),
    st.builds(lambda pk, ck: f"DELETE FROM ks.t WHERE pk = {pk} AND ck = {ck}", small, small),
    st.builds(lambda pk, ck, c: f"DELETE {c} FROM ks.t WHERE pk = {pk} AND ck = {ck}", small, small,
              st.sampled_from(["v", "w", "m", "l"])),
    st.builds(lambda pk, lo, n: f"DELETE FROM ks.t WHERE pk = {pk} AND ck >= {lo} AND ck < {lo + n}", small, small,
              st.integers(1, 3)),
    st.builds(lambda pk: f"DELETE FROM ks.t WHERE pk = {pk}", small),
    st.builds(lambda pk: f"DELETE s FROM ks.t WHERE pk = {pk}", small),
)
statement = st.one_of(
    dml,
    st.lists(dml.filter(lambda s: "USING" not in s), min_size=2, max_size=3).map(
        lambda ss: "BEGIN UNLOGGED BATCH " + "; ".join(ss) + "; APPLY BATCH"),
)


def _table_images(db) -> dict[str, dict]:
    """The table's live rows as the feed would show them: compact JSON key -> JSON image."""
    t = db.catalog.table("ks", "t")
    out = {}
    now = db.now_seconds()

    def js(img):
        return json.loads(dumps({c: to_json_value(t.column(c).type, v) for c, v in img.items()}))
    with db.store.snapshot() as txn:
        for view in stored_partitions(t, txn, now, None, True, None, True):
            pk = t.partition_key[0].type.deserialize(view.key[0])
            st_row = view.static_row()
            if st_row is not None:
                out[json.dumps([pk, None])] = js(image(t, st_row, ["s"]))
            for lr in view.rows(None, None):
                ck = t.clustering_key[0].type.deserialize(lr.clustering[0])
                out[json.dumps([pk, ck])] = js(image(t, lr, ["v", "w", "m", "l"]))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(statement, min_size=1, max_size=25), st.integers(1, 3))
def test_replaying_the_feed_rebuilds_the_table_and_old_images_chain(stmts, partitions):
    with tempfile.TemporaryDirectory() as d:
        with logtide.open(d, clock=ManualClock(), synchronous="OFF") as db:
            s = db.session()
            s.execute(KS)
            s.execute(TABLE)
            s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON', "
                      f"VIRTUAL_TIMESTAMPS = TRUE, TOPIC_MIN_ACTIVE_PARTITIONS = {partitions})")
            for q in stmts:
                s.execute(q)
                db.clock.advance(micros=1000)
            state: dict[str, dict] = {}
            for p in db.changefeeds.partitions("ks/t/f"):
                recs = records(db.changefeeds, "ks/t/f", p.partition)
                assert [r.offset for r in recs] == list(range(p.end_offset))
                last_ts = None
                for r in recs:
                    v = json.loads(r.value)
                    assert last_ts is None or v["ts"] >= last_ts
                    last_ts = v["ts"]
                    key = json.dumps(v["key"])
                    assert v.get("oldImage") == state.get(key), (key, v, state.get(key))
                    if "erase" in v or "newImage" not in v:
                        state.pop(key, None)
                    else:
                        state[key] = v["newImage"]
            assert state == _table_images(db)
