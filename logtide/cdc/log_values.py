"""The serialized values of CDC log columns for non-frozen collections and UDTs (spec ``002``): an element map as
its frozen value (lists as maps of timeuuid keys), removed keys as a frozen set, in their type's order.
"""

from __future__ import annotations

import bisect
import struct
from typing import Any, Callable, Iterable

from ..query.read import element_order_key
from ..schema import types as T

_INT = struct.Struct(">i")


def _frame(items: Iterable[bytes]) -> bytes:
    items = list(items)
    out = bytearray(struct.pack(">i", len(items)))
    for b in items:
        out += struct.pack(">i", len(b)) + b
    return bytes(out)


def frozen_elements(ctype: Any, elements: dict[bytes, bytes] | list[tuple[bytes, bytes]],
                    ordered: bool = False) -> bytes:
    """The frozen log value of a non-frozen collection/UDT's elements (lists as maps of timeuuid keys);
    ``ordered``: the elements are already in their type's order (:func:`merged_elements`), not sorted again."""
    pairs = list(elements.items()) if isinstance(elements, dict) else list(elements)
    if isinstance(ctype, T.UserType):
        by_index = {struct.unpack(">h", k)[0]: v for k, v in pairs}
        out = bytearray()
        for i in range(len(ctype.field_names)):
            v = by_index.get(i)
            out += b"\xff\xff\xff\xff" if v is None else struct.pack(">i", len(v)) + v
        return bytes(out)
    if len(pairs) > 1 and not ordered:
        order = element_order_key(ctype)
        pairs.sort(key=lambda kv: order(kv[0]))
    pack = _INT.pack
    parts = [pack(len(pairs))]
    add = parts.extend
    if isinstance(ctype, T.SetType):
        for k, _ in pairs:
            add((pack(len(k)), k))
    else:
        for k, v in pairs:
            add((pack(len(k)), k, pack(len(v)), v))
    return b"".join(parts)


def merged_elements(ctype: Any, elements: dict[bytes, bytes], added: list[tuple[bytes, bytes]],
                    removed: list[bytes]) -> tuple[dict[bytes, bytes], bool]:
    """A collection's or UDT's elements after a write, from ``elements`` before it in their type's order
    (:func:`image_elements` of its image) with ``added`` set and ``removed`` taken out (in that order, as the
    write's cells apply), and whether the result is in its type's order: a map's, set's or list's new keys
    are put in place by binary search (a few order keys computed, not one per element); a UDT's fields are
    ordered by :func:`frozen_elements` itself."""
    fresh = [kv for kv in added if kv[0] not in elements]
    for k, v in added:
        elements[k] = v
    for k in removed:
        elements.pop(k, None)
    if not fresh or isinstance(ctype, T.UserType):
        return elements, not fresh
    fresh_keys = {k for k, _ in fresh}
    keys = [k for k in elements if k not in fresh_keys]  # those of before, still in order
    order = element_order_key(ctype)
    for k in sorted([k for k, _ in fresh if k in elements], key=order):  # stable: equal keys as written
        bisect.insort(keys, k, key=order)
    return {k: elements[k] for k in keys}, True


def appended_elements(ctype: Any, image: bytes, last: bytes, added: list[tuple[bytes, bytes]],
                      order: Callable[[bytes], Any]) -> bytes | None:
    """The frozen value of a map, set or list after ``added`` when each added key sorts after ``last``, the key of
    its last element (an append: a list's new timeuuid keys, a map's growing keys), else None.  ``image`` is the
    frozen value before (:func:`frozen_elements`, its elements in order; a list's as the map of its timeuuid
    keys), ``order`` its keys' order key.  The result is ``image``'s elements as they are, then the added ones
    in order, under the new count: the bytes :func:`frozen_elements` gives for :func:`merged_elements` of the
    two, without decoding the image or sorting its keys again."""
    if len(added) > 1:
        added = sorted(added, key=lambda kv: order(kv[0]))
    if not order(added[0][0]) > order(last):
        return None
    return _INT.pack(_INT.unpack_from(image)[0] + len(added)) + image[4:] + frozen_elements(ctype, added, True)[4:]


def frozen_keys(ctype: Any, keys: Iterable[bytes]) -> bytes:
    """The ``cdc$deleted_elements_X`` value: a frozen set of element keys in their type's order."""
    order = element_order_key(ctype)
    return _frame(sorted(set(keys), key=order))


def image_elements(ctype: Any, image: bytes) -> dict[bytes, bytes]:
    """The elements (element key -> value) of a collection or UDT from its image in the log, the inverse of
    :func:`frozen_elements` for ``ctype`` as ``query.read.complex_plan(table, lists_by_key=True)`` gives it (a list's image is the map of
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
