"""ScyllaDB's per-row TTL column (docs/semantics.md, "Per-row TTL"): the DDL that names it, with ScyllaDB's rules and
messages, DESCRIBE's marker, and the expiration scan that deletes expired rows through the write path (the CDC log
seeing ScyllaDB's service deletions, views following, a later write winning over the scan)."""

from __future__ import annotations

import pytest

import logtide
from logtide.errors import InvalidRequest

from ..conftest import rows

NOW = 1_600_000_000  # the manual clock's start (seconds)


@pytest.fixture
def s(db, session):
    db.row_expiry.pause()  # the tests run the passes themselves
    return session


def ttl_column(s, table: str) -> str | None:
    """The column DESC TABLE marks ``TTL`` (None: none)."""
    text = s.execute(f"DESC TABLE {table}").rows[0].create_statement
    marked = [line.strip().split(" ", 1)[0] for line in text.splitlines() if line.endswith(" TTL,")]
    assert len(marked) <= 1
    return marked[0] if marked else None


def test_create_table_marks_one_regular_column_as_the_ttl_column(s):
    s.execute("CREATE TABLE t (p int PRIMARY KEY, v int, Expires timestamp TTL)")
    assert ttl_column(s, "t") == "expires"
    s.execute('CREATE TABLE q (p int PRIMARY KEY, "Expires" bigint TTL)')
    assert ttl_column(s, "q") == '"Expires"'
    s.execute("CREATE TABLE plain (p int PRIMARY KEY, e timestamp)")
    assert ttl_column(s, "plain") is None


@pytest.mark.parametrize("schema, message", [
    ("p int PRIMARY KEY, a timestamp TTL, b bigint TTL",
     "Cannot have more than one TTL column in a table. Saw a and b"),
    ("p int PRIMARY KEY, e smallint TTL", "TTL column 'e' must be of type timestamp, bigint or int, can't be smallint"),
    ("p int PRIMARY KEY, e text TTL", "TTL column 'e' must be of type timestamp, bigint or int, can't be text"),
    ("e timestamp TTL PRIMARY KEY", "TTL column e cannot be part of the PRIMARY KEY"),
    ("p int, e timestamp TTL, PRIMARY KEY (p, e)", "TTL column e cannot be part of the PRIMARY KEY"),
    ("p int, c int, e timestamp TTL STATIC, PRIMARY KEY (p, c)", "TTL column e cannot be a static column"),
])
def test_create_table_refuses_a_ttl_column_scylladb_refuses(s, schema, message):
    with pytest.raises(InvalidRequest) as e:
        s.execute(f"CREATE TABLE t ({schema})")
    assert str(e.value) == message
    assert s.db.catalog.find_table("ks", "t") is None


def test_alter_table_sets_and_unsets_the_ttl_column_with_scylladb_messages(s):
    s.execute("CREATE TABLE t (p int, c int, s timestamp STATIC, e1 timestamp, e2 int, d double, "
              "PRIMARY KEY (p, c))")
    for column, message in [
        ("nope", "Column 'nope' does not exist in table ks.t"),
        ("d", "TTL column d must be of type timestamp, bigint or int, can't be double"),
        ("c", "Cannot use a primary key column c as a TTL column"),
        ("s", "Cannot use a static column s as a TTL column"),
    ]:
        with pytest.raises(InvalidRequest) as e:
            s.execute(f"ALTER TABLE t TTL {column}")
        assert str(e.value) == message
    with pytest.raises(InvalidRequest, match="^Cannot unset TTL column, table ks.t does not have a TTL column set$"):
        s.execute("ALTER TABLE t TTL NULL")
    s.execute("ALTER TABLE t TTL e1")
    assert ttl_column(s, "t") == "e1"
    for again in ("e1", "e2"):
        with pytest.raises(InvalidRequest, match="^Cannot set TTL column, table ks.t already has a TTL column "
                                                 "defined: e1$"):
            s.execute(f"ALTER TABLE t TTL {again}")
    s.execute("ALTER TABLE t TTL NULL")
    s.execute("ALTER TABLE t TTL e2")
    assert ttl_column(s, "t") == "e2"


