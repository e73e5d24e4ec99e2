"""Order-preserving, prefix-free byte encodings of serialized values (``CqlType.comparable``).

Every encoding starts with 0x00 for the empty value (which sorts before everything, as in
Cassandra's comparators) or 0x01 followed by a prefix-free body that follows the type's
comparator:

* signed fixed-width integers (tinyint, smallint, int, bigint, counter, timestamp, time):
  the bytes with the sign bit flipped;
* date: the unsigned 32-bit value as is; boolean: 0/1;
* float/double: Java's Float.compare/Double.compare order (-0.0 < 0.0, NaN greatest);
* varint: sign, byte length and magnitude; decimal: numerically (1.0 == 1.00) via sign,
  exponent and normalised digits;
* text/ascii/blob/inet: bytes with 0x00 escaped as 0x00 0xFF, ended by 0x00 0x00;
* uuid: version nibble, then the timestamp (version 1) or the msb unsigned, then the lsb as
  signed bytes; timeuuid: timestamp then lsb as signed bytes;
* list/set: 0x01 + element per element, 0x00 at the end; map: 0x01 + key + value per entry;
* tuple/UDT: one component per type component: 0x00 for null/missing, 0x01 + component;
* vector: 0x01 + its elements (as many as the dimension, none null) one after the other.
"""

from __future__ import annotations

import struct
from decimal import Decimal

from logtide.errors import InvalidRequest
from logtide.schema.types_codec import split_collection, split_tuple, split_vector

_EMPTY_ENC = b"\x00"
_TAG = b"\x01"

_u32 = struct.Struct(">I")
_u64 = struct.Struct(">Q")
_u32_pack = _u32.pack
_u64_pack = _u64.pack
_i32 = struct.Struct(">i")

_SIGNED = frozenset({"tinyint", "smallint", "int", "bigint", "counter", "timestamp", "time"})
_BYTES = frozenset({"text", "ascii", "blob", "inet", "varchar"})


def _signed_fixed(data):
    if not data:
        return _EMPTY_ENC
    return b"\x01" + bytes((data[0] ^ 0x80,)) + bytes(data[1:])


def _unsigned_fixed(data):
    if not data:
        return _EMPTY_ENC
    return b"\x01" + bytes(data)


def _boolean(data):
    if not data:
        return _EMPTY_ENC
    return b"\x01\x01" if data[0] else b"\x01\x00"


def _escaped_bytes(data):
    # 0x00 -> 0x00 0xFF and terminator 0x00 0x00: order-preserving and prefix-free
    return b"\x01" + bytes(data).replace(b"\x00", b"\x00\xff") + b"\x00\x00"


def _float(data):
    if not data:
        return _EMPTY_ENC
    bits = _u32.unpack(data)[0]
    if (bits & 0x7F800000) == 0x7F800000 and (bits & 0x007FFFFF):
        bits = 0x7FC00000  # canonical NaN (Float.floatToIntBits)
    if bits & 0x80000000:
        bits = ~bits & 0xFFFFFFFF
    else:
        bits |= 0x80000000
    return b"\x01" + _u32_pack(bits)


def _double(data):
    if not data:
        return _EMPTY_ENC
    bits = _u64.unpack(data)[0]
    if (bits & 0x7FF0000000000000) == 0x7FF0000000000000 and (bits & 0x000FFFFFFFFFFFFF):
        bits = 0x7FF8000000000000
    if bits & 0x8000000000000000:
        bits = ~bits & 0xFFFFFFFFFFFFFFFF
    else:
        bits |= 0x8000000000000000
    return b"\x01" + _u64_pack(bits)


def encode_integer(v: int) -> bytes:
    """Order-preserving, prefix-free encoding of an arbitrary integer (without the 0x01 tag)."""
    if v == 0:
        return b"\x80"
    if v > 0:
        n = (v.bit_length() + 7) // 8
        return b"\x81" + _u32_pack(n) + v.to_bytes(n, "big")
    m = -v
    n = (m.bit_length() + 7) // 8
    return b"\x7f" + _u32_pack(0xFFFFFFFF - n) + ((1 << (8 * n)) - 1 - m).to_bytes(n, "big")


def _varint(data):
    if not data:
        return _EMPTY_ENC
    return b"\x01" + encode_integer(int.from_bytes(data, "big", signed=True))


_POS_DIGITS = bytes(range(1, 11))  # digit d -> d + 1, terminator 0x00
_NEG_DIGITS = bytes(range(10, 0, -1))  # digit d -> 10 - d, terminator 0x0B
_OFF = 1 << 63


def encode_decimal_parts(sign: int, digits: str, exponent: int) -> bytes:
    """Encode sign * 0.<digits> * 10**exponent (digits without leading/trailing zeros)."""
    if sign > 0:
        return b"\x82" + _u64_pack(exponent + _OFF) + digits.encode().translate(_POS_TABLE) + b"\x00"
    return b"\x80" + _u64_pack(_OFF - 1 - exponent) + digits.encode().translate(_NEG_TABLE) + b"\x0b"


