"""Reading rows for their values (``read.live_values_row``, taken by SELECTs of values) sees exactly
what the general read path sees, and the server's encoding of stored bytes equals serializing the
deserialized values.

Random writes with explicit timestamps (ties included) and TTLs, row, range, partition, cell,
static and collection tombstones, element additions and removals, a user type that gains a field
and a column dropped and added again; after each write and clock step the two read paths are
compared row by row on the base table and its CDC log: which rows are live, every column's bytes,
and the cells and element cells built lazily for ``writetime``/``ttl`` and replay.
"""

from __future__ import annotations

import tempfile
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logtide
from logtide.clock import ManualClock
from logtide.mutation.cells import NO_DELETION, Cell, ComplexColumn, Deletion, Liveness, RowData
from logtide.query.read import column_bytes, complex_plan, live_row, live_values_row, stored_partitions
from logtide.server.datatypes import encode_row
from logtide.server.wire import BodyWriter

COLUMNS = "pk, ck, s, a, b, c, m, l, f, u"
SCHEMA = ("CREATE TABLE ks.t (pk int, ck int, s int static, a int, b text, c set<int>, m map<int, text>, "
          "l list<int>, f frozen<list<int>>, u frozen<pt>, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}")

pk = st.integers(0, 1)
ck = st.integers(0, 2)
ts = st.integers(1, 6).map(lambda t: t * 10)
using = st.one_of(ts.map(lambda t: f"USING TIMESTAMP {t}"),
                  st.builds(lambda t, ttl: f"USING TIMESTAMP {t} AND TTL {ttl}", ts, st.sampled_from([30, 60])))
small = st.integers(0, 4)
statement = st.one_of(
    st.builds(lambda p, c, u, a, e: f"INSERT INTO ks.t (pk, ck, a, b, c, m, l, f, u) VALUES ({p}, {c}, {a}, 'v{a}', "
              f"{{{e}, {e + 1}}}, {{{e}: 'm{a}'}}, [{e}, {a}], [{a}], {{x: {a}, y: 'y'}}) {u}", pk, ck, using, small, small),
    st.builds(lambda p, c, u: f"INSERT INTO ks.t (pk, ck) VALUES ({p}, {c}) {u}", pk, ck, using),
    st.builds(lambda p, c, u, a: f"UPDATE ks.t {u} SET a = {a} WHERE pk = {p} AND ck = {c}", pk, ck, using, small),
    st.builds(lambda p, c, u, e: f"UPDATE ks.t {u} SET c = c + {{{e}}}, m[{e}] = 'x' WHERE pk = {p} AND ck = {c}",
              pk, ck, using, small),
    st.builds(lambda p, c, u, e: f"UPDATE ks.t {u} SET c = c - {{{e}}}, m = m - {{{e}}} WHERE pk = {p} AND ck = {c}",
              pk, ck, using, small),
    st.builds(lambda p, c, u, e: f"UPDATE ks.t {u} SET c = {{{e}}}, l = l + [{e}] WHERE pk = {p} AND ck = {c}",
              pk, ck, using, small),
    st.builds(lambda p, u, e: f"UPDATE ks.t {u} SET s = {e} WHERE pk = {p}", pk, using, small),
    st.builds(lambda p, c, t: f"DELETE FROM ks.t USING TIMESTAMP {t} WHERE pk = {p} AND ck = {c}", pk, ck, ts),
    st.builds(lambda p, c, t: f"DELETE a, c, u FROM ks.t USING TIMESTAMP {t} WHERE pk = {p} AND ck = {c}", pk, ck, ts),
    st.builds(lambda p, c, t: f"DELETE FROM ks.t USING TIMESTAMP {t} WHERE pk = {p} AND ck > {c}", pk, ck, ts),
    st.builds(lambda p, t: f"DELETE FROM ks.t USING TIMESTAMP {t} WHERE pk = {p}", pk, ts),
    st.builds(lambda p, t: f"DELETE s FROM ks.t USING TIMESTAMP {t} WHERE pk = {p}", pk, ts),
    st.sampled_from(["ALTER TYPE ks.pt ADD z int", "drop and add b"]),
)
step = st.tuples(statement, st.sampled_from([0, 0, 20, 40]))  # a statement, then the clock moves on (seconds)


def _compare_read_paths(db, name: str) -> int:
    """Both read paths over every partition of ``ks.name``; the number of live rows."""
    table = db.catalog.table("ks", name)
    live = 0
    with db.store.snapshot() as txn:
        now = db.now_seconds()
        for view in stored_partitions(table, txn, now, None, True, None, True):
            general = list(view.rows(None, None))
            fast = list(view.rows(None, None, values=True))
            assert [r.ck for r in fast] == [r.ck for r in general]
            for g, f in zip(general, fast):
                assert f.marker_live == g.marker_live and f.clustering == g.clustering
                for col in table.columns:
                    if not col.is_primary_key:
                        assert column_bytes(f, col) == column_bytes(g, col), col.name
                assert f.cells == g.cells and f.complex == g.complex
            live += len(general)
    return live


def _compare_results(session) -> None:
    """A plain selection (stored bytes, SelectResult) against the general one (with writetime)."""
    plain = session.execute(f"SELECT {COLUMNS} FROM ks.t")
    general = session.execute(f"SELECT {COLUMNS}, writetime(a) FROM ks.t")
    assert [tuple(r) for r in plain] == [tuple(r)[:-1] for r in general]
    count, content = plain.wire_rows()
    w = BodyWriter()
    for r in general:
        encode_row(w, tuple(r)[:-1], plain.columns)
    assert (count, content) == (len(general.rows), w.getvalue())
    paged, state = [], None
    while True:
        page = session.execute(f"SELECT {COLUMNS} FROM ks.t", page_size=2, paging_state=state)
        paged += [tuple(r) for r in page]
        state = page.paging_state
        if state is None:
            break
    assert paged == [tuple(r) for r in plain]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(step, min_size=4, max_size=25))
