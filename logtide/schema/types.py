"""CQL types: resolution from the grammar, type strings, codecs, ordering, JSON.

CONTRACT (other modules rely on exactly these names):

Type objects (frozen dataclasses, hashable, compared by value):
    NativeType(name)                       name in NATIVE_TYPE_NAMES ('varchar' is normalised to 'text')
    ListType(element, frozen)              frozen=False: a non-frozen (multi-cell) list
    SetType(element, frozen)
    MapType(key, value, frozen)
    TupleType(items)                       always frozen
    VectorType(element, dimension)         always frozen (Cassandra 5 / ScyllaDB vector<T, N>)
    UserType(keyspace, name, field_names, field_types, frozen)
    CounterType is NativeType('counter').

Every type has:
    .cql() -> str             the type string as system_schema.columns shows it:
                              'int', 'text', 'frozen<map<int, text>>', 'map<int, text>',
                              'frozen<ut>' (UDTs unqualified), 'tuple<int, text>' (tuples are
                              shown without frozen<> in Cassandra 4: 'frozen<tuple<int, text>>'
                              inside columns of Scylla -- see the implementation note).
    .is_multicell -> bool     True for non-frozen list/set/map/UDT
    .is_collection -> bool    list/set/map (frozen or not)
    .is_counter -> bool
    .freeze() -> type         the frozen version (recursively unchanged inside)
    .driver_type              the cassandra-driver cqltypes class used for codecs
    .serialize(value) -> bytes        Python value (cassandra-driver conventions) -> protocol v4 bytes
    .deserialize(data) -> value       bytes -> Python value (cassandra-driver conventions)
    .comparable(data) -> bytes        order-preserving, prefix-free byte encoding of serialized
                                      bytes (Cassandra's comparator order; empty value sorts first)
    .compare(a, b) -> int             -1/0/1 on serialized bytes, Cassandra's comparator

Module functions:
    resolve_type(expr: ast.TypeExpr, keyspace: str, lookup_udt) -> type
        lookup_udt(keyspace, name) -> UserType | None.  Applies Cassandra's validation
        (non-frozen collections may not nest, frozen<> only around collections/UDTs/tuples,
        unknown types, ...) raising InvalidRequest / ConfigurationException.
    parse_type_string(text: str, keyspace: str, lookup_udt) -> type       inverse of .cql()
    term_to_value(term, ctype, receiver: str, resolve) -> value
        Converts an ast term (Constant, collection/tuple/UDT literal, TypeHint) to a Python
        value of ctype, validating as Cassandra does and raising InvalidRequest with
        Cassandra's messages (e.g. 'Invalid STRING constant (abc) for "v" of type int').
        For BindMarker and FunctionCall nodes it calls resolve(term, ctype, receiver) which
        returns the value (or UNSET).  Returns None for null.
    python_to_value(ctype, obj, receiver) -> value     validates/coerces a bound Python value
    to_json(ctype, value) -> str                 Cassandra's toJson() text for a value
    from_json(ctype, obj, receiver) -> value     value from parsed JSON (INSERT JSON / fromJson)
    UNSET                                        sentinel for unset bind values

Python value conventions (the cassandra-driver's): ascii/text str; bigint/int/smallint/tinyint/
varint/counter int; blob bytes; boolean bool; date cassandra.util.Date; decimal Decimal;
double/float float; duration cassandra.util.Duration; inet str; time cassandra.util.Time;
timestamp datetime.datetime (naive, UTC); uuid/timeuuid uuid.UUID; list list; set
cassandra.util.SortedSet; map cassandra.util.OrderedMapSerializedKey (or dict when building);
tuple tuple; UDT the namedtuple-like class cassandra-driver builds for the user type.

IMPLEMENTATION NOTES (decisions where Cassandra's behaviour needed interpreting):

* Type strings follow Cassandra 4's ``CQL3Type.toString()``: frozen collections print as
  ``frozen<...>``, nested collections inside a frozen collection print with their own
  ``frozen<>`` (``frozen<map<int, frozen<list<text>>>>``, because Cassandra freezes them
  recursively), tuples always print as ``frozen<tuple<...>>`` (Cassandra 3/4 and Scylla both
  show tuple columns like this), UDTs print unqualified (``ut`` / ``frozen<ut>``), quoted when
  the name needs quoting.  ``parse_type_string`` is the exact inverse (it does not freeze
  anything by itself), so ``parse_type_string(t.cql()) == t``.
* The empty value (zero-length bytes) of a type for which it is not a regular value (ints,
  timestamps, uuids, ...) deserializes to ``cassandra.cqltypes.EMPTY`` and EMPTY serializes
  to ``b''``.  ``serialize(None)`` returns ``None`` (a null).
* Sets and maps are serialized with their elements in Cassandra's comparator order (the
  order Cassandra stores them in), duplicates (by comparator) removed, so the serialized form
  of a frozen set/map is canonical.  Deserialized sets are ``SortedSet`` objects whose items
  are kept in that (Cassandra) order.
* ``comparable`` tags every encoding with a first byte (0x00 for the empty value, 0x01
  otherwise).  Tuples/UDTs encode exactly ``len(type)`` components, a null or missing one as
  0x00, so, as in Cassandra's TupleType comparator, trailing nulls compare equal to missing
  components.

One idea split for size with ``types_literal.py`` and ``types_json.py``: the CQL types, whose literal and
JSON conversions those modules hold and this one re-exports.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Callable, Optional

from cassandra import cqltypes as _ct

from logtide.errors import ConfigurationException, InvalidRequest, SyntaxException

PROTOCOL_VERSION = 4
EMPTY = _ct.EMPTY

NATIVE_TYPE_NAMES = frozenset(
    {
        "ascii", "bigint", "blob", "boolean", "counter", "date", "decimal", "double",
        "duration", "float", "inet", "int", "smallint", "text", "time", "timestamp",
        "timeuuid", "tinyint", "uuid", "varchar", "varint",
    }
)

# Cassandra's reserved keywords (ReservedKeywords.java): identifiers equal to one of these
# must be quoted when printed.
RESERVED_KEYWORDS = frozenset(
    """add allow alter and apply asc authorize batch begin by columnfamily create default delete
    desc describe drop entries execute from full grant if in index infinity insert into is
    keyspace limit materialized mbean mbeans modify nan norecursive not null of on or order
    primary rename replace revoke schema select set table to token truncate unlogged unset
    update use using view where with""".split()
)

_UNQUOTED_IDENT = re.compile(r"[a-z][a-z0-9_]*\Z")


def maybe_quote(name: str) -> str:
    """Cassandra's ColumnIdentifier.maybeQuote: quote an identifier when it needs quoting."""
    if _UNQUOTED_IDENT.match(name) and name not in RESERVED_KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


