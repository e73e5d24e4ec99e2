"""Write-side errors as cassandra-driver receives them: the protocol error a ScyllaDB client expects,
never a server error (docs/compatibility.md "Writes, lightweight transactions, JSON, validation and
types")."""

from __future__ import annotations

import struct

import pytest
from cassandra import FunctionFailure, InvalidRequest
from cassandra.cqltypes import EMPTY, Int32Type
from cassandra.query import UNSET_VALUE, BatchStatement, BatchType

from .conftest import KEYSPACE_DDL, cluster


@pytest.fixture(scope="module")
def session(port):
    c = cluster(port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("wire_writes"))
    s.set_keyspace("wire_writes")
    s.execute("CREATE TABLE t (p text, c text, v int, l list<int>, m map<int, int>, PRIMARY KEY (p, c))")
    yield s
    c.shutdown()


@pytest.mark.parametrize("text", ["'dog'", "'\"dog\"'", "'1.5'", "'\"\"'"])
def test_fromjson_of_a_bad_value_is_a_function_failure(session, text):
    with pytest.raises(FunctionFailure, match="Failed parsing fromJson parameter"):
        session.execute(f"INSERT INTO t (p, c, v) VALUES ('a', 'b', fromJson({text}))")
    stmt = session.prepare("INSERT INTO t (p, c, v) VALUES ('a', 'b', fromJson(?))")
    with pytest.raises(FunctionFailure):
        session.execute(stmt, [text.strip("'")])
    assert session.execute("SELECT * FROM t WHERE p = 'a'").all() == []


def test_fromjson_takes_a_whole_number_in_scientific_notation_for_an_int(session):
    session.execute("INSERT INTO t (p, c, v) VALUES ('n', 'b', fromJson('1e6'))")
    assert session.execute("SELECT v FROM t WHERE p = 'n'").one().v == 1_000_000


def test_deleting_a_list_element_at_an_unset_index_is_no_server_error(session):
    session.execute("INSERT INTO t (p, c, l, m) VALUES ('u', 'b', [1, 2], {1: 1})")
    session.execute(session.prepare("DELETE l[?] FROM t WHERE p = 'u' AND c = 'b'"), [UNSET_VALUE])
    with pytest.raises(InvalidRequest, match="unset value"):
        session.execute(session.prepare("DELETE m[?] FROM t WHERE p = 'u' AND c = 'b'"), [UNSET_VALUE])
    assert session.execute("SELECT l, m FROM t WHERE p = 'u'").one() == ([1, 2], {1: 1})


def test_a_conditional_insert_with_a_null_clustering_key_is_an_invalid_request(session):
    stmt = session.prepare("INSERT INTO t (p, c, v) VALUES (?, ?, 1) IF NOT EXISTS")
    with pytest.raises(InvalidRequest, match="Invalid null value in condition for column c"):
        session.execute(stmt, ["z", None])
    with pytest.raises(InvalidRequest, match="Invalid null value in condition for column c"):
        session.execute("INSERT INTO t (p, c, v) VALUES ('z', null, 1) IF NOT EXISTS")


def test_an_applied_conditional_update_returns_the_previous_value(session):
    session.execute("INSERT INTO t (p, c, v) VALUES ('w', 'b', 1)")
    rs = session.execute("UPDATE t SET v = 2 WHERE p = 'w' AND c = 'b' IF v = 1")
    assert rs.was_applied and rs.one().v == 1


def test_a_batch_over_the_warn_threshold_warns_the_client(session):
    session.execute("CREATE TABLE IF NOT EXISTS big (k int PRIMARY KEY, t text)")
    inserts = "\n".join(f"INSERT INTO big (k, t) VALUES ({i}, '{'x' * 743}');" for i in range(129))
    future = session.execute_async(f"BEGIN UNLOGGED BATCH\n{inserts}\nAPPLY BATCH")
    future.result()
    assert future.warnings and "exceeding specified WARN threshold" in future.warnings[0]


def test_a_static_only_delete_naming_a_row_is_refused_at_prepare(session):
    session.execute("CREATE TABLE IF NOT EXISTS st (k int, c int, v int, s int static, PRIMARY KEY (k, c))")
    session.execute("INSERT INTO st (k, c, v, s) VALUES (0, 0, 0, 7)")
    with pytest.raises(InvalidRequest, match="Invalid restrictions on clustering columns since the DELETE statement "
                                             "modifies only static columns"):
        session.prepare("DELETE s FROM st WHERE k = ? AND c = ?")
    with pytest.raises(InvalidRequest, match="IN on the clustering key columns is not supported with conditional "
                                             "deletions"):
        session.prepare("DELETE FROM st WHERE k = ? AND c IN ? IF v = 0")
    assert session.execute("SELECT s FROM st WHERE k = 0").one().s == 7


def test_an_unlogged_batch_of_counter_updates_is_applied(session):
    session.execute("CREATE TABLE IF NOT EXISTS hits (k int PRIMARY KEY, n counter)")
    bump = session.prepare("UPDATE hits SET n = n + ? WHERE k = ?")
    batch = BatchStatement(batch_type=BatchType.UNLOGGED)
    for delta in (1, 2, 3):
        batch.add(bump, (delta, 5))
    session.execute(batch)
    assert session.execute("SELECT n FROM hits WHERE k = 5").one().n == 6


def test_a_decimal_literal_whose_scale_overflows_is_an_invalid_request(session):
    session.execute("CREATE TABLE IF NOT EXISTS dec (k int, d decimal, PRIMARY KEY (k, d))")
    with pytest.raises(InvalidRequest, match="unable to make BigDecimal from '1e2147483649'"):
        session.execute("INSERT INTO dec (k, d) VALUES (0, 1e2147483649)")
    assert session.execute("SELECT * FROM dec").all() == []


def test_an_empty_int_bound_inside_a_list_is_stored_empty_and_a_null_one_is_refused(session):
    insert = session.prepare("INSERT INTO t (p, c, l) VALUES ('empty-element', 'c', ?)")
    bound = insert.bind([UNSET_VALUE])
    bound.values[0] = struct.pack(">iiii", 2, 4, 1, 0)  # [1, <empty int>]: the driver cannot serialize it
    session.execute(bound)
    bound.values[0] = struct.pack(">iiii", 2, 4, 1, -1)  # [1, null]
    with pytest.raises(InvalidRequest, match="null is not supported inside collections"):
        session.execute(bound)
    Int32Type.support_empty_values = True
    try:
        assert session.execute("SELECT l FROM t WHERE p = 'empty-element'").one().l == [1, EMPTY]
    finally:
        Int32Type.support_empty_values = False


def test_a_prepared_write_missing_a_clustering_column_is_refused_by_prepare(session):
    with pytest.raises(InvalidRequest, match="Missing mandatory PRIMARY KEY part c"):
        session.prepare("UPDATE t SET v = ? WHERE p = ?")
    with pytest.raises(InvalidRequest, match="Primary key column 'c' must be specified in order to modify column 'v'"):
        session.prepare("DELETE v FROM t WHERE p = ?")
    with pytest.raises(InvalidRequest, match="Missing mandatory PRIMARY KEY part p"):
        session.prepare("INSERT INTO t (c, v) VALUES (?, ?)")
    with pytest.raises(InvalidRequest, match="Range deletions are not supported for specific columns"):
        session.prepare("DELETE v FROM t WHERE p = ? AND c > ?")
