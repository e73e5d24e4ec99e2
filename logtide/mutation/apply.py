"""Applying a mutation to storage: merge cells into stored rows inside one write transaction.

Partition and range tombstones are applied eagerly: the rows they shadow are
purged right away, and the tombstones themselves are kept (until
``gc_grace_seconds`` pass) so that later writes with older timestamps stay
shadowed.
"""

from __future__ import annotations

from typing import Any

from ..storage.damage import partition_record, row_record
from ..storage.records import encode_partition, encode_row
from ..storage.sqlite import Txn
from .cells import PartitionData, RangeTombstone, RowData, merge_plain, merge_rows, purge_row, reconcile_deletion
from .model import Mutation, PartitionUpdate


def read_partition(txn: Txn, table: Any, token: int, pk: bytes) -> PartitionData | None:
    """The stored partition record decoded (and verified), shared by the reads of one statement (do not modify it)."""
    return decoded_partition(txn, table, pk, txn.get_partition(table.store_id, token, pk))


def decoded_partition(txn: Txn, table: Any, pk: bytes, data: bytes | None) -> PartitionData | None:
    """:func:`read_partition` of a record already read (``data``, as ``txn.get_partition`` gave it)."""
    if data is None:
        return None
    hit = txn.decoded.get(data)
    if hit is None:
        hit = txn.decoded[data] = partition_record(table, data, pk)
    return hit


def read_row(txn: Txn, table: Any, token: int, pk: bytes, ck: bytes) -> RowData | None:
    """The stored row record decoded (and verified), shared by the reads of one statement (do not modify it)."""
    return decoded_row(txn, table, pk, ck, txn.get_row(table.store_id, token, pk, ck))


def decoded_row(txn: Txn, table: Any, pk: bytes, ck: bytes, data: bytes | None) -> RowData | None:
    """:func:`read_row` of a record already read (``data``, as ``txn.get_row`` gave it)."""
    if data is None:
        return None
    hit = txn.decoded.get(data)
    if hit is None:
        hit = txn.decoded[data] = row_record(table, data, pk, ck)
    return hit


def apply_mutation(mutation: Mutation, txn: Txn, now: int, logs: Any = (), touched: Any = None) -> None:
    """Write every partition update of ``mutation`` into ``txn``, and the CDC log rows ``logs`` (each a
    ``cdc.log_rows.LogAppend``); with ``touched`` (an ``engine.touched.TouchedRows``), record there the rows as
    the write leaves them (the postimages of the capture stage, ``engine.capture``).

    The rows the statement or batch writes go to storage in one call at the end (a batch's hundred
    rows and their log rows are one ``executemany``, not a statement each): nothing in between
    reads them back from SQLite (reads of single rows are served from the transaction's records,
    and a partition's range scans happen before any of its rows is written)."""
    pending: list[tuple[int, int, bytes, bytes, bytes]] = []
    for pu in mutation:
        apply_partition_update(pu, txn, now, pending, touched)
    base_rows = len(pending)
    for log in logs:
        _log_partition(log, txn)
        tid = log.table.store_id
        token, stream = log.token, log.stream_id
        pending.extend([(tid, token, stream, ck, data) for ck, data in log.rows])
    txn.put_rows(pending, base_rows)


def _gc_partition(p: PartitionData, now: int, gc: int) -> None:
    if p.deletion is not None and p.deletion.ldt + gc < now:
        p.deletion = None
    p.range_tombstones = [rt for rt in p.range_tombstones
                          if rt.deletion.ldt + gc >= now
                          and not (p.deletion is not None and p.deletion.timestamp >= rt.deletion.timestamp)]


def _purge_stored_rows(txn: Txn, tid: int, pu: PartitionUpdate, part: PartitionData, now: int, gc: int,
                       lo: bytes | None, hi: bytes | None, touched: Any) -> None:
    if touched is not None:
        touched.purged(tid, pu.pk)
    for ck, data in txn.rows(tid, pu.token, pu.pk, lo, hi):
        row = purge_row(row_record(pu.table, data, pu.pk, ck), part.row_deletion(ck), now, gc)
        txn.put_row(tid, pu.token, pu.pk, ck, None if row.is_empty() else encode_row(row, tid, pu.pk, ck))


def _own(p: PartitionData) -> PartitionData:
    """A copy of a shared partition record that may be changed (its static row is replaced, never changed)."""
    return PartitionData(p.key, p.deletion, list(p.range_tombstones), p.static)


