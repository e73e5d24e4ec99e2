"""CQL native functions: time and uuid functions, blob conversions, JSON, casts and aggregates.

Each scalar function is looked up by name and argument types (Cassandra's
``system`` keyspace functions); its implementation works on Python values
with cassandra-driver conventions.
"""

from __future__ import annotations

import datetime
import math
import random
import threading
import uuid
from dataclasses import dataclass
from decimal import MAX_PREC, ROUND_HALF_EVEN, Decimal, localcontext
from typing import Any, Callable, ClassVar, Sequence

from cassandra.util import Date, Time

from ..cql import ast
from ..errors import InvalidRequest
from ..schema import types as T
from ..schema.types_convert import EXACT_MATCH, NOT_ASSIGNABLE, WEAKLY_ASSIGNABLE, assignment
from ..schema.types_literal import literal_test_assignment as test_assignment, timestamp_from_millis

GREGORIAN_OFFSET = 0x01B21DD213814000
EPOCH = datetime.datetime(1970, 1, 1)

NATIVE_NAMES = ("ascii", "bigint", "blob", "boolean", "counter", "date", "decimal", "double", "duration",
                "float", "inet", "int", "smallint", "text", "time", "timestamp", "timeuuid", "tinyint",
                "uuid", "varchar", "varint")


def N(name: str) -> Any:
    return T.NativeType(name)


class TimeuuidSource:
    """``now()`` values: unique, increasing timeuuids from a clock, random clock sequence and node."""

    def __init__(self, clock_micros: Callable[[], int]) -> None:
        self._clock = clock_micros
        self._last = 0
        self._seq = random.getrandbits(14)
        self._node = random.getrandbits(48) | 0x010000000000
        self._lock = threading.Lock()

    def next(self) -> uuid.UUID:
        with self._lock:
            t = max(self._clock() * 10, self._last + 1)
            self._last = t
        return make_timeuuid(t, self._seq, self._node)


def make_timeuuid(t100_since_epoch: int, clock_seq: int, node: int) -> uuid.UUID:
    """A version-1 UUID for a time in 100 ns units since 1970."""
    t = t100_since_epoch + GREGORIAN_OFFSET
    return uuid.UUID(fields=(t & 0xFFFFFFFF, (t >> 32) & 0xFFFF, ((t >> 48) & 0x0FFF) | 0x1000,
                             ((clock_seq >> 8) & 0x3F) | 0x80, clock_seq & 0xFF, node))


def timeuuid_micros(u: uuid.UUID) -> int:
    """Microseconds since 1970 of a timeuuid (spec ``001``: the write timestamp in ``cdc$time``)."""
    return (u.time - GREGORIAN_OFFSET) // 10


def timeuuid_millis(u: uuid.UUID) -> int:
    return (u.time - GREGORIAN_OFFSET) // 10000


_UUID_TIME_LIMIT = 0x0FFFFFFFFFFFFFFF  # a timeuuid's time field has 60 bits


def _bound_timeuuid(ms: int, upper: bool) -> uuid.UUID:
    """``minTimeuuid``/``maxTimeuuid``: the smallest/greatest timeuuid of a millisecond; a timestamp whose
    100 ns count since 1582-10-15 does not fit the 60-bit time field is refused (ScyllaDB's message)."""
    if not 0 <= ms * 10000 + GREGORIAN_OFFSET <= _UUID_TIME_LIMIT - 9999:
        raise InvalidRequest(f"{ms}: timestamp is out of range. Must be in milliseconds since epoch")
    t = ms * 10000 + GREGORIAN_OFFSET + (9999 if upper else 0)
    msb = ((t & 0xFFFFFFFF) << 32) | (((t >> 32) & 0xFFFF) << 16) | 0x1000 | ((t >> 48) & 0x0FFF)
    lsb = 0x7F7F7F7F7F7F7F7F if upper else 0x8080808080808080
    return uuid.UUID(int=(msb << 64) | lsb)


def ts_millis(v: Any) -> int:
    """Milliseconds since 1970 of a timestamp value (datetime or int)."""
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        delta = v - EPOCH
        return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
    return int(v)


