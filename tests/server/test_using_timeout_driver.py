"""``USING TIMEOUT`` as cassandra-driver sees it (docs/compatibility.md "Writes, lightweight transactions, JSON,
validation and types"): a statement past its deadline is the protocol's ReadTimeout (0x1200) or WriteTimeout
(0x1100) with the fields a ScyllaDB client decodes, a TRUNCATE past it a TruncateError (0x1003, which the driver
retries on the next host, so a one-node cluster answers NoHostAvailable), and nothing of a timed-out write is
applied.  Timeouts are 0 ms (always past) or hours (never): nothing depends on the machine's speed."""

from __future__ import annotations

import pytest
from cassandra import ConsistencyLevel, InvalidRequest, ReadTimeout, WriteTimeout, WriteType
from cassandra.cluster import NoHostAvailable
from cassandra.protocol import TruncateError
from cassandra.util import Duration

from .conftest import KEYSPACE_DDL, cluster

NEVER = Duration(nanoseconds=10**15)
NOW = Duration(nanoseconds=0)


@pytest.fixture(scope="module", params=[4, 5], ids=["v4", "v5"])
def session(port, request):
    c = cluster(port, protocol_version=request.param)
    s = c.connect()
    ks = f"timeouts_v{request.param}"
    s.execute(KEYSPACE_DDL.format(ks))
    s.set_keyspace(ks)
    s.execute("CREATE TABLE t (p int, c int, v int, PRIMARY KEY (p, c))")
    yield s
    c.shutdown()


def content(session):
    return sorted(tuple(r) for r in session.execute("SELECT * FROM t"))


@pytest.fixture
def one_row(session):
    session.execute("TRUNCATE t")
    session.execute("INSERT INTO t (p, c, v) VALUES (1, 1, 1)")
    return session


def test_a_select_past_its_timeout_is_a_read_timeout(one_row):
    with pytest.raises(ReadTimeout) as e:
        one_row.execute("SELECT * FROM t USING TIMEOUT 0ms")
    assert "Operation timed out for" in str(e.value)
    assert (e.value.consistency, e.value.received_responses, e.value.required_responses) == (
        ConsistencyLevel.ONE, 0, 1)
    assert list(one_row.execute("SELECT v FROM t WHERE p = 1 USING TIMEOUT 24h")) == [(1,)]


@pytest.mark.parametrize("statement, write_type", [
    ("INSERT INTO t (p, c, v) VALUES (2, 2, 2) USING TIMEOUT 0ms", WriteType.SIMPLE),
    ("UPDATE t USING TIMEOUT 0ms SET v = 5 WHERE p = 1 AND c = 1", WriteType.SIMPLE),
    ("DELETE FROM t USING TIMEOUT 0ms AND TIMESTAMP 42 WHERE p = 1", WriteType.SIMPLE),
    ("BEGIN BATCH USING TIMEOUT 0ms INSERT INTO t (p, c, v) VALUES (3, 3, 3); "
     "DELETE FROM t WHERE p = 1; APPLY BATCH", WriteType.BATCH),
])
def test_a_write_past_its_timeout_is_a_write_timeout_and_applies_nothing(one_row, statement, write_type):
    with pytest.raises(WriteTimeout) as e:
        one_row.execute(statement)
    assert e.value.write_type == write_type
    assert content(one_row) == [(1, 1, 1)]


def test_bound_timeouts_of_prepared_statements(one_row):
    insert = one_row.prepare("INSERT INTO t (p, c, v) VALUES (4, 6, 7) USING TIMEOUT ?")
    with pytest.raises(WriteTimeout):
        one_row.execute(insert, (NOW,))
    one_row.execute(insert, (NEVER,))
    select = one_row.prepare("SELECT * FROM t USING TIMEOUT ?")
    with pytest.raises(ReadTimeout):
        one_row.execute(select, (NOW,))
    assert sorted(tuple(r) for r in one_row.execute(select, (NEVER,))) == [(1, 1, 1), (4, 6, 7)]
    named = one_row.prepare("UPDATE t USING TIMEOUT :timeout AND TIMESTAMP :ts SET v = :v WHERE p = 1 AND c = 1")
    with pytest.raises(InvalidRequest, match="Timeout value cannot be null"):
        one_row.execute(named, {"ts": 42, "v": 3})  # the driver sends the missing timeout as unset
    batch = one_row.prepare("BEGIN BATCH USING TIMEOUT ? INSERT INTO t (p, c, v) VALUES (5, 1, 1); APPLY BATCH")
    with pytest.raises(WriteTimeout):
        one_row.execute(batch, (NOW,))
    assert content(one_row) == [(1, 1, 1), (4, 6, 7)]


def test_truncate_past_its_timeout_truncates_nothing(one_row):
    with pytest.raises(NoHostAvailable) as e:
        one_row.execute("TRUNCATE TABLE t USING TIMEOUT 0s")
    (error,) = e.value.errors.values()
    assert isinstance(error, TruncateError) and "Error during truncate" in str(error)
    assert content(one_row) == [(1, 1, 1)]
    prepared = one_row.prepare("TRUNCATE TABLE t USING TIMEOUT ?")
    with pytest.raises(NoHostAvailable):
        one_row.execute(prepared, (NOW,))
    assert content(one_row) == [(1, 1, 1)]
    one_row.execute(prepared, (NEVER,))
    assert content(one_row) == []
