"""Terms to values: literals, bind markers and function calls, typed by their receiver."""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Sequence

from ..cql import ast
from ..errors import FunctionFailure, InvalidRequest
from ..schema import types as T
from ..schema.types_convert import NOT_ASSIGNABLE, assignment, convert, widenable
from ..schema.types_literal import term_text
from .functions import AGGREGATES, FunctionRegistry, argument_name, constant_default_type


def call_text(fc: ast.FunctionCall) -> str:
    """How Cassandra names a function call in messages and result columns: ``system.fn(args)``."""
    return f"system.{fc.name}({', '.join(arg_text(a) for a in fc.args)})"


def arg_text(a: Any) -> str:
    if isinstance(a, ast.ColumnRef):
        return a.name
    if isinstance(a, ast.FunctionCall):
        return call_text(a)
    if isinstance(a, ast.Constant):
        if a.kind == "string":
            return "'" + a.text.replace("'", "''") + "'"
        return a.text
    if isinstance(a, ast.BindMarker):
        return "?" if a.name is None else f":{a.name}"
    if isinstance(a, ast.Star):
        return "*"
    return str(a)


def literal_text(term: Any) -> str:
    """A literal as ScyllaDB names its result column (its CQL text)."""
    return term_text(term)


def default_type(term: Any, keyspace: str | None = None) -> Any | None:
    """The type ScyllaDB infers for a literal nothing else types (a selector ``SELECT 1``, an argument of
    ``count``): a constant's default type (``functions.constant_default_type``), a collection or tuple
    of its items' types (integers widened to the widest among them), a type hint's type; None when it
    has none (null, ``{}``, a bind marker)."""
    if isinstance(term, ast.Constant):
        return constant_default_type(term)
    if isinstance(term, ast.TypeHint):
        return T.resolve_type(term.type, keyspace or "", lambda ks, n: None)
    if isinstance(term, (ast.ListLiteral, ast.SetLiteral)):
        el = _common_type([default_type(i, keyspace) for i in term.items])
        if el is None:
            return None
        return T.ListType(el, True) if isinstance(term, ast.ListLiteral) else T.SetType(el, True)
    if isinstance(term, ast.MapLiteral):
        kt = _common_type([default_type(k, keyspace) for k, _ in term.entries])
        vt = _common_type([default_type(v, keyspace) for _, v in term.entries])
        return None if kt is None or vt is None else T.MapType(kt, vt, True)
    if isinstance(term, ast.TupleLiteral):
        items = [default_type(i, keyspace) for i in term.items]
        return None if any(i is None for i in items) else T.TupleType(tuple(items))
    return None


def _common_type(types: list[Any]) -> Any | None:
    """The one type every item fits: their type, or the widest of a numeric chain (None if there is none)."""
    if not types or any(t is None for t in types):
        return None
    out = types[0]
    for t in types[1:]:
        if t == out or widenable(t, out):
            continue
        if widenable(out, t):
            out = t
        else:
            return None
    return out


