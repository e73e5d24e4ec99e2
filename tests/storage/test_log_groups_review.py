"""Groups of log rows (storage format 2) under rollbacks, reopens, old-format data and CQL's odd writes.

An adversarial review of ``Txn.put_rows``' groups (``docs/durability.md``, "Groups of log rows"): every
scenario ends with the log read back exactly as a store of single records reads it, entries that never
overlap and a clean ``logtide check``.
"""

from __future__ import annotations

import threading

import pytest

import logtide
from logtide.errors import WriteFailure
from logtide.mutation.cells import PartitionData
from logtide.storage.check import check
from logtide.storage.group_commit import GroupCommitter
from logtide.storage.records import encode_partition, encode_uniform_row, is_group
from logtide.storage.sqlite import Store

from ..diskfull import fill, small_disk  # noqa: F401 - small_disk is a fixture
from .helpers import raw

TID, TOKEN, PK = 7, 3, b"s1"


def _record(ck: bytes, n: int) -> bytes:
    return encode_uniform_row((ck,), 1000 + n, 0, 0x7FFFFFFF, {"v": str(n).encode()}, TID, PK, ck)


def _append(txn, cks: list[bytes], n: int) -> None:
    txn.put_rows([(TID, TOKEN, PK, ck, _record(ck, n)) for ck in cks], 0)


def _open(path) -> Store:
    store = Store.open(path, synchronous="OFF")
    with store.write() as txn:
        txn.put_partition(TID, TOKEN, PK, encode_partition(PartitionData((PK,)), TID, PK))
    return store


def _entries(store: Store) -> list[tuple[bytes, bool]]:
    with store.snapshot() as txn:
        return [(ck, is_group(d)) for tid, _, pk, ck, d in txn.scan("rows") if tid == TID]


@pytest.mark.parametrize("how", ["transaction", "savepoint"])
def test_a_rolled_back_first_group_does_not_keep_its_table_unmarked_after_a_reopen(tmp_path, how):
    """The write that stores a table's first group marks it in meta ``group_tables``; when that write rolls
    back, the mark goes with it, and the table's next group must mark it again, or a writer opened later
    does not explode that group under a write at an older key (rows duplicated, entries overlapping)."""
    store = _open(tmp_path / "d")
    try:
        with pytest.raises(RuntimeError):
            if how == "transaction":
                with store.write() as txn:
                    _append(txn, [b"\x02", b"\x04"], 1)
                    raise RuntimeError("the statement fails after its log rows")
            else:
                with store.write():
                    with store.savepoint() as txn:
                        _append(txn, [b"\x02", b"\x04"], 1)
                        raise RuntimeError("the statement fails after its log rows")
        with store.write() as txn:
            _append(txn, [b"\x06", b"\x08"], 2)
            assert txn.get_meta("group_tables") == str(TID).encode()
    finally:
        store.close()
    store = Store.open(tmp_path / "d", synchronous="OFF")
    try:
        with store.write() as txn:  # an older cdc$time: lands inside the group
            txn.put_rows([(TID, TOKEN, PK, b"\x06", _record(b"\x06", 3))], 0)
        with store.snapshot() as txn:
            assert txn.rows(TID, TOKEN, PK) == [(b"\x06", _record(b"\x06", 3)), (b"\x08", _record(b"\x08", 2))]
        assert _entries(store) == [(b"\x06", False), (b"\x08", False)]
    finally:
        store.close()
    assert check(tmp_path / "d").findings == []


def test_check_finds_a_group_in_a_table_group_tables_does_not_list(tmp_path):
    """A directory written before the fix above may hold groups its writer no longer explodes: ``check`` says so."""
    store = _open(tmp_path / "d")
    try:
        with store.write() as txn:
            _append(txn, [b"\x02", b"\x04"], 1)
    finally:
        store.close()
    assert check(tmp_path / "d").findings == []
    with raw(tmp_path / "d") as conn:
        conn.execute("DELETE FROM meta WHERE key = 'group_tables'")
    found = [str(f) for f in check(tmp_path / "d").findings]
    assert len(found) == 1 and "group of log rows in a table that meta 'group_tables' does not list" in found[0], found


def _committed_rows(store: Store, tid: int) -> list[tuple[bytes, bytes]]:
    with store.snapshot() as txn:
        return txn.rows(tid, TOKEN, PK)