def test_a_cdc_log_table_cannot_get_a_ttl_column(s):
    s.execute("CREATE TABLE t (p int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    with pytest.raises(InvalidRequest, match="Cannot set or unset a TTL column of the CDC log table "
                                             "ks.t_scylla_cdc_log"):
        s.execute('ALTER TABLE t_scylla_cdc_log TTL "cdc$time"')


def test_dropping_the_ttl_column_turns_row_ttl_off_and_renaming_is_refused(s):
    s.execute("CREATE TABLE t (p int PRIMARY KEY, e timestamp TTL, x int)")
    s.execute("ALTER TABLE t DROP x")
    assert ttl_column(s, "t") == "e"
    with pytest.raises(InvalidRequest, match="Cannot rename non PRIMARY KEY column e"):
        s.execute("ALTER TABLE t RENAME e TO f")
    s.execute("ALTER TABLE t DROP e")
    s.execute("ALTER TABLE t ADD e timestamp")
    assert ttl_column(s, "t") is None


def test_the_ttl_column_is_kept_across_a_reopen_and_in_desc_keyspace(tmp_path, clock):
    with logtide.open(tmp_path / "d", clock=clock) as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (p int PRIMARY KEY, e bigint TTL)")
    with logtide.open(tmp_path / "d", clock=clock) as db:
        s = db.session()
        assert ttl_column(s, "ks.t") == "e"
        desc = "".join(r.create_statement for r in s.execute("DESC KEYSPACE ks"))
        assert "    e bigint TTL,\n" in desc


@pytest.mark.parametrize("typ, scale", [("timestamp", 1000), ("bigint", 1), ("int", 1)])
def test_scan_deletes_rows_whose_expiration_time_has_passed(s, db, clock, typ, scale):
    s.execute(f"CREATE TABLE t (p int PRIMARY KEY, e {typ}, x int)")
    s.execute(f"INSERT INTO t (p, e) VALUES (1, {(NOW - 60) * scale})")  # expired before the table had TTL
    s.execute("ALTER TABLE t TTL e")
    s.execute("INSERT INTO t (p, x) VALUES (2, 2)")  # no expiration time: never expires
    s.execute(f"INSERT INTO t (p, e) VALUES (3, {(NOW - 1) * scale})")
    s.execute(f"INSERT INTO t (p, e) VALUES (4, {162777600 * scale})")  # more than five years ago: ignored
    s.execute(f"INSERT INTO t (p, e) VALUES (5, {(NOW + 2) * scale})")
    s.execute(f"INSERT INTO t (p, e) VALUES (6, {(NOW + 2) * scale})")
    s.execute("UPDATE t SET e = null WHERE p = 6")  # cancelled
    assert db.row_expiry.scan_pass() == 2
    assert sorted(r[0] for r in rows(s.execute("SELECT p FROM t"))) == [2, 4, 5, 6]
    clock.advance(seconds=2)
    assert db.row_expiry.scan_pass() == 1
    assert sorted(r[0] for r in rows(s.execute("SELECT p FROM t"))) == [2, 4, 6]
    stats = db.row_expiry.stats
    assert (stats.scan_passes, stats.scan_table, stats.items_deleted) == (2, 2, 3)


def test_scan_deletes_clustered_rows_one_by_one_in_chunks(s, db):
    db.row_expiry.chunk = 2  # several snapshots for one table
    s.execute("CREATE TABLE t (p1 int, p2 int, c1 int, c2 int, e timestamp TTL, PRIMARY KEY ((p1, p2), c1, c2))")
    for p2 in range(5):
        s.execute(f"INSERT INTO t (p1, p2, c1, c2) VALUES (1, {p2}, 0, 0)")
        s.execute(f"INSERT INTO t (p1, p2, c1, c2, e) VALUES (1, {p2}, 1, 1, {(NOW - 60) * 1000})")
    assert db.row_expiry.scan_pass() == 5
    assert sorted(rows(s.execute("SELECT p2, c1 FROM t"))) == [(p2, 0) for p2 in range(5)]


