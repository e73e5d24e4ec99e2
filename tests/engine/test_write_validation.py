"""Write-side validation as ScyllaDB and Cassandra do it: bad keys and bound values get a clear
InvalidRequest and change nothing (docs/compatibility.md "Writes, lightweight transactions, JSON,
validation and types")."""

from __future__ import annotations

import pytest

from logtide.errors import InvalidRequest
from logtide.schema import types as T

from ..conftest import rows


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (p text, c text, v int, l list<text>, m map<text, text>, s set<text>, "
                    "PRIMARY KEY (p, c))")
    session.execute("INSERT INTO t (p, c, l, m, s) VALUES ('a', 'b', ['x', 'y'], {'k': 'v'}, {'e'})")
    return session


def collections(session):
    return rows(session.execute("SELECT l, m, s FROM t WHERE p = 'a' AND c = 'b'"))


@pytest.mark.parametrize("values, column", [(["a", None], "c"), ([None, "a"], "p")])
def test_conditional_insert_with_a_null_key_column_is_refused(t, values, column):
    stmt = t.prepare("INSERT INTO t (p, c, v) VALUES (?, ?, 1) IF NOT EXISTS")
    with pytest.raises(InvalidRequest, match=f"Invalid null value in condition for column {column}"):
        t.execute(stmt, values)
    with pytest.raises(InvalidRequest, match=f"Invalid null value in condition for column {column}"):
        t.execute_batch("LOGGED", [(stmt, values)])
    literal = ", ".join("null" if v is None else f"'{v}'" for v in values)
    with pytest.raises(InvalidRequest, match="null value"):
        t.execute(f"INSERT INTO t (p, c, v) VALUES ({literal}, 1) IF NOT EXISTS")
    assert rows(t.execute("SELECT p, c, v FROM t")) == [("a", "b", None)]


def test_deleting_a_list_element_at_an_unset_index_deletes_nothing(t):
    t.execute(t.prepare("DELETE l[?] FROM t WHERE p = 'a' AND c = 'b'"), [T.UNSET])
    assert collections(t) == [(["x", "y"], {"k": "v"}, {"e"})]


@pytest.mark.parametrize("target", ["m", "s"])
def test_deleting_an_unset_map_key_or_set_element_is_refused(t, target):
    with pytest.raises(InvalidRequest, match="unset value"):
        t.execute(t.prepare(f"DELETE {target}[?] FROM t WHERE p = 'a' AND c = 'b'"), [T.UNSET])
    assert collections(t) == [(["x", "y"], {"k": "v"}, {"e"})]


@pytest.fixture
def compound(session):
    session.execute("CREATE TABLE k (p1 text, p2 text, c1 text, c2 text, PRIMARY KEY ((p1, p2), c1, c2))")
    return session