def millis_ts(ms: int) -> Any:
    """A timestamp value of ``ms`` milliseconds since 1970 (an int beyond Python's datetime range, as the
    literal reader gives it)."""
    return timestamp_from_millis(ms)


def date_millis(d: Date) -> int:
    return d.days_from_epoch * 86400000


def argument_name(keyspace: str, function: str, index: int) -> str:
    """The receiver name of argument ``index`` of a function, as ScyllaDB's ``functions::make_arg_spec`` makes it:
    ``arg0(system.intasblob)`` for a native function, ``arg1(ks.f)`` for a user-defined one, lower case.  A bind
    marker in that argument gets it as its name in the prepared metadata, and the errors about its value name it."""
    return f"arg{index}({keyspace}.{function})".lower()


@dataclass(frozen=True)
class Function:
    """A native scalar function: argument types, return type and implementation on Python values."""

    keyspace: ClassVar[str] = "system"
    name: str
    arg_types: tuple[Any, ...]
    return_type: Any
    impl: Callable[..., Any]
    deterministic: bool = True


class FunctionRegistry:
    """The ``system`` functions, found by name and argument types."""

    def __init__(self, timeuuids: TimeuuidSource, clock_micros: Callable[[], int]) -> None:
        self._by_name: dict[str, list[Function]] = {}
        # the user-defined functions and aggregates of (keyspace, name), set by the database from its catalog
        self.user: Callable[[str, str], tuple[list[Any], list[Any]]] = lambda ks, name: ([], [])
        self._timeuuids = timeuuids
        self._clock = clock_micros
        self._register_all()

    def add(self, f: Function) -> None:
        self._by_name.setdefault(f.name, []).append(f)

    def candidates(self, name: str) -> list[Function]:
        return self._by_name.get(name, [])

    def resolve(self, name: str, arg_types: Sequence[Any | None], terms: Sequence[Any] | None = None,
                texts: Sequence[str] | None = None) -> Function:
        """The overload matching the arguments, as ScyllaDB's ``functions::get`` finds it.

        ``arg_types`` holds each argument's type, None for an argument without one of its own (a
        literal or bind marker, given in ``terms``: a literal is tested against each parameter type).
        A typed argument fits a parameter exactly, weakly (``types_convert.assignment``: its bytes
        reinterpreted or its value widened) or not at all.  One candidate: every argument must fit
        (else ``Type error: ... cannot be passed as argument i of function ... of type T``); several:
        exact matches win over weak ones, and more than one is ambiguous.  ``texts`` name the
        arguments in messages."""
        if name in SIMILARITY_FUNCTIONS:
            return similarity_function(name, arg_types, terms, texts)
        cands = self.candidates(name)
        if not cands:
            raise InvalidRequest(f"Unknown function '{name}'")
        n = len(arg_types)

        def fit(i: int, param: Any) -> int:
            actual = arg_types[i]
            if actual is not None:
                return assignment(actual, param)
            term = terms[i] if terms is not None and i < len(terms) else None
            return literal_assignment(term, param)

        if len(cands) == 1:
            f = cands[0]
            if len(f.arg_types) != n:
                raise InvalidRequest(f"Invalid number of arguments in call to function system.{name}: "
                                     f"{len(f.arg_types)} required but {n} provided")
            for i, p in enumerate(f.arg_types):
                if fit(i, p) == NOT_ASSIGNABLE:
                    shown = texts[i] if texts is not None else (arg_types[i].cql() if arg_types[i] else "?")
                    raise InvalidRequest(f"Type error: {shown} cannot be passed as argument {i} of function "
                                         f"system.{name} of type {p.cql()}")
            return f
        exact: list[Function] = []
        weak: list[Function] = []
        for f in cands:
            if len(f.arg_types) != n:
                continue
            score = min((fit(i, p) for i, p in enumerate(f.arg_types)), default=EXACT_MATCH)
            if score == EXACT_MATCH:
                exact.append(f)
            elif score == WEAKLY_ASSIGNABLE:
                weak.append(f)
        matches = exact or weak
        if not matches:
            if all(len(f.arg_types) != n for f in cands):
                raise InvalidRequest(f"Invalid number of arguments in call to function system.{name}: "
                                     f"{len(cands[0].arg_types)} required but {n} provided")
            raise InvalidRequest(f"Invalid call to function {name}, none of its type signatures match "
                                 f"(known type signatures: {', '.join(_signature(f) for f in cands)})")
        if len(matches) > 1:
            raise InvalidRequest(f"Ambiguous call to function {name} (can be matched by following signatures: "
                                 + ", ".join(_signature(f) for f in matches) + "): use type casts to disambiguate")
        return matches[0]

    # ------------------------------------------------------------------
    def _register_all(self) -> None:
        add = self.add
        tu = self._timeuuids
        add(Function("now", (), N("timeuuid"), tu.next, False))
        add(Function("currenttimeuuid", (), N("timeuuid"), tu.next, False))
        add(Function("currenttimestamp", (), N("timestamp"), lambda: millis_ts(self._clock() // 1000), False))
        add(Function("currentdate", (), N("date"), lambda: Date(self._clock() // 86_400_000_000), False))
        add(Function("currenttime", (), N("time"), lambda: Time((self._clock() % 86_400_000_000) * 1000), False))
        add(Function("uuid", (), N("uuid"), uuid.uuid4, False))
        add(Function("mintimeuuid", (N("timestamp"),), N("timeuuid"), lambda t: _bound_timeuuid(ts_millis(t), False)))
        add(Function("maxtimeuuid", (N("timestamp"),), N("timeuuid"), lambda t: _bound_timeuuid(ts_millis(t), True)))
        add(Function("dateof", (N("timeuuid"),), N("timestamp"), lambda u: millis_ts(timeuuid_millis(u))))
        add(Function("unixtimestampof", (N("timeuuid"),), N("bigint"), timeuuid_millis))
        add(Function("totimestamp", (N("timeuuid"),), N("timestamp"), lambda u: millis_ts(timeuuid_millis(u))))
        add(Function("totimestamp", (N("date"),), N("timestamp"), lambda d: millis_ts(date_millis(d))))
        add(Function("tounixtimestamp", (N("timeuuid"),), N("bigint"), timeuuid_millis))
        add(Function("tounixtimestamp", (N("timestamp"),), N("bigint"), ts_millis))
        add(Function("tounixtimestamp", (N("date"),), N("bigint"), date_millis))
        add(Function("todate", (N("timeuuid"),), N("date"), lambda u: Date(timeuuid_millis(u) // 86400000)))
        add(Function("todate", (N("timestamp"),), N("date"), lambda t: Date(ts_millis(t) // 86400000)))
        for name in NATIVE_NAMES:
            if name in ("varchar", "counter"):
                continue
            t = N(name)
            if name != "blob":
                add(Function(f"{name}asblob", (t,), N("blob"), _to_blob(t)))
                add(Function(f"blobas{name}", (N("blob"),), t, _from_blob(t)))
        add(Function("varcharasblob", (N("text"),), N("blob"), _to_blob(N("text"))))
        add(Function("counterasblob", (N("counter"),), N("blob"), _to_blob(N("counter"))))
        add(Function("blobascounter", (N("blob"),), N("counter"), _from_blob(N("counter"))))
        add(Function("blobasvarchar", (N("blob"),), N("text"), _from_blob(N("text"))))


# ---------------------------------------------------------------------------
# vector similarity (Cassandra 5, ScyllaDB)
# ---------------------------------------------------------------------------


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = sum(x * x for x in a)
    nb = sum(y * y for y in b)
    if na == 0 or nb == 0:
        return math.nan  # ScyllaDB answers NaN for an all-zero vector (Cassandra refuses it)
    return (1 + dot / math.sqrt(na * nb)) / 2


def _euclidean(a: Sequence[float], b: Sequence[float]) -> float:
    return 1 / (1 + sum((x - y) * (x - y) for x, y in zip(a, b)))


def _dot_product(a: Sequence[float], b: Sequence[float]) -> float:
    return (1 + sum(x * y for x, y in zip(a, b))) / 2


SIMILARITY_FUNCTIONS: dict[str, Callable[[Sequence[float], Sequence[float]], float]] = {
    "similarity_cosine": _cosine, "similarity_euclidean": _euclidean, "similarity_dot_product": _dot_product}


def _float_vector_dimension(actual: Any, term: Any) -> tuple[bool, int | None]:
    """Whether an argument can be a ``vector<float, n>`` and, when it tells, its ``n`` (ScyllaDB's
    ``test_assignment_any_size_float_vector``): a float vector column or result, a list literal of float
    literals (no null among them), or null and a bind marker, which fit any ``n``."""
    if actual is not None:
        if isinstance(actual, T.VectorType) and actual.element == T.FLOAT:
            return True, actual.dimension
        return False, None
    if isinstance(term, ast.BindMarker) or (isinstance(term, ast.Constant) and term.kind == "null"):
        return True, None
    if isinstance(term, ast.ListLiteral) and term.items:
        for item in term.items:
            if isinstance(item, ast.Constant) and item.kind == "null":
                return False, None
            if test_assignment(item, T.FLOAT) == NOT_ASSIGNABLE:
                return False, None
        return True, len(term.items)
    return False, None


def similarity_function(name: str, arg_types: Sequence[Any | None], terms: Sequence[Any] | None,
                        texts: Sequence[str] | None) -> Function:
    """``similarity_cosine|euclidean|dot_product(vector<float, n>, vector<float, n>)``: ScyllaDB's vector
    similarity scores (a float in [0, 1]), ``n`` taken from whichever argument tells it, with ScyllaDB's
    messages for a wrong argument."""
    signature = f"system.{name}(vector<float, n>, vector<float, n>)"
    if len(arg_types) != 2:
        raise InvalidRequest(f"Invalid number of arguments for function {signature}")
    dims = []
    for i in range(2):
        term = terms[i] if terms is not None and i < len(terms) else None
        text = texts[i] if texts is not None and i < len(texts) else "?"
        ok, dim = _float_vector_dimension(arg_types[i], term)
        if not ok:
            of_type = f" of type {arg_types[i].cql()}" if arg_types[i] is not None else ""
            raise InvalidRequest(f"Function system.{name} requires a float vector argument, but found {text}{of_type}")
        dims.append(dim)
    if dims[0] is None and dims[1] is None:
        first = texts[0] if texts else "?"
        raise InvalidRequest(f"Cannot infer type of argument {first} for function {signature}")
    if None not in dims and dims[0] != dims[1]:
        raise InvalidRequest(f"All arguments must have the same vector dimensions, but found vector<float, {dims[0]}> "
                             f"and vector<float, {dims[1]}>")
    vector = T.VectorType(T.FLOAT, dims[0] if dims[0] is not None else dims[1])
    score = SIMILARITY_FUNCTIONS[name]
    return Function(name, (vector, vector), T.FLOAT, lambda a, b: T.python_to_value(T.FLOAT, score(a, b), name))


def _to_blob(t: Any) -> Callable[[Any], bytes]:
    return lambda v: t.serialize(v)


def _from_blob(t: Any) -> Callable[[bytes], Any]:
    ascii = t == T.ASCII

    def f(b: bytes) -> Any:
        try:
            if ascii and not b.isascii():  # ascii's bytes are 7-bit (the codec reads them as UTF-8)
                raise ValueError("not ASCII")
            return t.deserialize(b) if b else T.EMPTY  # an empty blob is the empty value of any type
        except Exception as e:
            raise InvalidRequest(f"In call to function system.blobas{t.cql()}, value 0x{b.hex()} is not a "
                                 f"valid binary representation for type {t.cql()}") from e
    return f


def _signature(f: Function) -> str:
    return f"system.{f.name} : ({', '.join(t.cql() for t in f.arg_types)}) -> {f.return_type.cql()}"


def literal_assignment(term: Any, param: Any) -> int:
    """How a literal (or bind marker: weakly, any type) fits a parameter type; an exact match when the
    literal's default type is the parameter's (ScyllaDB: ``4`` is exactly an int)."""
    if term is None or isinstance(term, ast.BindMarker):
        return WEAKLY_ASSIGNABLE
    r = test_assignment(term, param)
    if r == WEAKLY_ASSIGNABLE and isinstance(term, ast.Constant) and constant_default_type(term) == param:
        return EXACT_MATCH
    return r


def constant_default_type(c: ast.Constant) -> Any | None:
    """The type ScyllaDB gives a constant nothing else types: text, boolean, double, duration, uuid,
    blob, and for an integer the first of int, bigint, varint that holds it (null has none)."""
    if c.kind == "integer":
        v = int(c.text)
        if -2**31 <= v < 2**31:
            return N("int")
        return N("bigint") if -2**63 <= v < 2**63 else N("varint")
    return _CONSTANT_DEFAULTS.get(c.kind)


_CONSTANT_DEFAULTS = {"string": N("text"), "boolean": N("boolean"), "float": N("double"),
                      "duration": N("duration"), "uuid": N("uuid"), "hex": N("blob")}


# ---------------------------------------------------------------------------
# aggregates
# ---------------------------------------------------------------------------


class Aggregate:
    """State of one aggregate selector over the selected rows."""

    def __init__(self, name: str, arg_type: Any) -> None:
        self.name = name
        self.arg_type = arg_type
        self.count = 0
        self.acc: Any = None

    @property
    def return_type(self) -> Any:
        if self.name == "count":
            return N("bigint")
        if self.name == "avg" or self.name == "sum":
            return self.arg_type
        return self.arg_type

    def add(self, value: Any) -> None:
        if self.name == "count":
            if value is not None:
                self.count += 1
            return
        if value is None:
            return
        self.count += 1
        if self.acc is None:
            self.acc = value if self.name in ("min", "max") else value
            return
        if self.name == "min":
            if self.arg_type.compare(self.arg_type.serialize(value), self.arg_type.serialize(self.acc)) < 0:
                self.acc = value
        elif self.name == "max":
            if self.arg_type.compare(self.arg_type.serialize(value), self.arg_type.serialize(self.acc)) > 0:
                self.acc = value
        elif isinstance(value, Decimal):
            with localcontext() as exact:  # decimal sums are exact
                exact.prec = MAX_PREC
                self.acc = self.acc + value
        else:
            self.acc = self.acc + value

    def result(self) -> Any:
        if self.name == "count":
            return self.count
        if self.name == "sum":
            if self.acc is None:
                return Decimal(0) if self.arg_type == N("decimal") else (0.0 if self.arg_type.name in ("float", "double") else 0)
            return _wrap(self.arg_type, self.acc)
        if self.name == "avg":
            if not self.count:
                return Decimal(0) if self.arg_type == N("decimal") else (0.0 if self.arg_type.name in ("float", "double") else 0)
            if self.arg_type.name in ("float", "double"):
                return self.acc / self.count
            if self.arg_type.name == "decimal":  # ScyllaDB: the sum's scale, rounded half to even
                with localcontext() as exact:
                    exact.prec = len(self.acc.as_tuple().digits) + 28
                    return (self.acc / self.count).quantize(Decimal(1).scaleb(self.acc.as_tuple().exponent),
                                                            rounding=ROUND_HALF_EVEN)
            return _wrap(self.arg_type, int(self.acc / self.count) if self.acc >= 0 else -int(-self.acc / self.count))
        return self.acc


_INT_BITS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64, "counter": 64}


def _wrap(t: Any, v: Any) -> Any:
    bits = _INT_BITS.get(getattr(t, "name", ""))
    if bits is None or not isinstance(v, int):
        return v
    m = 1 << bits
    v &= m - 1
    return v - m if v >= m >> 1 else v


AGGREGATES = ("count", "min", "max", "sum", "avg")
