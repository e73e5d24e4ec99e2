"""Terms to values: literals, bind markers and function calls, typed by their receiver."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from ..cql import ast
from ..errors import FunctionFailure, InvalidRequest
from ..schema import types as T
from .functions import FunctionRegistry


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


class TermEvaluator:
    """Evaluates terms of one statement execution with its bound values."""

    def __init__(self, functions: FunctionRegistry, bound: Sequence[Any] | Mapping[str, Any] | None = None) -> None:
        self.functions = functions
        self.bound = bound
        self._now_cache: dict[str, Any] = {}

    def value(self, term: Any, ctype: Any, receiver: str) -> Any:
        """The Python value of ``term`` as a value of ``ctype`` (None for null, ``T.UNSET`` for unset)."""
        if term is None:
            return None
        if isinstance(term, ast.BindMarker):
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
            return None
        if isinstance(term, ast.FunctionCall):
            if term.name == "cast" and len(term.args) == 2:
                return T.resolve_type(term.args[1], "", lambda ks, n: None)
            if term.name == "fromjson":
                return None
            try:
                f = self.functions.resolve(term.name, [self.infer_type(a) for a in term.args])
            except InvalidRequest:
                return None
            return f.return_type
        return None

    def call(self, fc: ast.FunctionCall, expected: Any, receiver: str) -> Any:
        """Call a scalar function in a term position; its result must suit ``expected``."""
        name = fc.name
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
        if name in ("token", "writetime", "ttl", "count", "tojson", "min", "max", "sum", "avg"):
            raise InvalidRequest(f"Function system.{name} cannot be used here")
        if name == "cast":
            raise InvalidRequest("CAST is only supported in the selection clause")
        arg_types = [self.infer_type(a) for a in fc.args]
        f = self.functions.resolve(name, arg_types)
        args = [self.value(a, p, f"{name}.arg{i}") for i, (a, p) in enumerate(zip(fc.args, f.arg_types))]
        if any(a is None for a in args):
            return None
        if expected is not None and not _compatible(f.return_type, expected):
            raise InvalidRequest(f"Type error: cannot assign result of function {call_text(fc)} "
                                 f"(type {f.return_type.cql()}) to {receiver} (type {expected.cql()})")
        result = f.impl(*args)
        return result


def _compatible(actual: Any, expected: Any) -> bool:
    if actual == expected:
        return True
    a = getattr(actual, "name", None)
    e = getattr(expected, "name", None)
    if e == "text" and a == "ascii":
        return True
    if e == "uuid" and a == "timeuuid":
        return True
    if e == "blob":
        return False
    return False
