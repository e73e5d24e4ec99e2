"""Literal conversion (Cassandra's Constants/Lists/Sets/Maps/Tuples/UserTypes/TypeCast) and
bound Python value validation (implementation of logtide.schema.types).

``value_from_string(ctype, text)`` mirrors ``AbstractType.fromString`` of the native types,
raising InvalidRequest with the MarshalException messages Cassandra uses.

One idea split for size with ``types.py`` and ``types_json.py``: the CQL types (their literals here).
"""

from __future__ import annotations

import datetime
import ipaddress
import math
import re
import struct
import uuid as _uuid
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Optional

from cassandra import util as _cutil
from cassandra.cqltypes import EMPTY

from logtide.cql import ast
from logtide.errors import InvalidRequest
from logtide.schema.types_codec import PaddedVarint, make_map, make_sorted_set, udt_field_values
from logtide.schema.types_convert import convert, widenable

NOT_ASSIGNABLE, WEAKLY_ASSIGNABLE, EXACT_MATCH = 0, 1, 2

_EPOCH = datetime.datetime(1970, 1, 1)
_DAY_NANOS = 86400 * 10**9

# ---------------------------------------------------------------------------
# calendar helpers (proleptic Gregorian, any year)
# ---------------------------------------------------------------------------


def days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z: int):
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return y + (m <= 2), m, d


def _days_in_month(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) else 28
    return 31 if m in (1, 3, 5, 7, 8, 10, 12) else 30


def iso_local_date(days: int) -> str:
    """java.time ISO_LOCAL_DATE text of a day number (days since 1970-01-01)."""
    y, m, d = civil_from_days(days)
    if 0 <= y <= 9999:
        ys = f"{y:04d}"
    elif y > 9999:
        ys = f"+{y}"
    else:
        ys = f"-{-y:04d}"
    return f"{ys}-{m:02d}-{d:02d}"


# ---------------------------------------------------------------------------
# fromString of each native type
# ---------------------------------------------------------------------------

_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_DECIMAL_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_FLOAT_RE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?)\Z"
)
_UUID_RE = re.compile(r"[A-Fa-f0-9]{8}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{12}\Z")
_HEX_RE = re.compile(r"[0-9A-Fa-f]*\Z")

_RANGES = {
    "tinyint": (-(2**7), 2**7 - 1, "byte"),
    "smallint": (-(2**15), 2**15 - 1, "short"),
    "int": (-(2**31), 2**31 - 1, "int"),
    "bigint": (-(2**63), 2**63 - 1, "long"),
    "counter": (-(2**63), 2**63 - 1, "long"),
}

FLOAT32_MAX = struct.unpack(">f", b"\x7f\x7f\xff\xff")[0]


