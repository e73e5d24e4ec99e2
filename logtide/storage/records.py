"""Encoding of partition and row records as bytes.

Records are nested tuples of ints, bytes, strings and ``None`` pickled with
protocol 5 (readable by every later Python).  Only builtin types are
pickled: cells, deletions and markers are written as plain tuples.
"""

from __future__ import annotations

import pickle

from ..mutation.cells import Cell, ComplexColumn, Deletion, Liveness, PartitionData, RangeTombstone, RowData

_PROTOCOL = 5


def _d(d: Deletion | None):
    return None if d is None else (d.timestamp, d.ldt)


def _ud(t) -> Deletion | None:
    return None if t is None else Deletion(*t)


def _row_tuple(row: RowData):
    return (
        row.clustering,
        None if row.marker is None else tuple(row.marker),
        _d(row.deletion),
        {n: tuple(c) for n, c in row.cells.items()},
        {n: (_d(col.deletion), {k: tuple(c) for k, c in col.cells.items()}) for n, col in row.complex.items()},
    )


def _row_from(t) -> RowData:
    clustering, marker, deletion, cells, complex_ = t
    return RowData(
        clustering,
        None if marker is None else Liveness(*marker),
        _ud(deletion),
        {n: Cell(*c) for n, c in cells.items()},
        {n: ComplexColumn(_ud(d), {k: Cell(*c) for k, c in cs.items()}) for n, (d, cs) in complex_.items()},
    )


def encode_row(row: RowData) -> bytes:
    """Bytes of a clustering row record."""
    return pickle.dumps(_row_tuple(row), protocol=_PROTOCOL)


def encode_uniform_row(clustering: tuple[bytes, ...], timestamp: int, ttl: int, ldt: int,
                       values: dict[str, bytes]) -> bytes:
    """Bytes of a new row whose marker and cells all share one timestamp and TTL (a CDC log row).

    Stored compactly as (clustering, (timestamp, ttl, ldt), values): about half
    the size of the general form, which repeats the liveness in every cell."""
    return pickle.dumps((clustering, (timestamp, ttl, ldt), values), protocol=_PROTOCOL)


def decode_row(data: bytes) -> RowData:
    """Inverse of :func:`encode_row` and :func:`encode_uniform_row`."""
    t = pickle.loads(data)
    if len(t) == 3:
        clustering, (ts, ttl, ldt), values = t
        return RowData(clustering, Liveness(ts, ttl, ldt),
                       None, {n: Cell(ts, v, ttl, ldt) for n, v in values.items()}, {})
    return _row_from(t)


def encode_partition(p: PartitionData) -> bytes:
    """Bytes of a partition record (key, partition tombstone, range tombstones, static row)."""
    return pickle.dumps((
        p.key,
        _d(p.deletion),
        [(rt.lo, rt.hi, _d(rt.deletion)) for rt in p.range_tombstones],
        None if p.static is None else _row_tuple(p.static),
    ), protocol=_PROTOCOL)


def decode_partition(data: bytes) -> PartitionData:
    """Inverse of :func:`encode_partition`."""
    key, deletion, rts, static = pickle.loads(data)
    return PartitionData(
        tuple(key),
        _ud(deletion),
        [RangeTombstone(lo, hi, Deletion(*d)) for lo, hi, d in rts],
        None if static is None else _row_from(static),
    )
