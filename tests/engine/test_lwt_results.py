"""Lightweight transactions answered as ScyllaDB answers them (docs/compatibility.md "Writes,
lightweight transactions, JSON, validation and types"): the result carries the previous values
whether or not the statement applied; ``IF c NOT IN``; null inside ``IN``; ``c = c + x`` on
numeric columns of a conditional UPDATE."""

from __future__ import annotations

from decimal import Decimal

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (p int, c int, s int static, r int, PRIMARY KEY (p, c))")
    return session


def answer(session, query, params=None):
    r = session.execute(query, params)
    return r.column_names, rows(r)


def test_an_applied_conditional_update_returns_the_previous_values(t):
    t.execute("INSERT INTO t (p, c, r) VALUES (1, 1, 1)")
    assert answer(t, "UPDATE t SET r = 2 WHERE p = 1 AND c = 1 IF r = 1") == (["[applied]", "r"], [(True, 1)])
    assert answer(t, "UPDATE t SET r = 3 WHERE p = 1 AND c = 1 IF r = 1") == (["[applied]", "r"], [(False, 2)])
    assert answer(t, "DELETE FROM t WHERE p = 1 AND c = 1 IF EXISTS") == (
        ["[applied]", "p", "c", "s", "r"], [(True, 1, 1, None, 2)])


def test_an_insert_if_not_exists_answers_every_column_null_when_there_was_no_row(t):
    assert answer(t, "INSERT INTO t (p, c, r) VALUES (1, 1, 1) IF NOT EXISTS") == (
        ["[applied]", "p", "c", "s", "r"], [(True, None, None, None, None)])
    assert answer(t, "INSERT INTO t (p, c, r) VALUES (1, 1, 2) IF NOT EXISTS") == (
        ["[applied]", "p", "c", "s", "r"], [(False, 1, 1, None, 1)])


def test_a_condition_on_a_missing_row_shows_the_partition_static_values(t):
    t.execute("INSERT INTO t (p, s) VALUES (1, 1)")
    assert answer(t, "UPDATE t SET s = 2, r = 1 WHERE p = 1 AND c = 1 IF s = 1 AND r = null") == (
        ["[applied]", "s", "r"], [(True, 1, None)])
    assert rows(t.execute("SELECT * FROM t WHERE p = 1")) == [(1, 1, 2, 1)]


def test_a_conditional_batch_answers_one_row_per_statement_with_the_primary_key(t):
    t.execute("INSERT INTO t (p, c, r) VALUES (1, 1, 0)")
    assert answer(t, "BEGIN BATCH UPDATE t SET r = 10 WHERE p = 1 AND c = 1 IF r = 1; "
                     "UPDATE t SET r = 20 WHERE p = 1 AND c = 1 IF r = 2; APPLY BATCH") == (
        ["[applied]", "p", "c", "r"], [(False, 1, 1, 0), (False, 1, 1, 0)])


def test_not_in_condition_and_null_inside_in(t):
    t.execute("INSERT INTO t (p, c, r) VALUES (1, 1, 1)")
    assert rows(t.execute("UPDATE t SET r = 2 WHERE p = 1 AND c = 1 IF r NOT IN (2, 1)")) == [(False, 1)]
    assert rows(t.execute("UPDATE t SET r = null WHERE p = 1 AND c = 1 IF r NOT IN (null, 7)")) == [(True, 1)]
    # null is an ordinary value in a condition: a null column is IN (null, ...), not NOT IN (null, ...)
    assert rows(t.execute("UPDATE t SET r = 5 WHERE p = 1 AND c = 1 IF r NOT IN (null, 7)")) == [(False, None)]
    assert rows(t.execute("UPDATE t SET r = 5 WHERE p = 1 AND c = 1 IF r IN (null, 7)")) == [(True, None)]
    not_in = t.prepare("UPDATE t SET r = 6 WHERE p = 1 AND c = 1 IF r NOT IN ?")
    assert rows(t.execute(not_in, [[5, 8]])) == [(False, 5)]
    in_ = t.prepare("UPDATE t SET r = null WHERE p = 1 AND c = 1 IF r IN ?")
    assert rows(t.execute(in_, [None])) == [(False, 5)]  # nothing is IN a null list
    assert rows(t.execute(not_in, [None])) == [(True, 5)]  # and everything is NOT IN it
    assert rows(t.execute(in_, [[None, 6]])) == [(True, 6)]  # a bound list may hold a null
    assert rows(t.execute(in_, [[None, 6]])) == [(True, None)]


