"""TTLs (USING TTL, default_time_to_live, expiry, ttl()) and write timestamps."""

from __future__ import annotations

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (pk int, ck int, v int, w int, PRIMARY KEY (pk, ck))")
    return session


def test_using_ttl_expires_at_read_time(t, clock):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 1) USING TTL 10")
    assert rows(t.execute("SELECT v, ttl(v) FROM t")) == [(1, 10)]
    clock.advance(seconds=4)
    assert rows(t.execute("SELECT v, ttl(v) FROM t")) == [(1, 6)]
    clock.advance(seconds=6)
    assert rows(t.execute("SELECT * FROM t")) == []


def test_insert_ttl_applies_to_row_marker_too(t, clock):
    t.execute("INSERT INTO t (pk, ck) VALUES (0, 0) USING TTL 5")
    assert rows(t.execute("SELECT * FROM t")) == [(0, 0, None, None)]
    clock.advance(seconds=5)
    assert rows(t.execute("SELECT * FROM t")) == []


def test_cells_with_different_ttls_expire_separately(t, clock):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 1)")
    t.execute("UPDATE t USING TTL 3 SET w = 2 WHERE pk = 0 AND ck = 0")
    clock.advance(seconds=3)
    assert rows(t.execute("SELECT * FROM t")) == [(0, 0, 1, None)]


def test_default_time_to_live(session, clock):
    session.execute("CREATE TABLE d (pk int PRIMARY KEY, v int) WITH default_time_to_live = 100")
    session.execute("INSERT INTO d (pk, v) VALUES (0, 0)")
    session.execute("INSERT INTO d (pk, v) VALUES (1, 1) USING TTL 0")
    assert sorted(rows(session.execute("SELECT pk, ttl(v) FROM d"))) == [(0, 100), (1, None)]
    clock.advance(seconds=100)
    assert rows(session.execute("SELECT pk FROM d")) == [(1,)]


def test_expired_cell_still_shadows_older_writes(t, clock):
    t.execute("UPDATE t USING TIMESTAMP 100 AND TTL 1 SET v = 1 WHERE pk = 0 AND ck = 0")
    clock.advance(seconds=2)
    t.execute("UPDATE t USING TIMESTAMP 50 SET v = 2 WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT v FROM t")) == []


def test_expired_data_is_purged_after_gc_grace(session, clock, db):
    session.execute("CREATE TABLE g (pk int PRIMARY KEY, v int) WITH gc_grace_seconds = 10")
    session.execute("INSERT INTO g (pk, v) VALUES (0, 0) USING TTL 1")
    clock.advance(seconds=20)
    session.execute("INSERT INTO g (pk, v) VALUES (0, 1) USING TIMESTAMP 1")  # rewrite purges
    assert rows(session.execute("SELECT v FROM g")) == [(1,)]


def test_negative_and_huge_ttl_are_refused(t):
    with pytest.raises(InvalidRequest, match="A TTL must be greater or equal to 0, but was -1"):
        t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 1) USING TTL -1")
    with pytest.raises(InvalidRequest, match="ttl is too large"):
        t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 1) USING TTL 630720001")


def test_using_timestamp_sets_writetime(t):
    t.execute("UPDATE t USING TIMESTAMP 123 SET v = 0, w = 0 WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT writetime(v), writetime(w) FROM t WHERE pk = 0 AND ck = 0")) == [(123, 123)]


def test_assigned_timestamps_strictly_increase_with_a_frozen_clock(t):
    for i in range(5):
        t.execute(f"UPDATE t SET v = {i} WHERE pk = 0 AND ck = {i}")
    stamps = [r[0] for r in t.execute("SELECT writetime(v) FROM t WHERE pk = 0")]
    assert stamps == sorted(stamps) and len(set(stamps)) == 5


def test_batch_statements_share_one_timestamp(t):
    t.execute("BEGIN UNLOGGED BATCH UPDATE t SET v = 0 WHERE pk = 0 AND ck = 0; "
              "UPDATE t SET v = 0 WHERE pk = 0 AND ck = 1; APPLY BATCH")
    stamps = {r[0] for r in t.execute("SELECT writetime(v) FROM t WHERE pk = 0")}
    assert len(stamps) == 1


def test_batch_statements_may_carry_their_own_timestamps(t):
    t.execute("BEGIN UNLOGGED BATCH "
              "UPDATE t USING TIMESTAMP 1584966784195983 SET v = 0 WHERE pk = 0 AND ck = 0; "
              "UPDATE t USING TIMESTAMP 1584966784195984 SET w = 0 WHERE pk = 0 AND ck = 0; "
              "APPLY BATCH")
    assert rows(t.execute("SELECT writetime(v), writetime(w) FROM t")) == [(1584966784195983, 1584966784195984)]


def test_batch_level_timestamp(t):
    t.execute("BEGIN BATCH USING TIMESTAMP 77 UPDATE t SET v = 0 WHERE pk = 0 AND ck = 0; APPLY BATCH")
    assert rows(t.execute("SELECT writetime(v) FROM t")) == [(77,)]
    with pytest.raises(InvalidRequest, match="Timestamp must be set either on BATCH or individual statements"):
        t.execute("BEGIN BATCH USING TIMESTAMP 77 UPDATE t USING TIMESTAMP 1 SET v = 0 WHERE pk = 0 AND ck = 0; "
                  "APPLY BATCH")


def test_client_timestamp_becomes_write_timestamp(t):
    t.execute("UPDATE t SET v = 1 WHERE pk = 0 AND ck = 0", timestamp=4242)
    assert rows(t.execute("SELECT writetime(v) FROM t")) == [(4242,)]


def test_writetime_and_ttl_refused_on_keys_and_whole_collections_and_given_per_element(session):
    session.execute("CREATE TABLE k (pk int PRIMARY KEY, m map<int, int>)")
    with pytest.raises(InvalidRequest, match="WRITETIME is not legal on partition key component pk"):
        session.execute("SELECT writetime(pk) FROM k")
    session.execute("UPDATE k USING TTL 9 SET m[1] = 2 WHERE pk = 0")
    with pytest.raises(InvalidRequest, match="TTL expects an atomic column, but m is a non-frozen collection"):
        session.execute("SELECT ttl(m) FROM k")  # ScyllaDB
    assert rows(session.execute("SELECT ttl(m[1]), logtide_element_ttls(m) FROM k")) == [(9, [9])]


def test_now_in_seconds_replaces_the_clock_for_expiry(t, clock):
    now = clock.micros // 1_000_000
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 1) USING TTL 10", now_in_seconds=now - 5)
    assert rows(t.execute("SELECT ttl(v) FROM t")) == [(5,)]
    assert rows(t.execute("SELECT v FROM t", now_in_seconds=now + 5)) == []
    assert rows(t.execute("SELECT v FROM t", now_in_seconds=now)) == [(1,)]
    t.execute_batch("UNLOGGED", [("UPDATE t USING TTL 10 SET w = 2 WHERE pk = 0 AND ck = 1", None)],
                    now_in_seconds=now + 100)
    assert rows(t.execute("SELECT ttl(w) FROM t WHERE pk = 0 AND ck = 1")) == [(110,)]
