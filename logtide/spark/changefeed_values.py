"""Values of changefeed records back into Spark values (docs/changefeeds.md "CQL to JSON", inverted).

The JSON and DEBEZIUM_JSON formats write a CQL value as the JSON value YDB writes for the nearest
YDB type (``logtide/changefeed/values.py``); DYNAMODB_STREAMS_JSON writes a DynamoDB AttributeValue.
Each function here takes such a value and the column's CQL type and returns the Python value Arrow
takes for the column's Spark type (``types.arrow_type``): the Spark mapping of docs/spark.md "Types".

Nothing here imports pyspark or pyarrow: executors call it row by row.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import re
from typing import Any, Callable

from ..schema import types as T

_INTEGERS = frozenset({"tinyint", "smallint", "int", "bigint", "counter"})
_TEXTUAL = frozenset({"ascii", "text", "varchar", "uuid", "timeuuid", "inet", "decimal"})
_NONFINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}
_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_DURATION = re.compile(r"^(-)?P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?"
                       r"(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d{1,9}))?S)?)?$")

Convert = Callable[[Any], Any]


class RecordValueError(ValueError):
    """A record value that does not fit its column's CQL type (the message names both)."""


def _name(t: Any) -> str:
    return t.cql().lower()


# -- scalars from their text form (JSON strings and DynamoDB S/N) ---------------------------------

def timestamp_of(v: Any) -> Any:
    """``"2022-12-12T00:00:00.000000Z"`` (or milliseconds since the epoch) as an aware datetime."""
    if isinstance(v, (int, float)):
        try:
            return _EPOCH + datetime.timedelta(milliseconds=v)
        except OverflowError:
            return None
    return datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)


def date_of(v: Any) -> Any:
    """``"2022-02-22"`` (or a day number since 1970-01-01) as a date; None outside Python's range."""
    if isinstance(v, int):
        try:
            return _EPOCH_DATE + datetime.timedelta(days=v)
        except OverflowError:
            return None
    return datetime.date.fromisoformat(v)


def time_of(v: str) -> int:
    """``"01:02:03.000000001"`` as nanoseconds since midnight."""
    hms, _, frac = v.partition(".")
    h, m, s = (int(x) for x in hms.split(":"))
    return ((h * 60 + m) * 60 + s) * 10**9 + int((frac + "000000000")[:9])


def duration_of(v: str) -> dict:
    """An ISO-8601 duration (``P1Y2M3DT4H5M6.007008009S``, ``-PT1.5S``) as months, days, nanoseconds."""
    m = _DURATION.match(v)
    if not m or v in ("P", "-P"):
        raise RecordValueError(f"not an ISO-8601 duration: {v!r}")
    neg, y, mo, w, d, h, mi, s, frac = m.groups()
    months = int(y or 0) * 12 + int(mo or 0)
    days = int(w or 0) * 7 + int(d or 0)
    ns = ((int(h or 0) * 60 + int(mi or 0)) * 60 + int(s or 0)) * 10**9 + int(((frac or "") + "000000000")[:9])
    sign = -1 if neg else 1
    return {"months": sign * months, "days": sign * days, "nanoseconds": sign * ns}


def _float(v: Any) -> float:
    if isinstance(v, str):
        if v in _NONFINITE:
            return _NONFINITE[v]
        return float(v)
    return float(v)


def _scalar(name: str) -> Convert:
    """The converter of a native type's JSON value (also used for DynamoDB S and N texts)."""
    if name in _TEXTUAL:
        return lambda v: v if isinstance(v, str) else json.dumps(v)
    if name in _INTEGERS:
        return int
    if name == "varint":
        return lambda v: decimal.Decimal(int(v))
    if name in ("float", "double"):
        return _float
    if name == "boolean":
        return lambda v: v if isinstance(v, bool) else str(v).lower() == "true"
    if name == "blob":
        return lambda v: base64.b64decode(v)
    if name == "timestamp":
        return lambda v: timestamp_of(int(v) if isinstance(v, str) and re.fullmatch(r"-?\d+", v) else v)
    if name == "date":
        return lambda v: date_of(int(v) if isinstance(v, str) and re.fullmatch(r"-?\d+", v) else v)
    if name == "time":
        return time_of
    if name == "duration":
        return duration_of
    raise RecordValueError(f"CQL type {name} has no Spark mapping")