def test_arithmetic_on_numeric_columns_in_a_conditional_update(session):
    session.execute("CREATE TABLE n (p int PRIMARY KEY, i int, t tinyint, d decimal, f double, v varint)")
    session.execute("INSERT INTO n (p, i, t, d, f, v) VALUES (1, 0, 127, 1.5, 0.5, 0)")
    session.execute("UPDATE n SET i = i + 1, d = d - 0.25, f = f + 1, v = v - 100 WHERE p = 1 IF EXISTS")
    assert rows(session.execute("SELECT i, d, f, v FROM n")) == [(1, Decimal("1.25"), 1.5, -100)]
    stmt = session.prepare("UPDATE n SET i = i - ? WHERE p = ? IF i >= 1")
    assert rows(session.execute(stmt, [1, 1])) == [(True, 1)]
    assert rows(session.execute(stmt, [1, 1])) == [(False, 0)]
    with pytest.raises(InvalidRequest, match="Arithmetic ADD overflow"):
        session.execute("UPDATE n SET t = t + 1 WHERE p = 1 IF EXISTS")
    assert rows(session.execute("SELECT t FROM n")) == [(127,)]
    session.execute("UPDATE n SET i = null WHERE p = 1")
    session.execute("UPDATE n SET i = i + 1 WHERE p = 1 IF EXISTS")  # null + 1 is null: nothing written
    assert rows(session.execute("SELECT i FROM n")) == [(None,)]


def test_arithmetic_on_a_non_counter_column_without_a_condition_is_refused_at_prepare(session):
    session.execute("CREATE TABLE n (p int PRIMARY KEY, i int)")
    for query in ("UPDATE n SET i = i + 1 WHERE p = ?", "UPDATE n SET i = i - 1 WHERE p = ?"):
        with pytest.raises(InvalidRequest, match="for non counter column i"):
            session.prepare(query)
    with pytest.raises(InvalidRequest, match="of type int"):
        session.prepare("UPDATE n SET i = i + 3.5 WHERE p = ? IF EXISTS")
    with pytest.raises(InvalidRequest, match="PRIMARY KEY"):
        session.prepare("UPDATE n SET p = p + 1 WHERE p = ? IF EXISTS")


def test_an_unset_value_in_a_condition_is_refused(t):
    from logtide.schema import types as T
    t.execute("INSERT INTO t (p, c, r) VALUES (1, 1, 1)")
    for query in ("UPDATE t SET r = 2 WHERE p = 1 AND c = 1 IF r = ?",
                  "UPDATE t SET r = 2 WHERE p = 1 AND c = 1 IF r IN (?, 1)"):
        with pytest.raises(InvalidRequest, match="unset value"):
            t.execute(t.prepare(query), [T.UNSET])
    assert rows(t.execute("SELECT r FROM t")) == [(1,)]


def test_insert_json_if_not_exists(t):
    insert = """INSERT INTO t JSON '{"p": 1, "c": 1, "r": %d}' IF NOT EXISTS"""
    assert rows(t.execute(insert % 1)) == [(True, None, None, None, None)]
    assert rows(t.execute(insert % 2)) == [(False, 1, 1, None, 1)]
    assert rows(t.execute("SELECT r FROM t")) == [(1,)]


