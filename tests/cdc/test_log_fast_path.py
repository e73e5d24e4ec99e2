"""The derivation's fast paths for plain upserts give exactly the rows of the general derivation.

``Derivation.rows`` derives the commonest update (clustered rows upserted with atomic cells of one
timestamp, no TTL) directly; every other update takes the general split into changes.  Random
writes and batches of every CDC option check, for each update the fast path takes, that it gives
the same rows, in the same order, with the same values, as the general path would.

``cdc/upsert.py`` goes further for tables without non-frozen collections: it derives and encodes
such an update's log rows in one pass.  The same writes check, for each update it takes, that the
stored bytes (keys and records) are exactly ``log_update`` of the general derivation's rows.
"""

from __future__ import annotations

import random
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logtide
from logtide.cdc import log as cdc_log
from logtide.cdc import log_rows as cdc_log_rows
from logtide.cdc import row_state as cdc_row_state
from logtide.cdc.log_upsert import upsert_rows
from logtide.cdc import upsert as cdc_upsert
from logtide.cdc import capture as cdc_capture
from logtide.cdc.capture import CdcTimeuuids
from logtide.mutation.cells import Cell
from logtide.query.read import LiveRow, live_row
from logtide.schema import types as T
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
        fast = upsert_rows(self)
        if fast is None:
            return self.general_rows()
        seen["fast"] += 1
        assert _rows(fast) == _rows(again.general_rows())
        return fast

    cdc_log.Derivation.rows = both
    original_append = cdc_upsert.UpsertTemplate.append

    def both_encoded(self, pu, ts, before, stream, token, timeuuid, now):
        made: dict[int, bytes] = {}

        def same_timeuuid(t: int) -> bytes:  # the one pass and the general path get the same cdc$time
            if t not in made:
                made[t] = timeuuid(t)
            return made[t]

        got = original_append(self, pu, ts, before, stream, token, same_timeuuid, now)
        if got is None:
            return None
        seen["one pass"] = seen.get("one pass", 0) + 1
        pre = cdc_row_state.PreState(rows={ck: _live_row(pu, ck, before.get(ck)) for ck in pu.rows})
        rows = cdc_log.Derivation(self.base, self.opts, pu, pre).general_rows()
        want = cdc_log_rows.log_update(self.log, stream, rows, same_timeuuid, self.opts.ttl, now, token)
        assert (got.stream_id, got.token, got.rows) == (want.stream_id, want.token, want.rows)
        return got

    cdc_upsert.UpsertTemplate.append = both_encoded
    original_values = cdc_capture.live_values

    def values_as_read(table, row, outer, now, plan):  # the values the one pass reads are the live row's
        got = original_values(table, row, outer, now, plan)
        lr = live_row(table, row, outer, now, (), b"")
        assert got == (None if lr is None else ({n: c.value for n, c in lr.cells.items()},
                                                 lr.marker if lr.marker_live else None))
        return got

    cdc_capture.live_values = values_as_read
    yield seen
    cdc_log.Derivation.rows = original
    cdc_upsert.UpsertTemplate.append = original_append
    cdc_capture.live_values = original_values


def _live_row(pu, ck, values):
    """A live row of the one pass's values and marker (``query.read.live_values``), as the general derivation
    reads it."""
    if values is None:
        return None
    cells = {n: Cell(0, v) for n, v in values[0].items() if v is not None}
    return LiveRow(pu.key, pu.rows[ck].clustering, ck, cells, {}, marker_live=values[1] is not None)


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


def test_one_pass_is_taken(compared):
    assert compared.get("one pass", 0) > 0


def test_one_pass_encodes_wide_rows_and_long_values(compared):
    """Maps of 16 entries and more, and values of 256 and 65,536 bytes and more, take MessagePack's longer
    headers: the one pass writes them as the general encoder does (checked by ``compared``)."""
    columns = ", ".join(f"c{i} text" for i in range(18))
    before = compared.get("one pass", 0)
    with tempfile.TemporaryDirectory() as d, logtide.open(d, clock=ManualClock(1_000_000), synchronous="OFF") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute(f"CREATE TABLE ks.w (pk text, p2 int, ck blob, {columns}, PRIMARY KEY ((pk, p2), ck)) "
                  "WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}")
        names = ", ".join(f"c{i}" for i in range(18))
        insert = s.prepare(f"INSERT INTO ks.w (pk, p2, ck, {names}) VALUES (?, ?, ?, {', '.join('?' * 18)})")
        for n in (0, 255, 256, 65535, 65536, 70000):
            key = ["k" * min(n, 300), n, b"\x00" * min(n, 300)]  # a key is at most 65,535 bytes
            s.execute(insert, [*key, *[("v" * n if i % 2 else None) for i in range(18)]])
            s.execute(insert, [*key, *[("w" * (n + i)) for i in range(18)]])
        s.execute("UPDATE ks.w SET c3 = null, c4 = 'x' WHERE pk = '' AND p2 = 0 AND ck = 0x")
    assert compared["one pass"] >= before + 13


def test_keyed_cdc_timeuuids_are_the_values_with_their_comparable_keys():
    """``CdcTimeuuids.keyed`` (what the one pass uses) gives what calling it gives, with ``TIMEUUID.comparable``
    of it, drawing the same random bits."""
    micros = [0, 1, 1_700_000_000_123_456, 2**56 - 1, 123_456_789_012_345]
    plain, keyed = CdcTimeuuids(random.Random(3)), CdcTimeuuids(random.Random(3))
    for m in micros * 20:
        tu = plain(m)
        assert keyed.keyed(m) == (tu, T.TIMEUUID.comparable(tu))


def test_one_pass_numbers_a_thousand_rows_of_one_batch(compared):
    """``cdc$batch_seq_no`` past the values the one pass makes at import (``upsert.SEQS``): one batch of 350
    upserts in one partition writes 1,050 log rows, numbered as the general path numbers them."""
    before = compared.get("one pass", 0)
    with tempfile.TemporaryDirectory() as d, logtide.open(d, clock=ManualClock(1_000_000), synchronous="OFF") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) "
                  "WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}")
        insert = s.prepare("INSERT INTO ks.t (pk, ck, v) VALUES (0, ?, ?)")
        s.execute_batch("UNLOGGED", [(insert, (ck, ck)) for ck in range(350)])
        s.execute_batch("UNLOGGED", [(insert, (ck, -ck)) for ck in range(350)])
        assert len(list(s.execute("SELECT * FROM ks.t_scylla_cdc_log"))) == 350 * 2 + 350 * 3
    assert compared["one pass"] == before + 2
