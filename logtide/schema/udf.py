"""User-defined functions and aggregates of a keyspace (ScyllaDB's ``user_function`` and ``user_aggregate``;
docs/compatibility.md "User-defined functions").  A function is known by its name and argument types (its
signature, ``f(int, text)``), so one name may have several overloads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from . import types as T


@dataclass(frozen=True)
class UserFunction:
    """``CREATE FUNCTION ks.name (arg type, ...) (CALLED | RETURNS NULL) ON NULL INPUT RETURNS type LANGUAGE lua
    AS 'body'``."""

    keyspace: str
    name: str
    arg_names: tuple[str, ...]
    arg_types: tuple[Any, ...]
    return_type: Any
    called_on_null_input: bool
    language: str
    body: str

    @property
    def signature(self) -> str:
        return signature(self.name, self.arg_types)

    def to_doc(self) -> dict[str, Any]:
        return {"name": self.name, "arg_names": list(self.arg_names), "arg_types": [t.cql() for t in self.arg_types],
                "return_type": self.return_type.cql(), "called_on_null_input": self.called_on_null_input,
                "language": self.language, "body": self.body}

    @classmethod
    def from_doc(cls, keyspace: str, d: Mapping[str, Any], lookup: Any) -> "UserFunction":
        return cls(keyspace, d["name"], tuple(d["arg_names"]),
                   tuple(T.parse_type_string(t, keyspace, lookup) for t in d["arg_types"]),
                   T.parse_type_string(d["return_type"], keyspace, lookup), bool(d["called_on_null_input"]),
                   d["language"], d["body"])

    def call(self, args: list[Any]) -> Any:
        """The function's value of ``args``: null when an argument is null and the function RETURNS NULL ON NULL
        INPUT, else what the Lua body returns."""
        if not self.called_on_null_input and any(a is None for a in args):
            return None
        from ..errors import InvalidRequest
        from .lua_udf import call

        try:
            return call(self.arg_names, self.body, self.arg_types, args, self.return_type)
        except InvalidRequest:
            raise
        except Exception as e:  # noqa: BLE001 - a value Lua gave that fits nothing: one line, never an internal error
            raise InvalidRequest(f"lua execution failed: {type(e).__name__}: {e}") from None


@dataclass(frozen=True)
class UserAggregate:
    """``CREATE AGGREGATE ks.name (type, ...) SFUNC f STYPE type [REDUCEFUNC r] [FINALFUNC g] [INITCOND v]``: the
    state function's and final function's signatures and the initial state (a Python value of the state type)."""

    keyspace: str
    name: str
    arg_types: tuple[Any, ...]
    state_function: str  # signature of the state function, f(stype, args...)
    state_type: Any
    final_function: str | None = None
    reduce_function: str | None = None
    initcond: bytes | None = None  # the initial state, serialized as the state type
    initcond_text: str | None = None  # the INITCOND as written, for system_schema and DESCRIBE

    @property
    def signature(self) -> str:
        return signature(self.name, self.arg_types)

    @property
    def return_type(self) -> Any:
        return self.state_type  # the final function's return type replaces it where there is one

    def to_doc(self) -> dict[str, Any]:
        return {"name": self.name, "arg_types": [t.cql() for t in self.arg_types], "sfunc": self.state_function,
                "stype": self.state_type.cql(), "finalfunc": self.final_function, "reducefunc": self.reduce_function,
                "initcond": self.initcond.hex() if self.initcond is not None else None,
                "initcond_text": self.initcond_text}

    @classmethod
    def from_doc(cls, keyspace: str, d: Mapping[str, Any], lookup: Any) -> "UserAggregate":
        stype = T.parse_type_string(d["stype"], keyspace, lookup)
        init = d.get("initcond")
        return cls(keyspace, d["name"], tuple(T.parse_type_string(t, keyspace, lookup) for t in d["arg_types"]),
                   d["sfunc"], stype, d.get("finalfunc"), d.get("reducefunc"),
                   bytes.fromhex(init) if init is not None else None, d.get("initcond_text"))

    def initial_state(self) -> Any:
        """The state an aggregation starts from (null without INITCOND)."""
        return self.state_type.deserialize(self.initcond) if self.initcond is not None else None


def type_name(t: Any) -> str:
    """A type as a signature names it: ScyllaDB's ``cql3_type_name`` (user types without ``frozen``)."""
    if isinstance(t, T.UserType):
        return t.name
    text = t.cql()
    return text[len("frozen<"):-1] if text.startswith("frozen<") and text.endswith(">") else text


def signature(name: str, arg_types: tuple[Any, ...] | list[Any]) -> str:
    """``name(t1, t2)``: how a function is keyed and named in messages."""
    return f"{name}({', '.join(type_name(t) for t in arg_types)})"


