"""The embedded API raises only logtide's own errors: bad parameters, unencodable text, a full disk."""

from __future__ import annotations

import pytest

import logtide
from logtide.errors import CqlError, InvalidRequest, ReadFailure, StorageFailure, WriteFailure

from ..diskfull import fill, small_disk  # noqa: F401 - small_disk is a fixture

DDL = ("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
       "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH cdc = {'enabled': true}")


@pytest.mark.parametrize("params", [5, 2.5, "ab", b"ab", object()])
def test_parameters_neither_sequence_nor_mapping_are_invalid_requests(session, params):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v text)")
    with pytest.raises(InvalidRequest, match="sequence .* or a mapping"):
        session.execute("INSERT INTO t (k, v) VALUES (?, ?)", params)
    with pytest.raises(InvalidRequest, match="sequence .* or a mapping"):
        session.execute_batch("UNLOGGED", [("INSERT INTO t (k, v) VALUES (?, ?)", params)])
    assert session.execute("SELECT * FROM t").rows == []


@pytest.mark.parametrize("where", ["bound", "literal", "batch", "key"])
def test_lone_surrogate_in_text_is_an_invalid_request(session, where):
    session.execute("CREATE TABLE t (k text PRIMARY KEY, v text)")
    with pytest.raises(InvalidRequest, match="cannot be encoded as UTF-8"):
        if where == "bound":
            session.execute("INSERT INTO t (k, v) VALUES (?, ?)", ["a", "x\ud800y"])
        elif where == "literal":
            session.execute("INSERT INTO t (k, v) VALUES ('a', '\udfff')")
        elif where == "batch":
            session.execute_batch("LOGGED", [("INSERT INTO t (k, v) VALUES (?, ?)", ["a", "\udc80"])])
        else:
            session.execute("SELECT * FROM t WHERE k = ?", ["\ud800"])
    assert session.execute("SELECT * FROM t").rows == []


def test_a_full_disk_fails_writes_with_write_failure_keeps_reads_and_recovers(small_disk):
    db = logtide.open(small_disk / "data", synchronous="FULL")
    try:
        s = db.session()
        for stmt in DDL:
            s.execute(stmt)
        s.execute("INSERT INTO ks.t (k, v) VALUES (1, 'kept')")
        fill(small_disk / "filler")
        failures = 0
        for i in range(2, 200):
            try:
                s.execute("INSERT INTO ks.t (k, v) VALUES (?, ?)", [i, "x" * 4096])
            except WriteFailure as e:
                assert e.kind == "disk full" and "disk is full" in e.message, e.message
                assert e.code == 0x1500
                failures += 1
            except CqlError as e:  # any other error class would be a wrong answer
                pytest.fail(f"{type(e).__name__}: {e}")
        assert failures > 0
        with pytest.raises(StorageFailure):
            s.execute("CREATE TABLE ks.u (k int PRIMARY KEY) WITH comment = '" + "c" * 200_000 + "'")
        assert s.execute("SELECT v FROM ks.t WHERE k = 1").one().v == "kept"
        (small_disk / "filler").unlink()
        s.execute("INSERT INTO ks.t (k, v) VALUES (1000, 'after')")
        assert s.execute("SELECT v FROM ks.t WHERE k = 1000").one().v == "after"
    finally:
        db.close()
    with logtide.open(small_disk / "data") as again:
        assert again.session().execute("SELECT v FROM ks.t WHERE k = 1").one().v == "kept"


def test_storage_failures_are_logtide_errors_with_protocol_codes():
    assert issubclass(WriteFailure, CqlError) and WriteFailure.code == 0x1500
    assert issubclass(ReadFailure, CqlError) and ReadFailure.code == 0x1300
