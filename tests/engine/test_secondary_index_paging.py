"""Paging through a secondary index resumes from where the last page ended (docs/views-and-indexes.md, "Reading
through an index"): a page of a value with 10k entries reads the entries of its own rows (and one batch more at
most), counted as the index entries storage hands out, never the value's entries from the start again."""

from __future__ import annotations

import pytest

from logtide.query.index_lookup import ENTRY_BATCH
from logtide.storage.sqlite import Txn

PAGE = 100  # 100 pages of 10k entries: reading from the start again would read thousands per page


@pytest.fixture
def counted(monkeypatch, db):
    """The number of index entries storage has handed out so far (rows of any ``Txn`` read of an index's store
    id, ``rows`` or ``rows_page``)."""
    tally = {"entries": 0}

    def counting(real):
        def read(self, tid, *args, **kwargs):
            got = real(self, tid, *args, **kwargs)
            if tid in {ix.store_id for ks in db.catalog.keyspaces.values() for t in ks.tables.values()
                       for ix in t.indexes}:
                tally["entries"] += len(got)
            return got
        return read

    monkeypatch.setattr(Txn, "rows_page", counting(Txn.rows_page))
    monkeypatch.setattr(Txn, "rows", counting(Txn.rows))
    return tally


def fill(session, statements) -> None:
    batch: list[str] = []
    for q in statements:
        batch.append(q)
        if len(batch) == 500:
            session.execute("BEGIN UNLOGGED BATCH " + " ".join(batch) + " APPLY BATCH")
            batch = []
    if batch:
        session.execute("BEGIN UNLOGGED BATCH " + " ".join(batch) + " APPLY BATCH")


def page_through(session, query: str, counted) -> tuple[list[tuple], list[int]]:
    """Every row of ``query`` a page at a time, with the entries each page read."""
    got: list[tuple] = []
    reads: list[int] = []
    state = None
    while True:
        before = counted["entries"]
        r = session.execute(query, page_size=PAGE, paging_state=state)
        reads.append(counted["entries"] - before)
        got.extend(tuple(row) for row in r)
        state = r.paging_state
        if state is None:
            return got, reads


def test_paging_a_global_index_value_of_10k_entries_reads_each_page_from_where_the_last_ended(session, db, counted):
    # 5k one-row partitions and one partition of 5k rows, all with v = 1: 10k entries of one value
    session.execute("CREATE TABLE t (p int, c int, v int, PRIMARY KEY (p, c))")
    session.execute("CREATE INDEX ON t (v)")
    fill(session, [f"INSERT INTO t (p, c, v) VALUES ({p}, 0, 1);" for p in range(5000)])
    fill(session, [f"INSERT INTO t (p, c, v) VALUES (-1, {c}, 1);" for c in range(5000)])
    got, reads = page_through(session, "SELECT p, c FROM t WHERE v = 1", counted)
    assert len(got) == 10000 and len(set(got)) == 10000
    assert got == [(r.p, r.c) for r in session.execute("SELECT p, c FROM t")]  # the table's own order
    # a one-row partition costs a seek to its first entry and the read of its entries (2 entries), a row of the
    # big partition one entry; a page may read one batch ahead at most
    assert max(reads) <= 2 * PAGE + 2 * ENTRY_BATCH, reads
    assert sum(reads) <= 2 * 10000 + len(reads) * 2 * ENTRY_BATCH


def test_paging_a_local_index_value_of_10k_entries_reads_each_page_from_where_the_last_ended(session, db, counted):
    session.execute("CREATE TABLE t (p int, c int, v int, PRIMARY KEY (p, c))")
    session.execute("CREATE INDEX ON t ((p), v)")
    fill(session, [f"INSERT INTO t (p, c, v) VALUES (0, {c}, 1);" for c in range(10000)])
    got, reads = page_through(session, "SELECT c FROM t WHERE p = 0 AND v = 1", counted)
    assert got == [(c,) for c in range(10000)]
    assert max(reads) <= PAGE + 2 * ENTRY_BATCH, reads
