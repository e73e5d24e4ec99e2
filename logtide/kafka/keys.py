"""The Kafka key of a changefeed record (docs/kafka.md "Messages"): logtide's choice beyond YDB.

YDB's Kafka API gives DEBEZIUM_JSON messages the Debezium key message and
every other format a null key.  Kafka users key by primary key (log
compaction, joins, Kafka Streams), so logtide gives every change record its
row's key, taken from the record as stored:

- JSON: the record's compact JSON ``key`` array, byte for byte as the record
  holds it (``["a",1]``): what YDB hashes to choose the partition;
- DEBEZIUM_JSON: the Debezium key message (``{"payload":{...}}``), as YDB;
- DYNAMODB_STREAMS_JSON: the record's ``dynamodb.Keys`` object
  (``{"id":{"N":"1"}}``), the key as that format writes it.

Barrier (``{"resolved":...}``) and schema-change records are about no row:
their key stays null.  Records are stored as the changefeed wrote them; the
key is found in the value's fixed leading members (render.py writes ``key``
first in JSON, ``awsRegion`` then ``dynamodb`` with
``ApproximateCreationDateTime`` then ``Keys`` in DynamoDB records), without
parsing the rest of the record.
"""

from __future__ import annotations

import re
from typing import Callable

_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|"|[\[\]{}]')  # strings (escapes and all), a lone quote, brackets
_JSON_PREFIX = b'{"key":['
# a key of numbers, booleans, nulls and strings without escapes (nothing nested) in one match; possessive
# quantifiers, so that no input makes the match backtrack
_JSON_FLAT_KEY = re.compile(rb'\{"key":(\[(?:[^\[\]{}"\\]++|"[^"\\]*+")*+\])')
_DYNAMODB_PREFIX = re.compile(rb'\{"awsRegion":"(?:[^"\\]|\\.)*","dynamodb":\{"ApproximateCreationDateTime":-?\d+,'
                              rb'"Keys":')
# Keys whose attribute values are all scalars without escapes ({"id":{"N":"1"},"name":{"S":"a"}}): one match
_ATTRIBUTE = rb'"[^"\\]*":\{"(?:[SNB]":"[^"\\]*"|BOOL":(?:true|false)|NULL":true)\}'
_SCALAR_KEYS = re.compile(rb"\{" + _ATTRIBUTE + rb"(?:," + _ATTRIBUTE + rb")*\}")


def json_end(data: bytes, start: int) -> int:
    """The index just past the JSON array or object that starts at ``data[start]``; -1 if it does not end."""
    depth = 0
    for m in _TOKENS.finditer(data, start):
        c = data[m.start()]
        if c == 0x22:  # a string (skipped whole), or a quote that opens one never closed
            if m.end() - m.start() == 1:
                return -1
            continue
        depth += 1 if c in (0x5B, 0x7B) else -1
        if depth == 0:
            return m.end()
    return -1


def json_key(value: bytes) -> bytes | None:
    """The compact JSON key array of a JSON-format record; None for barriers and schema changes."""
    m = _JSON_FLAT_KEY.match(value)
    if m is not None:
        return m.group(1)
    if not value.startswith(_JSON_PREFIX):
        return None
    end = json_end(value, 7)
    return value[7:end] if end > 0 else None


def dynamodb_key(value: bytes) -> bytes | None:
    """The ``dynamodb.Keys`` object of a DYNAMODB_STREAMS_JSON record; None for barriers and schema changes."""
    m = _DYNAMODB_PREFIX.match(value)
    if m is None:
        return None
    start = m.end()
    keys = _SCALAR_KEYS.match(value, start)
    if keys is not None:
        return keys.group(0)
    end = json_end(value, start)
    return value[start:end] if end > 0 else None


_KEYS: dict[str, Callable[[bytes], bytes | None]] = {"JSON": json_key, "DYNAMODB_STREAMS_JSON": dynamodb_key}


def key_function(format: str | None) -> Callable[[bytes], bytes | None] | None:
    """How a record of a changefeed of ``format`` stored without a key gets its Kafka key from its value (None:
    records keep the keys they are stored with, as DEBEZIUM_JSON's are)."""
    return _KEYS.get(format or "")

