"""``CAST(x AS type)`` in a selector: ScyllaDB's data conversions (cql3/functions/castas_fcts.cc).

Numbers convert between every numeric type: to a narrower integer with two's-complement
wrap-around, to float or double rounded (overflowing to infinity), to decimal exactly (an integer
``n`` becomes ``n.0``), from decimal or a floating-point value to an integer by truncation.
Numbers, dates, times, timestamps, uuids, booleans and inet addresses convert to text and ascii;
a timestamp converts to a date and back; a timeuuid to a timestamp or a date; a counter as a
bigint.  Any other pair is refused with ScyllaDB's message, ``A cannot be cast to B``, naming the
types as ScyllaDB does (their Cassandra marshal class names).  A cast to the value's own type is
the value (the selector keeps its name).
"""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any, Callable

from cassandra.util import Date

from ..errors import InvalidRequest
from ..schema import types as T
from ..schema.types_json import java_double_to_string, java_float_to_string
from ..schema.types_literal import to_float32
from .functions import timeuuid_millis

_INT_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}
_NUMBERS = ("tinyint", "smallint", "int", "bigint", "float", "double", "varint", "decimal", "counter")
_TO_TEXT = _NUMBERS + ("timestamp", "date", "time", "timeuuid", "uuid", "boolean", "inet", "ascii")

_MARSHAL = {
    "ascii": "AsciiType", "bigint": "LongType", "blob": "BytesType", "boolean": "BooleanType",
    "counter": "CounterColumnType", "date": "SimpleDateType", "decimal": "DecimalType", "double": "DoubleType",
    "duration": "DurationType", "float": "FloatType", "inet": "InetAddressType", "int": "Int32Type",
    "smallint": "ShortType", "text": "UTF8Type", "varchar": "UTF8Type", "time": "TimeType",
    "timestamp": "TimestampType", "timeuuid": "TimeUUIDType", "tinyint": "ByteType", "uuid": "UUIDType",
    "varint": "IntegerType",
}
MARSHAL_PREFIX = _PREFIX = "org.apache.cassandra.db.marshal."


def marshal_name(t: Any) -> str:
    """A type as ScyllaDB names it in messages (``abstract_type::name()``, Cassandra's marshal classes)."""
    kind = t.kind
    if kind == "native":
        return _PREFIX + _MARSHAL.get(t.name, t.name)
    if kind in ("list", "set"):
        inner = f"{_PREFIX}{'ListType' if kind == 'list' else 'SetType'}({marshal_name(t.element)})"
    elif kind == "map":
        inner = f"{_PREFIX}MapType({marshal_name(t.key)},{marshal_name(t.value)})"
    elif kind == "tuple":
        return f"{_PREFIX}TupleType({','.join(marshal_name(i) for i in t.items)})"
    elif kind == "vector":  # never wrapped in FrozenType; its element as ScyllaDB prepares it, not frozen
        return f"{_PREFIX}VectorType({marshal_name(t.element.unfreeze())}, {t.dimension})"
    else:
        return t.cql()
    return inner if t.is_multicell else f"{_PREFIX}FrozenType({inner})"


def marshal_class(t: Any) -> str:
    """A type's marshal class name as ScyllaDB writes a custom type (``abstract_type::name()``):
    ``org.apache.cassandra.db.marshal.VectorType(org.apache.cassandra.db.marshal.FloatType, 3)``, user
    types as ``UserType(ks,hex(name),hex(field):type,...)``, frozen ones in ``FrozenType(...)``."""
    if t.kind == "udt":
        fields = ",".join(f"{n.encode().hex()}:{marshal_class(ft)}" for n, ft in zip(t.field_names, t.field_types))
        inner = f"{MARSHAL_PREFIX}UserType({t.keyspace},{t.name.encode().hex()},{fields})"
        return inner if t.is_multicell else f"{MARSHAL_PREFIX}FrozenType({inner})"
    if t.kind in ("native", "tuple"):
        return marshal_name(t)
    if t.kind == "vector":
        return f"{MARSHAL_PREFIX}VectorType({marshal_class(t.element.unfreeze())}, {t.dimension})"
    if t.kind == "map":
        inner = f"{MARSHAL_PREFIX}MapType({marshal_class(t.key)},{marshal_class(t.value)})"
    else:
        inner = f"{MARSHAL_PREFIX}{'ListType' if t.kind == 'list' else 'SetType'}({marshal_class(t.element)})"
    return inner if t.is_multicell else f"{MARSHAL_PREFIX}FrozenType({inner})"


