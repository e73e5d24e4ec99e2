"""Cell-level semantics: last write wins, Cassandra's tie rules, row markers, tombstones."""

from __future__ import annotations

import pytest

from logtide.errors import InvalidRequest
from logtide.mutation.cells import Cell, reconcile

from ..conftest import rows


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (pk int, ck int, v int, w text, PRIMARY KEY (pk, ck))")
    return session


def test_later_timestamp_wins_regardless_of_arrival_order(t):
    t.execute("UPDATE t USING TIMESTAMP 20 SET v = 2 WHERE pk = 0 AND ck = 0")
    t.execute("UPDATE t USING TIMESTAMP 10 SET v = 1 WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT v, writetime(v) FROM t")) == [(2, 20)]


def test_tombstone_beats_live_cell_at_equal_timestamp(t):
    t.execute("UPDATE t USING TIMESTAMP 10 SET v = 1, w = 'x' WHERE pk = 0 AND ck = 0")
    t.execute("DELETE v FROM t USING TIMESTAMP 10 WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT v, w FROM t")) == [(None, "x")]


def test_expiring_cell_beats_non_expiring_at_equal_timestamp(t):
    t.execute("UPDATE t USING TIMESTAMP 10 AND TTL 100 SET v = 1 WHERE pk = 0 AND ck = 0")
    t.execute("UPDATE t USING TIMESTAMP 10 SET v = 9 WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT v, ttl(v) FROM t")) == [(1, 100)]


def test_later_expiry_wins_between_expiring_cells(t):
    t.execute("UPDATE t USING TIMESTAMP 10 AND TTL 500 SET v = 1 WHERE pk = 0 AND ck = 0")
    t.execute("UPDATE t USING TIMESTAMP 10 AND TTL 100 SET v = 9 WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT v, ttl(v) FROM t")) == [(1, 500)]


def test_greater_serialized_value_wins_otherwise(t):
    t.execute("UPDATE t USING TIMESTAMP 10 SET v = 1, w = 'b' WHERE pk = 0 AND ck = 0")
    t.execute("UPDATE t USING TIMESTAMP 10 SET v = -1, w = 'a' WHERE pk = 0 AND ck = 0")
    # -1 serializes as ffffffff, greater than 00000001 in unsigned byte order
    assert rows(t.execute("SELECT v, w FROM t")) == [(-1, "b")]


def test_reconcile_is_commutative():
    a = Cell(5, b"\x01", 10, 100)
    b = Cell(5, None, 0, 50)
    assert reconcile(a, b) == reconcile(b, a) == b


def test_insert_creates_row_marker_update_does_not(t):
    t.execute("UPDATE t SET v = null WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT * FROM t WHERE pk = 0 AND ck = 0")) == []
    t.execute("INSERT INTO t (pk, ck, v) VALUES (1, 1, null)")
    assert rows(t.execute("SELECT * FROM t WHERE pk = 1 AND ck = 1")) == [(1, 1, None, None)]


def test_row_lives_while_any_cell_lives(t):
    t.execute("UPDATE t SET v = 0 WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT * FROM t")) == [(0, 0, 0, None)]
    t.execute("UPDATE t SET v = null WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT * FROM t")) == []


def test_inserted_row_survives_deleting_its_cells(t):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 0)")
    t.execute("UPDATE t SET v = null WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT * FROM t")) == [(0, 0, None, None)]


def test_row_delete_shadows_older_writes_only(t):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 0) USING TIMESTAMP 10")
    t.execute("DELETE FROM t USING TIMESTAMP 20 WHERE pk = 0 AND ck = 0")
    t.execute("UPDATE t USING TIMESTAMP 15 SET w = 'old' WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT * FROM t")) == []
    t.execute("UPDATE t USING TIMESTAMP 25 SET w = 'new' WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT * FROM t")) == [(0, 0, None, "new")]


def test_partition_delete_removes_every_row_and_static(session):
    session.execute("CREATE TABLE s (pk int, ck int, st int static, v int, PRIMARY KEY (pk, ck))")
    session.execute("INSERT INTO s (pk, ck, st, v) VALUES (0, 0, 1, 1)")
    session.execute("INSERT INTO s (pk, ck, v) VALUES (0, 1, 2)")
    session.execute("INSERT INTO s (pk, ck, v) VALUES (1, 1, 2)")
    session.execute("DELETE FROM s WHERE pk = 0")
    assert rows(session.execute("SELECT * FROM s")) == [(1, 1, None, 2)]


def test_partition_delete_keeps_later_writes(t):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 0) USING TIMESTAMP 10")
    t.execute("DELETE FROM t USING TIMESTAMP 20 WHERE pk = 0")
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 1, 1) USING TIMESTAMP 30")
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 2, 2) USING TIMESTAMP 19")
    assert rows(t.execute("SELECT pk, ck, v FROM t")) == [(0, 1, 1)]


@pytest.fixture
def r(session):
    session.execute("CREATE TABLE r (pk int, ck int, v int, PRIMARY KEY (pk, ck))")
    for i in range(5):
        session.execute(f"INSERT INTO r (pk, ck, v) VALUES (0, {i}, {i})")
    return session