def test_a_compound_key_over_64_kib_in_total_is_refused(compound):
    insert = compound.prepare("INSERT INTO k (p1, p2, c1, c2) VALUES (?, ?, ?, ?)")
    half = "x" * (65536 // 2)
    with pytest.raises(InvalidRequest, match="Key length of 65540 is longer than maximum of 65535"):
        compound.execute(insert, [half, half, "a", "b"])
    with pytest.raises(InvalidRequest, match="Key length of 65540 is longer than maximum of 65535"):
        compound.execute(insert, ["a", "b", half, half])
    with pytest.raises(InvalidRequest, match="Key length"):
        compound.execute("DELETE FROM k WHERE p1 = 'a' AND p2 = 'b' AND c1 = ? AND c2 = ?", [half, half])
    # each component with its 2-byte length: two components reach 65531 bytes
    fits = "y" * (65531 - 100)
    compound.execute(insert, ["p" * 100, fits, "a", "b"])
    assert rows(compound.execute("SELECT count(*) FROM k")) == [(1,)]


def test_selecting_a_partition_key_over_64_kib_is_refused(t):
    with pytest.raises(InvalidRequest, match="Key length of 65536 is longer than maximum of 65535"):
        t.execute(t.prepare("SELECT * FROM t WHERE p = ?"), ["x" * 65536])


@pytest.mark.parametrize("query", [
    "INSERT INTO t (p, c, v) VALUES ('', 'b', 1)",
    "INSERT INTO t (p, c, v) VALUES ('', 'b', 1) IF NOT EXISTS",
    "UPDATE t SET v = 1 WHERE p = '' AND c = 'b'",
    "DELETE FROM t WHERE p = ''",
    """INSERT INTO t JSON '{"p": "", "c": "b", "v": 1}'""",
])
def test_an_empty_partition_key_is_refused(t, query):
    with pytest.raises(InvalidRequest, match="Key may not be empty"):
        t.execute(query)
    assert rows(t.execute("SELECT p FROM t")) == [("a",)]


def test_an_empty_clustering_key_is_a_value(t):
    t.execute("INSERT INTO t (p, c, v) VALUES ('a', '', 7)")
    assert rows(t.execute("SELECT v FROM t WHERE p = 'a' AND c = ''")) == [(7,)]


def test_the_lowest_bigint_is_refused_as_a_write_timestamp(t):
    insert = t.prepare("INSERT INTO t (p, c, v) VALUES ('a', 'b', ?) USING TIMESTAMP ?")
    with pytest.raises(InvalidRequest, match=r"Out of bound timestamp, must be in \[-9223372036854775807, "):
        t.execute(insert, [5, -2**63])
    with pytest.raises(InvalidRequest, match="Out of bound timestamp"):
        t.execute_batch("UNLOGGED", [(insert, [5, -2**63])])
    t.execute(insert, [6, -2**63 + 1])  # the lowest allowed
    assert rows(t.execute("SELECT v, writetime(v) FROM t WHERE p = 'a' AND c = 'b'")) == [(6, -2**63 + 1)]


def test_an_unset_in_list_is_refused(t):
    with pytest.raises(InvalidRequest, match="unset value"):
        t.execute(t.prepare("SELECT * FROM t WHERE p IN ?"), [T.UNSET])


def test_a_counter_batch_refuses_a_custom_timestamp(session):
    session.execute("CREATE TABLE cnt (k int PRIMARY KEY, c counter)")
    with pytest.raises(InvalidRequest, match="Cannot provide custom timestamp for counter BATCH"):
        session.execute("BEGIN COUNTER BATCH USING TIMESTAMP 3 UPDATE cnt SET c = c + 1 WHERE k = 0; APPLY BATCH")
    assert rows(session.execute("SELECT * FROM cnt")) == []


def test_an_empty_in_on_a_clustering_column_writes_nothing(session):
    session.execute("CREATE TABLE ein (a int, b int, c int, s int static, PRIMARY KEY (a, b)) WITH cdc = {'enabled': true}")
    session.execute("INSERT INTO ein (a, b, c, s) VALUES (1, 1, 1, 1)")
    session.execute("INSERT INTO ein (a, b, c) VALUES (1, 2, 2)")
    logged = len(rows(session.execute("SELECT * FROM ein_scylla_cdc_log")))
    for statement in ("DELETE FROM ein WHERE a = 1 AND b IN ()", "DELETE FROM ein WHERE a = 1 AND (b) IN ()",
                      "DELETE c FROM ein WHERE a = 1 AND b IN ()", "UPDATE ein SET c = 5 WHERE a = 1 AND b IN ()"):
        session.execute(statement)
    assert rows(session.execute("SELECT b, c, s FROM ein WHERE a = 1")) == [(1, 1, 1), (2, 2, 1)]
    assert len(rows(session.execute("SELECT * FROM ein_scylla_cdc_log"))) == logged  # nothing logged either


def test_an_unlogged_batch_of_counter_updates_adds_every_increment(session):
    session.execute("CREATE TABLE hits (u int, url text, total counter, other counter, PRIMARY KEY (u, url))")
    session.execute("CREATE TABLE plain (k int PRIMARY KEY, v int)")
    bump = "UPDATE hits SET total = total + 1 WHERE u = 1 AND url = 'a'; "
    session.execute("BEGIN UNLOGGED BATCH " + bump * 3 + "UPDATE hits SET other = other - 2, total = total + 1 "
                    "WHERE u = 1 AND url = 'b'; UPDATE hits SET other = other + 1 WHERE u = 2 AND url = 'a'; APPLY BATCH")
    assert sorted(rows(session.execute("SELECT u, url, total, other FROM hits"))) == [
        (1, "a", 3, None), (1, "b", 1, -2), (2, "a", None, 1)]
    with pytest.raises(InvalidRequest, match="Counter and non-counter mutations cannot exist in the same batch"):
        session.execute("BEGIN UNLOGGED BATCH " + bump + "INSERT INTO plain (k, v) VALUES (1, 1); APPLY BATCH")
    with pytest.raises(InvalidRequest, match="Cannot include a counter statement in a logged batch"):
        session.execute("BEGIN BATCH " + bump + "APPLY BATCH")
    assert rows(session.execute("SELECT total FROM hits WHERE u = 1 AND url = 'a'")) == [(3,)]
    assert rows(session.execute("SELECT * FROM plain")) == []


@pytest.fixture
def st(session):
    session.execute("CREATE TABLE st (k int, c1 int, c2 int, v int, s text static, PRIMARY KEY (k, c1, c2))")
    session.execute("INSERT INTO st (k, c1, c2, v, s) VALUES (0, 0, 0, 0, 'A')")
    return session


@pytest.mark.parametrize("statement", [
    "DELETE s FROM st WHERE k = 0 AND c1 = 0 AND c2 = 0",
    "DELETE s FROM st WHERE k = 0 AND c1 = 0",
    "DELETE s FROM st WHERE k = 0 AND (c1, c2) >= (0, 0)",
    "DELETE s FROM st WHERE k = 0 AND c1 IN ()",
    "DELETE s FROM st WHERE k = 0 AND c1 = 0 AND c2 = 0 IF s = 'A'",
    "DELETE s FROM st WHERE k = 0 AND c1 = 0 AND c2 = 0 IF EXISTS",
    "UPDATE st SET s = 'B' WHERE k = 0 AND c1 = 0 AND c2 = 0",
])
def test_a_write_of_static_columns_only_may_not_restrict_clustering_columns(st, statement):
    kind = statement.split()[0]
    message = f"Invalid restrictions on clustering columns since the {kind} statement modifies only static columns"
    with pytest.raises(InvalidRequest, match=message):
        st.prepare(statement)
    with pytest.raises(InvalidRequest, match=message):
        st.execute(statement)
    assert rows(st.execute("SELECT k, c1, c2, v, s FROM st")) == [(0, 0, 0, 0, "A")]


def test_a_write_of_static_columns_names_a_row_when_a_condition_reads_one(st):
    st.execute("DELETE s FROM st WHERE k = 0 AND c1 = 0 AND c2 = 0 IF v = 0")
    assert rows(st.execute("SELECT s FROM st")) == [(None,)]
    st.execute(st.prepare("UPDATE st SET s = ? WHERE k = 0 AND c1 = 0 AND c2 = 0 IF v = 0"), ["C"])
    st.execute("DELETE s FROM st WHERE k = 0")  # the whole partition's static row: no clustering restriction
    st.execute("INSERT INTO st (k, c1, c2, s) VALUES (0, 1, 1, 'D')")  # an INSERT may name the row
    assert rows(st.execute("SELECT c1, c2, s FROM st")) == [(0, 0, "D"), (1, 1, "D")]


@pytest.mark.parametrize("statement, message", [
    ("UPDATE st SET v = 1 WHERE k = 0 AND c1 = 0 AND c2 IN () IF v = 0",
     "IN on the clustering key columns is not supported with conditional updates"),
    ("UPDATE st SET v = 1 WHERE k = 0 AND c1 IN (0) AND c2 = 0 IF v = 0",
     "IN on the clustering key columns is not supported with conditional updates"),
    ("DELETE FROM st WHERE k = 0 AND (c1, c2) IN ((0, 0), (1, 1)) IF v = 0",
     "IN on the clustering key columns is not supported with conditional deletions"),
    ("DELETE FROM st WHERE k IN () AND c1 = 0 AND c2 = 0 IF EXISTS",
     "IN on the partition key is not supported with conditional deletions"),
    ("UPDATE st SET v = 1 WHERE k IN (0, 1) AND c1 = 0 AND c2 IN (0) IF v = 0",
     "IN on the partition key is not supported with conditional updates"),
])
def test_a_conditional_write_refuses_in_on_key_columns_whatever_its_values(st, statement, message):
    with pytest.raises(InvalidRequest, match=message):
        st.prepare(statement)
    with pytest.raises(InvalidRequest, match=message):
        st.execute(statement)
    with pytest.raises(InvalidRequest, match=message):
        st.execute("BEGIN BATCH UPDATE st SET v = 5 WHERE k = 0 AND c1 = 0 AND c2 = 0 IF v = 0; "
                   + statement + "; APPLY BATCH")
    assert rows(st.execute("SELECT k, c1, c2, v, s FROM st")) == [(0, 0, 0, 0, "A")]


def test_an_update_with_an_empty_in_still_names_every_clustering_column(st):
    with pytest.raises(InvalidRequest, match="Missing mandatory PRIMARY KEY part c1"):
        st.execute("UPDATE st SET v = 1 WHERE k IN ()")
    with pytest.raises(InvalidRequest, match="Missing mandatory PRIMARY KEY part c2"):
        st.execute("UPDATE st SET v = 1 WHERE k IN () AND c1 = 0")
    st.execute("UPDATE st SET v = 1 WHERE k IN () AND c1 = 0 AND c2 IN ()")
    st.execute("UPDATE st SET s = 'B' WHERE k IN ()")  # static columns alone need no clustering key
    assert rows(st.execute("SELECT k, c1, c2, v, s FROM st")) == [(0, 0, 0, 0, "A")]
