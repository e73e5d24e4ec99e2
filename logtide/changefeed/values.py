"""CQL values in changefeed records (spec ``004``, "Record structure"; ``docs/changefeeds.md``, "CQL to JSON").

Two renderings of a Python value of a CQL type (what the type's
``deserialize`` returns):

* :func:`to_json_value` for the JSON and DEBEZIUM_JSON formats: a value
  ``json.dumps`` writes as YDB writes the nearest YDB type (the spec's own
  examples win where they show a type: dates ``"2022-02-22"``);
* :func:`to_attribute_value` for DYNAMODB_STREAMS_JSON: a DynamoDB
  AttributeValue (``{"N": "1"}``, ``{"S": "a"}``, ``{"L": [...]}``, ...).

Floating-point numbers are written as YDB's JSON writer writes them (17
significant digits for double, 9 for float), which a JSON encoder's own float
form is not; they are formatted here and handed to the encoder as
``msgspec.Raw`` (:func:`json_number`), which msgspec writes as they are.
:func:`json_bytes` and :func:`dumps` are msgspec's JSON encoder: compact, UTF-8
kept, the same escapes as Python's ``json`` module with ``ensure_ascii=False``.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import functools
import math
from typing import Any

import msgspec
from cassandra.util import Date, Duration, Time

from ..schema.types import EMPTY

_EPOCH = datetime.datetime(1970, 1, 1)
_INTEGERS = frozenset({"tinyint", "smallint", "int", "bigint", "varint", "counter"})
_NUMBERS = _INTEGERS | {"decimal", "float", "double"}
_TEXT = frozenset({"text", "ascii", "varchar"})


json_bytes = msgspec.json.Encoder().encode  # compact JSON bytes of a value made of dicts, lists, str, int, Raw


def dumps(obj: Any) -> str:
    """Compact JSON text (no spaces, UTF-8 kept) with :func:`json_number` values written as numbers."""
    return json_bytes(obj).decode()


def json_number(text: str) -> msgspec.Raw:
    """A JSON number already formatted (``0.10000000000000001``), written bare by :func:`json_bytes`."""
    return msgspec.Raw(text.encode())


# ---------------------------------------------------------------------------
# scalar text forms shared by both renderings
# ---------------------------------------------------------------------------


def float_text(value: float, digits: int) -> str:
    """A finite float with ``digits`` significant digits as YDB's writer prints it (``%.17g``)."""
    return "%.*g" % (digits, value)


