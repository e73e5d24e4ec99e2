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


def encode_row_parts(clustering: tuple[bytes, ...], marker: tuple[int, int, int] | None,
                     cells: dict[str, tuple[int, bytes | None, int, int]]) -> bytes:
    """Bytes of a row record given as plain tuples (a new row without tombstones or complex columns)."""
    return pickle.dumps((clustering, marker, None, cells, {}), protocol=_PROTOCOL)


def decode_row(data: bytes) -> RowData:
    """Inverse of :func:`encode_row`."""
    return _row_from(pickle.loads(data))


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
