"""A bind marker that is a function's argument, as cassandra-driver sees it in a prepared statement's metadata:
named ``arg<i>(<keyspace>.<function>)`` in lower case (ScyllaDB's ``functions::make_arg_spec``), for native
functions (``arg0(system.intasblob)``) and user-defined ones (``arg1(fnargs.plus)``), wherever the call is."""

from __future__ import annotations

import pytest
from cassandra import InvalidRequest

from .conftest import KEYSPACE_DDL, cluster


@pytest.fixture(scope="module")
def session(port):
    c = cluster(port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("fnargs"))
    s.set_keyspace("fnargs")
    s.execute("CREATE TABLE t (k int PRIMARY KEY, b blob, i int)")
    s.execute("CREATE FUNCTION plus (a int, b int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua "
              "AS 'return a + b'")
    s.execute('CREATE FUNCTION "Twice" (x int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua AS \'return 2 * x\'')
    yield s
    c.shutdown()


def names(prepared) -> list[str]:
    return [c.name for c in prepared.column_metadata]


def test_markers_in_selectors_are_named_after_the_function_argument(session):
    prepared = session.prepare("SELECT intAsBlob(?), fnargs.plus(?, ?), blobAsInt(intAsBlob(?)) FROM system.local")
    assert names(prepared) == ["arg0(system.intasblob)", "arg0(fnargs.plus)", "arg1(fnargs.plus)",
                               "arg0(system.intasblob)"]
    assert [c.type.typename for c in prepared.column_metadata] == ["int", "int", "int", "int"]
    assert tuple(session.execute(prepared, (1, 2, 3, 4)).one()) == (b"\x00\x00\x00\x01", 5, 4)


def test_markers_in_written_values_conditions_and_where_clauses_are_named_alike(session):
    insert = session.prepare('INSERT INTO t (k, b, i) VALUES (?, intAsBlob(?), "Twice"(?))')
    assert names(insert) == ["k", "arg0(system.intasblob)", "arg0(fnargs.twice)"]
    session.execute(insert, (1, 7, 21))
    # the driver binds a dict by these names
    session.execute(insert, {"k": 2, "arg0(system.intasblob)": 8, "arg0(fnargs.twice)": 4})
    update = session.prepare("UPDATE t SET i = plus(?, 1) WHERE k = 1 IF b = intAsBlob(?)")
    assert names(update) == ["arg0(fnargs.plus)", "arg0(system.intasblob)"]
    assert session.execute(update, (99, 7)).one()[0] is True
    by_token = session.prepare("SELECT k FROM t WHERE token(k) >= token(?)")
    assert names(by_token) == ["arg0(system.token)"]
    filtered = session.prepare("SELECT k, i FROM t WHERE b = intAsBlob(?) ALLOW FILTERING")
    assert names(filtered) == ["arg0(system.intasblob)"]
    assert [tuple(r) for r in session.execute(filtered, (7,))] == [(1, 100)]
    assert [tuple(r) for r in session.execute(filtered, (8,))] == [(2, 8)]


def test_a_malformed_argument_value_is_refused_by_its_name(session):
    prepared = session.prepare("SELECT intAsBlob(?) FROM system.local")
    bound = prepared.bind((1,))
    bound.values[0] = b"\x00\x01\x02"  # three bytes are no int
    with pytest.raises(InvalidRequest, match=r"arg0\(system\.intasblob\)"):
        session.execute(bound)
