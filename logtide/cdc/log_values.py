"""The serialized values of CDC log columns for non-frozen collections and UDTs (spec ``002``): an element map as
its frozen value (lists as maps of timeuuid keys), removed keys as a frozen set, in their type's order.
"""

from __future__ import annotations

import struct
from typing import Any, Iterable

from ..query.read import element_order_key
from ..schema import types as T


def _frame(items: Iterable[bytes]) -> bytes:
    items = list(items)
    out = bytearray(struct.pack(">i", len(items)))
    for b in items:
        out += struct.pack(">i", len(b)) + b
    return bytes(out)


def frozen_elements(ctype: Any, elements: dict[bytes, bytes] | list[tuple[bytes, bytes]]) -> bytes:
    """The frozen log value of a non-frozen collection/UDT's elements (lists as maps of timeuuid keys)."""
    pairs = list(elements.items()) if isinstance(elements, dict) else list(elements)
    if isinstance(ctype, T.UserType):
        by_index = {struct.unpack(">h", k)[0]: v for k, v in pairs}
        out = bytearray()
        for i in range(len(ctype.field_names)):
            v = by_index.get(i)
            out += b"\xff\xff\xff\xff" if v is None else struct.pack(">i", len(v)) + v
        return bytes(out)
    order = element_order_key(ctype)
    pairs.sort(key=lambda kv: order(kv[0]))
    if isinstance(ctype, T.SetType):
        return _frame(k for k, _ in pairs)
    flat = []
    for k, v in pairs:
        flat += [k, v]
    out = bytearray(struct.pack(">i", len(pairs)))
    for b in flat:
        out += struct.pack(">i", len(b)) + b
    return bytes(out)


def frozen_keys(ctype: Any, keys: Iterable[bytes]) -> bytes:
    """The ``cdc$deleted_elements_X`` value: a frozen set of element keys in their type's order."""
    order = element_order_key(ctype)
    return _frame(sorted(set(keys), key=order))
