"""A write that does not name its whole primary key is refused in ScyllaDB's words and order, when it is
prepared as when it runs (docs/compatibility.md "Writes, lightweight transactions, JSON, validation and
types"; ScyllaDB's ``modification_statement::process_where_clause``)."""

from __future__ import annotations

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows

MISSING = [
    # INSERT and UPDATE need every clustering column (the first missing one is named)
    ("INSERT INTO t (p1, p2, c1, v) VALUES (0, 0, 0, 1)", "Missing mandatory PRIMARY KEY part c2"),
    ("UPDATE t SET v = 1 WHERE p1 = 0 AND p2 = 0", "Missing mandatory PRIMARY KEY part c1"),
    ("UPDATE t SET v = 1 WHERE p1 = 0 AND p2 = 0 AND c1 = 0 IF v = 1", "Missing mandatory PRIMARY KEY part c2"),
    # the clustering columns are checked before the partition key
    ("UPDATE t SET v = 1 WHERE c1 = 0", "Missing mandatory PRIMARY KEY part c2"),
    ("UPDATE t SET v = 1 WHERE p1 = 0 AND c1 = 0 AND c2 = 0", "Missing mandatory PRIMARY KEY part p2"),
    ("DELETE FROM t WHERE c1 = 0", "Missing mandatory PRIMARY KEY part p1"),
    ("INSERT INTO t (c1, c2, v) VALUES (0, 0, 1)", "Missing mandatory PRIMARY KEY part p1"),
    # a DELETE of named columns needs the row
    ("DELETE v FROM t WHERE p1 = 0 AND p2 = 0 AND c1 = 0",
     "Primary key column 'c2' must be specified in order to modify column 'v'"),
    ("DELETE s, v FROM t WHERE p1 = 0 AND p2 = 0",
     "Primary key column 'c1' must be specified in order to modify column 'v'"),
    # a DELETE of named columns over a clustering slice, once the key is otherwise whole
    ("DELETE v FROM t WHERE p1 = 0 AND p2 = 0 AND c1 > 0", "Range deletions are not supported for specific columns"),
    ("DELETE v FROM t WHERE p1 = 0 AND p2 = 0 AND c1 = 0 AND c2 >= 0",
     "Range deletions are not supported for specific columns"),
    ("DELETE v FROM t WHERE p1 = 0 AND c1 = 0 AND c2 >= 0", "Missing mandatory PRIMARY KEY part p2"),
    # a clustering column named after one that is not
    ("INSERT INTO t (p1, p2, c2, v) VALUES (0, 0, 0, 1)",
     'PRIMARY KEY column "c2" cannot be restricted as preceding column "c1" is not restricted'),
    ("UPDATE t SET v = 1 WHERE p1 = 0 AND p2 = 0 AND c2 = 0",
     'PRIMARY KEY column "c2" cannot be restricted as preceding column "c1" is not restricted'),
    # an INSERT naming part of a composite partition key
    ("INSERT INTO t (p1, c1, c2, v) VALUES (0, 0, 0, 1)", "Cannot execute this query as it might involve data "
     "filtering"),
]


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (p1 int, p2 int, c1 int, c2 int, v int, s int static, "
                    "PRIMARY KEY ((p1, p2), c1, c2))")
    session.execute("INSERT INTO t (p1, p2, c1, c2, v, s) VALUES (0, 0, 0, 0, 7, 7)")
    return session


@pytest.mark.parametrize("statement, message", MISSING)
def test_a_write_missing_a_key_part_is_refused_as_it_runs_and_when_prepared(t, statement, message):
    with pytest.raises(InvalidRequest, match=message):
        t.execute(statement)
    with pytest.raises(InvalidRequest, match=message):
        t.prepare(statement.replace("VALUES (0, 0, 0, 1)", "VALUES (?, ?, ?, ?)"))
    assert rows(t.execute("SELECT p1, p2, c1, c2, v, s FROM t")) == [(0, 0, 0, 0, 7, 7)]


def test_an_insert_json_without_a_key_part_or_with_a_null_one_names_it(t):
    for doc in ('{"p1": 0, "p2": 0, "c1": 0, "v": 1}', '{"p1": 0, "p2": 0, "c1": 0, "c2": null, "v": 1}'):
        with pytest.raises(InvalidRequest, match="Missing mandatory PRIMARY KEY part c2"):
            t.execute(f"INSERT INTO t JSON '{doc}'")
    with pytest.raises(InvalidRequest, match="Missing mandatory PRIMARY KEY part p2"):
        t.execute("""INSERT INTO t JSON '{"p1": 0, "c1": 0, "c2": 0}' DEFAULT UNSET""")
    assert rows(t.execute("SELECT p1, p2, c1, c2, v FROM t")) == [(0, 0, 0, 0, 7)]


def test_writes_of_static_columns_or_of_whole_rows_and_ranges_may_leave_clustering_columns_out(t):
    t.execute("UPDATE t SET s = 8 WHERE p1 = 0 AND p2 = 0")
    t.execute("INSERT INTO t (p1, p2, s) VALUES (1, 1, 9)")
    t.prepare("DELETE s FROM t WHERE p1 = ? AND p2 = ?")
    t.execute("DELETE FROM t WHERE p1 = 0 AND p2 = 0 AND c1 = 0")
    assert rows(t.execute("SELECT p1, p2, c1, s FROM t")) == [(0, 0, None, 8), (1, 1, None, 9)]


@pytest.mark.parametrize("statement, message", [
    ("DELETE v FROM t WHERE p1 = 0 AND p2 = 0 AND c1 = 0 AND c2 > 0 IF v = 1", "in order to delete non static columns"),
    ("DELETE s FROM t WHERE p1 = 0 AND p2 = 0 IF v = 1", "in order to use IF condition on non static columns"),
])
def test_a_conditional_delete_not_pinning_the_row_is_refused_when_prepared_and_when_it_runs(t, statement, message):
    # ScyllaDB's delete_statement::validate_where_clause_for_conditions; a slice gets this, not the range rule
    message = "DELETE statements must restrict all PRIMARY KEY columns with equality relations " + message
    with pytest.raises(InvalidRequest, match=message):
        t.prepare(statement)
    with pytest.raises(InvalidRequest, match=message):
        t.execute(statement)
    assert rows(t.execute("SELECT p1, p2, c1, c2, v, s FROM t")) == [(0, 0, 0, 0, 7, 7)]