_POS_TABLE = bytes.maketrans(b"0123456789", _POS_DIGITS)
_NEG_TABLE = bytes.maketrans(b"0123456789", _NEG_DIGITS)


def _decimal(data):
    if not data:
        return _EMPTY_ENC
    scale = _i32.unpack_from(data, 0)[0]
    unscaled = int.from_bytes(data[4:], "big", signed=True)
    if unscaled == 0:
        return b"\x01\x81"
    sign = 1
    if unscaled < 0:
        sign = -1
        unscaled = -unscaled
    digits = str(unscaled)
    stripped = digits.rstrip("0")
    # value = 0.<digits> * 10**(len(digits) - scale)
    exponent = len(digits) - scale
    return b"\x01" + encode_decimal_parts(sign, stripped, exponent)


def decimal_comparable(value: Decimal) -> bytes:
    """comparable() of a Python Decimal (helper for tests and callers holding values)."""
    sign, digits, exp = value.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0")
    if unscaled == 0:
        return b"\x01\x81"
    ds = str(unscaled)
    return b"\x01" + encode_decimal_parts(-1 if sign else 1, ds.rstrip("0"), len(ds) + exp)


_SIGN_FLIP = bytes(x ^ 0x80 for x in range(256))


def _signed_bytes(b: bytes) -> bytes:
    return bytes(b).translate(_SIGN_FLIP)


def _uuid(data):
    if not data:
        return _EMPTY_ENC
    if len(data) != 16:
        raise InvalidRequest(f"UUIDs must be exactly 16 bytes, got {len(data)}")
    msb = _u64.unpack_from(data, 0)[0]
    version = (msb >> 12) & 0xF
    if version == 1:
        key = ((msb & 0xFFF) << 48) | (((msb >> 16) & 0xFFFF) << 32) | (msb >> 32)
    else:
        key = msb
    return b"\x01" + bytes((version,)) + _u64_pack(key) + _signed_bytes(data[8:16])


def _timeuuid(data):
    if not data:
        return _EMPTY_ENC
    if len(data) != 16:
        raise InvalidRequest(f"TimeUUID should be 16 or 0 bytes ({len(data)})")
    msb = _u64.unpack_from(data, 0)[0]
    key = ((msb & 0xFFF) << 48) | (((msb >> 16) & 0xFFFF) << 32) | (msb >> 32)
    return b"\x01" + _u64_pack(key) + _signed_bytes(data[8:16])


def _duration(data):
    raise InvalidRequest("Durations are not comparable")


def make_comparable(t):
    k = t.kind
    if k == "native":
        n = t.name
        if n in _SIGNED:
            return _signed_fixed
        if n in _BYTES:
            return _escaped_bytes
        if n == "date":
            return _unsigned_fixed
        if n == "boolean":
            return _boolean
        if n == "float":
            return _float
        if n == "double":
            return _double
        if n == "varint":
            return _varint
        if n == "decimal":
            return _decimal
        if n == "uuid":
            return _uuid
        if n == "timeuuid":
            return _timeuuid
        if n == "duration":
            return _duration
        raise AssertionError(n)
    if k in ("list", "set"):
        el = t.element

        def comp_list(data):
            if not data:
                return _EMPTY_ENC
            ec = el._comparable
            parts = [b"\x01"]
            for b in split_collection(data):
                parts.append(b"\x01")
                parts.append(ec(b"" if b is None else b))
            parts.append(b"\x00")
            return b"".join(parts)
        return comp_list
    if k == "map":
        kt, vt = t.key, t.value

        def comp_map(data):
            if not data:
                return _EMPTY_ENC
            kc, vc = kt._comparable, vt._comparable
            flat = split_collection(data, 2)
            parts = [b"\x01"]
            for i in range(0, len(flat), 2):
                parts.append(b"\x01")
                parts.append(kc(flat[i] or b""))
                parts.append(vc(flat[i + 1] or b""))
            parts.append(b"\x00")
            return b"".join(parts)
        return comp_map
    if k in ("tuple", "udt"):
        types = t.items
        n = len(types)

        def comp_tuple(data):
            if not data:
                return _EMPTY_ENC
            comps = split_tuple(data)
            parts = [b"\x01"]
            for i in range(n):
                b = comps[i] if i < len(comps) else None
                if b is None:
                    parts.append(b"\x00")
                else:
                    parts.append(b"\x01")
                    parts.append(types[i]._comparable(b))
            return b"".join(parts)
        return comp_tuple
    if k == "vector":
        el = t.element

        def comp_vector(data):
            if not data:
                return _EMPTY_ENC
            ec = el._comparable
            return b"\x01" + b"".join(ec(b) for b in split_vector(t, data))
        return comp_vector
    raise AssertionError(k)
