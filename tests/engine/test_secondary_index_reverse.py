"""A reversed read through a local index (``WHERE p = ? AND v = ? ORDER BY c DESC``) seeks as the forward read
does (docs/views-and-indexes.md, "Reading through an index"): its first page reads the index entries of its own
rows from the end of the value's range, and each later page seeks back from the row the page before ended at.
Entries are counted as storage hands them out, not timed."""

from __future__ import annotations

import pytest

from logtide.query.index_lookup import ENTRY_BATCH

from .test_secondary_index_paging import PAGE, counted, fill, page_through  # noqa: F401 (counted: a fixture)


def test_a_descending_read_of_a_local_index_value_of_10k_entries_seeks_from_the_end_and_from_each_page(
        session, counted):
    session.execute("CREATE TABLE t (p int, c int, v int, PRIMARY KEY (p, c))")
    session.execute("CREATE INDEX ON t ((p), v)")
    fill(session, [f"INSERT INTO t (p, c, v) VALUES (0, {c}, {1 if c % 10 else 2});" for c in range(11000)])
    got, reads = page_through(session, "SELECT c FROM t WHERE p = 0 AND v = 1 ORDER BY c DESC", counted)
    assert got == [(c,) for c in reversed(range(11000)) if c % 10]
    # the first page as every other: its own rows' entries and one batch ahead at most, not the 9900 before them
    assert max(reads) <= PAGE + 2 * ENTRY_BATCH, reads
    assert sum(reads) <= 9900 + len(reads) * 2 * ENTRY_BATCH


def test_a_descending_read_with_a_clustering_bound_seeks_to_the_bound(session, counted):
    session.execute("CREATE TABLE t (p int, c int, v int, PRIMARY KEY (p, c))")
    session.execute("CREATE INDEX ON t ((p), v)")
    fill(session, [f"INSERT INTO t (p, c, v) VALUES (0, {c}, 1);" for c in range(10000)])
    got, reads = page_through(session, "SELECT c FROM t WHERE p = 0 AND v = 1 AND c < 5000 AND c >= 4000 "
                       "ORDER BY c DESC ALLOW FILTERING", counted)
    assert got == [(c,) for c in range(4999, 3999, -1)]
    assert sum(reads) <= 1000 + len(reads) * 2 * ENTRY_BATCH, reads  # not the 5000 entries above c = 5000
    got, reads = page_through(session, "SELECT c FROM t WHERE p = 0 AND v = 1 AND c >= 9000 ALLOW FILTERING", counted)
    assert got == [(c,) for c in range(9000, 10000)]
    assert sum(reads) <= 1000 + len(reads) * 2 * ENTRY_BATCH, reads  # forward: not the 9000 below c = 9000


@pytest.mark.parametrize("order", ["ASC", "DESC"])
def test_descending_pages_of_a_local_index_stay_exact_while_rows_are_written_between_them(session, counted, order):
    # the table's clustering order either way: ORDER BY reverses it (DESC of an ASC table, ASC of a DESC one)
    session.execute(f"CREATE TABLE t (p int, c int, v int, PRIMARY KEY (p, c)) WITH CLUSTERING ORDER BY (c {order})")
    session.execute("CREATE INDEX ON t ((p), v)")
    desc = order == "ASC"
    model = {c: 1 if c % 3 else 2 for c in range(0, 2000, 2)}  # even c; every third one has v = 2
    fill(session, [f"INSERT INTO t (p, c, v) VALUES (0, {c}, {v});" for c, v in model.items()])
    fill(session, [f"INSERT INTO t (p, c, v) VALUES (1, {c}, 1);" for c in range(300)])  # another partition

    def ahead(c: int, at: int | None) -> bool:
        return at is None or (c < at if desc else c > at)

    query = f"SELECT c FROM t WHERE p = 0 AND v = 1 ORDER BY c {'DESC' if desc else 'ASC'}"
    state, at, size, n = None, None, 37, 0
    while True:
        # each page: the next rows after the position that have v = 1 now, whatever changed behind it
        want = sorted((c for c, v in model.items() if v == 1 and ahead(c, at)), reverse=desc)[:size]
        before = counted["entries"]
        r = session.execute(query, page_size=size, paging_state=state)
        got = [c for (c,) in r]
        assert got == want, (n, at)
        assert counted["entries"] - before <= size + 2 * ENTRY_BATCH  # a seek, not a read from the end
        state, n = r.paging_state, n + 1
        if state is None:
            break
        at = got[-1]
        # between two pages: rows changed behind the position (invisible from now on) and ahead of it
        passed = sorted((c for c in model if not ahead(c, at) and c != at), reverse=not desc)[:3]
        coming = sorted((c for c in model if ahead(c, at)), reverse=desc)[:4]
        for c in passed:
            session.execute(f"UPDATE t SET v = {3 - model[c]} WHERE p = 0 AND c = {c}")  # 1 <-> 2
            model[c] = 3 - model[c]
        for c in coming:
            if model[c] == 1 and c % 4 == 0:
                session.execute(f"DELETE FROM t WHERE p = 0 AND c = {c}")
                del model[c]
            else:
                session.execute(f"UPDATE t SET v = {3 - model[c]} WHERE p = 0 AND c = {c}")
                model[c] = 3 - model[c]
        for c in (at - 1, at + 1):  # new rows right next to the position, on both sides
            if c not in model:
                session.execute(f"INSERT INTO t (p, c, v) VALUES (0, {c}, 1)")
                model[c] = 1
    assert n > 15  # about 18 pages


def every_page(session, query: str, size: int) -> list[tuple]:
    rows, state = [], None
    while True:
        r = session.execute(query, page_size=size, paging_state=state)
        rows += [tuple(row) for row in r]
        state = r.paging_state
        if state is None:
            return rows


def test_a_descending_read_of_a_local_index_with_a_clustering_prefix_and_a_partition_key_in(session):
    session.execute("CREATE TABLE t (p int, c1 int, c2 int, v int, PRIMARY KEY (p, c1, c2))")
    session.execute("CREATE INDEX ON t ((p), v)")
    fill(session, [f"INSERT INTO t (p, c1, c2, v) VALUES ({p}, {a}, {b}, {(a + b) % 2});"
                   for p in range(3) for a in range(6) for b in range(6)])
    for size in (1, 2, 5, 100):
        got = every_page(session, "SELECT c1, c2 FROM t WHERE p = 0 AND v = 0 AND c1 = 3 ORDER BY c1 DESC, c2 DESC",
                         size)
        assert got == [(3, 5), (3, 3), (3, 1)]
        got = every_page(session, "SELECT c1, c2 FROM t WHERE p = 0 AND v = 1 AND c1 > 3 ORDER BY c1 DESC, c2 DESC",
                         size)
        assert got == [(5, 4), (5, 2), (5, 0), (4, 5), (4, 3), (4, 1)]
        # two partitions of an IN, ordered across them (as ScyllaDB orders an IN with ORDER BY)
        got = every_page(session, "SELECT c1, c2 FROM t WHERE p IN (0, 2) AND v = 1 AND c1 = 5 ORDER BY c1 DESC, "
                         "c2 DESC", size)
        assert got == [(5, 4), (5, 4), (5, 2), (5, 2), (5, 0), (5, 0)]
