"""A plain upsert's log rows made in one pass are exactly the general derivation's.

``cdc/upsert.py`` derives and encodes the commonest update (clustered rows upserted with cells of one timestamp,
no TTL; elements added to or removed from collections) in one pass, on tables with or without non-frozen
collections and UDTs.  Random writes
and batches of every CDC option check, for each update it takes, that the stored bytes (keys and records)
are exactly ``log_update`` of the general derivation's rows, and that the values it reads before the write
(each collection as its image) are the live row's.
"""

from __future__ import annotations

import random
import struct
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logtide
from logtide.cdc import log as cdc_log
from logtide.cdc import log_rows as cdc_log_rows
from logtide.cdc import row_state as cdc_row_state
from logtide.cdc import upsert as cdc_upsert
from logtide.cdc import capture as cdc_capture
from logtide.cdc.capture import CdcTimeuuids
from logtide.cdc.log_values import frozen_elements, image_elements
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
    st.builds(lambda pk, ck, e: f"UPDATE ks.t SET m = m - {{{e}}} WHERE pk = {pk} AND ck = {ck}", small, small, small),
    st.builds(lambda pk, ck, e: f"UPDATE ks.t SET m = {{{e}: 0}} WHERE pk = {pk} AND ck = {ck}", small, small, small),
    st.builds(lambda pk, ck, e: f"UPDATE ks.t SET l = l + [{e}] WHERE pk = {pk} AND ck = {ck}", small, small, small),
    st.builds(lambda pk, ck, e: f"UPDATE ks.t SET e = e + {{{e}}} WHERE pk = {pk} AND ck = {ck}", small, small, small),
    st.builds(lambda pk, ck, v: f"UPDATE ks.t SET u.f = {v} WHERE pk = {pk} AND ck = {ck}", small, small, value),
    st.builds(lambda pk, ck: f"INSERT INTO ks.t (pk, ck, v) VALUES ({pk}, {ck}, 1) USING TTL 100", small, small),
    st.builds(lambda pk, ck: f"DELETE FROM ks.t WHERE pk = {pk} AND ck = {ck}", small, small),
    st.builds(lambda pk, s: f"UPDATE ks.t SET s = {s} WHERE pk = {pk}", small, value),
)
write = st.one_of(statement.map(lambda s: [s]), st.lists(statement, min_size=2, max_size=6))


@pytest.fixture(scope="module")
def compared():
    """Patches the one pass so that every update it takes is also derived and encoded the general way."""
    seen: dict[str, int] = {}
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
        if self.image_plan:
            seen["one pass with collections"] = seen.get("one pass with collections", 0) + 1
        if any(row.complex for row in pu.rows.values()):
            seen["one pass of collection changes"] = seen.get("one pass of collection changes", 0) + 1
        pre = cdc_row_state.PreState(rows={ck: _live_row(pu, ck, before.get(ck), self.image_plan) for ck in pu.rows})
        rows = cdc_log.Derivation(self.base, self.opts, pu, pre).rows()
        want = cdc_log_rows.log_update(self.log, stream, rows, same_timeuuid, self.opts.ttl, now, token)
        assert (got.stream_id, got.token, got.rows) == (want.stream_id, want.token, want.rows)
        return got

    cdc_upsert.UpsertTemplate.append = both_encoded
    original_values = cdc_capture.live_values

    def values_as_read(table, row, outer, now, plan):  # the values the one pass reads are the live row's, with
        got = original_values(table, row, outer, now, plan)  # each collection as the general path's image of it
        lr = live_row(table, row, outer, now, (), b"")
        if lr is None:
            assert got is None
            return got
        want = {n: c.value for n, c in lr.cells.items()}
        for name, entry in plan.items():
            elems = lr.complex.get(name)
            if elems and entry[0] is not None:  # a column of the plan's liveness only gives no value
                want[name] = frozen_elements(table.column(name).type, [(k, c.value) for k, c in elems])
                image = got[0][name]
                if not isinstance(table.column(name).type, T.UserType):  # a map's, set's or list's last key too
                    assert image.last == image_elements(entry[0].type, image).popitem()[0]
        assert got == (want, lr.marker if lr.marker_live else None)
        return got

    cdc_capture.live_values = values_as_read
    yield seen
    cdc_upsert.UpsertTemplate.append = original_append
    cdc_capture.live_values = original_values


def _live_row(pu, ck, values, plan):
    """A live row of the one pass's values and marker (``query.read.live_values`` with the template's
    ``image_plan``: each collection's image), as the general derivation reads it: atomic cells, and the
    element cells of each collection decoded from its image."""
    if values is None:
        return None
    cells = {n: Cell(0, v) for n, v in values[0].items() if v is not None and n not in plan}
    complex_ = {n: [(k, Cell(0, v)) for k, v in image_elements(plan[n][0].type, image).items()]
                for n, image in values[0].items() if n in plan}
    # a row live only by a collection whose liveness alone was read (a preimage of the changed columns, which
    # holds no other): its liveness stands as a marker, which such a preimage does not show
    marker_live = values[1] is not None or not (cells or complex_)
    return LiveRow(pu.key, pu.rows[ck].clustering, ck, cells, complex_, marker_live=marker_live)


# a table with non-frozen collections and a non-frozen UDT (whose images the one pass takes as the live values
# give them, ``UpsertTemplate.image_plan``), and one of atomic columns only (whose images are the values alone)
TABLES = {"with collections": "s int static, v int, w text, m map<int, int>, l list<int>, e set<int>, u pair",
          "atomic columns only": "s int static, v int, w text"}
COMPLEX_WRITES = (" m ", " l ", " e ", " u.f ")  # statements that change a collection or the UDT


def _atomic(writes: list[list[str]]) -> list[list[str]]:
    """``writes`` without the statements that change a collection or the UDT (for the atomic table)."""
    writes = [[x for x in w if not any(c in x for c in COMPLEX_WRITES)] for w in writes]
    return [w for w in writes if w]


@pytest.mark.parametrize("columns", TABLES.values(), ids=list(TABLES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=st.sampled_from(OPTIONS), writes=st.lists(write, min_size=1, max_size=8))
def test_fast_path_rows_equal_the_general_derivation(compared, columns, options, writes):
    if " m " not in columns:
        writes = _atomic(writes)
    with tempfile.TemporaryDirectory() as d, logtide.open(d, clock=ManualClock(1_000_000), synchronous="OFF") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TYPE ks.pair (f int, g text)")
        s.execute(f"CREATE TABLE ks.t (pk int, ck int, {columns}, PRIMARY KEY (pk, ck)) WITH cdc = {options}")
        for w in writes:
            if len(w) == 1:
                s.execute(w[0])
            else:
                s.execute("BEGIN BATCH " + "; ".join(w) + "; APPLY BATCH")


def test_one_pass_is_taken(compared):
    assert compared.get("one pass", 0) > 0


def test_one_pass_serves_atomic_writes_to_tables_with_collections(compared):
    """An upsert of atomic columns only takes the one pass on a table with collections too: its images carry
    each collection's image as the general derivation makes it (checked by ``compared`` on the random writes)."""
    assert compared.get("one pass with collections", 0) > 0


def test_one_pass_serves_additions_to_and_removals_from_collections(compared):
    """Elements added to or removed from a map, list or set, and fields of a UDT set, at one timestamp without
    a TTL or a collection tombstone, take the one pass: the delta carries the added elements and the removed
    keys, the postimage each collection's image after the write (checked by ``compared``)."""
    assert compared.get("one pass of collection changes", 0) > 0


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