class TermEvaluator:
    """Evaluates terms of one statement execution with its bound values.

    ``markers``, when given (preparing a statement), receives the receiver name and type of each
    bind marker a selector types (``{index: (name, type)}``); markers then evaluate to null.
    ``table`` is the statement's table (``token(...)`` in a term needs its partition key)."""

    def __init__(self, functions: FunctionRegistry, bound: Sequence[Any] | Mapping[str, Any] | None = None,
                 markers: dict[int, tuple[str, Any]] | None = None, table: Any = None,
                 keyspace: str | None = None, permit: Callable[[Any], None] | None = None) -> None:
        self.functions = functions
        # called with each user-defined function or aggregate a statement calls: raises Unauthorized without
        # EXECUTE on it (the session's role; logtide.auth.AuthManager.ensure_execute)
        self.permit = permit
        self.keyspace = keyspace  # the session's keyspace: where an unqualified user-defined function is looked up
        self.bound = bound
        self.markers = markers
        self.table = table
        self._now_cache: dict[str, Any] = {}

    def value(self, term: Any, ctype: Any, receiver: str) -> Any:
        """The Python value of ``term`` as a value of ``ctype`` (None for null, ``T.UNSET`` for unset)."""
        if term is None:
            return None
        if isinstance(term, ast.BindMarker):
            if self.markers is not None:
                self.markers.setdefault(term.index, (term.name or receiver, ctype))
                return None
            b = self.bound
            if (type(b) is list or type(b) is tuple) and term.index < len(b):  # the common case, inline
                v = b[term.index]
                return v if v is None or v is T.UNSET else T.python_to_value(ctype, v, receiver)
            return self._resolve(term, ctype, receiver)
        return T.term_to_value(term, ctype, receiver, self._resolve)

    def bound_value(self, marker: ast.BindMarker) -> Any:
        b = self.bound
        if type(b) is list or type(b) is tuple:  # the common case, without the ABC check below
            if marker.index >= len(b):
                raise InvalidRequest(f"Not enough bind values: marker {marker.index + 1} has no value ({len(b)} given)")
            return b[marker.index]
        if b is None:
            raise InvalidRequest("Statement has bind markers but no values were given")
        if isinstance(b, Mapping):
            if marker.name is not None and marker.name in b:
                return b[marker.name]
            if marker.name is not None and marker.name.lower() in b:
                return b[marker.name.lower()]
            raise InvalidRequest(f"No value given for bind marker {marker.name or marker.index}")
        if marker.index >= len(b):
            raise InvalidRequest(f"Not enough bind values: marker {marker.index + 1} has no value ({len(b)} given)")
        return b[marker.index]

    def _resolve(self, term: Any, ctype: Any, receiver: str) -> Any:
        if isinstance(term, ast.BindMarker):
            v = self.bound_value(term)
            if v is T.UNSET:
                return T.UNSET
            if v is None:
                return None
            return T.python_to_value(ctype, v, receiver)
        if isinstance(term, ast.FunctionCall):
            return self.call(term, ctype, receiver)
        raise InvalidRequest(f"Invalid term for {receiver}")

    def infer_type(self, term: Any) -> Any | None:
        """The type of a term when it has one by itself (function calls, type hints)."""
        if isinstance(term, ast.TypeHint):
            return T.resolve_type(term.type, "", lambda ks, n: None)
        if isinstance(term, ast.FunctionCall):
            if term.name == "cast" and len(term.args) == 2:
                return T.resolve_type(term.args[1], "", lambda ks, n: None)
            if term.name == "token":
                return T.BIGINT
            if term.name in ("fromjson", "set_intersection") or term.name in AGGREGATES:
                return None
            try:
                f = self.functions.resolve(term.name, [self.infer_type(a) for a in term.args], term.args)
            except InvalidRequest:
                return None
            return f.return_type
        return None

    def call(self, fc: ast.FunctionCall, expected: Any, receiver: str) -> Any:
        """Call a scalar function in a term position; its result must suit ``expected``."""
        name = fc.name
        user = self._user_call(fc, expected, receiver)
        if user is not None:
            return user[0]
        if fc.keyspace not in (None, "system"):
            raise InvalidRequest(f"Unknown function '{fc.keyspace}.{name}'")
        if name == "fromjson":
            if len(fc.args) != 1:
                raise InvalidRequest("fromJson() takes exactly one argument")
            text = self.value(fc.args[0], T.TEXT, "fromjson")
            if text is None:
                return None
            try:
                obj = json.loads(text)
                return None if obj is None else T.from_json(expected, obj, receiver)
            except (ValueError, InvalidRequest) as e:  # ScyllaDB: a function failure, not an invalid request
                detail = f"Could not decode JSON string '{text}': {e}" if isinstance(e, ValueError) else str(e)
                raise FunctionFailure(f"Failed parsing fromJson parameter: {detail}", "system", "fromjson",
                                      (expected.cql() if expected is not None else "text",)) from None
        if name in AGGREGATES:
            raise InvalidRequest(f"Aggregation functions are not supported here (system.{name}): "
                                 "only in the selection clause")
        if name == "token" and self.table is not None:
            return self._token(fc, expected, receiver)
        if name in ("token", "writetime", "ttl", "tojson"):
            raise InvalidRequest(f"Function system.{name} cannot be used here")
        if name == "cast":
            raise InvalidRequest("CAST is only supported in the selection clause")
        arg_types = [self.infer_type(a) for a in fc.args]
        f = self.functions.resolve(name, arg_types, fc.args, [arg_text(a) for a in fc.args])
        if expected is not None and assignment(f.return_type, expected) == NOT_ASSIGNABLE:
            raise InvalidRequest(f"Type error: cannot assign result of function {call_text(fc)} "
                                 f"(type {f.return_type.cql()}) to {receiver} (type {expected.cql()})")
        args = [self.value(a, p, argument_name("system", name, i))
                for i, (a, p) in enumerate(zip(fc.args, f.arg_types))]
        _check_set(args, name)
        if any(a is None for a in args):
            return None
        result = f.impl(*args)
        return result if expected is None else convert(result, f.return_type, expected)

    def user_function(self, fc: ast.FunctionCall) -> Any | None:
        """The user-defined function a call in a term names (found by its arguments' types, errors as ScyllaDB's),
        or None when it names none.  Unqualified, it is looked up in the statement's keyspace after the native
        functions."""
        if fc.keyspace == "system" or (fc.keyspace is None and (fc.name in AGGREGATES or self.functions.candidates(
                fc.name) or fc.name in ("fromjson", "token", "writetime", "ttl", "tojson", "cast"))):
            return None
        keyspace = fc.keyspace or self.keyspace or (self.table.keyspace if self.table is not None else None)
        if keyspace is None:
            return None
        functions, _ = self.functions.user(keyspace, fc.name)
        if not functions:
            return None
        from .user_resolve import resolve_user

        return resolve_user(functions, keyspace, fc, [self.infer_type(a) for a in fc.args],
                            [arg_text(a) for a in fc.args])

    def _user_call(self, fc: ast.FunctionCall, expected: Any, receiver: str) -> tuple[Any] | None:
        """A user-defined function's value in a term (``m[f(1)]``, ``SELECT ks.f(1)``), as a 1-tuple; None when
        ``fc`` names none (:meth:`user_function`)."""
        f = self.user_function(fc)
        if f is None:
            return None
        keyspace = f.keyspace
        if self.permit is not None:
            self.permit(f)
        if expected is not None and assignment(f.return_type, expected) == NOT_ASSIGNABLE:
            raise InvalidRequest(f"Type error: cannot assign result of function {keyspace}.{fc.name} "
                                 f"(type {f.return_type.cql()}) to {receiver} (type {expected.cql()})")
        args = [self.value(a, p, argument_name(keyspace, f.name, i))
                for i, (a, p) in enumerate(zip(fc.args, f.arg_types))]
        result = f.call(args)
        return (result if expected is None or result is None else convert(result, f.return_type, expected),)

    def _token(self, fc: ast.FunctionCall, expected: Any, receiver: str) -> Any:
        """``token(v1, ...)`` in a term: the token of the partition key made of these values."""
        from ..storage.keys import partition_token, serialize_partition_key
        pk = self.table.partition_key
        if len(fc.args) != len(pk):
            raise InvalidRequest(f"Invalid number of arguments in call to function system.token: "
                                 f"{len(pk)} required but {len(fc.args)} provided")
        values = [self.value(a, c.type, argument_name("system", "token", i))
                  for i, (a, c) in enumerate(zip(fc.args, pk))]
        _check_set(values, "token")
        if any(v is None for v in values):
            return None
        token = partition_token(self.table, serialize_partition_key([c.type.serialize(v) for c, v in zip(pk, values)]))
        if expected is not None and assignment(T.BIGINT, expected) == NOT_ASSIGNABLE:
            raise InvalidRequest(f"Type error: cannot assign result of function {call_text(fc)} "
                                 f"(type bigint) to {receiver} (type {expected.cql()})")
        return token if expected is None else convert(token, T.BIGINT, expected)


def _check_set(args: list[Any], name: str) -> None:
    """A function argument bound to UNSET is refused (Cassandra's words): a function has no value to leave
    unchanged."""
    if any(a is T.UNSET for a in args):
        raise InvalidRequest(f"Invalid unset value for argument in call to function {name}")