def test_a_static_only_insert_if_not_exists_applies_on_a_partition_without_static_values(t):
    t.execute("INSERT INTO t (p, c, r) VALUES (1, 1, 1)")
    # the partition exists (its first row was read), its static row has nothing: applied, the key shown
    assert answer(t, "INSERT INTO t (p, s) VALUES (1, 7) IF NOT EXISTS") == (
        ["[applied]", "p", "c", "s", "r"], [(True, 1, None, None, None)])
    assert answer(t, "INSERT INTO t (p, s) VALUES (1, 8) IF NOT EXISTS") == (
        ["[applied]", "p", "c", "s", "r"], [(False, 1, None, 7, None)])
    assert answer(t, "INSERT INTO t (p, s) VALUES (2, 8) IF NOT EXISTS") == (
        ["[applied]", "p", "c", "s", "r"], [(True, None, None, None, None)])


def test_a_condition_on_a_static_column_shows_the_static_value_for_any_row(t):
    t.execute("INSERT INTO t (p, s) VALUES (1, 0)")
    assert answer(t, "UPDATE t SET r = 1, s = 1 WHERE p = 1 AND c = 5 IF s = 0") == (["[applied]", "s"], [(True, 0)])
    assert answer(t, "UPDATE t SET r = 2, s = 1 WHERE p = 1 AND c = 6 IF s = 0") == (["[applied]", "s"], [(False, 1)])
    assert rows(t.execute("SELECT * FROM t WHERE p = 1")) == [(1, 5, 1, 1)]


def test_a_conditional_batch_answers_a_row_for_its_unconditional_statements_too(t):
    t.execute("INSERT INTO t (p, c) VALUES (2, 2)")
    # the static condition reads the partition's first row, (2, 2): the INSERT's row is shown from it;
    # the UPDATE of the static row shows the partition's (empty) static row
    assert answer(t, "BEGIN BATCH INSERT INTO t (p, c, r) VALUES (2, 2, 5); "
                     "UPDATE t SET s = 2 WHERE p = 2 IF s = null; APPLY BATCH") == (
        ["[applied]", "p", "c", "s"], [(True, 2, 2, None), (True, 2, None, None)])
    assert rows(t.execute("SELECT * FROM t WHERE p = 2")) == [(2, 2, 2, 5)]


def test_a_conditional_batch_on_static_columns_of_a_partition_with_rows(t):
    t.execute("CREATE TABLE t2 (a int, b int, s1 int static, s2 int static, d int, PRIMARY KEY (a, b))")
    t.execute("INSERT INTO t2 (a, b, d) VALUES (1, 1, 5)")
    assert answer(t, "BEGIN BATCH UPDATE t2 SET s2 = 2 WHERE a = 1 IF s1 = null; "
                     "UPDATE t2 SET s1 = 1 WHERE a = 1 IF s2 = null; APPLY BATCH") == (
        ["[applied]", "a", "b", "s1", "s2"], [(True, 1, None, None, None), (True, 1, None, None, None)])
    assert rows(t.execute("SELECT * FROM t2")) == [(1, 1, 1, 2, 5)]


def test_result_columns_put_static_columns_before_regular_ones(t):
    t.execute("CREATE TABLE t3 (k text, z text static, i int, a text, PRIMARY KEY (k, i))")
    t.execute("INSERT INTO t3 (k, z, i, a) VALUES ('k', 's', 0, 'v')")
    assert answer(t, "DELETE a FROM t3 WHERE k = 'k' AND i = 0 IF a = 'x' AND z = 'x'") == (
        ["[applied]", "z", "a"], [(False, "s", "v")])


def test_an_update_of_a_static_column_with_a_regular_condition_writes_the_clustering_row(t):
    t.execute("INSERT INTO t (p, c, r) VALUES (1, 1, 1)")
    assert answer(t, "UPDATE t SET s = 9 WHERE p = 1 AND c = 1 IF r = 1") == (["[applied]", "r"], [(True, 1)])
    assert rows(t.execute("SELECT * FROM t")) == [(1, 1, 9, 1)]


