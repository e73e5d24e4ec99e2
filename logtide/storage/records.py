"""Encoding of partition and row records as bytes: MessagePack bodies in a checksummed envelope.

A record is sealed (``envelope.seal``) with its storage key, so decoding
verifies the checksum first and raises ``RecordDamaged`` on any mismatch.
Bodies are MessagePack arrays written and read by msgspec against fixed
types (``docs/durability.md``, "Record format"): decoding builds plain data
and the model's own tuples, never runs code, and rejects a body of the
wrong shape.

* ``R`` (row): ``[clustering, marker, deletion, {column: cell}, {column: [deletion, {key: cell}]}]``
  with a cell ``[timestamp, value, ttl, ldt]``, a marker ``[timestamp, ttl, ldt]`` and a
  deletion ``[timestamp, ldt]`` (or nil);
* ``U`` (uniform row, a CDC log row): ``[clustering, [timestamp, ttl, ldt], {column: value}]``,
  the marker and every cell sharing one liveness;
* ``G`` (a group of uniform rows, storage format 2): ``[[ck, U record] ...]``, the ``U`` records of one
  partition's consecutive rows in clustering order, each exactly the bytes it would be stored as alone
  (sealed under its own key); the group is stored under the clustering key of its last row
  (``storage/sqlite.py``, "Groups");
* ``P`` (partition): ``[key, deletion, [[lo, hi, deletion] ...], static row body or nil]``;
* ``M`` (meta value): the value's bytes as they are.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

import msgspec

from ..mutation.cells import Cell, ComplexColumn, Deletion, Liveness, PartitionData, RangeTombstone, RowData
from .envelope import RecordDamaged, seal, seal_all, sealed_body, unseal

ROW = ord("R")
UNIFORM_ROW = ord("U")
GROUP = ord("G")
PARTITION = ord("P")
META = ord("M")

_RowBody = tuple[tuple[bytes, ...], Optional[Liveness], Optional[Deletion], dict[str, Cell],
                 dict[str, tuple[Optional[Deletion], dict[bytes, Cell]]]]
_UniformBody = tuple[tuple[bytes, ...], tuple[int, int, int], dict[str, Optional[bytes]]]
_PartitionBody = tuple[tuple[bytes, ...], Optional[Deletion],
                       list[tuple[Optional[bytes], Optional[bytes], Deletion]], Optional[_RowBody]]

_ENCODER = msgspec.msgpack.Encoder()
_ROW = msgspec.msgpack.Decoder(_RowBody)
_UNIFORM = msgspec.msgpack.Decoder(_UniformBody)
_PARTITION = msgspec.msgpack.Decoder(_PartitionBody)
_GROUP = msgspec.msgpack.Decoder(list[tuple[bytes, bytes]])
_ENCODE = _ENCODER.encode
_AnyRow = Union[_RowBody, _UniformBody]


def _row_body(row: RowData):
    return (row.clustering, row.marker, row.deletion, row.cells,
            {n: (col.deletion, col.cells) for n, col in row.complex.items()})


def _row_from(t) -> RowData:
    clustering, marker, deletion, cells, complex_ = t
    return RowData(clustering, marker, deletion, cells,
                   {n: ComplexColumn(d, cs) for n, (d, cs) in complex_.items()} if complex_ else {})


def encode_row(row: RowData, tid: int, pk: bytes, ck: bytes) -> bytes:
    """Bytes of a clustering row record stored under (``tid``, ``pk``, ``ck``)."""
    return seal(ROW, tid, pk, ck, _ENCODE(_row_body(row)))


def encode_uniform_row(clustering: tuple[bytes, ...], timestamp: int, ttl: int, ldt: int,
                       values: dict[str, bytes], tid: int, pk: bytes, ck: bytes) -> bytes:
    """Bytes of a new row whose marker and cells all share one timestamp and TTL (a CDC log row).

    About half the size of the general form, which repeats the liveness in every cell."""
    return seal(UNIFORM_ROW, tid, pk, ck, _ENCODE((clustering, (timestamp, ttl, ldt), values)))


def encode_uniform_rows(tid: int, pk: bytes, rows: list[tuple[bytes, tuple]]) -> list[tuple[bytes, bytes]]:
    """``(ck, bytes)`` of new uniform rows of one partition, given as ``(ck, (clustering, (timestamp,
    ttl, ldt), values))``: :func:`encode_uniform_row` of each, in one pass."""
    return seal_all(UNIFORM_ROW, tid, pk, [(ck, _ENCODE(record)) for ck, record in rows])


def encode_group(tid: int, pk: bytes, rows: list[tuple[bytes, bytes]]) -> bytes:
    """Bytes of a group entry (kind ``G``) holding ``rows``, ``(ck, U record bytes)`` of one partition in strictly
    increasing clustering order; it is stored under the last row's ``ck``."""
    return seal(GROUP, tid, pk, rows[-1][0], _ENCODE(rows))


def is_group(data: bytes) -> bool:
    """Whether stored bytes of ``rows`` claim to be a group entry (kind ``G``; unverified)."""
    return len(data) > 1 and data[1] == GROUP


