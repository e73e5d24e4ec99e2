"""A write resolves its table before it waits for the write lock; a DDL may commit in between.

The write must then follow the table as of its own commit (base row and CDC log row alike),
or fail with a clear error that changes nothing when the column it names is gone.
"""

from __future__ import annotations

import threading
import time

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows


def _race(session, statement: str, ddl: list[str]):
    """Run ``statement`` from another session while this one holds the write lock and runs ``ddl``."""
    db = session.db
    writer = db.session("ks")
    outcome: dict[str, object] = {}

    def write() -> None:
        try:
            writer.execute(statement)
            outcome["ok"] = True
        except Exception as e:  # noqa: BLE001 - handed to the test
            outcome["error"] = e

    with db.write_lock:
        th = threading.Thread(target=write)
        th.start()
        deadline = time.monotonic() + 60
        while not db.committer._queue and time.monotonic() < deadline:
            time.sleep(0.01)
        assert db.committer._queue, "the writer is waiting for the write lock"
        for d in ddl:
            session.execute(d)
    th.join(60)
    return outcome


CDC = "WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}"


def test_a_write_to_a_column_dropped_while_it_waited_fails_and_changes_nothing(session):
    session.execute(f"CREATE TABLE t (k int PRIMARY KEY, v int, w int) {CDC}")
    out = _race(session, "INSERT INTO t (k, v, w) VALUES (1, 1, 1)", ["ALTER TABLE t DROP w"])
    assert isinstance(out.get("error"), InvalidRequest) and "w" in str(out["error"])
    assert rows(session.execute("SELECT * FROM t")) == []
    assert rows(session.execute("SELECT * FROM t_scylla_cdc_log")) == []


def test_a_write_committed_after_an_add_column_logs_in_the_new_shape(session):
    session.execute(f"CREATE TABLE t (k int PRIMARY KEY, v int) {CDC}")
    out = _race(session, "INSERT INTO t (k, v) VALUES (1, 1)", ["ALTER TABLE t ADD w int"])
    assert out == {"ok": True}
    assert rows(session.execute("SELECT k, v, w FROM t")) == [(1, 1, None)]
    log = session.execute('SELECT "cdc$operation", k, v, w FROM t_scylla_cdc_log')
    assert [tuple(r) for r in log] == [(2, 1, 1, None), (9, 1, 1, None)]  # delta (insert) and its postimage


def test_a_write_to_a_table_dropped_while_it_waited_fails(session):
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    out = _race(session, "INSERT INTO t (k, v) VALUES (1, 1)", ["DROP TABLE t"])
    assert isinstance(out.get("error"), InvalidRequest)
    session.execute("CREATE TABLE t (k int PRIMARY KEY, v int)")
    assert rows(session.execute("SELECT * FROM t")) == []
