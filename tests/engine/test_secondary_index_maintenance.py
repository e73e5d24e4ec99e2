"""Secondary index entries follow every write in the write's own transaction (docs/views-and-indexes.md,
"Secondary indexes"): after any mix of inserts, updates, collection changes, row, range and partition deletions
and TTLs, the stored entries are exactly what building the index from the table's rows gives; an index built
over existing rows has them; dropping the index or its table removes its entries; ``logtide check`` verifies
them; a table without indexes stores nothing more."""

from __future__ import annotations

import random

import pytest

from logtide.engine.indexes import row_entries
from logtide.query.read import stored_partitions
from logtide.storage.check import check

TABLE = ("CREATE TABLE t (p int, c int, v int, m map<int, text>, s set<int>, l list<int>, "
         "f frozen<list<int>>, st int static, PRIMARY KEY (p, c))")
INDEXES = ["CREATE INDEX ON t (v)", "CREATE INDEX ON t (keys(m))", "CREATE INDEX mv ON t (values(m))",
           "CREATE INDEX me ON t (entries(m))", "CREATE INDEX ON t (s)", "CREATE INDEX ON t (l)",
           "CREATE INDEX ON t (full(f))", "CREATE INDEX ON t (st)", "CREATE INDEX loc ON t ((p), v)",
           "CREATE INDEX ON t (c)"]


def stored_entries(db, index) -> set:
    with db.store.snapshot() as txn:
        return {(token, pk, ck) for token, pk, ck, _ in
                txn.sql("SELECT token, pk, ck, data FROM rows WHERE tid = ?", (index.store_id,))}


def expected_entries(db, table, index) -> set:
    out: set = set()
    now = db.now_seconds()
    with db.store.snapshot() as txn:
        for part in stored_partitions(table, txn, now, None, True, None, True):
            rows = list(part.rows(None, None))
            if part.static_row() is not None:
                rows.append(part.static_row())
            for lr in rows:
                out |= row_entries(table, index, part.token, part.pk, lr.ck, lr)
    return out


def assert_entries_agree(db):
    table = db.catalog.table("ks", "t")
    for ix in table.indexes:
        assert stored_entries(db, ix) == expected_entries(db, table, ix), ix.name


@pytest.fixture
def t(session):
    session.execute(TABLE)
    for q in INDEXES:
        session.execute(q)
    return session


def random_write(rng: random.Random) -> str:
    p, c, v = rng.randrange(4), rng.randrange(4), rng.randrange(5)
    return rng.choice([
        f"INSERT INTO t (p, c, v) VALUES ({p}, {c}, {v})",
        f"INSERT INTO t (p, c, v, m, s, l, f) VALUES ({p}, {c}, {v}, {{{v}: 'x{v}', 9: 'y'}}, {{{v}, 1}}, [{v}, {v}], [{v}])",
        f"UPDATE t SET v = {v} WHERE p = {p} AND c = {c}",
        f"UPDATE t SET v = null WHERE p = {p} AND c = {c}",
        f"UPDATE t SET m[{v}] = 'z{v}', s = s + {{{v}}}, l = l + [{v}] WHERE p = {p} AND c = {c}",
        f"UPDATE t SET m = m - {{{v}}}, s = s - {{{v}}}, l = l - [{v}] WHERE p = {p} AND c = {c}",
        f"UPDATE t SET st = {v} WHERE p = {p}",
        f"DELETE st FROM t WHERE p = {p}",
        f"DELETE FROM t WHERE p = {p} AND c = {c}",
        f"DELETE FROM t WHERE p = {p} AND c > {c}",
        f"DELETE FROM t WHERE p = {p}",
        f"DELETE m FROM t WHERE p = {p} AND c = {c}",
        f"INSERT INTO t (p, c, v) VALUES ({p}, {c}, {v}) USING TTL 5",
        f"BEGIN BATCH INSERT INTO t (p, c, v) VALUES ({p}, {c}, {v}); UPDATE t SET v = {v + 1} "
        f"WHERE p = {p} AND c = {c}; APPLY BATCH",
    ])


@pytest.mark.parametrize("seed", range(4))
def test_entries_always_equal_a_build_from_the_rows(t, clock, seed):
    rng = random.Random(seed)
    for _ in range(80):
        t.execute(random_write(rng))
    assert_entries_agree(t.db)


def test_an_index_created_over_existing_rows_has_their_entries(session):
    session.execute(TABLE)
    for i in range(30):
        session.execute(f"INSERT INTO t (p, c, v, m, st) VALUES ({i % 3}, {i}, {i % 5}, {{{i}: 'a'}}, {i})")
    for q in INDEXES:
        session.execute(q)
    table = session.db.catalog.table("ks", "t")
    assert len(stored_entries(session.db, table.indexes[0])) == 30
    assert_entries_agree(session.db)


def test_dropping_an_index_or_its_table_removes_its_entries(t):
    t.execute("INSERT INTO t (p, c, v) VALUES (1, 1, 1)")
    [ix] = [i for i in t.db.catalog.table("ks", "t").indexes if i.name == "t_v_idx"]
    assert stored_entries(t.db, ix)
    t.execute("DROP INDEX t_v_idx")
    assert stored_entries(t.db, ix) == set()
    others = t.db.catalog.table("ks", "t").indexes
    t.execute("DROP TABLE t")
    assert all(stored_entries(t.db, i) == set() for i in others)


def test_logtide_check_verifies_index_entries(t, tmp_path):
    t.execute("INSERT INTO t (p, c, v, m) VALUES (1, 1, 1, {1: 'a'})")
    path = t.db.path
    report = check(path)
    assert not report.damaged
    [ix] = [i for i in t.db.catalog.table("ks", "t").indexes if i.name == "t_v_idx"]
    with t.db.store.write() as txn:
        txn.sql("UPDATE rows SET data = X'01490000000000' WHERE tid = ?", (ix.store_id,))
    report = check(path)
    assert report.damaged
    assert any("secondary index t_v_idx" in str(f) for f in report.findings)


def test_a_table_without_indexes_stores_no_entries(session):
    session.execute("CREATE TABLE plain (p int PRIMARY KEY, v int)")
    session.execute("INSERT INTO plain (p, v) VALUES (1, 1)")
    with session.db.store.snapshot() as txn:
        assert txn.sql("SELECT count(*) FROM rows")[0][0] == 1
    assert not session.db.captured_tables()  # the capture stage reads nothing for the table's writes


def test_an_entry_of_a_value_expired_by_ttl_goes_when_its_row_is_written_again(t, clock):
    t.execute("INSERT INTO t (p, c, v) VALUES (1, 1, 7) USING TTL 5")
    clock.advance(10)
    t.execute("INSERT INTO t (p, c, v) VALUES (1, 1, 8)")
    assert_entries_agree(t.db)


def test_truncate_removes_the_entries_with_the_rows(t):
    t.execute("INSERT INTO t (p, c, v, m) VALUES (1, 1, 1, {1: 'a'})")
    t.execute("TRUNCATE t")
    table = t.db.catalog.table("ks", "t")
    assert all(stored_entries(t.db, ix) == set() for ix in table.indexes)
    t.execute("INSERT INTO t (p, c, v) VALUES (2, 2, 1)")
    assert [(r.p, r.c) for r in t.execute("SELECT p, c FROM t WHERE v = 1")] == [(2, 2)]
