"""Secondary index entries in storage (docs/views-and-indexes.md, "Secondary indexes"; docs/durability.md).

An index's entries are rows of the ``rows`` table under the index's own ``store_id``, each an ``I`` record
(an empty body in the checksummed envelope: the key is the whole entry, and the checksum covers it):

* a global index: ``token`` is the Murmur3 token of the indexed value, ``pk`` the indexed value, ``ck`` the
  base row's token (8 bytes, ordered as signed tokens), its partition key (2-byte length first) and its
  comparable clustering key.  The entries of one value are then in the order of the base table's own scan
  (token, partition, clustering), which is the order ScyllaDB returns a global index's rows in;
* a local index: ``token`` and ``pk`` are the base partition's, ``ck`` the indexed value (4-byte length
  first) then the base row's clustering key: one value's entries are a clustering range of the partition.

Nothing else is stored: a lookup reads the base rows the entries name and keeps those whose indexed value
matches (an entry whose row has expired by TTL since is dropped at read time).
"""

from __future__ import annotations

import struct

from .envelope import RecordDamaged, seal, unseal
from .keys import prefix_end, token_of

INDEX_ENTRY = ord("I")
_TOKEN = struct.Struct(">Q")
_LEN16 = struct.Struct(">H")
_LEN32 = struct.Struct(">I")
_BIAS = 1 << 63

Entry = tuple[int, bytes, bytes]  # (token, pk, ck) of an entry in the index's store id


def global_entry(value: bytes, base_token: int, base_pk: bytes, base_ck: bytes) -> Entry:
    """The key of a global index's entry for ``value`` in the base row (base token, pk, ck)."""
    return token_of(value), value, _TOKEN.pack(base_token + _BIAS) + _LEN16.pack(len(base_pk)) + base_pk + base_ck


def global_base(ck: bytes) -> tuple[int, bytes, bytes]:
    """(base token, base partition key, base clustering key) of a global entry's ``ck``."""
    (biased,) = _TOKEN.unpack_from(ck, 0)
    (n,) = _LEN16.unpack_from(ck, 8)
    return biased - _BIAS, ck[10:10 + n], ck[10 + n:]


def global_from(base_token: int, base_pk: bytes | None = None, base_ck: bytes = b"") -> bytes:
    """The smallest global entry ``ck`` at or after the entries of the base row (token, pk, ck), or of the
    first partition of ``base_token`` (``base_pk`` None): where a read from that row on starts."""
    head = _TOKEN.pack(base_token + _BIAS)
    return head if base_pk is None else head + _LEN16.pack(len(base_pk)) + base_pk + base_ck


def entry_value(key: bytes, value: bytes) -> bytes:
    """The indexed value of a map entry in an ``entries(m)`` index: the key's length (4 bytes), the key, the value."""
    return _LEN32.pack(len(key)) + key + value


def local_entry(value: bytes, base_token: int, base_pk: bytes, base_ck: bytes) -> Entry:
    """The key of a local index's entry for ``value`` in the base row."""
    return base_token, base_pk, _LEN32.pack(len(value)) + value + base_ck


def local_range(value: bytes) -> tuple[bytes, bytes | None]:
    """The ``[lo, hi)`` clustering range of a local index's entries for ``value`` within a partition."""
    lo = _LEN32.pack(len(value)) + value
    return lo, prefix_end(lo)


def local_base_ck(value: bytes, ck: bytes) -> bytes:
    """The base clustering key of a local entry of ``value``."""
    return ck[4 + len(value):]


def seal_entry(tid: int, pk: bytes, ck: bytes) -> bytes:
    """The stored bytes of an entry (an empty ``I`` record sealed with its key)."""
    return seal(INDEX_ENTRY, tid, pk, ck, b"")


def verify_entry(data: bytes, tid: int, pk: bytes, ck: bytes) -> None:
    """RecordDamaged unless ``data`` is a sound entry stored under (tid, pk, ck)."""
    kind, _ = unseal(data, tid, pk, ck)
    if kind != INDEX_ENTRY:
        raise RecordDamaged(f"a record of kind {chr(kind)!r} where a secondary index entry belongs")
