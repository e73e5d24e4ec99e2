"""Serialization of Python values to protocol-v4 bytes and back (implementation of logtide.schema.types).

Leaf values always go through cassandra-driver's ``cqltypes`` codecs.  Whole composite values
also do, except when the type contains a set or a map somewhere: the driver serializes those in
Python iteration order, whereas Cassandra keeps set elements and map keys sorted by the element
comparator, so for them the (trivial) collection/tuple framing is done here, element by element,
to get the canonical byte form Cassandra stores.
"""

from __future__ import annotations

import datetime
import struct
from typing import Any, Callable, List, Optional

from cassandra import cqltypes as _ct
from cassandra import util as _cutil

from logtide.errors import InvalidRequest

PROTO = 4
EMPTY = _ct.EMPTY

_int32 = struct.Struct(">i")
_int32_pack = _int32.pack
_int32_unpack_from = _int32.unpack_from
_NULL = _int32_pack(-1)

_EPOCH = datetime.datetime(1970, 1, 1)


def _component_types(t):
    """``t`` and every type nested in it (elements, keys and values, tuple items and UDT fields)."""
    yield t
    k = t.kind
    if k in ("list", "set", "vector"):
        yield from _component_types(t.element)
    elif k == "map":
        yield from _component_types(t.key)
        yield from _component_types(t.value)
    elif k in ("tuple", "udt"):
        for i in t.items:
            yield from _component_types(i)


def contains_set_or_map(t) -> bool:
    """Whether ``t`` is or holds a set or a map."""
    return any(c.kind in ("set", "map") for c in _component_types(t))


def contains_varint(t) -> bool:
    """Whether a value of ``t`` may hold a varint, whose bytes are kept as sent (:class:`PaddedVarint`): such a
    composite is (de)serialized element by element, not by the driver, which would make them canonical."""
    return any(c.kind == "native" and c.name == "varint" for c in _component_types(t))


# ---------------------------------------------------------------------------
# splitting serialized values
# ---------------------------------------------------------------------------


def split_collection(data: bytes, per_item: int = 1) -> List[Optional[bytes]]:
    """Elements of a serialized list/set (or, with ``per_item`` 2, the flattened k, v, k, v ... of a map);
    a value too short for what it announces is refused ("Not enough bytes ...", as ScyllaDB says)."""
    try:
        n = _int32_unpack_from(data, 0)[0]
        if n < 0:
            raise InvalidRequest(f"The data cannot be deserialized as a {'map' if per_item == 2 else 'list or set'}: "
                                 f"not enough bytes for {n} elements")
        p = 4
        out = []
        for _ in range(per_item * n):
            ln = _int32_unpack_from(data, p)[0]
            p += 4
            if ln < 0:
                out.append(None)
            else:
                if p + ln > len(data):
                    raise struct.error("short")
                out.append(data[p:p + ln])
                p += ln
    except struct.error:
        raise InvalidRequest(f"Not enough bytes to read a {'map' if per_item == 2 else 'list or set'} "
                             f"({len(data)} bytes)") from None
    return out


def split_tuple(data: bytes) -> List[Optional[bytes]]:
    """Components of a serialized tuple/UDT value (as many as are present)."""
    out = []
    p = 0
    end = len(data)
    while p < end:
        ln = _int32_unpack_from(data, p)[0]
        p += 4
        if ln < 0:
            out.append(None)
        else:
            out.append(data[p:p + ln])
            p += ln
    return out


def pack_elements(items) -> bytes:
    parts = [_int32_pack(len(items))]
    for b in items:
        if b is None:
            parts.append(_NULL)
        else:
            parts.append(_int32_pack(len(b)))
            parts.append(b)
    return b"".join(parts)


def pack_components(items) -> bytes:
    parts = []
    for b in items:
        if b is None:
            parts.append(_NULL)
        else:
            parts.append(_int32_pack(len(b)))
            parts.append(b)
    return b"".join(parts)