def _nullable(f: Convert) -> Convert:
    return lambda v: None if v is None else f(v)


def _key_text(t: Any) -> Convert:
    """A map key back from its member name: text forms are the name itself, others its compact JSON."""
    conv = from_json(t)
    if t.kind == "native" and (_name(t) in _TEXTUAL or _name(t) in ("blob", "timestamp", "date", "time",
                                                                    "duration")):
        return conv

    def parse(k: str) -> Any:
        try:
            return conv(json.loads(k))
        except ValueError:
            return conv(k)  # "nan", "inf": floats written as strings
    return parse


# -- JSON and DEBEZIUM_JSON -----------------------------------------------------------------------

def from_json(t: Any) -> Convert:
    """A function from a JSON/Debezium record value of CQL type ``t`` to its Spark value (null stays None)."""
    if isinstance(t, (T.ListType, T.SetType, T.VectorType)):
        el = from_json(t.element)
        return _nullable(lambda v: [el(x) for x in v])
    if isinstance(t, T.MapType):
        k, val = _key_text(t.key), from_json(t.value)
        return _nullable(lambda v: [(k(a), val(b)) for a, b in v.items()])
    if isinstance(t, T.UserType):
        fields = list(zip(t.field_names, (from_json(ft) for ft in t.field_types)))
        return _nullable(lambda v: {n: c(v.get(n)) for n, c in fields})
    if isinstance(t, T.TupleType):
        convs = [from_json(ft) for ft in t.items]

        def tup(v: list) -> dict:
            vals = list(v) + [None] * (len(convs) - len(v))
            return {f"_{i + 1}": c(x) for i, (c, x) in enumerate(zip(convs, vals))}
        return _nullable(tup)
    return _nullable(_scalar(_name(t)))


# -- DYNAMODB_STREAMS_JSON ------------------------------------------------------------------------

def from_attribute(t: Any) -> Convert:
    """A function from a DynamoDB AttributeValue of CQL type ``t`` to its Spark value (None/NULL -> None)."""
    if isinstance(t, (T.ListType, T.SetType, T.VectorType)):
        el = from_attribute(t.element)
        scalar_el = _nullable(_scalar(_name(t.element))) if t.element.kind == "native" else None

        def seq(av: dict) -> list:
            if "L" in av:
                return [el(x) for x in av["L"]]
            for tag in ("SS", "NS"):
                if tag in av and scalar_el is not None:
                    return [scalar_el(x) for x in av[tag]]
            if "BS" in av:
                return [base64.b64decode(x) for x in av["BS"]]
            raise RecordValueError(f"AttributeValue {av!r} is not a {t.cql()}")
        return _attr(seq)
    if isinstance(t, T.MapType):
        k, val = _key_text(t.key), from_attribute(t.value)
        return _attr(lambda av: [(k(a), val(b)) for a, b in av["M"].items()])
    if isinstance(t, T.UserType):
        fields = list(zip(t.field_names, (from_attribute(ft) for ft in t.field_types)))
        return _attr(lambda av: {n: c(av["M"].get(n)) for n, c in fields})
    if isinstance(t, T.TupleType):
        convs = [from_attribute(ft) for ft in t.items]

        def tup(av: dict) -> dict:
            vals = list(av["L"]) + [None] * (len(convs) - len(av["L"]))
            return {f"_{i + 1}": c(x) for i, (c, x) in enumerate(zip(convs, vals))}
        return _attr(tup)
    scalar = _scalar(_name(t))

    def native(av: dict) -> Any:
        if "BOOL" in av:
            return av["BOOL"]
        if "B" in av:
            return base64.b64decode(av["B"])
        if "N" in av:
            return scalar(av["N"])
        if "S" in av:
            return scalar(av["S"])
        raise RecordValueError(f"AttributeValue {av!r} is not a {t.cql()}")
    return _attr(native)


def _attr(f: Convert) -> Convert:
    return lambda av: None if av is None or av.get("NULL") else f(av)