@pytest.mark.parametrize("where, left", [
    ("ck > 0 AND ck <= 2", [0, 3, 4]),
    ("ck >= 1 AND ck < 3", [0, 3, 4]),
    ("ck < 3", [3, 4]),
    ("ck >= 3", [0, 1, 2]),
    ("ck > 4", [0, 1, 2, 3, 4]),
])
def test_range_delete_bounds(r, where, left):
    r.execute(f"DELETE FROM r WHERE pk = 0 AND {where}")
    assert [row.ck for row in r.execute("SELECT ck FROM r")] == left


def test_range_delete_on_clustering_prefix(session):
    session.execute("CREATE TABLE m (pk int, a int, b int, v int, PRIMARY KEY (pk, a, b))")
    for a in range(3):
        for b in range(3):
            session.execute(f"INSERT INTO m (pk, a, b, v) VALUES (0, {a}, {b}, 0)")
    session.execute("DELETE FROM m WHERE pk = 0 AND a = 1")
    session.execute("DELETE FROM m WHERE pk = 0 AND a = 2 AND b > 0")
    assert [(x.a, x.b) for x in session.execute("SELECT a, b FROM m")] == [(0, 0), (0, 1), (0, 2), (2, 0)]


def test_range_tombstone_shadows_later_arriving_older_write(r):
    r.execute("DELETE FROM r USING TIMESTAMP 99999999999999999 WHERE pk = 0 AND ck >= 1 AND ck <= 2")
    r.execute("INSERT INTO r (pk, ck, v) VALUES (0, 1, 10) USING TIMESTAMP 5")
    assert [row.ck for row in r.execute("SELECT ck FROM r")] == [0, 3, 4]


def test_range_delete_with_descending_clustering(session):
    session.execute("CREATE TABLE d (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH CLUSTERING ORDER BY (ck DESC)")
    for i in range(5):
        session.execute(f"INSERT INTO d (pk, ck, v) VALUES (0, {i}, {i})")
    assert [x.ck for x in session.execute("SELECT ck FROM d")] == [4, 3, 2, 1, 0]
    session.execute("DELETE FROM d WHERE pk = 0 AND ck > 1 AND ck <= 3")
    assert [x.ck for x in session.execute("SELECT ck FROM d")] == [4, 1, 0]
    assert [x.ck for x in session.execute("SELECT ck FROM d WHERE pk = 0 AND ck < 4 AND ck >= 1")] == [1]


def test_range_delete_of_specific_columns_is_refused(r):
    with pytest.raises(InvalidRequest, match="Range deletions are not supported for specific columns"):
        r.execute("DELETE v FROM r WHERE pk = 0 AND ck > 1")


def test_static_row_exists_while_a_static_cell_lives(session):
    session.execute("CREATE TABLE st (pk int, ck int, s int static, c int, PRIMARY KEY (pk, ck))")
    session.execute("UPDATE st SET s = 0 WHERE pk = 0")
    assert rows(session.execute("SELECT * FROM st WHERE pk = 0")) == [(0, None, 0, None)]
    session.execute("UPDATE st SET s = null WHERE pk = 0")
    assert rows(session.execute("SELECT * FROM st WHERE pk = 0")) == []


def test_static_value_is_shown_with_every_clustered_row(session):
    session.execute("CREATE TABLE st (pk int, ck int, s int static, c int, PRIMARY KEY (pk, ck))")
    session.execute("UPDATE st SET c = 0 WHERE pk = 2 AND ck = 0")
    session.execute("UPDATE st SET c = 1 WHERE pk = 2 AND ck = 1")
    session.execute("UPDATE st SET s = 2 WHERE pk = 2")
    assert rows(session.execute("SELECT * FROM st WHERE pk = 2")) == [(2, 0, 2, 0), (2, 1, 2, 1)]


def test_insert_of_only_static_columns_is_a_static_update(session):
    session.execute("CREATE TABLE st (pk int, ck int, s int static, c int, PRIMARY KEY (pk, ck))")
    session.execute("INSERT INTO st (pk, s) VALUES (0, 0)")
    assert rows(session.execute("SELECT * FROM st")) == [(0, None, 0, None)]


def test_equal_expiry_falls_back_to_the_greater_value(t):
    t.execute("UPDATE t USING TIMESTAMP 10 AND TTL 100 SET v = 0 WHERE pk = 0 AND ck = 0")
    t.execute("UPDATE t USING TIMESTAMP 10 AND TTL 100 SET v = 1 WHERE pk = 0 AND ck = 0")
    t.execute("UPDATE t USING TIMESTAMP 10 AND TTL 100 SET v = 0 WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT v FROM t")) == [(1,)]


def test_same_timestamp_and_expiry_the_lower_ttl_wins():
    """ScyllaDB: equal timestamps and expiry times, the later derived write time (expiry - ttl) wins."""
    written_first = Cell(1000, b"\x01", 3, 200)
    written_later = Cell(1000, b"\x00", 2, 200)
    assert reconcile(written_first, written_later) == reconcile(written_later, written_first) == written_later


def test_rewriting_with_the_same_timestamp_and_expiry_keeps_the_later_write(session, clock):
    session.execute("CREATE TABLE e (k int PRIMARY KEY, v int)")
    session.execute("INSERT INTO e (k, v) VALUES (1, 2) USING TIMESTAMP 1000 AND TTL 3")
    clock.advance(1)
    session.execute("INSERT INTO e (k, v) VALUES (1, 1) USING TIMESTAMP 1000 AND TTL 2")
    assert session.execute("SELECT v FROM e WHERE k = 1").one()[0] == 1