class PaddedVarint(int):
    """A varint value whose bytes carry redundant leading sign bytes (``0x00 0x01`` for 1), kept as sent.

    ScyllaDB keys a partition by the bytes of its key as the client sent them, so a varint key bound
    with a redundant sign byte is another partition than the canonical one (its token differs), while
    comparisons by value (clustering order, conditions, ``=`` on regular columns) see the number.  The
    value is the number (arithmetic gives plain ints); ``encoded`` is the bytes it was read from, which
    the varint serializer gives back, so that a key, a stored cell or a log value keeps them.
    """

    encoded: bytes

    def __new__(cls, value: int, encoded: bytes) -> "PaddedVarint":
        self = super().__new__(cls, value)
        self.encoded = encoded
        return self

    def __reduce__(self):
        return (PaddedVarint, (int(self), self.encoded))


def varint_value(data: bytes) -> int:
    """The number a varint's bytes hold: a plain int for the canonical (shortest) form, else a
    :class:`PaddedVarint` remembering the bytes."""
    v = int.from_bytes(data, "big", signed=True)
    if len(data) > 1 and ((data[0] == 0 and data[1] < 0x80) or (data[0] == 0xFF and data[1] >= 0x80)):
        return PaddedVarint(v, bytes(data))
    return v


def make_sorted_set(items) -> _cutil.SortedSet:
    """A driver SortedSet holding ``items`` in the given (Cassandra comparator) order."""
    s = _cutil.SortedSet.__new__(_cutil.SortedSet)
    s._items = list(items)
    return s


class CqlMap(_cutil.OrderedMapSerializedKey):
    """The driver's OrderedMapSerializedKey, keyed by logtide's (canonical) key serialization.

    items()/keys()/values() iterate the stored pairs directly instead of re-serializing every
    key through __getitem__ as the Mapping mixins would.
    """

    def __init__(self, key_type):
        super().__init__(key_type.driver_type, PROTO)
        self._key_ser = key_type._serializer

    def _serialize_key(self, key):
        return self._key_ser(key)

    def items(self):
        return list(self._items)

    def keys(self):
        return [k for k, _ in self._items]

    def values(self):
        return [v for _, v in self._items]

    def __reduce__(self):
        return (_cutil.OrderedMap, (list(self._items),))


def make_map(key_type, pairs) -> CqlMap:
    """An OrderedMapSerializedKey from (key, key bytes, value) triples, in the given order."""
    m = CqlMap(key_type)
    for k, kb, v in pairs:
        m._insert_unchecked(k, kb, v)
    return m


# ---------------------------------------------------------------------------
# vectors
# ---------------------------------------------------------------------------

# Element types whose every value has one size (Cassandra's and ScyllaDB's value_length_if_fixed): a
# vector of them is its elements back to back; other elements each follow their length as an unsigned vint.
FIXED_LENGTH = {"boolean": 1, "int": 4, "float": 4, "bigint": 8, "double": 8, "timestamp": 8,
                "uuid": 16, "timeuuid": 16}


def fixed_length(t) -> Optional[int]:
    """The size of every value of ``t``, or None when values vary in size."""
    return FIXED_LENGTH.get(t.name) if t.kind == "native" else None


