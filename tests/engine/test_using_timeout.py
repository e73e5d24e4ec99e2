"""ScyllaDB's ``USING TIMEOUT`` enforced (docs/compatibility.md "Writes, lightweight transactions, JSON,
validation and types"): a statement whose deadline has passed answers a read or write timeout, or a
truncate error, and a write that times out changes nothing.  A timeout of 0 ms has always passed when
the statement runs, so no test here depends on the machine's speed; the long timeouts (hours) never pass."""

from __future__ import annotations

import pytest
from cassandra.util import Duration

from logtide.errors import InvalidRequest, ReadTimeout, SyntaxException, TruncateError, WriteTimeout

from ..conftest import rows

NEVER = Duration(nanoseconds=3_600_000_000_000)  # one hour
NOW = Duration(nanoseconds=0)


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (p int, c int, v int, PRIMARY KEY (p, c))")
    session.execute("CREATE TABLE n (p int PRIMARY KEY, n counter)")
    session.execute("INSERT INTO t (p, c, v) VALUES (1, 1, 1)")
    return session


def everything(session):
    return rows(session.execute("SELECT * FROM t"))


def test_a_select_past_its_timeout_is_a_read_timeout(t):
    with pytest.raises(ReadTimeout, match=r"^Operation timed out for ks\.t - received only 0 responses from 1 CL=ONE\.$"):
        t.execute("SELECT * FROM t USING TIMEOUT 0ms")
    with pytest.raises(ReadTimeout):
        t.execute("SELECT * FROM system_schema.tables USING TIMEOUT 0s")  # a system table as well
    assert rows(t.execute("SELECT * FROM t WHERE p = 1 USING TIMEOUT 24h")) == [(1, 1, 1)]


@pytest.mark.parametrize("statement", [
    "INSERT INTO t (p, c, v) VALUES (1, 1, 9) USING TIMEOUT 0ms",
    "INSERT INTO t (p, c, v) VALUES (2, 2, 2) USING TTL 100 AND TIMEOUT 0ms",
    "UPDATE t USING TIMEOUT 0ms SET v = 9 WHERE p = 1 AND c = 1",
    "DELETE FROM t USING TIMEOUT 0ms WHERE p = 1",
    "DELETE FROM t USING TIMEOUT 0ms AND TIMESTAMP 99999999999999 WHERE p = 1 AND c = 1",
])
def test_a_write_past_its_timeout_is_a_write_timeout_and_changes_nothing(t, statement):
    with pytest.raises(WriteTimeout, match=r"^Operation timed out for ks\.t - "):
        t.execute(statement)
    assert everything(t) == [(1, 1, 1)]


def test_the_write_timeout_names_the_kind_of_write(t):
    kinds = {}
    for name, statement in [
            ("single", "INSERT INTO t (p, c, v) VALUES (5, 5, 5) USING TIMEOUT 0ms"),
            ("counter", "UPDATE n USING TIMEOUT 0ms SET n = n + 1 WHERE p = 1"),
            ("logged", "BEGIN BATCH USING TIMEOUT 0ms INSERT INTO t (p, c, v) VALUES (5, 5, 5); APPLY BATCH"),
            ("unlogged", "BEGIN UNLOGGED BATCH USING TIMEOUT 0ms INSERT INTO t (p, c, v) VALUES (5, 5, 5); "
                         "APPLY BATCH")]:
        with pytest.raises(WriteTimeout) as e:
            t.execute(statement)
        kinds[name] = e.value.write_type
    assert kinds == {"single": "SIMPLE", "counter": "COUNTER", "logged": "BATCH",
                     "unlogged": "UNLOGGED_BATCH"}
    assert rows(t.execute("SELECT * FROM n")) == []


