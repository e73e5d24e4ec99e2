"""Record batch v2 ("magic 2", Kafka docs "Record Batch") with its CRC-32C, for Fetch responses.

One batch holds a run of one partition's records; attributes are 0 (no
compression, CreateTime timestamps, not transactional), producer id/epoch and
base sequence -1.  ``decode_batches`` reads batches back (tests, Produce).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import google_crc32c  # CRC-32C (Castagnoli); Apache-2.0

from .codec import MalformedFrame, Reader, encode_varint

MAGIC = 2
_CRC = struct.Struct(">I")
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


_SMALL = 1 << 14
_VARINTS = [encode_varint(v) for v in range(-1, _SMALL)]  # zig-zag varints of -1 .. 16383, the common case


def _varint(v: int) -> bytes:
    """Zig-zag varint of ``v``: the table for small values, arithmetic for the 2-3 byte ones past it."""
    if -1 <= v < _SMALL:
        return _VARINTS[v + 1]
    z = (v << 1) ^ (v >> 63)
    if 1 << 14 <= z < 1 << 21:
        return bytes(((z & 0x7F) | 0x80, ((z >> 7) & 0x7F) | 0x80, z >> 14))
    return encode_varint(v)


def encode_batch(records: Sequence[Record]) -> bytes:
    """One record batch v2 holding ``records`` (non-empty, in offset order; the broker never sends headers, so
    records with headers are refused)."""
    if any(r.headers for r in records):
        raise ValueError("record headers are decoded, never encoded")
    return encode_rows([(r.offset, r.timestamp_ms, r.key, r.value) for r in records])


def encode_topic_records(records: Sequence[Any]) -> bytes:
    """One record batch v2 of changefeed TopicRecords: timestamp = write time, no headers."""
    return encode_rows([(r.offset, r.write_time_ms, r.key, r.value) for r in records])


# a record's length varint followed by its attributes byte (0), and a null key (-1) followed by the value's
# length varint: two pieces each record has, looked up whole for the common sizes
_LEN_ATTR = [v + b"\x00" for v in _VARINTS[1:]]
_NULL_KEY_LEN = [_VARINTS[0] + v for v in _VARINTS[1:]]


def encode_rows(rows: Sequence[tuple[int, int, bytes | None, bytes | None]],
                key_of: Callable[[bytes], bytes | None] | None = None) -> bytes:
    """One record batch v2 straight from changefeed rows ``(offset, write_time_ms, key, value)`` as the
    reader's ``read_rows`` gives them (non-empty, in offset order; no headers).  ``key_of`` gives a row
    stored without a key its Kafka key from its value (``keys.key_function``).

    Each record's pieces go into one list joined once, its length computed from the pieces' lengths (Kafka
    docs "Record": length, attributes, timestampDelta, offsetDelta, key, value, headers); no per-record
    object is made and the constant pieces are looked up whole."""
    base_offset, base_ts = rows[0][0], rows[0][1]
    max_ts = base_ts
    parts: list[bytes] = []
    extend = parts.extend
    table, len_attr, null_key, small = _VARINTS, _LEN_ATTR, _NULL_KEY_LEN, _SMALL - 1
    zero = b"\x00"
    for offset, ts, key, value in rows:
        if ts > max_ts:
            max_ts = ts
        d = ts - base_ts
        tsd = table[d + 1] if -1 <= d < small else _varint(d)
        d = offset - base_offset
        od = table[d + 1] if d < small else _varint(d)
        if value is None:
            value, vn = b"", -1  # a null value: length -1, no bytes
        else:
            vn = len(value)
            if key is None and key_of is not None:
                key = key_of(value)
        if key is None and vn >= 0:
            if vn < small:
                vh = null_key[vn]
                length = 2 + len(tsd) + len(od) + len(vh) + vn  # attributes and header count: 2 bytes
            else:
                vh = table[0] + _varint(vn)
                length = 2 + len(tsd) + len(od) + len(vh) + vn
        else:  # a key (its length and bytes are pieces of their own: no joining), or a null value
            if key is None:
                kh, key = table[0], b""
            else:
                kn = len(key)
                kh = table[kn + 1] if kn < small else _varint(kn)
            vh = table[vn + 1] if vn < small else _varint(vn)
            length = 2 + len(tsd) + len(od) + len(kh) + len(key) + len(vh) + max(vn, 0)
            extend((len_attr[length] if length < small else _varint(length) + zero, tsd, od, kh, key, vh, value,
                    zero))
            continue
        extend((len_attr[length] if length < small else _varint(length) + zero, tsd, od, vh, value, zero))
    return _finish(parts, base_offset, rows[-1][0] - base_offset, base_ts, max_ts, len(rows))


def _finish(parts: list[bytes], base_offset: int, last_delta: int, base_ts: int, max_ts: int, count: int) -> bytes:
    """The batch header around the records' bytes, with the CRC-32C of everything after the CRC field."""
    after_crc = b"".join([_AFTER_CRC.pack(0, last_delta, base_ts, max_ts, -1, -1, -1, count), *parts])
    crc = google_crc32c.value(after_crc)
    batch_length = 4 + 1 + 4 + len(after_crc)  # partitionLeaderEpoch + magic + crc + the rest
    return b"".join((_HEAD.pack(base_offset, batch_length, -1, MAGIC), _CRC.pack(crc), after_crc))


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
        if verify_crc and google_crc32c.value(bytes(data[crc_from:end])) != crc:
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