def test_reading_for_values_sees_what_the_general_read_path_sees(steps):
    clock = ManualClock()
    with tempfile.TemporaryDirectory() as d:
        db = logtide.open(d, clock=clock, synchronous="OFF")
        try:
            s = db.session()
            s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
            s.execute("CREATE TYPE ks.pt (x int, y text)")
            s.execute(SCHEMA)
            altered = False
            for stmt, seconds in steps:
                if stmt == "drop and add b":
                    s.execute("ALTER TABLE ks.t DROP b")
                    s.execute("ALTER TABLE ks.t ADD b text")
                elif stmt.startswith("ALTER TYPE"):
                    if altered:
                        continue
                    altered = True
                    s.execute(stmt)
                else:
                    s.execute(stmt)
                clock.advance(seconds=seconds)
                _compare_read_paths(db, "t")
            _compare_read_paths(db, "t_scylla_cdc_log")
            _compare_results(s)
        finally:
            db.close()


def test_a_user_type_value_written_before_a_new_field_is_sent_with_the_field_null(session):
    session.execute("CREATE TYPE pt (x int, y text)")
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, u frozen<pt>, us frozen<set<frozen<pt>>>)")
    session.execute("INSERT INTO t (pk, u, us) VALUES (1, {x: 1, y: 'a'}, {{x: 2, y: 'b'}})")
    session.execute("ALTER TYPE pt ADD z int")
    result = session.execute("SELECT u, us FROM t")
    _, content = result.wire_rows()
    w = BodyWriter()
    encode_row(w, tuple(result.rows[0]), result.columns)
    assert content == w.getvalue()
    assert result.rows[0].u.z is None


# --- the two functions side by side on stored rows no CQL write could make (shadowed data is purged
# on write), around the columns' drop times and the read's time NOW

NOW = 1_600_000_000
INT = [i.to_bytes(4, "big", signed=True) for i in range(-1, 3)]
TIMEUUIDS = [uuid.UUID(fields=(t, 0x11f1, 0x1000 | 0x1e8, 0x80, 0, 1)).bytes for t in (3, 1, 2)]


@pytest.fixture(scope="module")
def dropped_table(tmp_path_factory):
    """``ks.t`` with columns ``b`` and ``c`` dropped and added again (so both have a drop time)."""
    db = logtide.open(tmp_path_factory.mktemp("data"), synchronous="OFF")
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE ks.t (pk int, ck int, a int, b text, c set<int>, m map<int, text>, l list<int>, "
              "PRIMARY KEY (pk, ck))")
    for name, t in (("b", "text"), ("c", "set<int>")):
        s.execute(f"ALTER TABLE ks.t DROP {name}")
        s.execute(f"ALTER TABLE ks.t ADD {name} {t}")
    table = db.catalog.table("ks", "t")
    db.close()
    return table


def _stored_rows(drops: list[int]):
    ts = st.sampled_from(sorted({d + k for d in drops for k in (-10, 0, 10)}))
    deletion = st.one_of(st.none(), st.builds(Deletion, ts, st.just(NOW)))
    expiry = st.one_of(st.just((0, NO_DELETION)), st.sampled_from([(30, NOW - 1), (30, NOW), (30, NOW + 1)]))
    cell = st.builds(lambda t, v, e: Cell(t, v, *e) if v is not None else Cell(t, None, 0, NOW), ts,
                     st.sampled_from([None, INT[1], INT[2], b""]), expiry)
    marker = st.one_of(st.none(), st.builds(lambda t, e: Liveness(t, *e), ts, expiry))
    elements = st.dictionaries(st.sampled_from(INT), cell, max_size=3)
    lists = st.dictionaries(st.sampled_from(TIMEUUIDS), cell.filter(lambda c: c.value is None or c.value != b""),
                            max_size=3)
    complex_ = st.fixed_dictionaries({}, optional={
        "c": st.builds(ComplexColumn, deletion, elements.map(lambda d: {k: c._replace(value=None if c.value is None
                                                                                     else b"") for k, c in d.items()})),
        "m": st.builds(ComplexColumn, deletion, elements), "l": st.builds(ComplexColumn, deletion, lists),
        "a": st.builds(ComplexColumn, deletion, elements)})  # not a collection: never read
    cells = st.dictionaries(st.sampled_from(["a", "b", "c", "gone"]), cell, max_size=4)
    return st.tuples(st.builds(lambda m, d, c, x: RowData((INT[1],), m, d, c, x), marker, deletion, cells, complex_),
                     deletion)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_live_values_row_decides_liveness_and_values_as_live_row(dropped_table, data):
    table = dropped_table
    row, outer = data.draw(_stored_rows([ts for _, ts in table.dropped_columns.values()]))
    key, ck = (INT[0],), INT[1]
    general = live_row(table, row, outer, NOW, key, ck)
    fast = live_values_row(table, row, outer, NOW, key, ck, complex_plan(table))
    assert (fast is None) == (general is None)
    if general is not None:
        assert fast.marker_live == general.marker_live
        for col in table.columns:
            if not col.is_primary_key:
                assert column_bytes(fast, col) == column_bytes(general, col), col.name
        assert fast.cells == general.cells and fast.complex == general.complex