@pytest.mark.parametrize("statement, message", [
    ("UPDATE t SET r = 1 WHERE p = 0 AND c IN () IF EXISTS",
     "IN on the clustering key columns is not supported with conditional updates"),
    ("UPDATE t SET r = 1 WHERE p = 0 AND c IN (1) IF r = 1",
     "IN on the clustering key columns is not supported with conditional updates"),
    ("DELETE FROM t WHERE p = 0 AND c IN (1, 2) IF EXISTS",
     "IN on the clustering key columns is not supported with conditional deletions"),
    ("UPDATE t SET r = 1 WHERE p IN (1) AND c = 1 IF r = 1",
     "IN on the partition key is not supported with conditional updates"),
    ("DELETE FROM t WHERE p = 0 IF EXISTS",
     "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non "
     "static columns"),
    ("DELETE FROM t WHERE p = 0 AND c > 0 IF r = 1",
     "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non "
     "static columns"),
    ("DELETE s FROM t WHERE p = 0 IF r = 1",
     "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to use IF "
     "condition on non static columns"),
    ("DELETE s, r FROM t WHERE p = 0 IF s = 1", "Primary key column 'c' must be specified in order to modify "
                                                "column 'r'"),
    ("DELETE s FROM t WHERE p = 0 AND c = 1 IF s = 1",
     "Invalid restrictions on clustering columns since the DELETE statement modifies only static columns"),
    ("UPDATE t SET s = 1 WHERE p = 0 AND c = 1 IF s = 1",
     "Invalid restrictions on clustering columns since the UPDATE statement modifies only static columns"),
    ("UPDATE t SET r = 1 WHERE p = 0 IF s = 1", "Missing mandatory PRIMARY KEY part c"),
    ("DELETE FROM t WHERE c = 0 IF EXISTS", "Missing mandatory PRIMARY KEY part p"),
    ("DELETE FROM t WHERE p = 0.5 AND c > 0 IF EXISTS", "Invalid FLOAT constant (0.5) for \"p\" of type int"),
])
def test_conditional_statements_refuse_what_scylladb_refuses_with_its_words(t, statement, message):
    t.execute("INSERT INTO t (p, c, s, r) VALUES (0, 1, 1, 1)")
    with pytest.raises(InvalidRequest) as e:
        t.execute(statement)
    assert str(e.value) == message
    assert rows(t.execute("SELECT * FROM t")) == [(0, 1, 1, 1)]


def test_durations_are_compared_for_equality_only(session):
    session.execute("CREATE TABLE d (k int PRIMARY KEY, v int, d duration)")
    for op in (">", ">=", "<", "<="):
        with pytest.raises(InvalidRequest, match="^Duration type is unordered for d$"):
            session.execute(f"UPDATE d SET v = 3 WHERE k = 0 IF d {op} 1s")
    session.execute("INSERT INTO d (k, v, d) VALUES (1, 1, 2s)")
    assert rows(session.execute("UPDATE d SET v = 4 WHERE k = 1 IF d = 1s"))[0][0] is False
    assert rows(session.execute("UPDATE d SET v = 3 WHERE k = 1 IF d = 2s"))[0][0] is True
    assert rows(session.execute("UPDATE d SET v = 5 WHERE k = 1 IF d != 2s"))[0][0] is False
    assert rows(session.execute("SELECT v FROM d WHERE k = 1")) == [(3,)]


def test_setting_an_element_of_a_frozen_map_names_the_operation(session):
    session.execute("CREATE TABLE f (k int PRIMARY KEY, m frozen<map<text, text>>)")
    with pytest.raises(InvalidRequest, match=r"^Invalid operation \(m\['foo'\] = 'bar'\) for frozen collection "
                                             r"column m$"):
        session.execute("UPDATE f SET m['foo'] = 'bar' WHERE k = 1 IF m['foo'] IN ('blah', null)")