def test_a_lightweight_transaction_runs_without_its_timeout_as_in_scylladb(t):
    # ScyllaDB runs conditional statements and batches under its configured timeouts, not USING TIMEOUT
    assert rows(t.execute("UPDATE t USING TIMEOUT 0ms SET v = 2 WHERE p = 1 AND c = 1 IF v = 1")) == [(True, 1)]
    assert rows(t.execute("INSERT INTO t (p, c, v) VALUES (3, 3, 3) IF NOT EXISTS USING TIMEOUT 0ms"))[0][0] is True
    assert rows(t.execute("BEGIN BATCH USING TIMEOUT 0ms UPDATE t SET v = 4 WHERE p = 3 AND c = 3 IF v = 3; "
                          "APPLY BATCH"))[0][0] is True
    assert everything(t) == [(1, 1, 2), (3, 3, 4)]
    with pytest.raises(InvalidRequest, match="Timeout values must be non-negative"):  # still checked
        t.execute("UPDATE t USING TIMEOUT -1ms SET v = 2 WHERE p = 1 AND c = 1 IF v = 1")


def test_a_batch_past_its_timeout_applies_none_of_its_statements(t):
    with pytest.raises(WriteTimeout):
        t.execute("BEGIN BATCH USING TIMEOUT 0ms INSERT INTO t (p, c, v) VALUES (7, 1, 1); "
                  "INSERT INTO t (p, c, v) VALUES (8, 1, 1); DELETE FROM t WHERE p = 1; APPLY BATCH")
    assert everything(t) == [(1, 1, 1)]
    t.execute("BEGIN BATCH USING TIMEOUT 48h INSERT INTO t (p, c, v) VALUES (7, 1, 1); APPLY BATCH")
    assert len(everything(t)) == 2


def test_a_bound_timeout_is_enforced_in_prepared_statements(t):
    insert = t.prepare("INSERT INTO t (p, c, v) VALUES (?, 1, 1) USING TIMEOUT ?")
    assert [(s.name, s.type.cql()) for s in insert.bind_specs] == [("p", "int"), ("[timeout]", "duration")]
    with pytest.raises(WriteTimeout):
        t.execute(insert, (4, NOW))
    t.execute(insert, (4, NEVER))
    select = t.prepare("SELECT * FROM t WHERE p = :p USING TIMEOUT :budget")
    with pytest.raises(ReadTimeout):
        t.execute(select, {"p": 4, "budget": NOW})
    assert rows(t.execute(select, {"p": 4, "budget": NEVER})) == [(4, 1, 1)]
    batch = t.prepare("BEGIN BATCH USING TIMEOUT ? INSERT INTO t (p, c, v) VALUES (6, 1, 1); APPLY BATCH")
    with pytest.raises(WriteTimeout):
        t.execute(batch, (NOW,))
    assert rows(t.execute("SELECT * FROM t WHERE p = 6")) == []


def test_an_unbound_or_null_timeout_is_refused(t):
    from logtide.schema.types import UNSET
    update = t.prepare("UPDATE t USING TIMEOUT :timeout SET v = :v WHERE p = 1 AND c = 1")
    for bad in (None, UNSET):
        with pytest.raises(InvalidRequest, match="^Timeout value cannot be null$"):
            t.execute(update, {"timeout": bad, "v": 5})
    assert everything(t) == [(1, 1, 1)]


def test_truncate_takes_a_timeout_and_changes_nothing_past_it(t):
    with pytest.raises(TruncateError, match=r"^Error during truncate: .*ks\.t"):
        t.execute("TRUNCATE TABLE t USING TIMEOUT 0s")
    assert everything(t) == [(1, 1, 1)]
    prepared = t.prepare("TRUNCATE t USING TIMEOUT ?")
    with pytest.raises(TruncateError):
        t.execute(prepared, (NOW,))
    with pytest.raises(InvalidRequest, match="Timeout values cannot be expressed in days/months"):
        t.execute(prepared, (Duration(days=1),))
    assert everything(t) == [(1, 1, 1)]
    t.execute(prepared, (NEVER,))
    assert everything(t) == []


@pytest.mark.parametrize("statement", [
    "TRUNCATE t USING TTL 1",
    "TRUNCATE t USING TIMESTAMP 123",
    "TRUNCATE t USING TIMEOUT 1h AND TTL 42",
    "DELETE FROM t USING TIMEOUT 60s AND TTL 42 WHERE p = 1",
    "DELETE FROM t USING TTL 42 WHERE p = 1",
    "SELECT * FROM t USING TIMEOUT 60s AND TIMESTAMP 42",
])
def test_using_clauses_a_statement_does_not_take_are_syntax_errors(t, statement):
    with pytest.raises(SyntaxException):
        t.execute(statement)