class _Unset:
    """The 'unset' bind value (protocol v4 unset)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self):
        return (_Unset, ())

    def __bool__(self) -> bool:
        return False


UNSET = _Unset()


# ---------------------------------------------------------------------------
# Type objects
# ---------------------------------------------------------------------------


class CqlType:
    """Behaviour shared by every type object (the concrete classes are frozen dataclasses)."""

    kind: str = ""
    is_collection = False
    is_counter = False

    # -- pickling: drop cached codec functions (driver classes are dynamic) --
    def __getstate__(self):
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def __setstate__(self, state):
        for k, v in state.items():
            object.__setattr__(self, k, v)

    @property
    def is_multicell(self) -> bool:
        return False

    @property
    def is_frozen(self) -> bool:
        return not self.is_multicell

    def freeze(self) -> "CqlType":
        return self

    def unfreeze(self) -> "CqlType":
        return self

    def cql(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def __str__(self) -> str:
        return self.cql()

    # -- codecs -------------------------------------------------------------

    @cached_property
    def driver_type(self):
        return _build_driver_type(self)

    @cached_property
    def _serializer(self) -> Callable[[Any], bytes]:
        from logtide.schema.types_codec import make_serializer

        return make_serializer(self)

    @cached_property
    def _deserializer(self) -> Callable[[bytes], Any]:
        from logtide.schema.types_codec import make_deserializer

        return make_deserializer(self)

    @cached_property
    def _comparable(self) -> Callable[[bytes], bytes]:
        from logtide.schema.types_order import make_comparable

        return make_comparable(self)

    def serialize(self, value: Any) -> Optional[bytes]:
        if value is None:
            return None
        return self._serializer(value)

    def deserialize(self, data: Optional[bytes]) -> Any:
        if data is None:
            return None
        return self._deserializer(data)

    def comparable(self, data: bytes) -> bytes:
        return self._comparable(data)

    def compare(self, a: bytes, b: bytes) -> int:
        f = self._comparable
        ca = f(a)
        cb = f(b)
        return (ca > cb) - (ca < cb)

    def references_duration(self) -> bool:
        return False

    def references_udt(self, keyspace: str, name: str) -> bool:
        return False


@dataclass(frozen=True, eq=True)
class NativeType(CqlType):
    name: str

    def __post_init__(self):
        if self.name == "varchar":
            object.__setattr__(self, "name", "text")
        if self.name not in NATIVE_TYPE_NAMES:
            raise ValueError(f"unknown native type {self.name!r}")

    kind = "native"

    @property
    def is_counter(self) -> bool:  # type: ignore[override]
        return self.name == "counter"

    def cql(self) -> str:
        return self.name

    def references_duration(self) -> bool:
        return self.name == "duration"


@dataclass(frozen=True, eq=True)
class _ElementCollection(CqlType):
    """A list or a set: a collection of one element type (``kind`` names which)."""

    element: CqlType
    frozen: bool = False

    is_collection = True

    @property
    def is_multicell(self) -> bool:
        return not self.frozen

    def freeze(self) -> "_ElementCollection":
        return self if self.frozen else type(self)(self.element, True)

    def unfreeze(self) -> "_ElementCollection":
        return type(self)(self.element, False) if self.frozen else self

    def cql(self) -> str:
        s = self.kind + "<" + self.element.cql() + ">"
        return "frozen<" + s + ">" if self.frozen else s

    def references_duration(self) -> bool:
        return self.element.references_duration()

    def references_udt(self, keyspace, name) -> bool:
        return self.element.references_udt(keyspace, name)


@dataclass(frozen=True, eq=True)
class ListType(_ElementCollection):
    """``list<element>``, frozen or not."""

    kind = "list"


@dataclass(frozen=True, eq=True)
class SetType(_ElementCollection):
    """``set<element>``, frozen or not."""

    kind = "set"


@dataclass(frozen=True, eq=True)
class MapType(CqlType):
    key: CqlType
    value: CqlType
    frozen: bool = False

    kind = "map"
    is_collection = True

    @property
    def is_multicell(self) -> bool:
        return not self.frozen

    def freeze(self) -> "MapType":
        return self if self.frozen else MapType(self.key, self.value, True)

    def unfreeze(self) -> "MapType":
        return MapType(self.key, self.value, False) if self.frozen else self

    def cql(self) -> str:
        s = "map<" + self.key.cql() + ", " + self.value.cql() + ">"
        return "frozen<" + s + ">" if self.frozen else s

    def references_duration(self) -> bool:
        return self.key.references_duration() or self.value.references_duration()

    def references_udt(self, keyspace, name) -> bool:
        return self.key.references_udt(keyspace, name) or self.value.references_udt(keyspace, name)


@dataclass(frozen=True, eq=True)
class TupleType(CqlType):
    items: tuple

    def __post_init__(self):
        if not isinstance(self.items, tuple):
            object.__setattr__(self, "items", tuple(self.items))

    kind = "tuple"

    def cql(self) -> str:
        return "frozen<tuple<" + ", ".join(t.cql() for t in self.items) + ">>"

    def references_duration(self) -> bool:
        return any(t.references_duration() for t in self.items)

    def references_udt(self, keyspace, name) -> bool:
        return any(t.references_udt(keyspace, name) for t in self.items)


@dataclass(frozen=True, eq=True)
class UserType(CqlType):
    keyspace: str
    name: str
    field_names: tuple
    field_types: tuple
    frozen: bool = True

    def __post_init__(self):
        if not isinstance(self.field_names, tuple):
            object.__setattr__(self, "field_names", tuple(self.field_names))
        if not isinstance(self.field_types, tuple):
            object.__setattr__(self, "field_types", tuple(self.field_types))

    kind = "udt"

    @property
    def is_multicell(self) -> bool:
        return not self.frozen

    def freeze(self) -> "UserType":
        return self if self.frozen else dataclasses.replace(self, frozen=True)

    def unfreeze(self) -> "UserType":
        return dataclasses.replace(self, frozen=False) if self.frozen else self

    def cql(self) -> str:
        n = maybe_quote(self.name)
        return "frozen<" + n + ">" if self.frozen else n

    @property
    def items(self) -> tuple:
        return self.field_types

    def field_index(self, name: str) -> int:
        try:
            return self.field_names.index(name)
        except ValueError:
            return -1

    def field_type(self, name: str) -> Optional[CqlType]:
        i = self.field_index(name)
        return None if i < 0 else self.field_types[i]

    @cached_property
    def value_class(self):
        """The class of Python values of this UDT (the driver's namedtuple), or ``tuple``."""
        return self.driver_type.tuple_type or tuple

    def make_value(self, *values):
        """A value of this UDT from positional field values (missing trailing fields are null)."""
        vals = list(values) + [None] * (len(self.field_names) - len(values))
        cls = self.driver_type.tuple_type
        return cls(*vals) if cls is not None else tuple(vals)

    def references_duration(self) -> bool:
        return any(t.references_duration() for t in self.field_types)

    def references_udt(self, keyspace, name) -> bool:
        if self.keyspace == keyspace and self.name == name:
            return True
        return any(t.references_udt(keyspace, name) for t in self.field_types)


MAX_VECTOR_DIMENSION = 16000  # ScyllaDB's cql3_type::MAX_VECTOR_DIMENSION


@dataclass(frozen=True, eq=True)
class VectorType(CqlType):
    """``vector<element, dimension>`` (Cassandra 5, ScyllaDB): ``dimension`` values of one type, always frozen.

    The element is kept frozen (a vector's value is one cell); the type prints as ScyllaDB's
    ``cql3_type_name`` does, the element without its own ``frozen<>`` (``vector<set<int>, 2>``).
    Values are lists; on the wire elements of a fixed-size type follow each other, the others each
    after its length as an unsigned vint (``types_codec``)."""

    element: CqlType
    dimension: int

    kind = "vector"

    def cql(self) -> str:
        return f"vector<{self.element.unfreeze().cql()}, {self.dimension}>"

    def references_duration(self) -> bool:
        return self.element.references_duration()

    def references_udt(self, keyspace, name) -> bool:
        return self.element.references_udt(keyspace, name)


CounterType = NativeType("counter")

ASCII = NativeType("ascii")
BIGINT = NativeType("bigint")
BLOB = NativeType("blob")
BOOLEAN = NativeType("boolean")
COUNTER = CounterType
DATE = NativeType("date")
DECIMAL = NativeType("decimal")
DOUBLE = NativeType("double")
DURATION = NativeType("duration")
FLOAT = NativeType("float")
INET = NativeType("inet")
INT = NativeType("int")
SMALLINT = NativeType("smallint")
TEXT = NativeType("text")
TIME = NativeType("time")
TIMESTAMP = NativeType("timestamp")
TIMEUUID = NativeType("timeuuid")
TINYINT = NativeType("tinyint")
UUID_TYPE = NativeType("uuid")
VARINT = NativeType("varint")


# ---------------------------------------------------------------------------
# driver types
# ---------------------------------------------------------------------------

_NATIVE_DRIVER = {
    "ascii": _ct.AsciiType,
    "bigint": _ct.LongType,
    "blob": _ct.BytesType,
    "boolean": _ct.BooleanType,
    "counter": _ct.CounterColumnType,
    "date": _ct.SimpleDateType,
    "decimal": _ct.DecimalType,
    "double": _ct.DoubleType,
    "duration": _ct.DurationType,
    "float": _ct.FloatType,
    "inet": _ct.InetAddressType,
    "int": _ct.Int32Type,
    "smallint": _ct.ShortType,
    "text": _ct.UTF8Type,
    "time": _ct.TimeType,
    "timestamp": _ct.TimestampType,
    "timeuuid": _ct.TimeUUIDType,
    "tinyint": _ct.ByteType,
    "uuid": _ct.UUIDType,
    "varint": _ct.IntegerType,
}


def _build_driver_type(t: CqlType):
    k = t.kind
    if k == "native":
        return _NATIVE_DRIVER[t.name]
    if k == "list":
        return _ct.ListType.apply_parameters([t.element.driver_type])
    if k == "set":
        return _ct.SetType.apply_parameters([t.element.driver_type])
    if k == "map":
        return _ct.MapType.apply_parameters([t.key.driver_type, t.value.driver_type])
    if k == "tuple":
        return _ct.TupleType.apply_parameters([i.driver_type for i in t.items])
    if k == "udt":
        return _ct.UserType.make_udt_class(
            t.keyspace, t.name, tuple(t.field_names), tuple(ft.driver_type for ft in t.field_types)
        )
    if k == "vector":
        return _ct.VectorType.apply_parameters([t.element.driver_type, t.dimension], None)
    raise AssertionError(k)


# ---------------------------------------------------------------------------
# resolve_type: ast.TypeExpr -> type, with Cassandra's CQL3Type.Raw validation
# ---------------------------------------------------------------------------


class _Raw:
    frozen = False
    supports_freezing = False
    is_counter = False
    is_duration = False
    is_udt = False


class _RawNative(_Raw):
    def __init__(self, name: str):
        self.name = name
        self.is_counter = name == "counter"
        self.is_duration = name == "duration"

    def freeze(self):
        raise InvalidRequest(
            f"frozen<> is only allowed on collections, tuples, and user-defined types (got {self})"
        )

    def __str__(self):
        return self.name

    def prepare(self, keyspace, lookup):
        return NativeType(self.name)


class _RawCollection(_Raw):
    supports_freezing = True

    def __init__(self, kind, keys, values, frozen=False):
        self.kind = kind
        self.keys = keys
        self.values = values
        self.frozen = frozen

    def freeze(self):
        keys = self.keys.freeze() if self.keys is not None and self.keys.supports_freezing else self.keys
        values = self.values.freeze() if self.values.supports_freezing else self.values
        return _RawCollection(self.kind, keys, values, True)

    def __str__(self):
        if self.kind == "map":
            s = f"map<{self.keys}, {self.values}>"
        else:
            s = f"{self.kind}<{self.values}>"
        return f"frozen<{s}>" if self.frozen else s

    def _nested_non_frozen(self, inner):
        if isinstance(inner, _RawCollection):
            raise InvalidRequest(f"Non-frozen collections are not allowed inside collections: {self}")
        if inner.is_udt:
            raise InvalidRequest(f"Non-frozen UDTs are not allowed inside collections: {self}")

    def prepare(self, keyspace, lookup):
        values = self.values
        if not self.frozen and values.supports_freezing and not values.frozen:
            self._nested_non_frozen(values)
        if values.is_counter:
            raise InvalidRequest(f"Counters are not allowed inside collections: {self}")
        if values.is_duration and self.kind == "set":
            raise InvalidRequest(f"Durations are not allowed inside sets: {self}")
        keys = self.keys
        if keys is not None:
            if keys.is_counter:
                raise InvalidRequest(f"Counters are not allowed inside collections: {self}")
            if keys.is_duration:
                raise InvalidRequest(f"Durations are not allowed as map keys: {self}")
            if not self.frozen and keys.supports_freezing and not keys.frozen:
                self._nested_non_frozen(keys)
        v = values.prepare(keyspace, lookup)
        if self.kind == "list":
            return ListType(v, self.frozen)
        if self.kind == "set":
            return SetType(v, self.frozen)
        return MapType(keys.prepare(keyspace, lookup), v, self.frozen)


class _RawUT(_Raw):
    supports_freezing = True
    is_udt = True

    def __init__(self, keyspace, name, frozen=False):
        self.keyspace = keyspace
        self.name = name
        self.frozen = frozen

    def freeze(self):
        return _RawUT(self.keyspace, self.name, True)

    def _qualified(self, keyspace=None):
        ks = self.keyspace or keyspace
        n = maybe_quote(self.name)
        return f"{maybe_quote(ks)}.{n}" if ks else n

    def __str__(self):
        n = self._qualified()
        return f"frozen<{n}>" if self.frozen else n

    def prepare(self, keyspace, lookup):
        if self.keyspace is not None and keyspace is not None and self.keyspace != keyspace:
            raise InvalidRequest(
                f"Statement on keyspace {keyspace} cannot refer to a user type in keyspace "
                f"{self.keyspace}; user types can only be used in the keyspace they are defined in"
            )
        ks = self.keyspace or keyspace
        udt = lookup(ks, self.name) if (lookup is not None and ks is not None) else None
        if udt is None:
            raise InvalidRequest(f"Unknown type {self._qualified(keyspace)}")
        if udt.frozen != self.frozen:
            udt = dataclasses.replace(udt, frozen=self.frozen)
        return udt


class _RawTuple(_Raw):
    supports_freezing = True
    frozen = True

    def __init__(self, types):
        self.types = [t.freeze() if t.supports_freezing else t for t in types]

    def freeze(self):
        return self

    def __str__(self):
        return "tuple<" + ", ".join(str(t) for t in self.types) + ">"

    def prepare(self, keyspace, lookup):
        out = []
        for t in self.types:
            if t.is_counter:
                raise InvalidRequest("Counters are not allowed inside tuples")
            out.append(t.prepare(keyspace, lookup))
        return TupleType(tuple(out))


class _RawVector(_Raw):
    """ScyllaDB's ``cql3_type::raw_vector``: frozen by itself, its element frozen too."""

    supports_freezing = True
    frozen = True

    def __init__(self, element, dimension):
        self.element = element
        self.dimension = dimension

    def freeze(self):
        return self

    def __str__(self):
        return f"vector<{self.element}, {self.dimension}>"

    def prepare(self, keyspace, lookup):
        if self.dimension <= 0:
            raise InvalidRequest("Vectors must have a dimension greater than 0")
        if self.dimension > MAX_VECTOR_DIMENSION:
            raise InvalidRequest(f"Vectors must have a dimension less than or equal to {MAX_VECTOR_DIMENSION}")
        if self.element.is_counter:
            raise InvalidRequest(f"Counters are not allowed inside vectors: {self}")
        return VectorType(self.element.prepare(keyspace, lookup).freeze(), self.dimension)


_PARAM_COUNT = {"list": 1, "set": 1, "map": 2, "frozen": 1}


def _raw_from_expr(expr) -> _Raw:
    name = expr.name
    params = tuple(expr.params or ())
    if expr.keyspace is None and name in _PARAM_COUNT:
        n = _PARAM_COUNT[name]
        if len(params) != n:
            raise SyntaxException(f"{name} type expects {n} type argument{'s' if n > 1 else ''}, got {len(params)}")
        if name == "frozen":
            # frozen<frozen<list<int>>> is frozen<list<int>>: ScyllaDB freezes a frozen type again (cql3_type.cc,
            # ``raw_collection::freeze``), where Cassandra refuses it; frozen<frozen<int>> is still refused
            return _raw_from_expr(params[0]).freeze()
        if name == "map":
            return _RawCollection("map", _raw_from_expr(params[0]), _raw_from_expr(params[1]))
        return _RawCollection(name, None, _raw_from_expr(params[0]))
    if expr.keyspace is None and name == "tuple" and params:
        return _RawTuple([_raw_from_expr(p) for p in params])
    if expr.keyspace is None and name == "vector" and expr.dimension is not None:
        return _RawVector(_raw_from_expr(params[0]), expr.dimension)
    if expr.keyspace is None and name in NATIVE_TYPE_NAMES:
        if params:
            raise SyntaxException(f"type {name} does not take type arguments")
        return _RawNative(name)
    if params:
        raise SyntaxException(f"type {name} does not take type arguments")
    return _RawUT(expr.keyspace, name)


def resolve_type(expr, keyspace: Optional[str], lookup_udt) -> CqlType:
    """A type from its grammar form (``ast.TypeExpr``), validated as Cassandra does."""
    return _raw_from_expr(expr).prepare(keyspace, lookup_udt)


def type_expr_to_string(expr) -> str:
    """The text of a TypeExpr as Cassandra's CQL3Type.Raw prints it (used in messages)."""
    try:
        return str(_raw_from_expr(expr))
    except Exception:  # pragma: no cover - only for messages
        if expr.params:
            return f"{expr.name}<{', '.join(type_expr_to_string(p) for p in expr.params)}>"
        return f"{expr.keyspace + '.' if expr.keyspace else ''}{expr.name}"


# ---------------------------------------------------------------------------
# parse_type_string: inverse of .cql()
# ---------------------------------------------------------------------------

_TOKEN = re.compile(r'\s*(?:(?P<q>"(?:[^"]|"")*")|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<p>[<>,.])|(?P<n>\d+))')


def _tokenize(text: str):
    pos = 0
    out = []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SyntaxException(f"Invalid type string: {text!r}")
        pos = m.end()
        if m.group("q") is not None:
            out.append(("id", m.group("q")[1:-1].replace('""', '"'), True))
        elif m.group("id") is not None:
            out.append(("id", m.group("id"), False))
        elif m.group("n") is not None:
            out.append(("n", m.group("n"), False))
        else:
            out.append(("p", m.group("p"), False))
    return out


def parse_type_string(text: str, keyspace: Optional[str] = None, lookup_udt=None) -> CqlType:
    """Parse a type string as ``.cql()`` (or system_schema) prints it; no implicit freezing."""
    toks = _tokenize(text)
    pos = 0

    def peek(v=None):
        if pos < len(toks):
            t = toks[pos]
            if v is None or (t[0] == "p" and t[1] == v):
                return t
        return None

    def expect(v):
        nonlocal pos
        if not peek(v):
            raise SyntaxException(f"Invalid type string {text!r}: expected {v!r}")
        pos += 1

    def parse(frozen=False) -> CqlType:
        nonlocal pos
        if pos >= len(toks) or toks[pos][0] != "id":
            raise SyntaxException(f"Invalid type string: {text!r}")
        _, word, quoted = toks[pos]
        pos += 1
        lw = word if quoted else word.lower()
        if not quoted and lw == "frozen" and peek("<"):
            expect("<")
            t = parse(frozen=True)
            expect(">")
            return t
        if not quoted and lw in ("list", "set", "map", "tuple") and peek("<"):
            expect("<")
            args = [parse()]
            while peek(","):
                expect(",")
                args.append(parse())
            expect(">")
            if lw == "list" and len(args) == 1:
                return ListType(args[0], frozen)
            if lw == "set" and len(args) == 1:
                return SetType(args[0], frozen)
            if lw == "map" and len(args) == 2:
                return MapType(args[0], args[1], frozen)
            if lw == "tuple":
                return TupleType(tuple(args))
            raise SyntaxException(f"Invalid type string: {text!r}")
        if not quoted and lw == "vector" and peek("<"):
            expect("<")
            element = parse()
            expect(",")
            if pos >= len(toks) or toks[pos][0] != "n":
                raise SyntaxException(f"Invalid type string: {text!r}")
            dimension = int(toks[pos][1])
            pos += 1
            expect(">")
            return VectorType(element.freeze(), dimension)
        ks = keyspace
        name = word if quoted else word.lower()
        if peek("."):
            expect(".")
            if pos >= len(toks) or toks[pos][0] != "id":
                raise SyntaxException(f"Invalid type string: {text!r}")
            ks = name
            _, word2, q2 = toks[pos]
            pos += 1
            name = word2 if q2 else word2.lower()
        elif not quoted and name in NATIVE_TYPE_NAMES:
            return NativeType(name)
        udt = lookup_udt(ks, name) if lookup_udt is not None else None
        if udt is None:
            raise InvalidRequest(f"Unknown type {ks + '.' if ks else ''}{name}")
        if udt.frozen != frozen:
            udt = dataclasses.replace(udt, frozen=frozen)
        return udt

    t = parse()
    if pos != len(toks):
        raise SyntaxException(f"Invalid type string: {text!r}")
    return t


# ---------------------------------------------------------------------------
# re-exports from the implementation modules
# ---------------------------------------------------------------------------

from logtide.schema.types_literal import (  # noqa: E402
    python_to_value,
    term_to_value,
    value_from_string,
)
from logtide.schema.types_json import from_json, java_double_to_string, java_float_to_string, to_json  # noqa: E402

__all__ = [
    "ASCII", "BIGINT", "BLOB", "BOOLEAN", "COUNTER", "CounterType", "CqlType", "DATE", "DECIMAL",
    "DOUBLE", "DURATION", "EMPTY", "FLOAT", "INET", "INT", "ListType", "MapType",
    "NATIVE_TYPE_NAMES", "NativeType", "SMALLINT", "SetType", "TEXT", "TIME", "TIMESTAMP",
    "TIMEUUID", "TINYINT", "TupleType", "UNSET", "UUID_TYPE", "UserType", "VARINT", "VectorType",
    "MAX_VECTOR_DIMENSION",
    "from_json", "maybe_quote", "parse_type_string", "python_to_value", "resolve_type",
    "term_to_value", "to_json", "value_from_string", "java_double_to_string",
    "java_float_to_string", "ConfigurationException",
]