def to_float32(x: float) -> float:
    """Round a double to the nearest float32 (overflowing to +/-Infinity like Java)."""
    if math.isnan(x) or math.isinf(x):
        return x
    try:
        return struct.unpack(">f", struct.pack(">f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _parse_java_double(text: str) -> Optional[float]:
    s = text.strip()
    if not _FLOAT_RE.match(s):
        return None
    if s[-1] in "fFdD" and not s.endswith("NaN") and not s.endswith("Infinity"):
        s = s[:-1]
    return float(s)


def parse_inet(text: str) -> Optional[str]:
    s = text
    if s.startswith("[") and s.endswith("]"):
        s = s[1:-1]
    try:
        a = ipaddress.ip_address(s)
    except ValueError:
        return None
    if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped is not None:
        a = a.ipv4_mapped  # Java's InetAddress turns IPv4-mapped addresses into Inet4Address
    return str(a)


# -- timestamps (TimestampSerializer.dateStringToTimestamp, with ScyllaDB's rules: at most 3 fraction
#    digits, blanks around the zone) --

_TS_RE = re.compile(
    r"(?P<y>[0-9]{4})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
    r"(?:[ T](?P<h>[0-9]{1,2}):(?P<mi>[0-9]{1,2})(?::(?P<s>[0-9]{1,2})(?:\.(?P<f>[0-9]+))?)?)?"
    r"(?P<z>\s*(?:Z|[+-][0-9]{2}(?::?[0-9]{2})?|(?:UTC|GMT|UT)(?:[+-][0-9]{1,2}(?::?[0-9]{2})?)?)\s*)?\Z",
    re.IGNORECASE,
)


def _zone_offset_seconds(z: str) -> Optional[int]:
    z = z.strip().upper()
    if z in ("", "Z", "UTC", "GMT", "UT"):
        return 0
    for prefix in ("UTC", "GMT", "UT"):
        if z.startswith(prefix):
            z = z[len(prefix):]
            break
    sign = -1 if z[0] == "-" else 1
    body = z[1:].replace(":", "")
    if len(body) <= 2:
        hh, mm = int(body), 0
    else:
        hh, mm = int(body[:-2]), int(body[-2:])
    if hh > 23 or mm > 59:
        return None
    return sign * (hh * 3600 + mm * 60)


def timestamp_millis_from_string(source: str) -> int:
    if source.lower() == "now":
        return int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)
    if re.match(r"-?[0-9]+\Z", source):
        v = int(source)
        if not -(2**63) <= v < 2**63:
            raise InvalidRequest(f"Unable to make long (for date) from: '{source}'")
        return v
    m = _TS_RE.match(source)
    err = InvalidRequest(f"Unable to coerce '{source}' to a formatted date (long)")
    if not m:
        raise err
    y, mo, d = int(m["y"]), int(m["mo"]), int(m["d"])
    if not (1 <= mo <= 12 and 1 <= d <= _days_in_month(y, mo)):
        raise err
    h = int(m["h"] or 0)
    mi = int(m["mi"] or 0)
    s = int(m["s"] or 0)
    if h > 23 or mi > 59 or s > 59:
        raise err
    frac = m["f"] or ""
    if len(frac) > 3:  # ScyllaDB refuses what Cassandra would truncate
        raise InvalidRequest(f"Unable to parse date '{source}': Milliseconds length exceeds expected ({len(frac)})")
    ms = int((frac + "000")[:3]) if frac else 0
    off = _zone_offset_seconds(m["z"] or "")
    if off is None:
        raise err
    secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - off
    return secs * 1000 + ms


def timestamp_from_millis(ms: int):
    try:
        return _EPOCH + datetime.timedelta(milliseconds=ms)
    except OverflowError:
        return ms


# -- dates (SimpleDateSerializer.dateStringToDays) --

_DATE_RE = re.compile(r"(?P<y>[0-9]{4}|[+-][0-9]{4,})-(?P<m>[0-9]{2})-(?P<d>[0-9]{2})\Z")
_MIN_DAYS, _MAX_DAYS = -(2**31), 2**31 - 1


def _zoned_min_max(days: int) -> str:
    return iso_local_date(days) + "T00:00Z"


def date_days_from_string(source: str) -> int:
    """Days since the epoch (signed) of a date literal."""
    if re.match(r"-?[0-9]+\Z", source):
        v = int(source)
        if v < 0 or v > 2**32 - 1:
            raise InvalidRequest(f"Unable to make unsigned int (for date) from: '{source}'")
        return v - 2**31
    m = _DATE_RE.match(source)
    err = InvalidRequest(f"Unable to coerce '{source}' to a formatted date (long)")
    if not m:
        raise err
    ys = m["y"]
    if ys[0] == "+" and len(ys) <= 5:  # java.time: a '+' needs more than 4 digits
        raise err
    if ys[0] == "-" and ys[1:] == "0000":
        raise err
    y, mo, d = int(ys), int(m["m"]), int(m["d"])
    if not (1 <= mo <= 12 and 1 <= d <= _days_in_month(y, mo)):
        raise err
    days = days_from_civil(y, mo, d)
    if days < _MIN_DAYS:
        raise InvalidRequest(
            f"Input date {source} is less than min supported date {_zoned_min_max(_MIN_DAYS)}"
        )
    if days > _MAX_DAYS:
        raise InvalidRequest(
            f"Input date {source} is greater than max supported date {_zoned_min_max(_MAX_DAYS)}"
        )
    return days


# -- times (TimeSerializer.timeStringToLong) --


def time_nanos_from_string(source: str) -> int:
    if re.match(r"-?[0-9]+\Z", source):
        v = int(source)
        if v < 0 or v >= _DAY_NANOS:
            raise InvalidRequest(f"Unable to make long (for time) from: '{source}'")
        return v
    err = InvalidRequest(f"(TimeType) Unable to coerce '{source}' to a formatted time (long)")
    s = source.strip()
    m = re.match(r"([0-9]+):([0-9]+):([0-9]+)(?:\.([0-9]{1,9}))?\Z", s)
    if not m:
        raise err
    h, mi, sec = int(m[1]), int(m[2]), int(m[3])
    if h >= 24 or mi >= 60 or sec >= 60:
        raise err
    nanos = int((m[4] or "").ljust(9, "0")) if m[4] else 0
    return ((h * 60 + mi) * 60 + sec) * 10**9 + nanos


# -- durations (Duration.from) --

_DUR_STD = re.compile(r"([0-9]+)(mo|ms|us|µs|ns|y|w|d|h|s|m)", re.IGNORECASE)
_DUR_ISO = re.compile(r"P(?:([0-9]+)Y)?(?:([0-9]+)M)?(?:([0-9]+)D)?(T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+)S)?)?\Z")
_DUR_ISO_WEEK = re.compile(r"P([0-9]+)W\Z")
_DUR_ISO_ALT = re.compile(r"P([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\Z")
_UNIT_NAMES = {1: "years", 2: "months", 3: "weeks", 4: "days", 5: "hours", 6: "minutes",
               7: "seconds", 8: "milliseconds", 9: "microseconds", 10: "nanoseconds"}
_NANOS = {5: 3600 * 10**9, 6: 60 * 10**9, 7: 10**9, 8: 10**6, 9: 10**3, 10: 1}
_INT_MAX, _LONG_MAX = 2**31 - 1, 2**63 - 1


class _DurationBuilder:
    def __init__(self, negative: bool):
        self.negative = negative
        self.months = self.days = self.nanos = 0
        self.current = 0

    def add(self, unit: int, n: int):
        if unit == self.current:
            raise InvalidRequest(f"Invalid duration. The {_UNIT_NAMES[unit]} are specified multiple times")
        if unit <= self.current:
            raise InvalidRequest(
                f"Invalid duration. The {_UNIT_NAMES[self.current]} should be after {_UNIT_NAMES[unit]}"
            )
        self.current = unit
        if unit <= 2:
            per = 12 if unit == 1 else 1
            self._check(n, (_INT_MAX - self.months) // per, "months")
            self.months += n * per
        elif unit <= 4:
            per = 7 if unit == 3 else 1
            self._check(n, (_INT_MAX - self.days) // per, "days")
            self.days += n * per
        else:
            per = _NANOS[unit]
            self._check(n, (_LONG_MAX - self.nanos) // per, "nanoseconds")
            self.nanos += n * per
        return self

    @staticmethod
    def _check(n, limit, name):
        if n > limit:
            raise InvalidRequest(
                f"Invalid duration. The total number of {name} must be less or equal to {_INT_MAX}"
            )

    def build(self):
        if self.negative:
            return _cutil.Duration(-self.months, -self.days, -self.nanos)
        return _cutil.Duration(self.months, self.days, self.nanos)


_STD_UNITS = {"y": 1, "mo": 2, "w": 3, "d": 4, "h": 5, "m": 6, "s": 7, "ms": 8, "us": 9, "µs": 9, "ns": 10}


def duration_from_string(text: str):
    negative = text.startswith("-")
    source = text[1:] if negative else text
    err = InvalidRequest(f"Unable to convert '{source}' to a duration")
    b = _DurationBuilder(negative)
    if source.startswith("P"):
        if source.endswith("W"):
            m = _DUR_ISO_WEEK.match(source)
            if not m:
                raise err
            return b.add(3, int(m[1])).build()
        if "-" in source:
            m = _DUR_ISO_ALT.match(source)
            if not m:
                raise err
            for unit, g in zip((1, 2, 4, 5, 6, 7), m.groups()):
                b.add(unit, int(g))
            return b.build()
        m = _DUR_ISO.match(source)
        if not m:
            raise err
        for unit, g in ((1, 1), (2, 2), (4, 3)):
            if m.group(g) is not None:
                b.add(unit, int(m.group(g)))
        if m.group(4) is not None:
            for unit, g in ((5, 5), (6, 6), (7, 7)):
                if m.group(g) is not None:
                    b.add(unit, int(m.group(g)))
        return b.build()
    pos = 0
    if not source:
        raise err
    while pos < len(source):
        m = _DUR_STD.match(source, pos)
        if not m:
            raise err
        b.add(_STD_UNITS[m[2].lower()], int(m[1]))
        pos = m.end()
    return b.build()


def duration_to_string(d) -> str:
    """Cassandra's Duration.toString()."""
    months, days, nanos = d.months, d.days, d.nanoseconds
    out = []
    if months < 0 or days < 0 or nanos < 0:
        out.append("-")

    def app(dividend, divisor, unit):
        if dividend == 0 or dividend < divisor:
            return dividend
        out.append(f"{dividend // divisor}{unit}")
        return dividend % divisor

    rem = app(abs(months), 12, "y")
    app(rem, 1, "mo")
    app(abs(days), 1, "d")
    if nanos != 0:
        rem = app(abs(nanos), 3600 * 10**9, "h")
        rem = app(rem, 60 * 10**9, "m")
        rem = app(rem, 10**9, "s")
        rem = app(rem, 10**6, "ms")
        rem = app(rem, 10**3, "us")
        app(rem, 1, "ns")
    return "".join(out)


def _ascii_check(text: str) -> str:
    try:
        text.encode("ascii")
    except UnicodeEncodeError as e:
        ch = text[e.start]
        length = 2 if ord(ch) > 0xFFFF else 1
        raise InvalidRequest(
            "Invalid ASCII character in string literal: "
            f"java.nio.charset.UnmappableCharacterException: Input length = {length}"
        ) from None
    return text


def value_from_string(ctype, text: str) -> Any:
    """Cassandra's ``AbstractType.fromString`` for a native type, returning a Python value."""
    name = ctype.name
    if name in _RANGES:
        lo, hi, jname = _RANGES[name]
        if text == "":
            return EMPTY
        if not _INT_RE.match(text):
            raise InvalidRequest(f"Unable to make {jname} from '{text}'")
        v = int(text)
        if not lo <= v <= hi:
            raise InvalidRequest(f"Unable to make {jname} from '{text}'")
        return v
    if name == "text":
        return text
    if name == "ascii":
        return _ascii_check(text)
    if name == "varint":
        if text == "":
            return EMPTY
        if not _INT_RE.match(text):
            raise InvalidRequest(f"unable to make int from '{text}'")
        return int(text)
    if name == "decimal":
        if text == "":
            return EMPTY
        if not _DECIMAL_RE.match(text) or not decimal_scale_fits(Decimal(text)):
            raise InvalidRequest(f"unable to make BigDecimal from '{text}'")
        return Decimal(text)
    if name in ("double", "float"):
        if text == "":
            return EMPTY
        v = _parse_java_double(text)
        if v is None:
            raise InvalidRequest(f"Unable to make {name} from '{text}'")
        return to_float32(v) if name == "float" else v
    if name == "boolean":
        low = text.lower()
        if low in ("", "false"):
            return False
        if low == "true":
            return True
        raise InvalidRequest(f"Unable to make boolean from '{text}'")
    if name == "timestamp":
        if text == "":
            return EMPTY
        return timestamp_from_millis(timestamp_millis_from_string(text))
    if name == "date":
        return _cutil.Date(date_days_from_string(text))
    if name == "time":
        return _cutil.Time(time_nanos_from_string(text))
    if name == "uuid":
        if text == "":
            return EMPTY
        if not _UUID_RE.match(text):
            raise InvalidRequest(f"Unable to make UUID from '{text}'")
        return _uuid.UUID(text)
    if name == "timeuuid":
        if text == "":
            return EMPTY
        if not _UUID_RE.match(text):
            raise InvalidRequest(f"Unknown timeuuid representation: {text}")
        u = _uuid.UUID(text)
        if (u.int >> 76) & 0xF != 1:  # the nibble, as java.util.UUID.version()
            raise InvalidRequest("TimeUUID supports only version 1 UUIDs")
        return u
    if name == "inet":
        if text == "":
            return EMPTY
        a = parse_inet(text)
        if a is None:
            raise InvalidRequest(f"Unable to make inet address from '{text}'")
        return a
    if name == "duration":
        return duration_from_string(text)
    if name == "blob":
        if len(text) % 2 or not _HEX_RE.match(text):
            raise InvalidRequest(f"cannot parse '{text}' as hex bytes")
        return bytes.fromhex(text)
    raise AssertionError(name)  # pragma: no cover


# ---------------------------------------------------------------------------
# term_to_value
# ---------------------------------------------------------------------------

_CONSTANT_TARGETS = {
    "string": frozenset({"ascii", "text", "inet", "date", "time", "timestamp"}),
    "integer": frozenset({"bigint", "counter", "date", "decimal", "double", "duration", "float",
                          "int", "smallint", "time", "timestamp", "tinyint", "varint"}),
    "uuid": frozenset({"uuid", "timeuuid"}),
    "float": frozenset({"decimal", "double", "float"}),
    "boolean": frozenset({"boolean"}),
    "hex": frozenset({"blob"}),
    "duration": frozenset({"duration"}),
}


def term_text(term, cql: bool = False) -> str:
    """Cassandra's Term.Raw.getText() of an ast term (used in error messages); with ``cql``, valid CQL that
    parses back to the same term (a string's quotes doubled)."""
    if cql:
        return _term_cql(term)
    if isinstance(term, ast.Constant):
        if term.kind == "string":
            return f"'{term.text}'"
        if term.kind == "null":
            return "NULL"
        return term.text
    if isinstance(term, ast.ListLiteral):
        return "[" + ", ".join(term_text(t) for t in term.items) + "]"
    if isinstance(term, ast.SetLiteral):
        return "{" + ", ".join(term_text(t) for t in term.items) + "}"
    if isinstance(term, ast.MapLiteral):
        return "{" + ", ".join(f"{term_text(k)}: {term_text(v)}" for k, v in term.entries) + "}"
    if isinstance(term, ast.TupleLiteral):
        return "(" + ", ".join(term_text(t) for t in term.items) + ")"
    if isinstance(term, ast.UdtLiteral):
        from logtide.schema.types import maybe_quote

        return "{" + ", ".join(f"{maybe_quote(k)}: {term_text(v)}" for k, v in term.fields) + "}"
    if isinstance(term, ast.BindMarker):
        return "?" if term.name is None else f":{term.name}"
    if isinstance(term, ast.TypeHint):
        from logtide.schema.types import type_expr_to_string

        return f"({type_expr_to_string(term.type)}){term_text(term.term)}"
    if isinstance(term, ast.FunctionCall):
        args = []
        for a in term.args:
            if isinstance(a, ast.TypeExpr):
                from logtide.schema.types import type_expr_to_string

                args.append(type_expr_to_string(a))
            elif isinstance(a, ast.ColumnRef):
                args.append(a.name)
            elif isinstance(a, ast.Star):
                args.append("*")
            else:
                args.append(term_text(a))
        n = f"{term.keyspace}.{term.name}" if term.keyspace else term.name
        return f"{n}({', '.join(args)})"
    return str(term)


def _term_cql(term) -> str:
    """``term_text(term, cql=True)``: strings quoted as CQL writes them, at any depth."""
    if isinstance(term, ast.Constant) and term.kind == "string":
        return "'" + term.text.replace("'", "''") + "'"
    if isinstance(term, (ast.ListLiteral, ast.SetLiteral, ast.TupleLiteral)):
        inner = ", ".join(_term_cql(t) for t in term.items)
        return {ast.ListLiteral: "[%s]", ast.SetLiteral: "{%s}", ast.TupleLiteral: "(%s)"}[type(term)] % inner
    if isinstance(term, ast.MapLiteral):
        return "{" + ", ".join(f"{_term_cql(k)}: {_term_cql(v)}" for k, v in term.entries) + "}"
    if isinstance(term, ast.UdtLiteral):
        from logtide.schema.types import maybe_quote

        return "{" + ", ".join(f"{maybe_quote(k)}: {_term_cql(v)}" for k, v in term.fields) + "}"
    if isinstance(term, ast.TypeHint):
        from logtide.schema.types import type_expr_to_string

        return f"({type_expr_to_string(term.type)}){_term_cql(term.term)}"
    return term_text(term)


class _Ctx:
    __slots__ = ("resolve", "keyspace", "lookup_udt", "root")

    def __init__(self, resolve, keyspace, lookup_udt, root):
        self.resolve = resolve
        self.keyspace = keyspace
        self.lookup_udt = lookup_udt
        self.root = root


def _is_empty_map_literal(term) -> bool:
    return isinstance(term, ast.MapLiteral) and not term.entries


def _test_all(terms, ctype, ctx) -> int:
    res = EXACT_MATCH
    for t in terms:
        r = test_assignment(t, ctype, ctx)
        if r == NOT_ASSIGNABLE:
            return NOT_ASSIGNABLE
        if r == WEAKLY_ASSIGNABLE:
            res = WEAKLY_ASSIGNABLE
    return res


def _value_compatible(receiver, other) -> bool:
    """AbstractType.isValueCompatibleWith (the cases that matter for type hints)."""
    if receiver == other:
        return True
    if receiver.kind == "native" and other.kind == "native":
        r, o = receiver.name, other.name
        if r == "blob":
            return True
        if r == "text" and o == "ascii":
            return True
        if r == "varint" and o in ("int", "bigint"):
            return True
        if (r, o) in (("bigint", "timestamp"), ("timestamp", "bigint")):
            return True
        return False
    if receiver.kind == other.kind and receiver.kind in ("list", "set", "map"):
        if receiver.is_multicell != other.is_multicell:
            return False
        if receiver.kind == "map":
            return receiver.key == other.key and _value_compatible(receiver.value, other.value)
        return _value_compatible(receiver.element, other.element) if receiver.kind == "list" else receiver.element == other.element
    return False


def _resolve_hint(term, ctx):
    from logtide.schema.types import resolve_type

    ks = ctx.keyspace
    lookup = ctx.lookup_udt
    if lookup is None:
        udts = {}

        def collect(t):
            if t.kind == "udt":
                udts[(t.keyspace, t.name)] = t
            for sub in getattr(t, "items", ()) if t.kind in ("tuple", "udt") else ():
                collect(sub)
            if t.kind in ("list", "set", "vector"):
                collect(t.element)
            if t.kind == "map":
                collect(t.key)
                collect(t.value)

        collect(ctx.root)
        if ks is None and udts:
            ks = next(iter(udts))[0]
        lookup = lambda k, n: udts.get((k, n))  # noqa: E731
    return resolve_type(term.type, ks, lookup)


def test_assignment(term, ctype, ctx) -> int:
    """Cassandra's AssignmentTestable.testAssignment of a raw term against a receiver type."""
    k = ctype.kind
    if isinstance(term, ast.Constant):
        if term.kind == "null":
            return NOT_ASSIGNABLE if ctype.is_counter else WEAKLY_ASSIGNABLE
        if k in ("list", "set", "map", "udt", "vector"):
            return NOT_ASSIGNABLE
        if k == "tuple":
            return WEAKLY_ASSIGNABLE  # not a native type: Cassandra skips validation
        targets = _CONSTANT_TARGETS.get(term.kind, frozenset())
        return WEAKLY_ASSIGNABLE if ctype.name in targets else NOT_ASSIGNABLE
    if isinstance(term, (ast.BindMarker, ast.FunctionCall)):
        return WEAKLY_ASSIGNABLE
    if isinstance(term, ast.ListLiteral):
        if k == "vector":  # a list literal is a vector literal when a vector receives it (ScyllaDB)
            return _test_all(term.items, ctype.element, ctx) if term.items else WEAKLY_ASSIGNABLE
        if k != "list":
            return NOT_ASSIGNABLE
        if not term.items:
            return WEAKLY_ASSIGNABLE
        return _test_all(term.items, ctype.element, ctx)
    if isinstance(term, ast.SetLiteral):
        if k != "set":
            return NOT_ASSIGNABLE
        if not term.items:
            return WEAKLY_ASSIGNABLE
        return _test_all(term.items, ctype.element, ctx)
    if isinstance(term, ast.MapLiteral):
        if not term.entries:
            return WEAKLY_ASSIGNABLE if k in ("set", "map") else NOT_ASSIGNABLE
        if k != "map":
            return NOT_ASSIGNABLE
        res = EXACT_MATCH
        for kt, vt in term.entries:
            r1 = test_assignment(kt, ctype.key, ctx)
            r2 = test_assignment(vt, ctype.value, ctx)
            if NOT_ASSIGNABLE in (r1, r2):
                return NOT_ASSIGNABLE
            if r1 != EXACT_MATCH or r2 != EXACT_MATCH:
                res = WEAKLY_ASSIGNABLE
        return res
    if isinstance(term, ast.TupleLiteral):
        try:
            _validate_tuple(term, ctype, "", ctx)
            return WEAKLY_ASSIGNABLE
        except InvalidRequest:
            return NOT_ASSIGNABLE
    if isinstance(term, ast.UdtLiteral):
        try:
            _validate_udt(term, ctype, "", ctx)
            return WEAKLY_ASSIGNABLE
        except InvalidRequest:
            return NOT_ASSIGNABLE
    if isinstance(term, ast.TypeHint):
        casted = _resolve_hint(term, ctx)
        if ctype == casted:
            return EXACT_MATCH
        if _value_compatible(ctype, casted) or widenable(casted, ctype):
            return WEAKLY_ASSIGNABLE
        return NOT_ASSIGNABLE
    return NOT_ASSIGNABLE


def literal_test_assignment(term, ctype) -> int:
    """``test_assignment`` of a raw term on its own (no bind values): how a literal fits a function parameter."""
    return test_assignment(term, ctype, _Ctx(None, None, None, ctype))


def _validate_tuple(term, ctype, receiver, ctx):
    """A tuple literal for a tuple, or for a user type, whose fields it gives in order (ScyllaDB: a user type is a
    tuple type, ``(7)`` is a ``frozen<ut>`` of one field)."""
    if ctype.kind not in ("tuple", "udt"):
        raise InvalidRequest(f"Invalid tuple type literal for {receiver} of type {ctype.cql()}")
    types = ctype.items
    for i, item in enumerate(term.items):
        if i >= len(types):
            raise InvalidRequest(
                f"Invalid tuple literal for {receiver}: too many elements. Type {ctype.cql()} "
                f"expects {len(types)} but got {len(term.items)}"
            )
        if test_assignment(item, types[i], ctx) == NOT_ASSIGNABLE:
            raise InvalidRequest(
                f"Invalid tuple literal for {receiver}: component {i} is not of type {types[i].cql()}"
            )


def _validate_udt(term, ctype, receiver, ctx):
    if ctype.kind != "udt":
        raise InvalidRequest(f"Invalid user type literal for {receiver} of type {ctype.cql()}")
    given = dict(term.fields)
    for fname, ftype in zip(ctype.field_names, ctype.field_types):
        value = given.get(fname)
        if value is None:
            continue
        if test_assignment(value, ftype, ctx) == NOT_ASSIGNABLE:
            from logtide.schema.types import maybe_quote

            raise InvalidRequest(
                f"Invalid user type literal for {receiver}: field {maybe_quote(fname)} is not of type {ftype.cql()}"
            )


def decimal_scale_fits(d: Decimal) -> bool:
    """A decimal's scale (the negated exponent) is a signed 32-bit integer, as Java's BigDecimal's and
    ScyllaDB's ``big_decimal``: ``1e2147483649`` has none."""
    exponent = d.as_tuple().exponent
    return isinstance(exponent, int) and -2**31 <= -exponent <= 2**31 - 1


def _constant_value(term, ctype, receiver):
    if term.kind == "null":
        if ctype.is_counter:
            raise InvalidRequest("Invalid null value for counter increment/decrement")
        return None
    if ctype.kind == "tuple":
        return _tuple_from_string(ctype, term.text)
    if test_assignment(term, ctype, None) == NOT_ASSIGNABLE:
        raise InvalidRequest(
            f'Invalid {term.kind.upper()} constant ({term.text}) for "{receiver}" of type {ctype.cql()}'
        )
    if term.kind == "hex":
        return value_from_string(_BLOB, term.text[2:])
    if ctype.name == "counter":
        return value_from_string(_BIGINT, term.text)
    return value_from_string(ctype, term.text)


def _tuple_from_string(ctype, source: str):
    """TupleType.fromString: components separated by unescaped ':' ('@' is null)."""
    parts, cur, i = [], [], 0
    while i < len(source):
        c = source[i]
        if c == "\\" and i + 1 < len(source):
            cur.append(source[i + 1])
            i += 2
            continue
        if c == ":":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    types = ctype.items
    if len(parts) > len(types):
        raise InvalidRequest(
            f"Invalid tuple literal: too many elements. Type {ctype.cql()} expects {len(types)} but got {len(parts)}"
        )
    out = []
    for p, t in zip(parts, types):
        if p == "@":
            out.append(None)
        elif t.kind == "native":
            out.append(value_from_string(t, p))
        else:
            raise InvalidRequest(f"Unable to parse tuple component '{p}' of type {t.cql()}")
    return tuple(out)


_BLOB = None
_BIGINT = None


def _init_types():
    global _BLOB, _BIGINT
    if _BLOB is None:
        from logtide.schema.types import NativeType

        _BLOB, _BIGINT = NativeType("blob"), NativeType("bigint")


def _prepare(term, ctype, receiver: str, ctx: _Ctx, in_collection: Optional[str] = None):
    """Cassandra's Term.Raw.prepare + bind for terminal values."""
    if isinstance(term, (ast.BindMarker, ast.FunctionCall)):
        if in_collection is not None and isinstance(term, ast.BindMarker):
            raise InvalidRequest(
                f"Invalid {in_collection} literal for {receiver}: bind variables are not supported inside collection literals"
            )
        if ctx.resolve is None:
            raise InvalidRequest(f"Cannot resolve {term_text(term)} for {receiver}")
        return ctx.resolve(term, ctype, receiver)
    if isinstance(term, ast.Constant):
        return _constant_value(term, ctype, receiver)
    if isinstance(term, ast.TypeHint):
        from logtide.schema.types import type_expr_to_string

        casted = _resolve_hint(term, ctx)
        if test_assignment(term.term, casted, ctx) == NOT_ASSIGNABLE:
            raise InvalidRequest(
                f"Cannot cast value {term_text(term.term)} to type {type_expr_to_string(term.type)}"
            )
        if test_assignment(term, ctype, ctx) == NOT_ASSIGNABLE:
            raise InvalidRequest(
                f"Cannot assign value {term_text(term)} to {receiver} of type {ctype.cql()}"
            )
        if casted.kind == "native" and ctype.kind == "native" and casted != ctype:
            # ScyllaDB's C-style cast: the value of the hinted type, reinterpreted (int -> blob) or widened
            # (int -> bigint) to the receiver's type
            return convert(_prepare(term.term, casted, receiver, ctx), casted, ctype)
        return _prepare(term.term, ctype, receiver, ctx)
    if isinstance(term, ast.ListLiteral):
        return _prepare_list(term, ctype, receiver, ctx)
    if isinstance(term, ast.SetLiteral):
        return _prepare_set(term.items, ctype, receiver, ctx)
    if isinstance(term, ast.MapLiteral):
        if not term.entries:
            return _prepare_set((), ctype, receiver, ctx)
        return _prepare_map(term, ctype, receiver, ctx)
    if isinstance(term, ast.TupleLiteral):
        return _prepare_tuple(term, ctype, receiver, ctx)
    if isinstance(term, ast.UdtLiteral):
        return _prepare_udt(term, ctype, receiver, ctx)
    raise InvalidRequest(f"Invalid value {term!r} for {receiver}")


def _prepare_vector(term, ctype, receiver, ctx):
    """A list literal received by a vector column, with ScyllaDB's checks and messages."""
    if len(term.items) != ctype.dimension:
        raise InvalidRequest(f"Invalid vector literal for {receiver}: type {ctype.cql()} expects "
                             f"{ctype.dimension} elements but got {len(term.items)}")
    el = ctype.element
    for t in term.items:
        if test_assignment(t, el, ctx) == NOT_ASSIGNABLE:
            raise InvalidRequest(f"Invalid vector literal for {receiver}: value {term_text(t)} is not of type "
                                 f"{el.unfreeze().cql()}")
    vname = f"value({receiver})"
    values = [_prepare(t, el, vname, ctx) for t in term.items]  # bind markers too (ScyllaDB takes them)
    for v in values:
        if v is None:
            raise InvalidRequest("null is not supported inside vectors")
        if v is UNSET_():
            return UNSET_()
    return values


def _prepare_list(term, ctype, receiver, ctx):
    if ctype.kind == "vector":
        return _prepare_vector(term, ctype, receiver, ctx)
    if ctype.kind != "list":
        raise InvalidRequest(f"Invalid list literal for {receiver} of type {ctype.cql()}")
    el = ctype.element
    for t in term.items:
        if test_assignment(t, el, ctx) == NOT_ASSIGNABLE:
            raise InvalidRequest(
                f"Invalid list literal for {receiver}: value {term_text(t)} is not of type {el.cql()}"
            )
    vname = f"value({receiver})"
    out = []
    values = []
    for t in term.items:
        if isinstance(t, ast.BindMarker):
            raise InvalidRequest(
                f"Invalid list literal for {receiver}: bind variables are not supported inside collection literals"
            )
        values.append(_prepare(t, el, vname, ctx))
    for v in values:
        if v is None:
            raise InvalidRequest("null is not supported inside collections")
        if v is UNSET_():
            return UNSET_()
        out.append(v)
    return out


def UNSET_():
    from logtide.schema.types import UNSET

    return UNSET


def _prepare_set(items, ctype, receiver, ctx):
    if ctype.kind != "set":
        if ctype.kind == "map" and not items:
            return make_map(ctype.key, [])
        raise InvalidRequest(f"Invalid set literal for {receiver} of type {ctype.cql()}")
    el = ctype.element
    for t in items:
        if test_assignment(t, el, ctx) == NOT_ASSIGNABLE:
            raise InvalidRequest(
                f"Invalid set literal for {receiver}: value {term_text(t)} is not of type {el.cql()}"
            )
    vname = f"value({receiver})"
    values = []
    for t in items:
        if isinstance(t, ast.BindMarker):
            raise InvalidRequest(
                f"Invalid set literal for {receiver}: bind variables are not supported inside collection literals"
            )
        values.append(_prepare(t, el, vname, ctx))
    unset = UNSET_()
    for v in values:
        if v is None:
            raise InvalidRequest("null is not supported inside collections")
        if v is unset:
            return unset
    return sorted_set_of(el, values)


def sorted_set_of(el, values):
    """A SortedSet of values in Cassandra's comparator order, duplicates removed."""
    seen = {}
    ser, comp = el._serializer, el._comparable
    for v in values:
        c = comp(ser(v))
        if c not in seen:
            seen[c] = v
    return make_sorted_set([seen[c] for c in sorted(seen)])


def map_of(kt, pairs):
    """An OrderedMapSerializedKey of (key, value) pairs in Cassandra's key order (last value wins)."""
    seen = {}
    ser, comp = kt._serializer, kt._comparable
    for k, v in pairs:
        kb = ser(k)
        c = comp(kb)
        if c in seen:
            seen[c] = (seen[c][0], seen[c][1], v)
        else:
            seen[c] = (k, kb, v)
    return make_map(kt, [seen[c] for c in sorted(seen)])


def _prepare_map(term, ctype, receiver, ctx):
    if ctype.kind != "map":
        raise InvalidRequest(f"Invalid map literal for {receiver} of type {ctype.cql()}")
    kt, vt = ctype.key, ctype.value
    for k, v in term.entries:
        if test_assignment(k, kt, ctx) == NOT_ASSIGNABLE:
            raise InvalidRequest(
                f"Invalid map literal for {receiver}: key {term_text(k)} is not of type {kt.cql()}"
            )
        if test_assignment(v, vt, ctx) == NOT_ASSIGNABLE:
            raise InvalidRequest(
                f"Invalid map literal for {receiver}: value {term_text(v)} is not of type {vt.cql()}"
            )
    kname, vname = f"key({receiver})", f"value({receiver})"
    pairs = []
    for k, v in term.entries:
        if isinstance(k, ast.BindMarker) or isinstance(v, ast.BindMarker):
            raise InvalidRequest(
                f"Invalid map literal for {receiver}: bind variables are not supported inside collection literals"
            )
        pairs.append((_prepare(k, kt, kname, ctx), _prepare(v, vt, vname, ctx)))
    unset = UNSET_()
    for k, v in pairs:
        if k is None or v is None:
            raise InvalidRequest("null is not supported inside collections")
        if k is unset:
            raise InvalidRequest("unset value is not supported for map keys")
        if v is unset:
            return unset
    return map_of(kt, pairs)


def _prepare_tuple(term, ctype, receiver, ctx):
    _validate_tuple(term, ctype, receiver, ctx)
    types = ctype.items
    out = []
    unset = UNSET_()
    for i, t in enumerate(term.items):
        v = _prepare(t, types[i], f"{receiver}[{i}]", ctx)
        if v is unset:
            raise InvalidRequest(f"Invalid unset value for tuple field number {i}")
        out.append(v)
    if ctype.kind == "udt":  # the fields in order, the ones not given null
        return ctype.make_value(*out, *([None] * (len(types) - len(out))))
    return tuple(out)


def _prepare_udt(term, ctype, receiver, ctx):
    _validate_udt(term, ctype, receiver, ctx)
    given = {}
    for fname, t in term.fields:
        given[fname] = t
    unknown = [f for f in given if f not in ctype.field_names]
    vals = []
    unset = UNSET_()
    for fname, ftype in zip(ctype.field_names, ctype.field_types):
        t = given.get(fname)
        if t is None:
            vals.append(None)
            continue
        v = _prepare(t, ftype, f"{receiver}.{fname}", ctx)
        if v is unset:
            if ctype.frozen:
                raise InvalidRequest(
                    f"Invalid unset value for field '{fname}' of user defined type {ctype.name}"
                )
            v = None
        vals.append(v)
    if unknown:
        raise InvalidRequest(f"Unknown field '{unknown[0]}' in value of user defined type {ctype.name}")
    return ctype.make_value(*vals)


def term_to_value(term, ctype, receiver: str, resolve: Optional[Callable] = None, *,
                  keyspace: Optional[str] = None, lookup_udt=None) -> Any:
    """Convert an ast term to a Python value of ``ctype`` exactly as Cassandra validates literals.

    ``resolve(term, ctype, receiver)`` is called for bind markers and function calls.
    ``keyspace``/``lookup_udt`` are only needed for type hints naming user types that do not
    occur in ``ctype`` itself.
    """
    _init_types()
    return _prepare(term, ctype, receiver, _Ctx(resolve, keyspace, lookup_udt, ctype))


# ---------------------------------------------------------------------------
# python_to_value
# ---------------------------------------------------------------------------


def _bad(ctype, obj, receiver, why=None) -> InvalidRequest:
    msg = f'Invalid {type(obj).__name__} value {obj!r} for "{receiver}" of type {ctype.cql()}'
    if why:
        msg += f": {why}"
    return InvalidRequest(msg)


_UNSET: list = []  # logtide.schema.types.UNSET, looked up once (that module imports this one)


def python_to_value(ctype, obj, receiver: str) -> Any:
    """Validate/coerce a bound Python value (what cassandra-driver accepts for the type)."""
    if not _UNSET:
        from logtide.schema.types import UNSET
        _UNSET.append(UNSET)
    if obj is None or obj is _UNSET[0] or obj is EMPTY:
        return obj
    k = ctype.kind
    if k == "native":
        return _native_python(ctype, obj, receiver)
    if k == "list":
        if isinstance(obj, (str, bytes, bytearray, Mapping)) or not hasattr(obj, "__iter__"):
            raise _bad(ctype, obj, receiver, "expected a list")
        out = []
        for x in obj:
            if x is None:
                raise InvalidRequest("null is not supported inside collections")
            out.append(python_to_value(ctype.element, x, f"value({receiver})"))
        return out
    if k == "set":
        if isinstance(obj, (str, bytes, bytearray, Mapping)) or not hasattr(obj, "__iter__"):
            raise _bad(ctype, obj, receiver, "expected a set")
        vals = []
        for x in obj:
            if x is None:
                raise InvalidRequest("null is not supported inside collections")
            vals.append(python_to_value(ctype.element, x, f"value({receiver})"))
        return sorted_set_of(ctype.element, vals)
    if k == "map":
        if not isinstance(obj, Mapping) and not hasattr(obj, "items"):
            raise _bad(ctype, obj, receiver, "expected a map")
        pairs = []
        for kk, vv in obj.items():
            if kk is None or vv is None:
                raise InvalidRequest("null is not supported inside collections")
            pairs.append((python_to_value(ctype.key, kk, f"key({receiver})"),
                          python_to_value(ctype.value, vv, f"value({receiver})")))
        return map_of(ctype.key, pairs)
    if k == "tuple":
        if not isinstance(obj, (tuple, list)):
            raise _bad(ctype, obj, receiver, "expected a tuple")
        types = ctype.items
        if len(obj) > len(types):
            raise InvalidRequest(
                f"Tuple value contained too many fields (expected {len(types)}, got {len(obj)})"
            )
        return tuple(python_to_value(t, x, f"{receiver}[{i}]") for i, (x, t) in enumerate(zip(obj, types)))
    if k == "vector":
        if isinstance(obj, (str, bytes, bytearray, Mapping)) or not hasattr(obj, "__iter__"):
            raise _bad(ctype, obj, receiver, "expected a list")
        items = list(obj)
        if len(items) != ctype.dimension:
            raise _bad(ctype, obj, receiver, f"expected {ctype.dimension} elements, got {len(items)}")
        if any(x is None for x in items):
            raise InvalidRequest("null is not supported inside vectors")
        return [python_to_value(ctype.element, x, f"value({receiver})") for x in items]
    if k == "udt":
        if isinstance(obj, (str, bytes, bytearray, int, float)):
            raise _bad(ctype, obj, receiver, "expected a user type value")
        if isinstance(obj, Mapping):
            unknown = [f for f in obj if f not in ctype.field_names]
            if unknown:
                raise InvalidRequest(
                    f"Unknown field '{unknown[0]}' in value of user defined type {ctype.name}"
                )
        vals = udt_field_values(ctype, obj)
        return ctype.make_value(*[
            python_to_value(t, x, f"{receiver}.{n}")
            for x, t, n in zip(vals, ctype.field_types, ctype.field_names)
        ])
    raise AssertionError(k)


def _native_python(ctype, obj, receiver):
    name = ctype.name
    if name in _RANGES:
        if isinstance(obj, int):
            lo, hi, _ = _RANGES[name]
            if not lo <= obj <= hi:
                raise _bad(ctype, obj, receiver, f"out of range [{lo}, {hi}]")
            return int(obj)
        raise _bad(ctype, obj, receiver)
    if name == "varint":
        if isinstance(obj, int):
            return obj if type(obj) is PaddedVarint else int(obj)  # a key's bytes as sent stay (ScyllaDB)
        raise _bad(ctype, obj, receiver)
    if name in ("text", "ascii"):
        if isinstance(obj, str):
            if name == "ascii":
                try:
                    obj.encode("ascii")
                except UnicodeEncodeError:
                    raise _bad(ctype, obj, receiver, "non-ASCII characters") from None
            return obj
        raise _bad(ctype, obj, receiver)
    if name == "blob":
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return bytes(obj)
        raise _bad(ctype, obj, receiver)
    if name == "boolean":
        if isinstance(obj, bool):
            return obj
        if isinstance(obj, int) and -128 <= obj <= 127:
            return bool(obj)
        raise _bad(ctype, obj, receiver)
    if name == "decimal":
        if isinstance(obj, bool):
            raise _bad(ctype, obj, receiver)
        try:
            if isinstance(obj, Decimal):
                d = obj
            elif isinstance(obj, int):
                d = Decimal(obj)
            elif isinstance(obj, float):
                d = Decimal(repr(obj))
            elif isinstance(obj, str):
                d = Decimal(obj)
            else:
                raise _bad(ctype, obj, receiver)
        except InvalidOperation:
            raise _bad(ctype, obj, receiver) from None
        if not d.is_finite():
            raise _bad(ctype, obj, receiver, "not a finite number")
        if not decimal_scale_fits(d):
            raise _bad(ctype, obj, receiver, "its scale does not fit in 32 bits")
        return d
    if name in ("float", "double"):
        if isinstance(obj, bool) or not isinstance(obj, (int, float, Decimal)):
            raise _bad(ctype, obj, receiver)
        try:
            v = float(obj)
        except OverflowError:
            raise _bad(ctype, obj, receiver, "out of range") from None
        if name == "float":
            if not math.isinf(v) and not math.isnan(v) and abs(v) > FLOAT32_MAX:
                try:
                    struct.pack(">f", v)
                except OverflowError:
                    raise _bad(ctype, obj, receiver, "out of range for float") from None
            return to_float32(v)
        return v
    if name == "timestamp":
        if isinstance(obj, datetime.datetime):
            if obj.tzinfo is not None:
                obj = obj.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            return obj
        if isinstance(obj, datetime.date):
            return datetime.datetime(obj.year, obj.month, obj.day)
        if isinstance(obj, bool):
            raise _bad(ctype, obj, receiver)
        if isinstance(obj, (int, float)):
            ms = int(obj)
            if not -(2**63) <= ms < 2**63:
                raise _bad(ctype, obj, receiver, "out of range")
            return timestamp_from_millis(ms)
        raise _bad(ctype, obj, receiver)
    if name == "date":
        if isinstance(obj, _cutil.Date):
            days = obj.days_from_epoch
        elif isinstance(obj, (datetime.date, datetime.datetime)):
            days = (datetime.date(obj.year, obj.month, obj.day) - datetime.date(1970, 1, 1)).days
        elif isinstance(obj, int) and not isinstance(obj, bool):
            if not 0 <= obj <= 2**32 - 1:
                raise _bad(ctype, obj, receiver, "out of range")
            days = obj - 2**31
        elif isinstance(obj, str):
            try:
                days = date_days_from_string(obj)
            except InvalidRequest as e:
                raise _bad(ctype, obj, receiver, e.message) from None
        else:
            raise _bad(ctype, obj, receiver)
        if not _MIN_DAYS <= days <= _MAX_DAYS:
            raise _bad(ctype, obj, receiver, "out of range")
        return _cutil.Date(days)
    if name == "time":
        if isinstance(obj, _cutil.Time):
            return obj
        if isinstance(obj, datetime.time):
            return _cutil.Time(obj)
        if isinstance(obj, int) and not isinstance(obj, bool):
            if not 0 <= obj < _DAY_NANOS:
                raise _bad(ctype, obj, receiver, "out of range")
            return _cutil.Time(obj)
        if isinstance(obj, str):
            try:
                return _cutil.Time(time_nanos_from_string(obj))
            except InvalidRequest as e:
                raise _bad(ctype, obj, receiver, e.message) from None
        raise _bad(ctype, obj, receiver)
    if name in ("uuid", "timeuuid"):
        if not isinstance(obj, _uuid.UUID):
            raise _bad(ctype, obj, receiver)
        if name == "timeuuid" and (obj.int >> 76) & 0xF != 1:
            raise _bad(ctype, obj, receiver, "TimeUUID supports only version 1 UUIDs")
        return obj
    if name == "inet":
        if isinstance(obj, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
            obj = str(obj)
        if isinstance(obj, str):
            a = parse_inet(obj)
            if a is None:
                raise _bad(ctype, obj, receiver, "not an IP address")
            return a
        raise _bad(ctype, obj, receiver)
    if name == "duration":
        if isinstance(obj, _cutil.Duration):
            m, d, n = obj.months, obj.days, obj.nanoseconds
            if not ((m >= 0 and d >= 0 and n >= 0) or (m <= 0 and d <= 0 and n <= 0)):
                raise InvalidRequest(
                    f"The duration months, days and nanoseconds must be all of the same sign ({m}, {d}, {n})"
                )
            if not (-(2**31) <= m < 2**31 and -(2**31) <= d < 2**31 and -(2**63) <= n < 2**63):
                raise _bad(ctype, obj, receiver, "out of range")
            return obj
        raise _bad(ctype, obj, receiver)
    raise AssertionError(name)  # pragma: no cover
