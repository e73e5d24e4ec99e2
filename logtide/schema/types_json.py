"""JSON rendering and parsing of values as Cassandra's toJson()/SELECT JSON and
fromJson()/INSERT JSON do (implementation of logtide.schema.types).

``to_json(ctype, value)`` follows the ``toJSONString`` methods of Cassandra's marshal types.
``from_json(ctype, obj, receiver)`` follows ``fromJSONObject``; ``obj`` is the value as
``json.loads`` returns it.  Errors are raised as InvalidRequest; with a receiver the message
is INSERT JSON's ``Error decoding JSON value for <receiver>: <detail>``, without one (None)
the bare detail (the MarshalException text).  The detail is also in ``exc.detail``.

One idea split for size with ``types.py`` and ``types_literal.py``: the CQL types (their JSON forms here).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import math
import struct
from decimal import Decimal
from typing import Any

from cassandra import util as _cutil
from cassandra.cqltypes import EMPTY

from logtide.errors import InvalidRequest
from logtide.schema.types_literal import (
    duration_to_string,
    iso_local_date,
    map_of,
    sorted_set_of,
    to_float32,
    value_from_string,
)

_EPOCH = datetime.datetime(1970, 1, 1)

# ---------------------------------------------------------------------------
# Java number formatting
# ---------------------------------------------------------------------------


def _java_sci_or_plain(digits: str, exp10: int) -> str:
    """Java Double.toString layout of the value 0.<digits> * 10**exp10 (digits non-empty, no
    trailing zeros, first digit non-zero)."""
    # decimal exponent of the first digit
    e = exp10 - 1
    if -3 <= e < 7:
        if e >= 0:
            int_part = digits[: e + 1].ljust(e + 1, "0")
            frac = digits[e + 1:] or "0"
        else:
            int_part = "0"
            frac = "0" * (-e - 1) + digits
        return f"{int_part}.{frac}"
    mant = digits[0] + "." + (digits[1:] or "0")
    return f"{mant}E{e}"


def _digits_of(text_repr: str):
    d = Decimal(text_repr)
    sign, dig, exp = d.as_tuple()
    s = "".join(map(str, dig)).lstrip("0")
    if not s:
        return sign, "", 0
    # value = int(digits) * 10**exp ; as 0.<s> * 10**(len(s) + exp)
    full = "".join(map(str, dig))
    lead = len(full) - len(full.lstrip("0"))
    exp10 = len(full) - lead + exp
    return sign, s.rstrip("0"), exp10


def java_double_to_string(x: float) -> str:
    """Java's Double.toString (shortest round-trip digits)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digits, exp10 = _digits_of(repr(x))
    return ("-" if sign else "") + _java_sci_or_plain(digits, exp10)


def java_float_to_string(x: float) -> str:
    """Java's Float.toString of a float32 value held in a Python float."""
    if x == 0 or math.isnan(x) or math.isinf(x):
        return java_double_to_string(x)  # NaN, ±Infinity, ±0.0: the same text as a double's
    f32 = struct.unpack(">f", struct.pack(">f", x))[0]
    text = None
    for p in range(1, 10):
        cand = f"{f32:.{p - 1}e}"
        if to_float32(float(cand)) == f32:
            text = cand
            break
    if text is None:  # pragma: no cover
        text = repr(f32)
    sign, digits, exp10 = _digits_of(text)
    return ("-" if sign else "") + _java_sci_or_plain(digits, exp10)


def java_class_name(obj) -> str:
    """The simple class name Jackson's parse result would have in Java."""
    if isinstance(obj, bool):
        return "Boolean"
    if isinstance(obj, int):
        if -(2**31) <= obj < 2**31:
            return "Integer"
        if -(2**63) <= obj < 2**63:
            return "Long"
        return "BigInteger"
    if isinstance(obj, float):
        return "Double"
    if isinstance(obj, Decimal):
        return "BigDecimal"
    if isinstance(obj, str):
        return "String"
    if isinstance(obj, list):
        return "ArrayList"
    if isinstance(obj, dict):
        return "LinkedHashMap"
    return type(obj).__name__


def java_to_string(obj) -> str:
    """Java's toString of a Jackson parse result."""
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, float):
        return java_double_to_string(obj)
    if isinstance(obj, list):
        return "[" + ", ".join(java_to_string(x) for x in obj) + "]"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{java_to_string(k)}={java_to_string(v)}" for k, v in obj.items()) + "}"
    return str(obj)