def test_a_failing_write_in_a_committers_group_takes_only_its_own_log_rows_and_marks(tmp_path):
    """The server's committer runs several writes in one transaction, each in a savepoint: one that fails
    after its log rows (the first group of a table) loses them and that table's mark; the writes around it
    keep theirs, the next group of that table marks it again, and later writes at older keys still explode
    the groups (in this writer and in one opened afterwards)."""
    other = TID + 1
    store = _open(tmp_path / "d")
    with store.write() as txn:
        txn.put_partition(other, TOKEN, PK, encode_partition(PartitionData((PK,)), other, PK))

    def append(tid: int, cks: list[bytes], n: int, fail: bool = False):
        def fn(txn):
            txn.put_rows([(tid, TOKEN, PK, ck, encode_uniform_row((ck,), n, 0, 0x7FFFFFFF, {"v": b"%d" % n},
                                                                   tid, PK, ck)) for ck in cks], 0)
            if fail:
                raise RuntimeError("fails after its log rows")
            return n
        return fn

    def rec(tid: int, ck: bytes, n: int) -> bytes:
        return encode_uniform_row((ck,), n, 0, 0x7FFFFFFF, {"v": b"%d" % n}, tid, PK, ck)

    try:
        committer = GroupCommitter(store, threading.RLock())
        out = committer.run_group([append(TID, [b"\x02", b"\x04"], 1), append(other, [b"\x02", b"\x04"], 2, True),
                                   append(TID, [b"\x06", b"\x08"], 3), append(other, [b"\x06", b"\x08"], 4)])
        assert [ok for ok, _ in out] == [True, False, True, True]
        with store.snapshot() as txn:
            assert txn.get_meta("group_tables") == f"{TID} {other}".encode()
        assert _committed_rows(store, other) == [(b"\x06", rec(other, b"\x06", 4)), (b"\x08", rec(other, b"\x08", 4))]
        out = committer.run_group([append(TID, [b"\x05"], 5), append(other, [b"\x03"], 6, True),
                                   append(other, [b"\x07"], 7)])
        assert [ok for ok, _ in out] == [True, False, True]
        assert _committed_rows(store, TID) == [(b"\x02", rec(TID, b"\x02", 1)), (b"\x04", rec(TID, b"\x04", 1)),
                                               (b"\x05", rec(TID, b"\x05", 5)), (b"\x06", rec(TID, b"\x06", 3)),
                                               (b"\x08", rec(TID, b"\x08", 3))]
    finally:
        store.close()
    store = Store.open(tmp_path / "d", synchronous="OFF")
    try:
        with store.write() as txn:
            txn.put_rows([(other, TOKEN, PK, b"\x08", rec(other, b"\x08", 8))], 0)
        assert _committed_rows(store, other) == [(b"\x06", rec(other, b"\x06", 4)), (b"\x07", rec(other, b"\x07", 7)),
                                                 (b"\x08", rec(other, b"\x08", 8))]
    finally:
        store.close()
    assert check(tmp_path / "d").findings == []


def test_a_full_disk_failing_a_tables_first_group_loses_no_mark_of_its_later_groups(small_disk):
    """A commit that fails on a full disk takes back the table's first group and its mark in meta
    ``group_tables``; once space is back, the next groups mark it, so a writer opened afterwards explodes
    them under a write inside one (a user's ``UPDATE`` of a log row): every log row is read back once and
    ``check`` is clean."""
    data = small_disk / "data"
    db = logtide.open(data, synchronous="FULL")
    try:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (pk int, ck int, v text, PRIMARY KEY (pk, ck)) "
                  "WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}")
        fill(small_disk / "filler")
        acked = 0
        with pytest.raises(WriteFailure):
            for _ in range(50):
                s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (1, 1, ?)", ["x" * 300_000])
                acked += 1
        (small_disk / "filler").unlink()
        for i in range(3):
            s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (1, 1, ?)", [f"after {i}"])
    finally:
        db.close()
    with logtide.open(data) as db:  # a user's UPDATE of the delta row of a group: lands inside it
        s = db.session()
        keys = 'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no" FROM ks.t_scylla_cdc_log'
        stream, at, _ = list(s.execute(keys))[-1]
        s.execute('UPDATE ks.t_scylla_cdc_log SET v = ? WHERE "cdc$stream_id" = ? AND "cdc$time" = ? '
                  'AND "cdc$batch_seq_no" = 1', ["changed", stream, at])
        rows = [(r[0], r[1], r[2]) for r in s.execute(keys)]
        # delta and postimage of the first write, preimage, delta and postimage of the two others
        assert acked == 0 and len(rows) == len(set(rows)) == 2 + 3 * 2, (acked, rows)
    assert check(data).findings == []
