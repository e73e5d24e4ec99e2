"""The changefeed tables' records in the checksummed envelope (storage format 3, ``docs/durability.md``).

Every changefeed table keeps its key columns as they were and stores the rest
as one value sealed by ``envelope.seal``: version, a kind letter, a body and a
CRC-32 over the row's key columns and that value, so a flipped bit anywhere in
the row (key, write time, Kafka key or value) fails the checksum::

    feed_records(feed_id, part, offset, write_time_ms, key, value)
        value: kind 'F', body = the message's value bytes as they are; the checksum's key part is the
        feed id, then (part, offset, write_time_ms, key present) packed, then the Kafka key
    feed_floors(feed_id, part, data)              'E': the end offset retention left (MessagePack int)
    feed_consumers(feed_id, name, data)           'C': [important, read_from_ms]
    feed_offsets(feed_id, name, part, data)       'O': the committed offset (the next one to read)
    feed_scans(feed_id, data)                     'S': the initial scan's progress (JSON text)
    feed_scan_marks(feed_id, token, pk, ck, data) 'K': empty body (the checksum covers the key)

``write_time_ms`` stays a column of its own (retention and ``offset_for_time``
select by it) and the Kafka key too (no MessagePack on the write path: the
value is sealed as it is); both are covered by the checksum.  Names are
stored as BLOBs (UTF-8), never TEXT, so that no damaged byte can make SQLite
fail to decode a column.  Readers select blob columns with ``CAST(... AS
BLOB)`` for the same reason.  Functions here raise ``RecordDamaged``; the
changefeed layer names the changefeed, partition and offset.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import msgspec

from .envelope import OVERHEAD, RESIDUE, VERSION, RecordDamaged, seal, unseal

FEED_RECORD = ord("F")
FLOOR = ord("E")
CONSUMER = ord("C")
COMMITTED = ord("O")
SCAN = ord("S")
SCAN_MARK = ord("K")

FEED_TABLES = (
    ("feed_records", "feed_id INTEGER NOT NULL, part INTEGER NOT NULL, offset INTEGER NOT NULL, "
                     "write_time_ms INTEGER NOT NULL, key BLOB, value BLOB NOT NULL, "
                     "PRIMARY KEY (feed_id, part, offset)"),
    ("feed_floors", "feed_id INTEGER NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL, "
                    "PRIMARY KEY (feed_id, part)"),
    ("feed_consumers", "feed_id INTEGER NOT NULL, name BLOB NOT NULL, data BLOB NOT NULL, "
                       "PRIMARY KEY (feed_id, name)"),
    ("feed_offsets", "feed_id INTEGER NOT NULL, name BLOB NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL, "
                     "PRIMARY KEY (feed_id, name, part)"),
    ("feed_scans", "feed_id INTEGER NOT NULL PRIMARY KEY, data BLOB NOT NULL"),
    ("feed_scan_marks", "feed_id INTEGER NOT NULL, token INTEGER NOT NULL, pk BLOB NOT NULL, ck BLOB NOT NULL, "
                        "data BLOB NOT NULL, PRIMARY KEY (feed_id, token, pk, ck)"),
)
# changefeed topics (logtide.changefeed.storage): records, offset floors, consumers, scan state
FEED_SCHEMA = "".join(f"CREATE TABLE IF NOT EXISTS {name} ({body}) WITHOUT ROWID;\n" for name, body in FEED_TABLES)

_RECORD_KEY = struct.Struct("<qqqB").pack  # part, offset, write_time_ms, whether there is a Kafka key
_PART = struct.Struct("<q").pack
_ENCODE = msgspec.msgpack.Encoder().encode
_crc32 = zlib.crc32
_INT = msgspec.msgpack.Decoder(int)
_CONSUMER = msgspec.msgpack.Decoder(tuple[bool, int])


def _int(value: Any, what: str) -> int:
    if type(value) is not int:
        raise RecordDamaged(f"{what} is not an integer (a damaged column)")
    return value


def _blob(value: Any, what: str) -> bytes:
    if type(value) is not bytes:
        raise RecordDamaged(f"{what} is not a byte string (a damaged column)")
    return value


def _open(kind: int, tid: Any, pk: bytes, ck: bytes, data: Any) -> memoryview:
    """The body of a sealed value of ``kind``; RecordDamaged when it does not verify."""
    got, body = unseal(_blob(data, "the sealed value"), _int(tid, "the changefeed id"), pk, ck)
    if got != kind:
        raise RecordDamaged(f"a record of kind {chr(got)!r} where {_KINDS[kind]} belongs")
    return body


def _decode(decoder: msgspec.msgpack.Decoder, body: memoryview) -> Any:
    try:
        return decoder.decode(body)
    except msgspec.DecodeError as e:
        raise RecordDamaged(f"malformed record body ({e})") from None


_KINDS = {FEED_RECORD: "a changefeed record", FLOOR: "an offset floor", CONSUMER: "a consumer",
          COMMITTED: "a committed offset", SCAN: "an initial scan's state", SCAN_MARK: "an initial scan's mark"}


# -- feed_records -------------------------------------------------------------------------------

def seal_record(feed_id: int, part: int, offset: int, write_time_ms: int, key: bytes | None, value: bytes) -> bytes:
    """The stored ``value`` column of a changefeed record: ``value`` sealed under the row's other columns."""
    if key is None:
        return seal(FEED_RECORD, feed_id, _RECORD_KEY(part, offset, write_time_ms, 0), b"", value)
    return seal(FEED_RECORD, feed_id, _RECORD_KEY(part, offset, write_time_ms, 1), key, value)