def uvint_pack(n: int) -> bytes:
    """Cassandra's unsigned vint: as many leading 1 bits in the first byte as bytes follow it."""
    extra = min((max(n.bit_length(), 1) - 1) // 7, 8)
    if extra == 8:
        return b"\xff" + n.to_bytes(8, "big")
    body = n.to_bytes(extra + 1, "big")
    return bytes((body[0] | ((0xFF << (8 - extra)) & 0xFF),)) + body[1:]


def uvint_unpack(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned vint at ``pos`` and the position after it."""
    first = data[pos]
    extra = 0
    while extra < 8 and first & (0x80 >> extra):
        extra += 1
    if pos + 1 + extra > len(data):
        raise struct.error("short vint")
    value = first & (0xFF >> extra) if extra < 8 else 0
    for b in data[pos + 1:pos + 1 + extra]:
        value = (value << 8) | b
    return value, pos + 1 + extra


def split_vector(t, data: bytes) -> List[bytes]:
    """The ``t.dimension`` serialized elements of a vector value; a value of another size is refused."""
    n = t.dimension
    size = fixed_length(t.element)
    if size is not None:
        if len(data) != size * n:
            raise InvalidRequest(f"Invalid vector value for {t.cql()}: expected {size * n} bytes "
                                 f"({n} elements of {size} bytes), got {len(data)}")
        return [data[i * size:(i + 1) * size] for i in range(n)]
    out = []
    p = 0
    try:
        for _ in range(n):
            ln, p = uvint_unpack(data, p)
            if p + ln > len(data):
                raise struct.error("short")
            out.append(bytes(data[p:p + ln]))
            p += ln
    except (struct.error, IndexError):
        raise InvalidRequest(f"Invalid vector value for {t.cql()}: not enough bytes for {n} elements") from None
    if p != len(data):
        raise InvalidRequest(f"Invalid vector value for {t.cql()}: {len(data) - p} bytes remain after "
                             f"reading all {n} elements")
    return out


def pack_vector(t, elements: List[bytes]) -> bytes:
    """A vector value from its serialized elements (as many as the dimension)."""
    if fixed_length(t.element) is not None:
        return b"".join(elements)
    return b"".join(uvint_pack(len(b)) + b for b in elements)


def _vector_elements(t, v) -> list:
    if isinstance(v, (str, bytes, bytearray)) or not hasattr(v, "__iter__") or hasattr(v, "items"):
        raise _err(t, v, "expected a list")
    v = list(v)
    if len(v) != t.dimension:
        raise InvalidRequest(f"Invalid vector value for {t.cql()}: expected {t.dimension} elements, got {len(v)}")
    if any(x is None for x in v):
        raise InvalidRequest("null is not supported inside vectors")
    return v


# ---------------------------------------------------------------------------
# serializers
# ---------------------------------------------------------------------------


def _err(t, value, exc) -> InvalidRequest:
    return InvalidRequest(f"Invalid value {value!r} for type {t.cql()}: {exc}")


def make_serializer(t) -> Callable[[Any], bytes]:
    k = t.kind
    if k == "native":
        drv = t.driver_type.serialize

        if t.name in ("text", "varchar"):
            def ser_text(v):
                try:
                    return v.encode("utf-8")
                except AttributeError:
                    if v is EMPTY:
                        return b""
                    if isinstance(v, (bytes, bytearray)):
                        return bytes(v)
                    raise _err(t, v, "expected a string")
            return ser_text

        if t.name == "blob":
            def ser_blob(v):
                if v is EMPTY:
                    return b""
                try:
                    return bytes(v)
                except Exception as e:
                    raise _err(t, v, e)
            return ser_blob

        padded = t.name == "varint"

        def ser_native(v):
            if v is EMPTY:
                return b""
            if padded and type(v) is PaddedVarint:
                return v.encoded
            try:
                return drv(v, PROTO)
            except InvalidRequest:
                raise
            except Exception as e:  # struct.error, TypeError, ValueError ...
                raise _err(t, v, e) from None
        return ser_native

    if k == "vector":
        el = t.element

        def ser_vector(v):
            es = el._serializer
            return pack_vector(t, [es(x) for x in _vector_elements(t, v)])
        return ser_vector

    if not contains_set_or_map(t) and not contains_varint(t):
        drv = t.driver_type.serialize
        is_udt = k == "udt"

        def ser_driver(v):
            if v is EMPTY:
                return b""
            if is_udt and isinstance(v, dict):
                v = udt_field_values(t, v)
            try:
                return drv(v, PROTO)
            except InvalidRequest:
                raise
            except Exception as e:
                raise _err(t, v, e) from None
        return ser_driver

    if k == "list":
        el = t.element

        def ser_list(v):
            if v is EMPTY:
                return b""
            es = el._serializer
            return pack_elements([None if x is None else es(x) for x in v])
        return ser_list

    if k == "set":
        el = t.element

        def ser_set(v):
            if v is EMPTY:
                return b""
            if isinstance(v, (str, bytes)):
                raise _err(t, v, "expected a set")
            es = el._serializer
            cmp = el._comparable
            seen = {}
            for x in v:
                b = es(x)
                c = cmp(b)
                if c not in seen:
                    seen[c] = b
            return pack_elements([seen[c] for c in sorted(seen)])
        return ser_set

    if k == "map":
        kt, vt = t.key, t.value

        def ser_map(v):
            if v is EMPTY:
                return b""
            try:
                items = v.items()
            except AttributeError:
                raise _err(t, v, "expected a map") from None
            ks, vs, cmp = kt._serializer, vt._serializer, kt._comparable
            seen = {}
            for key, val in items:
                kb = ks(key)
                c = cmp(kb)
                vb = None if val is None else vs(val)
                if c in seen:
                    seen[c] = (seen[c][0], vb)
                else:
                    seen[c] = (kb, vb)
            flat = []
            for c in sorted(seen):
                flat.extend(seen[c])
            return pack_elements_flat(len(seen), flat)
        return ser_map

    if k == "tuple":
        types = t.items

        def ser_tuple(v):
            if v is EMPTY:
                return b""
            if len(v) > len(types):
                raise InvalidRequest(
                    f"Tuple value contained too many fields (expected {len(types)}, got {len(v)})"
                )
            return pack_components(
                [None if x is None else ct._serializer(x) for x, ct in zip(v, types)]
            )
        return ser_tuple

    if k == "udt":
        types = t.field_types

        def ser_udt(v):
            if v is EMPTY:
                return b""
            vals = udt_field_values(t, v)
            return pack_components(
                [None if x is None else ct._serializer(x) for x, ct in zip(vals, types)]
            )
        return ser_udt

    raise AssertionError(k)


def pack_elements_flat(count, flat) -> bytes:
    parts = [_int32_pack(count)]
    for b in flat:
        if b is None:
            parts.append(_NULL)
        else:
            parts.append(_int32_pack(len(b)))
            parts.append(b)
    return b"".join(parts)


def udt_field_values(t, v) -> list:
    """Field values of a UDT value given as a (named) tuple, a mapping or an object."""
    names = t.field_names
    if isinstance(v, dict):
        return [v.get(n) for n in names]
    if isinstance(v, (tuple, list)):
        vals = list(v)
        if len(vals) > len(names):
            raise InvalidRequest(
                f"UDT value contained too many fields (expected {len(names)}, got {len(vals)})"
            )
        return vals + [None] * (len(names) - len(vals))
    return [getattr(v, n, None) for n in names]


# ---------------------------------------------------------------------------
# deserializers
# ---------------------------------------------------------------------------


def make_deserializer(t) -> Callable[[bytes], Any]:
    k = t.kind
    if k == "native":
        drv = t.driver_type.deserialize
        name = t.name
        if name in ("text", "ascii"):
            def des_text(data):
                try:
                    return bytes(data).decode("utf-8")
                except UnicodeDecodeError as e:  # ScyllaDB's message for a malformed bound or stored string
                    raise InvalidRequest(f"Validation failed - non-UTF8 character in a UTF8 string, "
                                         f"at byte offset {e.start}") from None
            return des_text
        if name == "blob":
            def des_blob(data):
                return bytes(data)
            return des_blob
        if name == "timestamp":
            def des_ts(data):
                if not data:
                    return EMPTY
                ms = _int64_unpack(data)
                try:
                    return _EPOCH + datetime.timedelta(milliseconds=ms)
                except OverflowError:
                    return ms
            return des_ts
        if name == "varint":
            def des_varint(data):
                if not data:
                    return EMPTY
                return varint_value(data)
            return des_varint

        def des_native(data):
            if not data:
                return EMPTY
            return drv(data, PROTO)
        return des_native

    if k == "vector":
        el = t.element

        def des_vector(data):
            d = el._deserializer
            return [d(b) for b in split_vector(t, data)]
        return des_vector

    if not contains_set_or_map(t):
        drv = t.driver_type.deserialize
        is_list = t.kind == "list"
        keeps_empty = is_list and not t.frozen and t.element.kind == "native"  # written element by element
        exact = _element_wise(t) if contains_varint(t) else None  # varints keep their bytes (PaddedVarint)

        def des_driver(data):
            if not data:
                if is_list:  # an empty value is no list (ScyllaDB)
                    raise InvalidRequest("Not enough bytes to read a list (0 bytes)")
                return EMPTY
            try:
                if is_list and _int32_unpack_from(data, 0)[0] < 0:
                    raise struct.error("negative count")
                value = drv(data, PROTO)
                if exact is not None:  # the driver checked the value; read its elements with logtide's codecs
                    return exact(data)
                if keeps_empty and None in value:  # the driver reads an empty element as null: keep it empty
                    d = t.element._deserializer
                    value = [None if b is None else d(b) for b in split_collection(data)]
                return value
            except struct.error:  # a value shorter than it announces
                raise InvalidRequest(f"Not enough bytes to read a {t.cql()} value ({len(data)} bytes)") from None
        return des_driver

    if k in ("list", "set"):
        el = t.element
        is_set = k == "set"

        def des_elements(data):
            if not data:  # an empty value is no collection (ScyllaDB)
                raise InvalidRequest("Not enough bytes to read a list or set (0 bytes)")
            d = el._deserializer
            items = [None if b is None else d(b) for b in split_collection(data)]
            return make_sorted_set(items) if is_set else items
        return des_elements

    if k == "map":
        kt, vt = t.key, t.value

        def des_map(data):
            if not data:  # an empty value is no collection (ScyllaDB)
                raise InvalidRequest("Not enough bytes to read a map (0 bytes)")
            kd, vd = kt._deserializer, vt._deserializer
            flat = split_collection(data, 2)
            return make_map(
                kt,
                [
                    (None if flat[i] is None else kd(flat[i]), flat[i],
                     None if flat[i + 1] is None else vd(flat[i + 1]))
                    for i in range(0, len(flat), 2)
                ],
            )
        return des_map

    if k in ("tuple", "udt"):  # the components in order; a tuple's missing ones are null, a UDT makes its value
        types = t.items if k == "tuple" else t.field_types
        make = None if k == "tuple" else t.make_value

        def des_components(data):
            if not data:
                return EMPTY
            vals = [None if b is None else ct._deserializer(b) for b, ct in zip(split_tuple(data), types)]
            if make is not None:
                return make(*vals)
            vals += [None] * (len(types) - len(vals))
            return tuple(vals)
        return des_components

    raise AssertionError(k)


def _element_wise(t) -> Callable[[bytes], Any]:
    """A list, tuple or user type value (none holding a set or a map) read element by element with each
    element type's deserializer (the driver reads nested varints canonical)."""
    if t.kind == "list":
        el = t.element

        def list_elements(data):
            d = el._deserializer
            return [None if b is None else d(b) for b in split_collection(data)]
        return list_elements
    types = t.items if t.kind == "tuple" else t.field_types
    make = None if t.kind == "tuple" else t.make_value

    def components(data):
        vals = [None if b is None else ct._deserializer(b) for b, ct in zip(split_tuple(data), types)]
        if make is not None:
            return make(*vals)
        return tuple(vals + [None] * (len(types) - len(vals)))
    return components


_int64 = struct.Struct(">q")


def _int64_unpack(data) -> int:
    return _int64.unpack(data)[0]