def nonfinite_text(value: float) -> str | None:
    """``"nan"``, ``"inf"`` or ``"-inf"`` (YDB's WriteNanAsString), None for a finite value."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return None


def decimal_text(value: decimal.Decimal) -> str:
    """A decimal in plain notation with trailing fractional zeros dropped (YDB's Decimal ToString)."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def date_text(value: Date) -> str | int:
    """``"2022-02-22"`` (the spec's example); a date outside years 1..9999 as its day number."""
    days = value.days_from_epoch
    try:
        return (datetime.date(1970, 1, 1) + datetime.timedelta(days=days)).isoformat()
    except OverflowError:
        return days


def timestamp_text(value: datetime.datetime | int) -> str | int:
    """``"2022-12-12T00:00:00.000000Z"``: ISO-8601 UTC with 6 fractional digits (YDB's TInstant).

    A timestamp outside years 1..9999 (the driver returns it as milliseconds)
    stays the integer number of milliseconds since the epoch.
    """
    if isinstance(value, int):
        return value
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + "%06dZ" % value.microsecond


def time_text(value: Time) -> str:
    """A time of day as ``"hh:mm:ss.nnnnnnnnn"`` (nanoseconds, as cqlsh shows it)."""
    ns = value.nanosecond_time
    s, frac = divmod(ns, 10**9)
    return "%02d:%02d:%02d.%09d" % (s // 3600, s // 60 % 60, s % 60, frac)


def duration_text(value: Duration) -> str:
    """A duration as ISO-8601 (``P1Y2M3DT4H5M6.007008009S``), which CQL also reads back as a literal."""
    months, days, ns = value.months, value.days, value.nanoseconds
    sign = "-" if min(months, days, ns) < 0 else ""
    months, days, ns = abs(months), abs(days), abs(ns)
    out = "P"
    if months // 12:
        out += f"{months // 12}Y"
    if months % 12:
        out += f"{months % 12}M"
    if days:
        out += f"{days}D"
    if ns:
        h, rest = divmod(ns, 3600 * 10**9)
        m, rest = divmod(rest, 60 * 10**9)
        s, frac = divmod(rest, 10**9)
        out += "T"
        if h:
            out += f"{h}H"
        if m:
            out += f"{m}M"
        if s or frac:
            out += f"{s}.{frac:09d}".rstrip("0").rstrip(".") + "S"
    if out == "P":
        out = "PT0S"
    return sign + out


def blob_text(value: bytes) -> str:
    """Bytes as standard base64 (YDB's String columns)."""
    return base64.b64encode(value).decode("ascii")


def udt_items(ctype: Any, value: Any) -> list[tuple[str, Any, Any]]:
    """(field name, field type, field value) of a UDT value, missing trailing fields as None."""
    from ..schema.types_codec import udt_field_values

    return list(zip(ctype.field_names, ctype.field_types, udt_field_values(ctype, value)))


def tuple_items(ctype: Any, value: Any) -> list[tuple[Any, Any]]:
    """(component type, component value) of a tuple value, missing trailing components as None."""
    items = list(value) + [None] * (len(ctype.items) - len(value))
    return list(zip(ctype.items, items))


# ---------------------------------------------------------------------------
# JSON and DEBEZIUM_JSON
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def is_plain(ctype: Any) -> bool:
    """True when every non-empty value of ``ctype`` is already its own JSON value (text, integers, booleans)."""
    return ctype.kind == "native" and (ctype.name in _TEXT or ctype.name in _INTEGERS or ctype.name == "boolean")


def json_of(ctype: Any, value: Any) -> Any:
    """:func:`to_json_value` with a fast path for values that are their own JSON value."""
    if value is None or (value is not EMPTY and is_plain(ctype)):
        return value
    return to_json_value(ctype, value)


def to_json_value(ctype: Any, value: Any) -> Any:
    """The JSON value of a CQL value in JSON/DEBEZIUM_JSON records (``None`` -> ``null``)."""
    if value is None or value is EMPTY:
        return None
    kind = ctype.kind
    if kind == "native":
        return _native_json(ctype.name, value)
    if kind in ("list", "set", "vector"):
        return [to_json_value(ctype.element, x) for x in value]
    if kind == "tuple":
        return [to_json_value(t, x) for t, x in tuple_items(ctype, value)]
    if kind == "udt":
        return {name: to_json_value(t, x) for name, t, x in udt_items(ctype, value)}
    if kind == "map":
        return {map_key_text(ctype.key, k): to_json_value(ctype.value, v) for k, v in value.items()}
    raise AssertionError(kind)


def map_key_text(ctype: Any, key: Any) -> str:
    """A map key as a JSON object member name: text as itself, any other key as its compact JSON."""
    rendered = to_json_value(ctype, key)
    if isinstance(rendered, msgspec.Raw):
        return bytes(rendered).decode()
    return rendered if isinstance(rendered, str) else dumps(rendered)


def _native_json(name: str, value: Any) -> Any:
    if name in _TEXT or name == "inet":
        return str(value)
    if name in _INTEGERS or name == "boolean":
        return value
    if name in ("double", "float"):
        bad = nonfinite_text(value)
        if bad is not None:
            return bad
        return json_number(float_text(value, 17 if name == "double" else 9))
    if name == "decimal":
        return decimal_text(value)
    if name == "blob":
        return blob_text(value)
    if name == "timestamp":
        return timestamp_text(value)
    if name == "date":
        return date_text(value)
    if name == "time":
        return time_text(value)
    if name in ("uuid", "timeuuid"):
        return str(value)
    if name == "duration":
        return duration_text(value)
    raise AssertionError(name)


# ---------------------------------------------------------------------------
# DYNAMODB_STREAMS_JSON
# ---------------------------------------------------------------------------

_NULL = {"NULL": True}


def to_attribute_value(ctype: Any, value: Any) -> dict | None:
    """The DynamoDB AttributeValue of a CQL value; None for null (the caller omits the attribute)."""
    if value is None or value is EMPTY:
        return None
    kind = ctype.kind
    if kind == "native":
        return _native_attribute(ctype.name, value)
    if kind in ("list", "vector"):
        return {"L": [_nested(ctype.element, x) for x in value]}
    if kind == "tuple":
        return {"L": [_nested(t, x) for t, x in tuple_items(ctype, value)]}
    if kind == "set":
        return _set_attribute(ctype.element, value)
    if kind == "udt":
        return {"M": {name: _nested(t, x) for name, t, x in udt_items(ctype, value)}}
    if kind == "map":
        return {"M": {map_key_text(ctype.key, k): _nested(ctype.value, v) for k, v in value.items()}}
    raise AssertionError(kind)


def _nested(ctype: Any, value: Any) -> dict:
    """An element, field or component: a null inside a value is ``{"NULL":true}``."""
    av = to_attribute_value(ctype, value)
    return _NULL if av is None else av


def _native_attribute(name: str, value: Any) -> dict:
    if name == "boolean":
        return {"BOOL": value}
    if name == "blob":
        return {"B": blob_text(value)}
    if name in _NUMBERS:
        text = number_text(name, value)
        return {"S": text} if text in ("nan", "inf", "-inf") else {"N": text}
    rendered = _native_json(name, value)
    return {"S": rendered if isinstance(rendered, str) else str(rendered)}


def number_text(name: str, value: Any) -> str:
    """A CQL number as DynamoDB's ``N`` string (non-finite floats as ``nan``/``inf``/``-inf``)."""
    if name in _INTEGERS:
        return str(value)
    if name == "decimal":
        return decimal_text(value)
    bad = nonfinite_text(value)
    return bad if bad is not None else float_text(value, 17 if name == "double" else 9)


def _set_attribute(element: Any, value: Any) -> dict:
    """SS / NS / BS by element type; sets DynamoDB has no set type for (or empty ones) as ``L``."""
    items = list(value)
    if items and element.kind == "native" and element.name != "boolean":
        avs = [_native_attribute(element.name, x) for x in items if x is not None and x is not EMPTY]
        tags = {next(iter(av)) for av in avs}
        if len(avs) == len(items) and len(tags) == 1:
            tag = tags.pop()
            if tag in ("S", "N", "B"):
                return {tag + "S": [av[tag] for av in avs]}
    return {"L": [_nested(element, x) for x in items]}
