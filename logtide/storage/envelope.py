"""The envelope every stored record travels in: a format version, a kind, and a checksum.

Layout (``docs/durability.md``, "Record format")::

    byte 0       format version (1); never 0x80, the first byte of the pickles of logtide 0.1
    byte 1       kind: what the body holds (a row, a CDC log row, a partition, a meta value ...)
    bytes 2..-5  body (MessagePack for row and partition records; any bytes for other kinds)
    last 4 bytes CRC-32 (zlib's, little-endian) of the record's storage key and of bytes 0..-5

The checksum covers the key the record is stored under (table id, partition
key, clustering key) as well as the record, so a record that a damaged B-tree
page shows under another key is detected too.  It trails the record so that
verifying is one CRC over the whole stored value: a CRC-32 run over a message
followed by its own CRC always ends at the same residue.  The envelope says
nothing about the body's encoding: any table (changefeed records, say) can
seal its values with its own kind letter and key parts.
"""

from __future__ import annotations

import struct
import zlib

VERSION = 1
OVERHEAD = 6  # version, kind, CRC
RESIDUE = 0x2144DF1C  # zlib.crc32(m + zlib.crc32(m).to_bytes(4, "little")) for every m
_OLD_PICKLE = 0x80
_HEADS = tuple(bytes((VERSION, kind)) for kind in range(256))
_CRC = struct.Struct("<I").pack
CHECKSUM = _CRC  # the trailing checksum's bytes from its CRC-32 (of the key, then of version, kind and body)
_crc32 = zlib.crc32


class RecordDamaged(Exception):
    """A stored record whose checksum, version, kind or body does not hold up; ``reason`` says which.

    Raised by the storage layer without knowing table names; callers that
    know the table turn it into :class:`logtide.errors.CorruptRecord`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def seal(kind: int, tid: int, pk: bytes, ck: bytes, body: bytes) -> bytes:
    """The stored bytes of a record: version, kind, ``body`` and the checksum."""
    data = _HEADS[kind] + body
    return data + _CRC(_crc32(data, _crc32(ck, _crc32(pk, tid & 0xFFFFFFFF))))


def seal_all(kind: int, tid: int, pk: bytes, records: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``(ck, stored bytes)`` of records of one partition given as ``(ck, body)``: :func:`seal` of each,
    the key's part of the checksum computed once."""
    head = _HEADS[kind]
    key_crc = _crc32(pk, tid & 0xFFFFFFFF)
    out = []
    for ck, body in records:
        data = head + body
        out.append((ck, data + _CRC(_crc32(data, _crc32(ck, key_crc)))))
    return out


def record_head(kind: int) -> bytes:
    """The first two bytes of every record of ``kind``: the format version and the kind."""
    return _HEADS[kind]


def unseal(data: bytes, tid: int, pk: bytes, ck: bytes) -> tuple[int, memoryview]:
    """(kind, body) of a stored record after verifying its version and checksum; RecordDamaged otherwise."""
    if _crc32(data, _crc32(ck, _crc32(pk, tid & 0xFFFFFFFF))) != RESIDUE or data[0] != VERSION or len(data) < OVERHEAD:
        raise RecordDamaged(_why(data))
    return data[1], memoryview(data)[2:-4]


def key_checksum(tid: int, pk: bytes) -> int:
    """The checksum's running state after a partition's key (table id, partition key), for
    :func:`sealed_body`: the records of one partition are verified without repeating that part."""
    return _crc32(pk, tid & 0xFFFFFFFF)


def sealed_body(data: bytes, key_crc: int, ck: bytes, kind: int) -> memoryview | None:
    """The body of a stored record of ``kind`` stored under ``ck`` in the partition whose
    :func:`key_checksum` is ``key_crc``, after the same verification as :func:`unseal`; None when it
    does not verify or is of another kind (then :func:`unseal` says why, or gives the other kind)."""
    if _crc32(data, _crc32(ck, key_crc)) != RESIDUE or data[0] != VERSION or data[1] != kind or len(data) < OVERHEAD:
        return None
    return memoryview(data)[2:-4]


def _why(data: bytes) -> str:
    if len(data) < OVERHEAD:
        return f"a record of {len(data)} bytes is shorter than its envelope"
    if data[0] == _OLD_PICKLE:
        return "a record in the pickle format of logtide 0.1 (never loaded: pickles can run code)"
    if data[0] != VERSION:
        return f"unknown record format version {data[0]}"
    return "checksum mismatch"
