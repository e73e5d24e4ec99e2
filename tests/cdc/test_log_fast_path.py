"""The derivation's fast path for plain upserts gives exactly the rows of the general derivation.

``Derivation.rows`` derives the commonest update (clustered rows upserted with atomic cells of one
timestamp, no TTL) directly; every other update takes the general split into changes.  Random
writes and batches of every CDC option check, for each update the fast path takes, that it gives
the same rows, in the same order, with the same values, as the general path would.
"""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logtide
from logtide.cdc import log as cdc_log
from logtide.clock import ManualClock

OPTIONS = ["{'enabled': true, 'preimage': 'full', 'postimage': true}",
           "{'enabled': true, 'preimage': true, 'postimage': true}",
           "{'enabled': true, 'preimage': true}",
           "{'enabled': true, 'postimage': true, 'delta': 'keys'}",
           "{'enabled': true}"]

small = st.integers(0, 3)
value = st.one_of(st.none(), st.integers(-3, 3)).map(lambda v: "null" if v is None else str(v))
statement = st.one_of(
    st.builds(lambda pk, ck, v: f"INSERT INTO ks.t (pk, ck, v) VALUES ({pk}, {ck}, {v})", small, small, value),
    st.builds(lambda pk, ck, v, w: f"INSERT INTO ks.t (pk, ck, v, w) VALUES ({pk}, {ck}, {v}, '{w}')",
              small, small, value, st.sampled_from("ab")),
    st.builds(lambda pk, ck: f"INSERT INTO ks.t (pk, ck) VALUES ({pk}, {ck})", small, small),
    st.builds(lambda pk, ck, v: f"UPDATE ks.t SET v = {v} WHERE pk = {pk} AND ck = {ck}", small, small, value),
    st.builds(lambda pk, ck: f"UPDATE ks.t SET w = null, v = 1 WHERE pk = {pk} AND ck = {ck}", small, small),
    st.builds(lambda pk, ck, e: f"UPDATE ks.t SET m = m + {{{e}: {e}}} WHERE pk = {pk} AND ck = {ck}",
              small, small, small),
    st.builds(lambda pk, ck: f"INSERT INTO ks.t (pk, ck, v) VALUES ({pk}, {ck}, 1) USING TTL 100", small, small),
    st.builds(lambda pk, ck: f"DELETE FROM ks.t WHERE pk = {pk} AND ck = {ck}", small, small),
    st.builds(lambda pk, s: f"UPDATE ks.t SET s = {s} WHERE pk = {pk}", small, value),
)
write = st.one_of(statement.map(lambda s: [s]), st.lists(statement, min_size=2, max_size=6))


def _rows(rows):
    return [(r.timestamp, r.seq, list(r.values.items())) for r in rows]


@pytest.fixture(scope="module")
def compared():
    """Patches the derivation so that every update the fast path takes is also derived the general way."""
    seen = {"fast": 0}
    original = cdc_log.Derivation.rows

    def both(self):
        again = cdc_log.Derivation(self.base, self.opts, self.pu, self.pre)
        fast = self._upsert_rows()
        if fast is None:
            return self.general_rows()
        seen["fast"] += 1
        assert _rows(fast) == _rows(again.general_rows())
        return fast

    cdc_log.Derivation.rows = both
    yield seen
    cdc_log.Derivation.rows = original


# a table with a non-frozen collection, and one of atomic columns only (whose postimages the fast path
# makes from the values alone)
TABLES = {"with a collection": "s int static, v int, w text, m map<int, int>",
          "atomic columns only": "s int static, v int, w text"}


@pytest.mark.parametrize("columns", TABLES.values(), ids=list(TABLES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=st.sampled_from(OPTIONS), writes=st.lists(write, min_size=1, max_size=8))
def test_fast_path_rows_equal_the_general_derivation(compared, columns, options, writes):
    if " m " not in columns:
        writes = [[x for x in w if " m " not in x] for w in writes]
        writes = [w for w in writes if w]
    with tempfile.TemporaryDirectory() as d, logtide.open(d, clock=ManualClock(1_000_000), synchronous="OFF") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute(f"CREATE TABLE ks.t (pk int, ck int, {columns}, PRIMARY KEY (pk, ck)) WITH cdc = {options}")
        for w in writes:
            if len(w) == 1:
                s.execute(w[0])
            else:
                s.execute("BEGIN BATCH " + "; ".join(w) + "; APPLY BATCH")


def test_fast_path_is_taken(compared):
    assert compared["fast"] > 0
