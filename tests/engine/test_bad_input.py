"""Bad input gets a clear Cassandra error that names the problem, and changes nothing."""

from __future__ import annotations

import pytest

from logtide.errors import AlreadyExists, ConfigurationException, InvalidRequest, SyntaxException

from ..conftest import rows


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (pk int, ck int, v int, s text, PRIMARY KEY (pk, ck))")
    session.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 0)")
    return session


@pytest.mark.parametrize("stmt, message", [
    ("INSERT INTO t (pk, ck, v) VALUES (0, 1, 'x')", 'Invalid STRING constant (x) for "v" of type int'),
    ("INSERT INTO t (pk, ck, s) VALUES (0, 1, 5)", 'Invalid INTEGER constant (5) for "s" of type text'),
    ("INSERT INTO t (pk, ck, v) VALUES (0, 1, 3000000000)", "Unable to make int from '3000000000'"),
    ("INSERT INTO t (pk, ck, nope) VALUES (0, 1, 1)", "Unknown identifier nope"),
    ("INSERT INTO t (pk, v) VALUES (0, 1)", "Missing mandatory PRIMARY KEY part ck"),
    ("INSERT INTO t (pk) VALUES (0)", "Missing mandatory PRIMARY KEY part ck"),
    ("INSERT INTO t (ck, v) VALUES (0, 1)", "Missing mandatory PRIMARY KEY part pk"),
    ("INSERT INTO t (pk, ck, v, v) VALUES (0, 1, 1, 2)", "Multiple definitions found for column v"),
    ("INSERT INTO t (pk, ck, v) VALUES (null, 1, 1)", "Invalid null value in condition for column pk"),
    ("UPDATE t SET v = 1 WHERE pk = 0", "Missing mandatory PRIMARY KEY part ck"),
    ("UPDATE t SET pk = 1 WHERE pk = 0 AND ck = 0", "PRIMARY KEY part pk found in SET part"),
    ("UPDATE t SET v = 1 WHERE pk = 0 AND ck = 0 AND v = 1", "Non PRIMARY KEY columns found in where clause: v"),
    ("UPDATE t SET v = v + 1 WHERE pk = 0 AND ck = 0", "Invalid operation (v = v + ...) for non counter column v"),
    ("DELETE FROM t WHERE ck = 0", "Missing mandatory PRIMARY KEY part pk"),
    ("SELECT * FROM t WHERE pk > 0", "Only EQ and IN relation are supported on the partition key"),
    ("SELECT nope FROM t", "Unrecognized name nope"),
    ("UPDATE t SET v = 1 WHERE pk = 0 AND ck = 0 AND ck = 1", "ck cannot be restricted by more than one relation if it includes an Equal"),
    ("SELECT * FROM nope", "unconfigured table nope"),
    ("SELECT * FROM t WHERE pk = 0 ORDER BY v", "Order by is currently only supported on the clustered columns"),
])
def test_invalid_request_messages(t, stmt, message):
    with pytest.raises(InvalidRequest) as e:
        t.execute(stmt)
    assert message in str(e.value)
    assert rows(t.execute("SELECT pk, ck, v, s FROM t")) == [(0, 0, 0, None)]


def test_syntax_error_names_line_column_and_token(t):
    with pytest.raises(SyntaxException) as e:
        t.execute("SELECT *\nFORM t")
    assert "line 2:0" in str(e.value) and "FORM" in str(e.value)


def test_no_keyspace(db):
    s = db.session()
    with pytest.raises(InvalidRequest, match="No keyspace has been specified"):
        s.execute("SELECT * FROM t")


def test_unknown_keyspace(db):
    with pytest.raises(InvalidRequest, match="Keyspace 'nope' does not exist"):
        db.session().execute("USE nope")


def test_already_exists_carries_names(t):
    with pytest.raises(AlreadyExists) as e:
        t.execute("CREATE TABLE t (pk int PRIMARY KEY)")
    assert e.value.keyspace == "ks" and e.value.table == "t"
    t.execute("CREATE TABLE IF NOT EXISTS t (pk int PRIMARY KEY)")


def test_configuration_errors(session):
    # a missing class means NetworkTopologyStrategy (ScyllaDB), whose data centers are checked
    with pytest.raises(ConfigurationException):
        session.execute("CREATE KEYSPACE k2 WITH replication = {'dc9': 1}")
    with pytest.raises(ConfigurationException):
        session.execute("CREATE KEYSPACE k2 WITH replication = {'class': 'SimpleStrategy'}")


def test_bound_value_of_wrong_type(t):
    with pytest.raises(InvalidRequest, match="v"):
        t.execute("INSERT INTO t (pk, ck, v) VALUES (?, ?, ?)", [0, 1, "nope"])
    with pytest.raises(InvalidRequest):
        t.execute("INSERT INTO t (pk, ck, v) VALUES (?, ?, ?)", [0, 1, 2**40])
    assert rows(t.execute("SELECT pk, ck, v, s FROM t")) == [(0, 0, 0, None)]


def test_error_codes(t):
    from logtide.errors import CqlError
    cases = {"SELEC * FROM t": 0x2000, "SELECT * FROM nope": 0x2200,
             "CREATE TABLE t (pk int PRIMARY KEY)": 0x2400}
    for stmt, code in cases.items():
        with pytest.raises(CqlError) as e:
            t.execute(stmt)
        assert e.value.code == code, stmt
