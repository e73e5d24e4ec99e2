"""A write whose WHERE clause names every primary-key column once by ``=`` addresses the row the general
analysis addresses, with the same errors in the same order.

``mutation.targets.KeyShape`` analyses such a clause once per statement (a prepared UPDATE or DELETE executes
the same statement object again and again) and binds only the values per execution; any other clause goes
through ``query.restrictions.analyse``.  Here both are run on the same clauses and values: the targets (key
values, partition key bytes, token, clustering values and key) or the error message must be equal.  Through
CQL, prepared UPDATEs and DELETEs of each kind leave the rows the statements say.
"""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import logtide
from logtide.cql import parse
from logtide.errors import InvalidRequest
from logtide.mutation.targets import KeyShapes, addressed_rows, key_shape
from logtide.query.evaluate import TermEvaluator
from logtide.query.restrictions import analyse
from logtide.schema import types as T

TABLES = {
    "t1": "CREATE TABLE ks.t1 (p int, c int, v int, PRIMARY KEY (p, c))",
    "t2": "CREATE TABLE ks.t2 (p1 text, p2 int, c1 text, c2 int, v int, s int static, "
          "PRIMARY KEY ((p1, p2), c1, c2)) WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)",
    "t3": "CREATE TABLE ks.t3 (p blob PRIMARY KEY, v int)",
}
KEYS = {"t1": ["p", "c"], "t2": ["p1", "p2", "c1", "c2"], "t3": ["p"]}


@pytest.fixture(scope="module")
def db():
    with tempfile.TemporaryDirectory() as d:
        database = logtide.open(d)
        s = database.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        for cql in TABLES.values():
            s.execute(cql)
        yield database
        database.close()


def _outcome(fn):
    try:
        return [(t.key, t.pk, t.token, t.clustering, t.ck) for t in fn()]
    except InvalidRequest as e:
        return ("error", str(e))


TYPES = {"p1": "text", "c1": "text", "p": "int", "c": "int", "p2": "int", "c2": "int"}


def _value(table: str, col: str, kind: str):
    """A value of ``kind`` for a key column: null, unset, or (text and blob columns) empty or over 64 KiB."""
    if kind == "null":
        return None
    if kind == "unset":
        return T.UNSET
    if table == "t3":
        return {"ok": b"k", "empty": b"", "long": b"z" * 70000}[kind]
    if TYPES[col] == "text":
        return {"ok": "x", "empty": "", "long": "y" * 70000}[kind]
    return 7


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=st.sampled_from(sorted(TABLES)), data=st.data())
def test_a_whole_key_by_equalities_addresses_what_the_analysis_addresses(db, table, data):
    t = db.catalog.table("ks", table)
    keys = KEYS[table]
    order = data.draw(st.permutations(keys))
    values = []
    for k in order:
        sized = table == "t3" or TYPES[k] == "text"
        kinds = ["ok", "ok", "ok", "null", "unset"] + (["empty", "long"] if sized else [])
        values.append(_value(table, k, data.draw(st.sampled_from(kinds))))
    where = " AND ".join(f"{k} = ?" for k in order)
    stmt = parse(f"UPDATE ks.{table} SET v = 1 WHERE {where}").statement
    shape = key_shape(t, stmt.where)
    assert shape is not None
    fast = _outcome(lambda: shape.targets(TermEvaluator(db.functions, values)))
    general = _outcome(lambda: addressed_rows(t, analyse(t, stmt.where, TermEvaluator(db.functions, values)), False))
    assert fast == general


@pytest.mark.parametrize("where", [
    "p = 1",                      # a clustering column missing
    "p = 1 AND c IN (1, 2)",      # IN
    "p = 1 AND c > 1",            # a slice
    "p = 1 AND p = 2",            # a column twice
    "p = 1 AND c = 1 AND v = 1",  # a regular column
    "p = 1 AND x = 1",            # an unknown column
    "p = 1 AND (c) = (1)",        # a multi-column relation
    "token(p) = 1 AND c = 1",     # a token relation
])
def test_any_other_clause_takes_the_general_analysis(db, where):
    t = db.catalog.table("ks", "t1")
    assert key_shape(t, parse(f"UPDATE ks.t1 SET v = 1 WHERE {where}").statement.where) is None


def test_a_shape_is_made_once_per_statement_and_table(db):
    t = db.catalog.table("ks", "t1")
    stmt = parse("UPDATE ks.t1 SET v = 1 WHERE c = ? AND p = ?").statement
    shapes = KeyShapes()
    first = shapes.of(stmt, t)
    assert first is not None and shapes.of(stmt, t) is first
    assert [c.name for c, _ in first.relations] == ["c", "p"]
    other = parse("UPDATE ks.t1 SET v = 1 WHERE c = ? AND p = ?").statement  # an equal but distinct object
    assert shapes.of(other, t) is not first


def test_prepared_updates_and_deletes_by_the_whole_key_write_the_rows_they_name(db):
    s = db.session()
    s.execute("CREATE TABLE ks.w (p int, c text, v int, m map<int, int>, s int static, PRIMARY KEY (p, c))")
    up = s.prepare("UPDATE ks.w SET v = ?, m = m + ? WHERE c = ? AND p = ?")
    for i in range(4):
        s.execute(up, (i, {i: i}, f"c{i}", i % 2))
    s.execute(s.prepare("UPDATE ks.w SET s = ? WHERE p = ?"), (9, 1))
    s.execute(s.prepare("DELETE v FROM ks.w WHERE p = ? AND c = ?"), (0, "c0"))
    s.execute(s.prepare("DELETE m[?] FROM ks.w WHERE p = ? AND c = ?"), (3, 1, "c3"))
    s.execute(s.prepare("DELETE FROM ks.w WHERE p = ? AND c = ?"), (0, "c2"))
    rows = sorted((r.p, r.c, r.v, r.m, r.s) for r in s.execute("SELECT p, c, v, m, s FROM ks.w"))
    assert rows == [(0, "c0", None, {0: 0}, None), (1, "c1", 1, {1: 1}, 9), (1, "c3", 3, None, 9)]
    with pytest.raises(InvalidRequest, match="Invalid null value in condition for column c"):
        s.execute(up, (1, {1: 1}, None, 1))
    with pytest.raises(InvalidRequest, match="Invalid unset value for column p"):
        s.execute(up, (1, {1: 1}, "c", T.UNSET))
    s.execute("CREATE TABLE ks.one (p int PRIMARY KEY, v int)")
    s.execute("INSERT INTO ks.one (p, v) VALUES (1, 1)")
    s.execute(s.prepare("DELETE FROM ks.one WHERE p = ?"), (1,))
    assert list(s.execute("SELECT * FROM ks.one")) == []
