"""An index created over a table that has rows is built in the background, as ScyllaDB builds the view under an
index (docs/views-and-indexes.md, "Building an index"): CREATE INDEX answers after its first chunk, the progress
shows in ScyllaDB's tables, a SELECT does not read through the index until it is built, writes during the build
are all indexed, a build goes on after a restart, and ``logtide shell`` finishes a build before it exits."""

from __future__ import annotations

import random
import subprocess
import sys
import time

import pytest

import logtide
from logtide.errors import InvalidRequest

from ..conftest import rows
from .test_secondary_index_maintenance import expected_entries, stored_entries

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"


def fill(session, count: int, table: str = "t") -> None:
    session.execute(f"CREATE TABLE {table} (p int PRIMARY KEY, v int, w int)")
    for start in range(0, count, 500):
        session.execute("BEGIN UNLOGGED BATCH " + " ".join(
            f"INSERT INTO {table} (p, v, w) VALUES ({k}, {k % 100}, {k});" for k in range(start, min(start + 500, count)))
            + " APPLY BATCH")


def wait_built_by_the_worker(db) -> None:
    """Until the background worker has built every index (a bound for a loaded machine, not a speed check)."""
    deadline = time.monotonic() + 600
    while db.view_builds.progress():
        assert time.monotonic() < deadline, db.view_builds.progress()
        time.sleep(0.05)


def entries_agree(db, table: str = "t") -> None:
    t = db.catalog.table("ks", table)
    for ix in t.indexes:
        assert stored_entries(db, ix) == expected_entries(db, t, ix), ix.name


def test_an_index_over_20k_rows_is_created_at_once_and_built_in_the_background(session, db):
    fill(session, 20000)
    db.view_builds.pause()
    session.execute("CREATE INDEX ON t (v)")
    ix = db.catalog.table("ks", "t").indexes[0]
    assert 0 < len(stored_entries(db, ix)) <= 100  # the first chunk (100 partitions) only
    assert rows(session.execute("SELECT keyspace_name, view_name FROM system.views_builds_in_progress")) == [
        ("ks", "t_v_idx_index")]
    assert rows(session.execute("SELECT last_token FROM system.views_builds_in_progress"))[0][0] is not None
    assert rows(session.execute("SELECT view_name, status FROM system_distributed.view_build_status")) == [
        ("t_v_idx_index", "STARTED")]
    assert rows(session.execute('SELECT * FROM system."IndexInfo"')) == []
    assert rows(session.execute("SELECT * FROM system.built_views")) == []
    # not read through before it is built (ScyllaDB's test_unbuilt_index_not_used): filtering, as before it existed
    with pytest.raises(InvalidRequest, match="ALLOW FILTERING .secondary index t_v_idx is still being built"):
        session.execute("SELECT p FROM t WHERE v = 7")
    assert len(rows(session.execute("SELECT p FROM t WHERE v = 7 ALLOW FILTERING"))) == 200
    db.view_builds.resume()
    wait_built_by_the_worker(db)
    assert rows(session.execute('SELECT * FROM system."IndexInfo"')) == [("ks", "t_v_idx")]
    assert rows(session.execute("SELECT * FROM system.built_views")) == [("ks", "t_v_idx_index")]
    assert rows(session.execute("SELECT * FROM system.views_builds_in_progress")) == []
    assert rows(session.execute("SELECT status FROM system_distributed.view_build_status")) == [("SUCCESS",)]
    assert sorted(r[0] for r in rows(session.execute("SELECT p FROM t WHERE v = 7"))) == list(range(7, 20000, 100))
    entries_agree(db)


def test_writes_during_a_build_are_all_indexed(session, db):
    fill(session, 600)
    db.view_builds.chunk = 37
    db.view_builds.pause()
    session.execute("CREATE INDEX ON t (v)")
    session.execute("CREATE INDEX wi ON t (w)")
    rnd = random.Random(5)
    steps = 0
    while db.view_builds.progress():
        db.view_builds.step()
        steps += 1
        for _ in range(20):  # rows built and not yet built, new rows, deletions
            p = rnd.randrange(800)
            kind = rnd.randrange(4)
            if kind == 0:
                session.execute(f"UPDATE t SET v = {rnd.randrange(5)} WHERE p = {p}")
            elif kind == 1:
                session.execute(f"DELETE FROM t WHERE p = {p}")
            elif kind == 2:
                session.execute(f"INSERT INTO t (p, v, w) VALUES ({p}, {rnd.randrange(5)}, {p})")
            else:
                session.execute(f"UPDATE t SET w = null WHERE p = {p}")
    assert steps > 20  # two builds, one after the other, 37 partitions a step
    entries_agree(db)
    for v in range(5):
        assert sorted(r[0] for r in rows(session.execute(f"SELECT p FROM t WHERE v = {v}"))) == sorted(
            r[0] for r in rows(session.execute(f"SELECT p FROM t WHERE v = {v} ALLOW FILTERING")))


def test_an_index_on_a_small_table_is_built_when_create_index_returns(session, db):
    fill(session, 50)
    db.view_builds.pause()
    session.execute("CREATE INDEX ON t (v)")
    assert db.view_builds.progress() == {}
    assert rows(session.execute("SELECT p FROM t WHERE v = 3")) == [(3,)]
    assert rows(session.execute('SELECT * FROM system."IndexInfo"')) == [("ks", "t_v_idx")]


def test_an_index_build_goes_on_after_a_restart(tmp_path, clock):
    d = tmp_path / "again"
    with logtide.open(d, clock=clock, synchronous="OFF") as first:
        s = first.session()
        s.execute(KS)
        s.execute("USE ks")
        fill(s, 1000)
        first.view_builds.pause()
        s.execute("CREATE INDEX ON t (v)")
        first.view_builds.step()
        assert first.view_builds.progress()
    with logtide.open(d, clock=clock, synchronous="OFF") as second:
        wait_built_by_the_worker(second)
        entries_agree(second)
        s = second.session()
        assert len(rows(s.execute("SELECT p FROM ks.t WHERE v = 3"))) == 10


def test_dropping_an_index_while_it_builds_ends_its_build_and_its_entries(session, db):
    fill(session, 500)
    db.view_builds.pause()
    session.execute("CREATE INDEX ON t (v)")
    ix = db.catalog.table("ks", "t").indexes[0]
    session.execute("DROP INDEX t_v_idx")
    db.view_builds.step()
    assert db.view_builds.progress() == {}
    assert stored_entries(db, ix) == set()
    assert rows(session.execute("SELECT * FROM system.views_builds_in_progress")) == []


def test_the_shell_finishes_an_index_build_before_it_exits(tmp_path):
    data = tmp_path / "data"
    with logtide.open(data, synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute("USE ks")
        fill(s, 3000)
    script = tmp_path / "index.cql"
    script.write_text("CREATE INDEX ON ks.t (v);\n")
    done = subprocess.run([sys.executable, "-m", "logtide", "shell", "--data-dir", str(data), "-f", str(script)],
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    with logtide.open(data, readonly=True) as db:
        assert db.view_builds.progress() == {}
        entries_agree(db)
        assert len(rows(db.session().execute("SELECT p FROM ks.t WHERE v = 3"))) == 30
