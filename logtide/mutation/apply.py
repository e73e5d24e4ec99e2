"""Applying a mutation to storage: merge cells into stored rows inside one write transaction.

Partition and range tombstones are applied eagerly: the rows they shadow are
purged right away, and the tombstones themselves are kept (until
``gc_grace_seconds`` pass) so that later writes with older timestamps stay
shadowed.
"""

from __future__ import annotations

from ..storage.records import decode_partition, decode_row, encode_partition, encode_row
from ..storage.sqlite import Txn
from .cells import PartitionData, RangeTombstone, merge_rows, purge_row, reconcile_deletion
from .model import Mutation, PartitionUpdate


def load_partition(txn: Txn, tid: int, token: int, pk: bytes, key: tuple[bytes, ...]) -> PartitionData:
    """The stored partition record, or an empty one."""
    data = txn.get_partition(tid, token, pk)
    return decode_partition(data) if data is not None else PartitionData(key)


def apply_mutation(mutation: Mutation, txn: Txn, now: int) -> None:
    """Write every partition update of ``mutation`` into ``txn``."""
    for pu in mutation:
        apply_partition_update(pu, txn, now)


def _gc_partition(p: PartitionData, now: int, gc: int) -> None:
    if p.deletion is not None and p.deletion.ldt + gc < now:
        p.deletion = None
    p.range_tombstones = [rt for rt in p.range_tombstones
                          if rt.deletion.ldt + gc >= now
                          and not (p.deletion is not None and p.deletion.timestamp >= rt.deletion.timestamp)]


def _purge_stored_rows(txn: Txn, tid: int, pu: PartitionUpdate, part: PartitionData, now: int, gc: int,
                       lo: bytes | None, hi: bytes | None) -> None:
    for ck, data in txn.rows(tid, pu.token, pu.pk, lo, hi):
        row = purge_row(decode_row(data), part.row_deletion(ck), now, gc)
        txn.put_row(tid, pu.token, pu.pk, ck, None if row.is_empty() else encode_row(row))


def apply_partition_update(pu: PartitionUpdate, txn: Txn, now: int) -> None:
    """Merge one partition update into storage."""
    table = pu.table
    tid = table.store_id
    gc = table.gc_grace_seconds
    part = load_partition(txn, tid, pu.token, pu.pk, pu.key)
    if pu.deletion is not None:
        part.deletion = reconcile_deletion(part.deletion, pu.deletion)
        _gc_partition(part, now, gc)
        _purge_stored_rows(txn, tid, pu, part, now, gc, None, None)
    for rd in pu.range_deletions:
        part.range_tombstones.append(RangeTombstone(rd.lo, rd.hi, rd.deletion))
        _gc_partition(part, now, gc)
        _purge_stored_rows(txn, tid, pu, part, now, gc, rd.lo, rd.hi)
    if pu.static is not None or part.static is not None:
        before = purge_row(part.static, part.deletion, now, gc) if part.static is not None else None
        static = merge_rows(before, pu.static, now) if pu.static is not None else before
        static = purge_row(static, part.deletion, now, gc) if static is not None else None
        part.static = None if static is None or static.is_empty() else static
    for ck, upd in pu.rows.items():
        old = txn.get_row(tid, pu.token, pu.pk, ck)
        outer = part.row_deletion(ck)
        before = purge_row(decode_row(old), outer, now, gc) if old is not None else None
        row = purge_row(merge_rows(before, upd, now), outer, now, gc)
        txn.put_row(tid, pu.token, pu.pk, ck, None if row.is_empty() else encode_row(row))
    _gc_partition(part, now, gc)
    keep = part.deletion is not None or part.range_tombstones or part.static is not None \
        or txn.has_rows(tid, pu.token, pu.pk)
    txn.put_partition(tid, pu.token, pu.pk, encode_partition(part) if keep else None)
