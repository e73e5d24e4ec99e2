"""The serialized values of CDC log columns for non-frozen collections and UDTs (spec ``002``): an element map as
its frozen value (lists as maps of timeuuid keys), removed keys as a frozen set, in their type's order.
"""

from __future__ import annotations

import struct
from typing import Any, Iterable

from ..query.read import element_order_key
from ..schema import types as T

_INT = struct.Struct(">i")


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


def image_elements(ctype: Any, image: bytes) -> dict[bytes, bytes]:
    """The elements (element key -> value) of a collection or UDT from its image in the log, the inverse of
    :func:`frozen_elements` for ``ctype`` as ``cdc.upsert.image_plan`` gives it (a list's image is the map of
    its timeuuid keys): a UDT's non-null fields by index (big-endian smallints), a set's elements with empty
    values, a map's entries."""
    unpack = _INT.unpack_from
    out: dict[bytes, bytes] = {}
    if isinstance(ctype, T.UserType):
        at = 0
        for i in range(len(ctype.field_names)):
            if at >= len(image):  # a value written before the type gained fields ends early
                break
            n = unpack(image, at)[0]
            at += 4
            if n >= 0:
                out[struct.pack(">h", i)] = image[at:at + n]
                at += n
        return out
    is_map = isinstance(ctype, T.MapType)
    count, at = unpack(image, 0)[0], 4
    for _ in range(count):
        n = unpack(image, at)[0]
        k = image[at + 4:at + 4 + n]
        at += 4 + n
        v = b""
        if is_map:
            n = unpack(image, at)[0]
            v = image[at + 4:at + 4 + n]
            at += 4 + n
        out[k] = v
    return out
