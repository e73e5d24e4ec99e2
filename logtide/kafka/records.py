"""Record batch v2 ("magic 2", Kafka docs "Record Batch") with its CRC-32C, for Fetch responses.

One batch holds a run of one partition's records; attributes are 0 (no
compression, CreateTime timestamps, not transactional), producer id/epoch and
base sequence -1.  ``decode_batches`` reads batches back (tests, Produce).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Sequence

import crc32c

from .codec import MalformedFrame, Reader, encode_uvarint, encode_varint

MAGIC = 2
_HEAD = struct.Struct(">qiib")  # baseOffset, batchLength, partitionLeaderEpoch, magic
_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. recordsCount
HEADER_SIZE = _HEAD.size + 4 + _AFTER_CRC.size  # 61


@dataclass(frozen=True)
class Record:
    """One message of a batch: absolute offset and timestamp, key and value (None = null)."""

    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def _bytes_field(b: bytes | None) -> bytes:
    return encode_varint(-1) if b is None else encode_varint(len(b)) + b


def encode_batch(records: Sequence[Record]) -> bytes:
    """One record batch v2 holding ``records`` (non-empty, in offset order)."""
    base_offset = records[0].offset
    base_ts = records[0].timestamp_ms
    max_ts = max(r.timestamp_ms for r in records)
    body = bytearray()
    for r in records:
        rec = bytearray(b"\x00")
        rec += encode_varint(r.timestamp_ms - base_ts)
        rec += encode_varint(r.offset - base_offset)
        rec += _bytes_field(r.key)
        rec += _bytes_field(r.value)
        rec += encode_varint(len(r.headers))
        for hk, hv in r.headers:
            rec += _bytes_field(hk.encode("utf-8"))
            rec += _bytes_field(hv)
        body += encode_varint(len(rec))
        body += rec
    after_crc = _AFTER_CRC.pack(0, records[-1].offset - base_offset, base_ts, max_ts, -1, -1, -1, len(records))
    after_crc += body
    crc = crc32c.crc32c(after_crc)
    batch_length = 4 + 1 + 4 + len(after_crc)  # partitionLeaderEpoch + magic + crc + the rest
    return _HEAD.pack(base_offset, batch_length, -1, MAGIC) + struct.pack(">I", crc) + after_crc


def decode_batches(data: bytes, verify_crc: bool = True) -> list[Record]:
    """The records of concatenated v2 batches (a trailing partial batch is ignored, as clients do)."""
    out: list[Record] = []
    pos = 0
    while len(data) - pos >= HEADER_SIZE:
        base_offset, batch_length, _epoch, magic = _HEAD.unpack_from(data, pos)
        end = pos + 12 + batch_length
        if batch_length < HEADER_SIZE - 12:
            raise MalformedFrame(f"record batch length {batch_length} is too small")
        if end > len(data):
            break
        if magic != MAGIC:
            raise MalformedFrame(f"record batch magic {magic} is not 2")
        (crc,) = struct.unpack_from(">I", data, pos + _HEAD.size)
        crc_from = pos + _HEAD.size + 4
        if verify_crc and crc32c.crc32c(bytes(data[crc_from:end])) != crc:
            raise MalformedFrame("record batch CRC-32C mismatch")
        attrs, _last, base_ts, _max_ts, _pid, _pe, _seq, count = _AFTER_CRC.unpack_from(data, crc_from)
        if attrs & 0x07:
            raise MalformedFrame("compressed record batches are not supported")
        r = Reader(bytes(data[crc_from + _AFTER_CRC.size:end]))
        for _ in range(count):
            length = r.varint()
            start = r.pos
            r.int8()
            ts = base_ts + r.varint()
            off = base_offset + r.varint()
            key = _read_bytes(r)
            value = _read_bytes(r)
            headers = []
            for _h in range(r.varint()):
                hk = _read_bytes(r) or b""
                headers.append((hk.decode("utf-8", "replace"), _read_bytes(r)))
            if r.pos - start != length:
                raise MalformedFrame("record length does not match its contents")
            out.append(Record(off, ts, key, value, tuple(headers)))
        pos = end
    return out


def _read_bytes(r: Reader) -> bytes | None:
    n = r.varint()
    if n < 0:
        return None
    return bytes(r._take(n))