def record_value(feed_id: int, part: int, offset: Any, write_time_ms: Any, key: Any, data: Any) -> bytes:
    """The message value a stored changefeed record holds, after verifying its checksum over every column;
    RecordDamaged otherwise."""
    try:  # the common case in one expression: one CRC over key columns and value, compared with the residue
        head = _RECORD_KEY(part, offset, write_time_ms, key is not None)
        crc = _crc32(head, feed_id & 0xFFFFFFFF)
        if key is not None:
            crc = _crc32(key, crc)
        if len(data) >= OVERHEAD and data[1] == FEED_RECORD and data[0] == VERSION and _crc32(data, crc) == RESIDUE:
            return data[2:-4]
    except (TypeError, struct.error):
        pass
    return _record_damaged(feed_id, part, offset, write_time_ms, key, data)


def _record_damaged(feed_id: Any, part: Any, offset: Any, write_time_ms: Any, key: Any, data: Any) -> bytes:
    """Why a changefeed record does not verify (RecordDamaged), the checks one by one."""
    try:
        head = _RECORD_KEY(_int(part, "the partition"), _int(offset, "the offset"),
                           _int(write_time_ms, "the write time"), key is not None)
    except struct.error:
        raise RecordDamaged("a key column out of range (a damaged column)") from None
    body = _open(FEED_RECORD, feed_id, head, b"" if key is None else _blob(key, "the Kafka key"), data)
    return body.tobytes()  # (verified after all: never reached for a damaged record)


# -- state: floors, consumers, committed offsets, scans, marks ----------------------------------

def seal_floor(feed_id: int, part: int, next_offset: int) -> bytes:
    return seal(FLOOR, feed_id, _PART(part), b"", _ENCODE(next_offset))


def floor_value(feed_id: int, part: int, data: Any) -> int:
    """The end offset a partition's floor holds; RecordDamaged when it does not verify."""
    return _decode(_INT, _open(FLOOR, feed_id, _part(part), b"", data))


def seal_consumer(feed_id: int, name: bytes, important: bool, read_from_ms: int) -> bytes:
    return seal(CONSUMER, feed_id, name, b"", _ENCODE((important, read_from_ms)))


def consumer_value(feed_id: int, name: Any, data: Any) -> tuple[bool, int]:
    """(important, read_from_ms) of a consumer stored under ``name`` (its UTF-8 bytes); RecordDamaged otherwise."""
    return _decode(_CONSUMER, _open(CONSUMER, feed_id, _blob(name, "the consumer name"), b"", data))


def seal_committed(feed_id: int, name: bytes, part: int, offset: int) -> bytes:
    return seal(COMMITTED, feed_id, name, _PART(part), _ENCODE(offset))


def committed_value(feed_id: int, name: Any, part: Any, data: Any) -> int:
    """A consumer's committed offset in a partition; RecordDamaged when it does not verify."""
    body = _open(COMMITTED, feed_id, _blob(name, "the consumer name"), _part(part), data)
    return _decode(_INT, body)


def seal_scan(feed_id: int, state_json: bytes) -> bytes:
    return seal(SCAN, feed_id, b"", b"", state_json)


def scan_value(feed_id: Any, data: Any) -> bytes:
    """The JSON text of an initial scan's state; RecordDamaged when it does not verify."""
    return _open(SCAN, feed_id, b"", b"", data).tobytes()


def seal_mark(feed_id: int, token: int, pk: bytes, ck: bytes) -> bytes:
    return seal(SCAN_MARK, feed_id, _PART(token) + pk, ck, b"")


def verify_mark(feed_id: int, token: Any, pk: Any, ck: Any, data: Any) -> None:
    """Verify a scan mark's checksum over its key; RecordDamaged when it does not verify."""
    _open(SCAN_MARK, feed_id, _part(_int(token, "the token")) + _blob(pk, "the partition key"),
          _blob(ck, "the clustering key"), data)


def _part(value: Any) -> bytes:
    try:
        return _PART(_int(value, "the partition"))
    except struct.error:
        raise RecordDamaged("a key column out of range (a damaged column)") from None
