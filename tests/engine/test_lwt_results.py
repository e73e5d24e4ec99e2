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
