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