def test_a_write_after_the_scan_read_the_row_keeps_it(s, db):
    s.execute("CREATE TABLE t (p int PRIMARY KEY, e bigint TTL)")
    s.execute(f"INSERT INTO t (p, e) VALUES (1, {NOW - 60})")
    table = db.catalog.table("ks", "t")
    with db.store.snapshot() as txn:
        found, _ = db.row_expiry._chunk(txn, table, None)
    assert len(found) == 1
    s.execute(f"UPDATE t SET e = {NOW + 3600} WHERE p = 1")  # committed between the scan's read and its delete
    assert db.row_expiry.expire(found[0]) is False
    assert rows(s.execute("SELECT p, e FROM t")) == [(1, NOW + 3600)]


@pytest.mark.parametrize("clustered, operation", [(True, -3), (False, -4)])
def test_cdc_log_records_the_expiry_as_scylladb_service_deletion_after_the_preimage(s, db, clustered, operation):
    key = "PRIMARY KEY (p, c)" if clustered else "PRIMARY KEY (p)"
    s.execute(f"CREATE TABLE t (p int, c int, x int, e bigint TTL, {key}) "
              "WITH cdc = {'enabled': true, 'preimage': true}")
    s.execute(f"INSERT INTO t (p, c, x, e) VALUES (1, 2, 3, {NOW - 60})")
    assert db.row_expiry.scan_pass() == 1
    log = rows(s.execute('SELECT "cdc$operation", p, c, x, e FROM t_scylla_cdc_log'))
    assert log[:2] == [(2, 1, 2, 3, NOW - 60), (0, 1, 2, 3, NOW - 60)]
    assert log[2][:2] == (operation, 1) and log[2][3:] == (None, None)
    assert log[2][2] == (2 if clustered else None)
    assert len(log) == 3


def test_materialized_views_and_indexes_follow_an_expiry(s, db):
    s.execute("CREATE TABLE t (p int PRIMARY KEY, x int, e timestamp TTL)")
    s.execute("CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE x IS NOT NULL AND p IS NOT NULL "
              "PRIMARY KEY (x, p)")
    s.execute("CREATE INDEX ON t (x)")
    s.execute("INSERT INTO t (p, x) VALUES (1, 2)")
    assert rows(s.execute("SELECT p FROM mv WHERE x = 2")) == [(1,)]
    s.execute(f"UPDATE t SET e = {(NOW - 60) * 1000} WHERE p = 1")
    assert db.row_expiry.scan_pass() == 1
    assert rows(s.execute("SELECT p FROM mv WHERE x = 2")) == []
    assert rows(s.execute("SELECT p FROM t WHERE x = 2")) == []


def test_the_background_scan_runs_with_its_period(tmp_path):
    import time

    with logtide.open(tmp_path / "d", synchronous="OFF") as db:
        db.config.set("alternator_ttl_period_in_seconds", 0.2, "cli")
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (p int PRIMARY KEY, e bigint TTL)")
        s.execute(f"INSERT INTO ks.t (p, e) VALUES (1, {int(time.time()) - 60})")
        deadline = time.monotonic() + 30
        while rows(s.execute("SELECT p FROM ks.t")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rows(s.execute("SELECT p FROM ks.t")) == []
        assert db.row_expiry.stats.items_deleted == 1


def test_rows_expired_while_the_database_was_closed_go_at_the_first_pass_after_a_restart(tmp_path, clock):
    import time

    with logtide.open(tmp_path / "d", clock=clock, synchronous="OFF") as db:
        db.row_expiry.pause()
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (p int PRIMARY KEY, e bigint TTL)")
        s.execute(f"INSERT INTO ks.t (p, e) VALUES (1, {NOW + 60})")
        s.execute("INSERT INTO ks.t (p) VALUES (2)")
    clock.advance(seconds=61)
    with logtide.open(tmp_path / "d", clock=clock, synchronous="OFF") as db:  # the scan starts with the database
        s = db.session()
        deadline = time.monotonic() + 30
        while len(rows(s.execute("SELECT p FROM ks.t"))) == 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rows(s.execute("SELECT p FROM ks.t")) == [(2,)]