def _wrap(v: int, bits: int) -> int:
    m = 1 << bits
    v &= m - 1
    return v - m if v >= m >> 1 else v


def _to_int(v: Any) -> int:
    """An integer, a decimal or a floating-point value as an integer, truncated toward zero."""
    if isinstance(v, Decimal):
        return int(v.to_integral_value(rounding="ROUND_DOWN"))
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            raise InvalidRequest(f"Cannot convert {v} to an integer")
        return int(v)
    return int(v)


def _to_double(v: Any) -> float:
    try:
        return float(v)
    except OverflowError:
        return math.copysign(math.inf, v)


def _to_decimal(v: Any, src: str) -> Decimal:
    if src in ("float", "double"):
        return Decimal(java_float_to_string(v) if src == "float" else java_double_to_string(v))
    if isinstance(v, Decimal):
        return v
    return Decimal(f"{int(v)}.0")  # ScyllaDB's big_decimal(1, 10 * n): the integer with one decimal


def _timestamp_text(v: datetime.datetime) -> str:
    return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"


def _text(v: Any, src: Any) -> str:
    name = src.name
    if name == "float":
        return java_float_to_string(v)
    if name == "double":
        return java_double_to_string(v)
    if name == "boolean":
        return "true" if v else "false"
    if name == "timestamp":
        return _timestamp_text(v)
    return str(v)


def _epoch_millis(v: datetime.datetime) -> int:
    delta = v - datetime.datetime(1970, 1, 1)
    return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000


def cast_function(src: Any, dst: Any) -> Callable[[Any], Any]:
    """The conversion ``CAST(x AS dst)`` applies to values of ``src`` (None stays None)."""
    s = src.name if src.kind == "native" else None
    d = dst.name if dst.kind == "native" else None
    if d == "varchar":
        d = "text"
    fn = _conversion(s, d)
    if fn is None:
        raise InvalidRequest(f"{marshal_name(src)} cannot be cast to {marshal_name(dst)}")
    return lambda v: None if v is None or v is T.EMPTY else fn(v)


def _conversion(s: str | None, d: str | None) -> Callable[[Any], Any] | None:
    if s is None or d is None:
        return None
    if s == d or (s, d) == ("varchar", "text"):
        return lambda v: v
    if s in _NUMBERS and d in _INT_BITS:
        return lambda v, b=_INT_BITS[d]: _wrap(_to_int(v), b)
    if s in _NUMBERS and d == "varint":
        return _to_int
    if s in _NUMBERS and d == "float":
        return lambda v: to_float32(_to_double(v))
    if s in _NUMBERS and d == "double":
        return _to_double
    if s in _NUMBERS and d == "decimal":
        return lambda v, s=s: _to_decimal(v, s)
    if d in ("text", "ascii") and (s in _TO_TEXT or s in ("text", "varchar")):
        return lambda v, t=T.NativeType(s): _text(v, t)
    if d == "date" and s == "timestamp":
        return lambda v: Date(_epoch_millis(v) // 86400000)
    if d == "date" and s == "timeuuid":
        return lambda v: Date(timeuuid_millis(v) // 86400000)
    if d == "timestamp" and s == "date":
        return lambda v: datetime.datetime(1970, 1, 1) + datetime.timedelta(days=v.days_from_epoch)
    if d == "timestamp" and s == "timeuuid":
        return lambda v: datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=timeuuid_millis(v))
    return None
