"""``IF c IN ?`` with a bound list, element by element as the client sent it, over cassandra-driver.

Drivers differ in what they send for ``None`` inside a bound list: scylla-driver sends a null element
(length -1), cassandra-driver 3.30 an empty one (length 0, its ``to_binary`` of None).  ScyllaDB keeps the
elements as sent: a null column is IN a list only when the list holds a null element, and an empty element
is the empty value, equal to a column holding an empty value.  The tests send both forms as raw bytes.
"""

from __future__ import annotations

import struct

import cassandra

import pytest

from .conftest import KEYSPACE_DDL, cluster

NULL_ELEMENT = struct.pack(">i", -1)
EMPTY_ELEMENT = struct.pack(">i", 0)


def list_of(*elements: bytes) -> bytes:
    """A serialized list of already serialized elements (each with its length, or -1 for null)."""
    return struct.pack(">i", len(elements)) + b"".join(elements)


@pytest.fixture(scope="module")
def session(port):
    c = cluster(port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("lwt_in_lists"))
    s.set_keyspace("lwt_in_lists")
    s.execute("CREATE TABLE t (k int PRIMARY KEY, b boolean, s text)")
    yield s
    c.shutdown()


def conditional(session, column, value, new_value, sent_list):
    """``UPDATE t SET column = new_value WHERE k = 0 IF column IN ?`` with the list sent as ``sent_list``:
    the result row ([applied], column)."""
    stmt = session.prepare(f"UPDATE t SET {column} = ? WHERE k = 0 IF {column} IN ?")
    session.execute(session.prepare(f"INSERT INTO t (k, {column}) VALUES (0, ?)"), (value,))
    b = stmt.bind((new_value, [value]))
    b.values[1] = sent_list
    return tuple(session.execute(b).one())


def test_a_null_element_matches_a_null_column(session):
    assert conditional(session, "b", None, True, list_of(NULL_ELEMENT)) == (True, None)
    assert conditional(session, "s", None, "x", list_of(NULL_ELEMENT)) == (True, None)
    # the same list made by scylla-driver from (None,); cassandra-driver 3.30 sends the next test's bytes
    assert conditional(session, "b", False, True, list_of(NULL_ELEMENT)) == (False, False)


def test_an_empty_element_is_the_empty_value_not_null(session):
    assert conditional(session, "b", None, True, list_of(EMPTY_ELEMENT)) == (False, None)
    assert conditional(session, "s", None, "x", list_of(EMPTY_ELEMENT)) == (False, None)
    assert conditional(session, "s", "", "x", list_of(EMPTY_ELEMENT)) == (True, "")
    assert conditional(session, "s", "", "x", list_of(NULL_ELEMENT)) == (False, "")
    assert session.execute("SELECT s FROM t WHERE k = 0").one().s == ""


def test_cassandra_driver_sends_none_inside_a_list_as_an_empty_element(session):
    """What the driver the tests run with sends for ``[None]``: the reason a null column is not IN it."""
    stmt = session.prepare("UPDATE t SET b = ? WHERE k = 0 IF b IN ?")
    sent = stmt.bind((True, [None])).values[1]
    if sent == list_of(NULL_ELEMENT):
        pytest.skip(f"this driver ({cassandra.__version__}) sends None inside a list as null")
    assert sent == list_of(EMPTY_ELEMENT)
    session.execute("INSERT INTO t (k, b) VALUES (0, null)")
    assert tuple(session.execute(stmt, (True, [None])).one()) == (False, None)