def group_rows(data: bytes, tid: int, pk: bytes, ck: bytes) -> list[tuple[bytes, bytes]]:
    """The ``(ck, U record bytes)`` of a group entry stored under ``ck``, after verifying the group's own
    envelope (the inner records are verified by whoever decodes them); RecordDamaged otherwise."""
    kind, body = unseal(data, tid, pk, ck)
    if kind != GROUP:
        raise RecordDamaged(f"a record of kind {chr(kind)!r} where a group of log rows belongs")
    rows = _decode(_GROUP, body)
    if not rows:
        raise RecordDamaged("a group of log rows that holds no row")
    return rows


def group_rows_sealed(data: bytes, key_crc: int, ck: bytes) -> list[tuple[bytes, bytes]] | None:
    """:func:`group_rows` for a partition whose ``envelope.key_checksum`` is ``key_crc`` (the key's part of
    the checksum computed once for many groups); None when it does not verify as a group."""
    body = sealed_body(data, key_crc, ck, GROUP)
    if body is None:
        return None
    try:
        rows = _GROUP.decode(body)
    except msgspec.DecodeError:
        return None
    return rows or None  # a group holds one row at least: an empty one is damaged


def _decode(decoder: msgspec.msgpack.Decoder, body):
    try:
        return decoder.decode(body)
    except msgspec.DecodeError as e:
        raise malformed(e) from None


UniformRecord = tuple[tuple[bytes, ...], int, int, int, dict[str, Optional[bytes]]]


def uniform_row_data(record: UniformRecord) -> RowData:
    """The general form of a uniform row record: a marker and one cell per value, all of one liveness."""
    clustering, ts, ttl, ldt, values = record
    return RowData(clustering, Liveness(ts, ttl, ldt), None, {n: Cell(ts, v, ttl, ldt) for n, v in values.items()}, {})


def decode_row_or_uniform(data: bytes, tid: int, pk: bytes, ck: bytes) -> Union[RowData, UniformRecord]:
    """A row record decoded once: a uniform record (a CDC log row) as the tuple ``(clustering,
    timestamp, ttl, ldt, {column: value})``, without a ``Cell`` per value; a general one as
    ``RowData``.  RecordDamaged if it does not verify.

    The read path for immutable log rows (``query/read.py``, ``uniform_live_row``)."""
    kind, body = unseal(data, tid, pk, ck)
    if kind == UNIFORM_ROW:
        clustering, (ts, ttl, ldt), values = _decode(_UNIFORM, body)
        return clustering, ts, ttl, ldt, values
    if kind != ROW:
        raise RecordDamaged(f"a record of kind {chr(kind)!r} where a row belongs")
    return _row_from(_decode(_ROW, body))


MalformedBody = msgspec.DecodeError  # what a decoder from uniform_values_decoder raises for a body of the wrong shape


def uniform_values_decoder(values: type) -> Callable[[memoryview], tuple]:
    """A decoder of uniform row bodies whose ``{column: value}`` map is decoded straight into
    ``values`` (a msgspec ``Struct`` of optional bytes fields named by column): ``(clustering,
    (timestamp, ttl, ldt), values)``; :data:`MalformedBody` for a body of the wrong shape (callers
    report it as RecordDamaged, :func:`malformed`).

    For reading pages of CDC log rows in one pass (``query/projection.py``, ``uniform_plan``)."""
    return msgspec.msgpack.Decoder(tuple[tuple[bytes, ...], tuple[int, int, int], values]).decode  # type: ignore[valid-type]


def malformed(e: Exception) -> RecordDamaged:
    """The RecordDamaged for a body a decoder rejected."""
    return RecordDamaged(f"malformed record body ({e})")


def decode_row(data: bytes, tid: int, pk: bytes, ck: bytes) -> RowData:
    """Inverse of :func:`encode_row` and :func:`encode_uniform_row`; RecordDamaged if it does not verify."""
    row = decode_row_or_uniform(data, tid, pk, ck)
    return row if isinstance(row, RowData) else uniform_row_data(row)


def encode_partition(p: PartitionData, tid: int, pk: bytes) -> bytes:
    """Bytes of a partition record (key, partition tombstone, range tombstones, static row)."""
    return seal(PARTITION, tid, pk, b"", _ENCODE((
        p.key, p.deletion, [(rt.lo, rt.hi, rt.deletion) for rt in p.range_tombstones],
        None if p.static is None else _row_body(p.static))))


def decode_partition(data: bytes, tid: int, pk: bytes) -> PartitionData:
    """Inverse of :func:`encode_partition`; RecordDamaged if it does not verify."""
    kind, body = unseal(data, tid, pk, b"")
    if kind != PARTITION:
        raise RecordDamaged(f"a record of kind {chr(kind)!r} where a partition belongs")
    key, deletion, rts, static = _decode(_PARTITION, body)
    return PartitionData(key, deletion, [RangeTombstone(lo, hi, d) for lo, hi, d in rts],
                         None if static is None else _row_from(static))


def encode_meta(key: str, value: bytes) -> bytes:
    """Bytes of a meta value (catalog, roles, CDC generations ...) stored under ``key``."""
    return seal(META, 0, key.encode(), b"", value)


def decode_meta(key: str, data: bytes) -> bytes:
    """Inverse of :func:`encode_meta`; RecordDamaged if it does not verify."""
    kind, body = unseal(data, 0, key.encode(), b"")
    if kind != META:
        raise RecordDamaged(f"a record of kind {chr(kind)!r} where a meta value belongs")
    return bytes(body)
