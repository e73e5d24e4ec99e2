"""Groups of log rows (storage format 2) under rollbacks, reopens, old-format data and CQL's odd writes.

An adversarial review of ``Txn.put_rows``' groups (``docs/durability.md``, "Groups of log rows"): every
scenario ends with the log read back exactly as a store of single records reads it, entries that never
overlap and a clean ``logtide check``.
"""

from __future__ import annotations

import pytest

import logtide
from logtide.mutation.cells import PartitionData
from logtide.storage.check import check
from logtide.storage.records import encode_partition, encode_uniform_row, group_rows, is_group
from logtide.storage.sqlite import Store

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
