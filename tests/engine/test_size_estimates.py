"""``system.size_estimates`` as ScyllaDB keeps it (docs/server.md "System tables"): per keyspace, table and token
range of the node, the partitions stored and their mean size, estimated from the stored records
(``storage.estimates``): exact up to ``SAMPLE`` partitions a range, extrapolated beyond."""

from __future__ import annotations

import pytest

from logtide.errors import WriteFailure
from logtide.storage import estimates
from logtide.storage.estimates import MAX_TOKEN, MIN_TOKEN, estimate_range

QUERY = "SELECT * FROM system.size_estimates WHERE keyspace_name = 'ks' AND table_name = %s"


@pytest.fixture
def s(session):

    session.execute("USE ks")
    return session


def fill(s, table: str, partitions: int, rows_each: int = 1, text: str = "x") -> None:
    insert = s.prepare(f"INSERT INTO {table} (k, c, v) VALUES (?, ?, ?)")
    for start in range(0, partitions * rows_each, 500):
        s.execute_batch("UNLOGGED", [(insert, (i // rows_each, i % rows_each, text))
                                     for i in range(start, min(start + 500, partitions * rows_each))])


def estimate(s, table: str) -> tuple[int, list[int]]:
    found = list(s.execute(QUERY.replace("%s", f"'{table}'")))
    return sum(r.partitions_count for r in found), [r.mean_partition_size for r in found if r.partitions_count]


def stored_bytes(s, table: str) -> int:
    tid = s.db.catalog.table("ks", table).store_id
    with s.db.store.snapshot() as txn:
        rows = txn.sql("SELECT sum(length(pk) + length(ck) + length(data)) FROM rows WHERE tid = ?", (tid,))[0][0]
        partitions = txn.sql("SELECT coalesce(sum(length(pk) + length(data)), 0) FROM partitions WHERE tid = ?",
                             (tid,))[0][0]
    return rows + partitions


def test_one_row_per_table_and_token_range_of_the_node_in_scylladbs_order(s):
    s.execute("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c)) WITH cdc = {'enabled': true}")
    s.execute("CREATE TABLE a (k int PRIMARY KEY)")
    found = list(s.execute("SELECT * FROM system.size_estimates"))
    ranges = [(r.start_token, r.end_token) for r in s.execute(
        "SELECT start_token, end_token FROM system.token_ring WHERE keyspace_name = 'ks'")]
    # user keyspaces only; each table (the CDC log too) by name, each range by start token as text
    assert [(r.keyspace_name, r.table_name, r.range_start, r.range_end) for r in found] == [
        ("ks", name, start, end) for name in ("a", "t", "t_scylla_cdc_log") for start, end in ranges]
    assert {(r.partitions_count, r.mean_partition_size) for r in found} == {(0, 0)}
    assert [c.name for c in s.execute("SELECT * FROM system.size_estimates LIMIT 1").columns] == [
        "keyspace_name", "table_name", "range_start", "range_end", "mean_partition_size", "partitions_count"]


def test_a_small_table_is_counted_exactly_with_the_mean_size_of_its_stored_partitions(s):
    s.execute("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))")
    fill(s, "t", 1000, rows_each=3)
    count, means = estimate(s, "t")
    assert count == 1000
    assert sum(means) / len(means) == pytest.approx(stored_bytes(s, "t") / 1000, rel=0.05)
    s.execute("DELETE FROM t WHERE k = 1")  # a deleted partition counts until its tombstone is purged
    s.execute("INSERT INTO t (k, c, v) VALUES (5000, 0, 'new')")
    assert estimate(s, "t")[0] == 1001


def test_partitions_with_only_a_static_row_or_a_tombstone_count_once_each(s):
    s.execute("CREATE TABLE t (k int, c int, v text, s int static, PRIMARY KEY (k, c))")
    s.execute("INSERT INTO t (k, s) VALUES (1, 1)")  # static row only
    s.execute("INSERT INTO t (k, c, v, s) VALUES (2, 1, 'a', 2)")  # static row and a row: one partition
    s.execute("DELETE FROM t WHERE k = 3")  # a partition tombstone
    s.execute("INSERT INTO t (k, c, v) VALUES (4, 1, 'b')")
    assert estimate(s, "t")[0] == 4


def test_a_large_range_is_extrapolated_from_its_first_partitions(s, monkeypatch):
    monkeypatch.setattr(estimates, "SAMPLE", 40)  # as if the table held millions: every range is sampled
    s.execute("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))")
    fill(s, "t", 6000)
    count, _ = estimate(s, "t")
    assert count == pytest.approx(6000, rel=0.15)  # 16 ranges of 40 sampled partitions: about 4 % off
    assert count != 6000


def test_wide_partitions_are_measured_from_their_first_records(s, monkeypatch):
    monkeypatch.setattr(estimates, "SIZE_RECORDS", 50)
    s.execute("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))")
    fill(s, "t", 1, rows_each=200, text="y" * 100)
    count, [mean] = estimate(s, "t")
    assert count == 1
    # the 50 records read of the partition's 200: a lower bound
    assert mean == pytest.approx(stored_bytes(s, "t") / 4, rel=0.05)


def test_ranges_and_the_wrapping_range_cover_the_ring_once(s):
    s.execute("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))")
    fill(s, "t", 300)
    tid = s.db.catalog.table("ks", "t").store_id
    with s.db.store.snapshot() as txn:
        whole = estimate_range(txn, tid, 0, 0).partitions_count  # (t, t]: the whole ring
        halves = (estimate_range(txn, tid, MIN_TOKEN, 0).partitions_count
                  + estimate_range(txn, tid, 0, MIN_TOKEN).partitions_count)  # (min, 0] and (0, max] + [min, min]
        last = estimate_range(txn, tid, MAX_TOKEN, 0).partitions_count  # wraps at the ring's end: [min, 0]
        first_half = estimate_range(txn, tid, MIN_TOKEN, 0).partitions_count
    assert whole == halves == 300
    assert last == first_half > 0


def test_only_the_keyspace_asked_for_is_estimated_and_writes_are_refused(s, monkeypatch):
    s.execute("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))")
    s.execute("CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE other.big (k int PRIMARY KEY)")
    asked = []
    real = estimates.estimate_range
    monkeypatch.setattr(estimates, "estimate_range", lambda txn, tid, a, b: asked.append(tid) or real(txn, tid, a, b))
    list(s.execute("SELECT * FROM system.size_estimates WHERE keyspace_name = 'ks'"))
    assert set(asked) == {s.db.catalog.table("ks", "t").store_id}
    with pytest.raises(WriteFailure, match="this virtual table doesn't allow updates"):
        s.execute("INSERT INTO system.size_estimates (keyspace_name, table_name, range_start, range_end) "
                  "VALUES ('ks', 't', '0', '1')")
