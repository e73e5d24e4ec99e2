"""Values as CQL literals, for messages an operator can paste into a statement.

Each value is formatted by cqlsh's own code (``logtide.format.cqlsh``), which
already writes strings, timestamps, dates and times inside collections as
quoted literals; at the top level cqlsh shows those bare, so they are quoted
here (``'it''s'``, ``'2024-01-01 00:00:00.000000+0000'``).  A top-level
``float`` or ``double`` is written with the fewest digits that read back to
the same value (cqlsh's display rounds to 5 digits, so two different values
could print alike).
"""

from __future__ import annotations

import math
import struct
from typing import Any

from ..schema import types as T
from .cqlsh import FormatOptions, ValueFormatter, cqlsh_types

# cqlsh shows these bare at the top level; a CQL literal quotes them
QUOTED = frozenset({"ascii", "text", "varchar", "timestamp", "date", "time", "inet"})


def quote(text: str) -> str:
    """A CQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def cql_literal(ctype: Any, value: Any) -> str:
    """The CQL literal of a Python value of type ``ctype`` (``null`` for None)."""
    if value is None:
        return "null"
    if ctype.cql() in ("float", "double"):
        return float_literal(value, ctype.cql() == "float")
    text = ValueFormatter(FormatOptions()).value(value, cqlsh_types([ctype])[0]).strval
    if ctype.cql() in QUOTED:
        return quote(text)
    return text


def float_literal(value: float, single: bool) -> str:
    """The shortest literal that reads back to ``value`` (in 32-bit precision when ``single``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if not single:
        return repr(value)
    for digits in range(6, 10):
        text = "%.*g" % (digits, value)
        if struct.unpack(">f", struct.pack(">f", float(text)))[0] == value:
            break
    return text if any(c in text for c in ".en") else text + ".0"


def serialized_literal(ctype: Any, data: bytes | None) -> str:
    """The CQL literal of a serialized value (as stored and logged)."""
    if data is None:
        return "null"
    return cql_literal(ctype, ctype.deserialize(data))


def name(identifier: str) -> str:
    """A column or table name as CQL writes it (quoted when it is not a plain lower-case identifier)."""
    if identifier.isidentifier() and identifier == identifier.lower() and identifier.isascii():
        return identifier
    return '"' + identifier.replace('"', '""') + '"'


def key_condition(columns: Any, values: tuple[bytes, ...]) -> str:
    """``pk = 1 AND ck = 'a'``: a primary key (or prefix) as a WHERE condition."""
    return " AND ".join(f"{name(c.name)} = {serialized_literal(c.type, v)}" for c, v in zip(columns, values))


def is_collection(ctype: Any) -> bool:
    return isinstance(ctype, (T.ListType, T.SetType, T.MapType, T.UserType))