def apply_partition_update(pu: PartitionUpdate, txn: Txn, now: int,
                           pending: list[tuple[int, int, bytes, bytes, bytes]] | None = None,
                           touched: Any = None) -> None:
    """Merge one partition update into storage (rows written, when ``pending`` is given, by the caller:
    appended to it as (tid, token, pk, ck, data)); the rows as merged are recorded in ``touched`` when it
    asks for them (``record_after``)."""
    if touched is not None and not touched.record_after:
        touched = None
    table = pu.table
    tid = table.store_id
    gc = table.gc_grace_seconds
    stored = txn.get_partition(tid, pu.token, pu.pk)
    # the decoded record the statement's reads share (never modified): copied before anything changes it
    shared = decoded_partition(txn, table, pu.pk, stored)
    part = PartitionData(pu.key) if shared is None else shared
    if shared is not None and (pu.deletion is not None or pu.range_deletions or pu.static is not None):
        part = _own(shared)
    changed = stored is None
    if pu.deletion is not None:
        part.deletion = reconcile_deletion(part.deletion, pu.deletion)
        _gc_partition(part, now, gc)
        _purge_stored_rows(txn, tid, pu, part, now, gc, None, None, touched)
        changed = True
    for rd in pu.range_deletions:
        part.range_tombstones.append(RangeTombstone(rd.lo, rd.hi, rd.deletion))
        _gc_partition(part, now, gc)
        _purge_stored_rows(txn, tid, pu, part, now, gc, rd.lo, rd.hi, touched)
        changed = True
    if pu.static is not None:
        before = purge_row(part.static, part.deletion, now, gc) if part.static is not None else None
        static = purge_row(merge_rows(before, pu.static, now), part.deletion, now, gc)
        part.static = None if static.is_empty() else static
        changed = True
        if touched is not None:
            touched.wrote((tid, pu.pk, b"", True), part.static, part.deletion)
    wrote_rows = False
    removed_rows = False
    decoded = txn.decoded
    for ck, upd in pu.rows.items():
        stored_row = txn.get_row(tid, pu.token, pu.pk, ck)
        old = decoded_row(txn, table, pu.pk, ck, stored_row)
        outer = part.row_deletion(ck)
        row = merge_plain(old, upd, now, gc) if outer is None else None
        if row is None:
            before = purge_row(old, outer, now, gc) if old is not None else None
            row = purge_row(merge_rows(before, upd, now), outer, now, gc)
        if touched is not None:
            k = (tid, pu.pk, ck, False)
            touched.wrote(k, None if row.is_empty() else row, outer)
            if pu.deletion is None and not pu.range_deletions:  # ``outer`` is the one before the write too
                touched.merged(k, old, outer, None if row.is_empty() else row, outer)
        if row.is_empty():
            if old is not None:
                decoded.pop(stored_row, None)
                txn.put_row(tid, pu.token, pu.pk, ck, None)
                removed_rows = True
        else:
            data = encode_row(row, tid, pu.pk, ck)
            if stored_row is not None:  # the record it replaces is never read again: keep the cache to live rows
                decoded.pop(stored_row, None)
            decoded[data] = row  # a read after the write (a changefeed's new image) need not decode it again
            if pending is None:
                txn.put_row(tid, pu.token, pu.pk, ck, data)
            else:
                pending.append((tid, pu.token, pu.pk, ck, data))
            wrote_rows = True
    if not (changed or removed_rows):
        return
    if part is shared:
        part = _own(shared)
    _gc_partition(part, now, gc)
    keep = (part.deletion is not None or bool(part.range_tombstones) or part.static is not None or wrote_rows
            or txn.has_rows(tid, pu.token, pu.pk))
    if keep:
        if changed or stored is None:
            data = encode_partition(part, tid, pu.pk)
            if stored is not None:  # the record it replaces is never read again
                decoded.pop(stored, None)
            decoded[data] = part  # not modified after this: a read after the write reuses it
            txn.put_partition(tid, pu.token, pu.pk, data)
    elif stored is not None:
        decoded.pop(stored, None)
        txn.put_partition(tid, pu.token, pu.pk, None)


def _log_partition(log: Any, txn: Txn) -> None:
    """The partition record of a CDC log stream, written when the stream gets its first row."""
    tid = log.table.store_id
    if txn.get_partition(tid, log.token, log.stream_id) is None:
        txn.put_partition(tid, log.token, log.stream_id,
                          encode_partition(PartitionData((log.stream_id,)), tid, log.stream_id))