# ---------------------------------------------------------------------------
# to_json
# ---------------------------------------------------------------------------

_ESC = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def quote_json_string(s: str) -> str:
    """Jackson's JsonStringEncoder.quoteAsString (without the surrounding quotes)."""
    out = []
    for ch in s:
        e = _ESC.get(ch)
        if e is not None:
            out.append(e)
        elif ord(ch) < 0x20:
            out.append("\\u%04X" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def _ms_of(value) -> int:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        delta = value - _EPOCH
        return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
    if isinstance(value, datetime.date):
        return (value - datetime.date(1970, 1, 1)).days * 86400000
    return int(value)


def timestamp_json_text(ms: int) -> str:
    """yyyy-MM-dd HH:mm:ss.SSSX in UTC (Cassandra's TO_JSON_FORMAT)."""
    days, rem = divmod(ms, 86400000)
    date = iso_local_date(days)
    if date.startswith("+"):
        date = date[1:]
    h, rem = divmod(rem, 3600000)
    m, rem = divmod(rem, 60000)
    s, milli = divmod(rem, 1000)
    return f"{date} {h:02d}:{m:02d}:{s:02d}.{milli:03d}Z"


def inet_java_text(addr: str) -> str:
    a = ipaddress.ip_address(addr)
    if isinstance(a, ipaddress.IPv6Address):
        if a.ipv4_mapped is not None:
            return str(a.ipv4_mapped)
        return ":".join("%x" % int(g, 16) for g in a.exploded.split(":"))
    return str(a)


def _native_json(name: str, value) -> str:
    if value is EMPTY:
        return '""'
    if name in ("text", "ascii"):
        return '"' + quote_json_string(value) + '"'
    if name in ("int", "bigint", "smallint", "tinyint", "varint", "counter"):
        return str(int(value))
    if name == "boolean":
        return "true" if value else "false"
    if name == "double":
        if math.isnan(value) or math.isinf(value):
            return "null"
        return java_double_to_string(float(value))
    if name == "float":
        if math.isnan(value) or math.isinf(value):
            return "null"
        return java_float_to_string(float(value))
    if name == "decimal":
        return str(value)
    if name == "blob":
        return '"0x' + bytes(value).hex() + '"'
    if name in ("uuid", "timeuuid"):
        return '"' + str(value) + '"'
    if name == "inet":
        return '"' + inet_java_text(value) + '"'
    if name == "timestamp":
        return '"' + timestamp_json_text(_ms_of(value)) + '"'
    if name == "date":
        if isinstance(value, _cutil.Date):
            days = value.days_from_epoch
        elif isinstance(value, (datetime.date, datetime.datetime)):
            days = (datetime.date(value.year, value.month, value.day) - datetime.date(1970, 1, 1)).days
        else:
            days = int(value) - 2**31
        return '"' + iso_local_date(days) + '"'
    if name == "time":
        if not isinstance(value, _cutil.Time):
            value = _cutil.Time(value)
        return '"' + str(value) + '"'
    if name == "duration":
        return '"' + duration_to_string(value) + '"'
    raise AssertionError(name)  # pragma: no cover


def to_json(ctype, value: Any) -> str:
    """Cassandra's toJson() text of a Python value of ``ctype``."""
    if value is None:
        return "null"
    k = ctype.kind
    if k == "native":
        return _native_json(ctype.name, value)
    if value is EMPTY:
        return '""'
    if k in ("list", "set", "vector"):
        el = ctype.element
        return "[" + ", ".join(to_json(el, x) for x in value) + "]"
    if k == "map":
        kt, vt = ctype.key, ctype.value
        parts = []
        for key, val in value.items():
            ks = to_json(kt, key)
            if not ks.startswith('"'):
                ks = '"' + quote_json_string(ks) + '"'
            parts.append(ks + ": " + to_json(vt, val))
        return "{" + ", ".join(parts) + "}"
    if k == "tuple":
        items = list(value) + [None] * (len(ctype.items) - len(value))
        return "[" + ", ".join(to_json(t, x) for t, x in zip(ctype.items, items)) + "]"
    if k == "udt":
        from logtide.schema.types_codec import udt_field_values

        vals = udt_field_values(ctype, value)
        parts = []
        for name, t, x in zip(ctype.field_names, ctype.field_types, vals):
            if name != name.lower():
                name = '"' + name + '"'
            parts.append('"' + quote_json_string(name) + '": ' + to_json(t, x))
        return "{" + ", ".join(parts) + "}"
    raise AssertionError(k)


# ---------------------------------------------------------------------------
# from_json
# ---------------------------------------------------------------------------


class _Marshal(Exception):
    pass


def _expected(what: str, obj) -> _Marshal:
    return _Marshal(f"Expected {what}, but got a {java_class_name(obj)}: {java_to_string(obj)}")


def _from_string(ctype, text):
    try:
        return value_from_string(ctype, text)
    except InvalidRequest as e:
        raise _Marshal(e.message) from None


def _whole(obj) -> bool:
    try:
        return obj == int(obj)
    except (ValueError, OverflowError):  # NaN, infinities
        return False


def _is_int(obj) -> bool:
    return isinstance(obj, int) and not isinstance(obj, bool)


def _decode_json_string(s: str):
    try:
        return json.loads(s)
    except ValueError as e:
        raise _Marshal(f"Error decoding JSON string: {e}") from None


_INT_NAMES = {"int": ("an int", 2**31), "bigint": ("a bigint", 2**63), "counter": ("a bigint", 2**63)}


def _native_from_json(ctype, obj):
    name = ctype.name
    if name in _INT_NAMES:
        what, lim = _INT_NAMES[name]
        if isinstance(obj, str):
            if not obj:  # ScyllaDB: "" is no number (Cassandra makes it an empty value)
                raise _Marshal(f"Unable to make {name} from ''")
            return _from_string(ctype, obj)
        if isinstance(obj, (float, Decimal)) and not isinstance(obj, bool) and _whole(obj):
            obj = int(obj)  # ScyllaDB: 1e6 or 1.23456789E+9 is a whole number, so an integer
        if _is_int(obj) and -lim <= obj < lim:
            return obj
        raise _expected(f"{what} value", obj)
    if name in ("smallint", "tinyint"):
        if isinstance(obj, (str, int, float, Decimal)) and not isinstance(obj, bool):
            return _from_string(ctype, obj if isinstance(obj, str) else java_to_string(obj))
        raise _expected("a short value" if name == "smallint" else "a byte value", obj)
    if name == "varint":
        text = java_to_string(obj)
        try:
            if isinstance(obj, (bool, list, dict, float)):
                raise ValueError
            return int(text, 10) if text.strip() == text and text else _raise_value_error()
        except ValueError:
            raise _Marshal(f"Value '{text}' is not a valid representation of a varint value") from None
    if name == "decimal":
        text = java_to_string(obj)
        if isinstance(obj, (bool, list, dict)):
            raise _Marshal(f"Value '{text}' is not a valid representation of a decimal value")
        if isinstance(obj, Decimal):
            return obj
        try:
            return _from_string(ctype, text)
        except _Marshal:
            raise _Marshal(f"Value '{text}' is not a valid representation of a decimal value") from None
    if name in ("float", "double"):
        if isinstance(obj, str):
            return _from_string(ctype, obj)
        if isinstance(obj, (int, float, Decimal)) and not isinstance(obj, bool):
            v = float(obj)
            return to_float32(v) if name == "float" else v
        raise _expected(f"a {name} value", obj)
    if name == "boolean":
        if isinstance(obj, str):
            return _from_string(ctype, obj)
        if isinstance(obj, bool):
            return obj
        raise _expected("a boolean value", obj)
    if name in ("text", "ascii"):
        if not isinstance(obj, str):
            raise _expected("a UTF-8 string" if name == "text" else "an ascii string", obj)
        return _from_string(ctype, obj)
    if name == "blob":
        text = java_to_string(obj)
        if not isinstance(obj, str):
            raise _Marshal(f"Value '{text}' is not a valid blob representation: "
                           f"{java_class_name(obj)} cannot be cast to String")
        if not obj.startswith("0x"):
            raise _Marshal(f"Value '{text}' is not a valid blob representation: "
                           f"String representation of blob is missing 0x prefix: {obj}")
        try:
            return value_from_string(ctype, obj[2:])
        except InvalidRequest as e:
            raise _Marshal(f"Value '{text}' is not a valid blob representation: {e.message}") from None
    if name == "timestamp":
        if _is_int(obj):
            if not -(2**63) <= obj < 2**63:
                raise _expected("a long or a datestring representation of a timestamp value", obj)
            from logtide.schema.types_literal import timestamp_from_millis

            return timestamp_from_millis(obj)
        if isinstance(obj, str):
            return _from_string(ctype, obj)
        raise _expected("a long or a datestring representation of a timestamp value", obj)
    if name == "date":
        if isinstance(obj, str):
            return _from_string(ctype, obj)
        raise _expected("a string representation of a date value", obj)
    if name == "time":
        if isinstance(obj, str):
            return _from_string(ctype, obj)
        raise _expected("a string representation of a time value", obj)
    if name in ("uuid", "timeuuid"):
        if isinstance(obj, str):
            return _from_string(ctype, obj)
        raise _expected(f"a string representation of a {name}", obj)
    if name == "inet":
        if isinstance(obj, str):
            return _from_string(ctype, obj)
        raise _expected("a string representation of an inet value", obj)
    if name == "duration":
        if isinstance(obj, str):
            return _from_string(ctype, obj)
        raise _expected("a string representation of a duration", obj)
    raise AssertionError(name)  # pragma: no cover


def _raise_value_error():
    raise ValueError


def _from_json(ctype, obj):
    k = ctype.kind
    if k == "native":
        return _native_from_json(ctype, obj)
    if isinstance(obj, str):
        obj = _decode_json_string(obj)
    if k in ("list", "set"):
        if not isinstance(obj, list):
            what = "a list" if k == "list" else "a list (representing a set)"
            raise _expected(what, obj)
        out = []
        for x in obj:
            if x is None:
                raise _Marshal(f"Invalid null element in {k}")
            out.append(_from_json(ctype.element, x))
        if k == "set":
            return sorted_set_of(ctype.element, out)
        return out
    if k == "vector":  # ScyllaDB's json_utils: an array of exactly the dimension's values
        if not isinstance(obj, list):
            raise _Marshal("vector_type must be represented as JSON Array")
        if len(obj) > ctype.dimension:
            raise _Marshal(f"Too many values ({len(obj)}) for vector with size {ctype.dimension}")
        if len(obj) < ctype.dimension:
            raise _Marshal(f"Too few values ({len(obj)}) for vector with size {ctype.dimension}")
        if any(x is None for x in obj):
            raise _Marshal("null is not supported inside vectors")
        return [_from_json(ctype.element, x) for x in obj]
    if k == "map":
        if not isinstance(obj, dict):
            raise _expected("a map", obj)
        pairs = []
        for key, val in obj.items():
            if val is None:
                raise _Marshal("Invalid null value in map")
            pairs.append((_from_json(ctype.key, key), _from_json(ctype.value, val)))
        return map_of(ctype.key, pairs)
    if k == "tuple":
        if not isinstance(obj, list):
            raise _expected("a list representation of a tuple", obj)
        n = len(ctype.items)
        if len(obj) > n:
            raise _Marshal(f"Tuple contains extra items (expected {n}): {java_to_string(obj)}")
        if len(obj) < n:
            raise _Marshal(f"Tuple is missing items (expected {n}): {java_to_string(obj)}")
        return tuple(None if x is None else _from_json(t, x) for t, x in zip(ctype.items, obj))
    if k == "udt":
        if not isinstance(obj, dict):
            raise _expected("a map", obj)
        fields = {}
        for key, val in obj.items():
            if len(key) >= 2 and key.startswith('"') and key.endswith('"'):
                key = key[1:-1]
            else:
                key = key.lower()
            fields[key] = val
        for key in fields:
            if key not in ctype.field_names:
                raise _Marshal(f"Unknown field '{key}' in value of user defined type {ctype.name}")
        vals = []
        for name, t in zip(ctype.field_names, ctype.field_types):
            x = fields.get(name)
            vals.append(None if x is None else _from_json(t, x))
        return ctype.make_value(*vals)
    raise AssertionError(k)


def from_json(ctype, obj: Any, receiver: str | None = None) -> Any:
    """The value of ``ctype`` for a parsed JSON value, as INSERT JSON / fromJson() accept it."""
    if obj is None:
        return None
    try:
        return _from_json(ctype, obj)
    except _Marshal as e:
        detail = str(e)
        msg = detail if receiver is None else f"Error decoding JSON value for {receiver}: {detail}"
        err = InvalidRequest(msg)
        err.detail = detail
        raise err from None
