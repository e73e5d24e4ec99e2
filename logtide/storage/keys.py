"""Keys as storage orders them: partition keys with Murmur3 tokens, comparable clustering keys.

* A partition key is serialized as Cassandra does (the single value, or a
  ``CompositeType`` of ``<len16><bytes><0x00>`` components) and hashed with
  cassandra-driver's Murmur3 so that ``token()`` equals Cassandra's.
* A clustering key is the concatenation of each component's prefix-free,
  order-preserving encoding (``type.comparable``), bytes inverted for
  ``DESC`` columns, so that plain byte comparison gives clustering order and a
  clustering prefix is a byte prefix.
"""

from __future__ import annotations

import struct
from typing import Sequence

from cassandra.metadata import Murmur3Token

MIN_TOKEN = -(2**63)
MAX_TOKEN = 2**63 - 1

_INVERT = bytes(255 - i for i in range(256))


def serialize_partition_key(values: Sequence[bytes]) -> bytes:
    """The partition key bytes Cassandra hashes (CompositeType for several components)."""
    if len(values) == 1:
        return values[0]
    out = bytearray()
    for v in values:
        out += struct.pack(">H", len(v))
        out += v
        out += b"\x00"
    return bytes(out)


def split_partition_key(partition_key: bytes, count: int) -> list[bytes]:
    """The component values of a partition key of ``count`` columns (the inverse of
    :func:`serialize_partition_key`); ValueError (or struct.error) for bytes that are not one."""
    if count == 1:
        return [partition_key]
    out, pos = [], 0
    for _ in range(count):
        (n,) = struct.unpack_from(">H", partition_key, pos)
        out.append(partition_key[pos + 2:pos + 2 + n])
        pos += n + 3
    if pos != len(partition_key):
        raise ValueError("trailing bytes")
    return out


def token_of(partition_key: bytes) -> int:
    """Murmur3Partitioner token of a serialized partition key (identical to Cassandra's)."""
    return Murmur3Token.hash_fn(partition_key)


def cdc_token(stream_id: bytes) -> int:
    """Token of a CDC log partition: the stream id's first 8 bytes (ScyllaDB's CDC partitioner).

    A stream id of any other length than 16 bytes maps to the minimum token.
    """
    if len(stream_id) != 16:
        return MIN_TOKEN
    return struct.unpack(">q", stream_id[:8])[0]


def partition_token(table, partition_key: bytes) -> int:
    """The token of a partition of ``table``: Murmur3, or the CDC partitioner for log tables."""
    if getattr(table, "cdc_base", None) is not None:
        return cdc_token(partition_key)
    return token_of(partition_key)


def clustering_component(ctype, value: bytes, descending: bool) -> bytes:
    """The comparable encoding of one clustering value (inverted for DESC)."""
    enc = ctype.comparable(value)
    return enc.translate(_INVERT) if descending else enc


def clustering_key(columns: Sequence, values: Sequence[bytes]) -> bytes:
    """Comparable key of a full clustering (or of a prefix when fewer values are given)."""
    if len(values) == 1 and columns:  # one component (every write to a table of one clustering column)
        c = columns[0]
        return clustering_component(c.type, values[0], c.reversed)
    return b"".join(clustering_component(c.type, v, c.reversed) for c, v in zip(columns, values))


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix`` (None: no bound)."""
    p = bytearray(prefix)
    while p and p[-1] == 0xFF:
        p.pop()
    if not p:
        return None
    p[-1] += 1
    return bytes(p)
