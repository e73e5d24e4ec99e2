"""Test doubles: CQL type objects (the types-module contract) and an engine session.

``types_module()`` returns ``logtide.schema.types`` once it implements the
contract, else these fakes, so the tests run either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable

from logtide.errors import CqlError
from logtide.result import ColumnSpec, ResultSet, Row


@dataclass(frozen=True)
class NativeType:
    name: str

    def cql(self) -> str:
        return self.name


@dataclass(frozen=True)
class ListType:
    element: Any
    frozen: bool = False

    def cql(self) -> str:
        text = "list<%s>" % self.element.cql()
        return "frozen<%s>" % text if self.frozen else text


@dataclass(frozen=True)
class SetType:
    element: Any
    frozen: bool = False

    def cql(self) -> str:
        text = "set<%s>" % self.element.cql()
        return "frozen<%s>" % text if self.frozen else text


@dataclass(frozen=True)
class MapType:
    key: Any
    value: Any
    frozen: bool = False

    def cql(self) -> str:
        text = "map<%s, %s>" % (self.key.cql(), self.value.cql())
        return "frozen<%s>" % text if self.frozen else text


@dataclass(frozen=True)
class TupleType:
    items: tuple

    def cql(self) -> str:
        return "tuple<%s>" % ", ".join(t.cql() for t in self.items)


@dataclass(frozen=True)
class UserType:
    keyspace: str
    name: str
    field_names: tuple
    field_types: tuple
    frozen: bool = True

    def cql(self) -> str:
        return "frozen<%s>" % self.name if self.frozen else self.name


def types_module() -> Any:
    """The real types module if it is implemented, else these fakes."""
    try:
        from logtide.schema import types as real

        if all(hasattr(real, n) for n in ("NativeType", "ListType", "SetType", "MapType", "TupleType", "UserType")):
            return real
    except ImportError:
        pass
    return SimpleNamespace(NativeType=NativeType, ListType=ListType, SetType=SetType, MapType=MapType,
                           TupleType=TupleType, UserType=UserType)


def rows_result(columns: list[tuple[str, Any]], rows: list[tuple], keyspace: str = "ks",
                table: str = "t", describe: bool = False, warnings: list[str] | None = None) -> ResultSet:
    """A hand-made rows ResultSet."""
    specs = tuple(ColumnSpec(keyspace, table, name, ctype) for name, ctype in columns)
    names = tuple(name for name, _ in columns)
    return ResultSet(kind="rows", columns=specs, rows=[Row(names, r) for r in rows],
                     describe=describe, warnings=list(warnings or []))


def describe_result(rows: list[tuple[str, str, str, str]]) -> ResultSet:
    """A server-side DESCRIBE result (keyspace_name, type, name, create_statement)."""
    text = NativeType("text")
    return rows_result([("keyspace_name", text), ("type", text), ("name", text),
                        ("create_statement", text)], rows, "", "", describe=True)


@dataclass
class FakeSession:
    """Answers statements from a table of canned results (exact text, then by prefix)."""

    answers: dict[str, Any] = field(default_factory=dict)
    keyspace: str | None = None
    executed: list[str] = field(default_factory=list)

    def execute(self, cql: str, params: Any = None) -> ResultSet:
        self.executed.append(cql)
        answer = self.answers.get(cql)
        if answer is None:
            answer = next((v for k, v in self.answers.items() if cql.startswith(k)), ResultSet())
        if isinstance(answer, CqlError):
            raise answer
        if callable(answer):
            return answer(self, cql)
        return answer


def use_keyspace(session: FakeSession, cql: str) -> ResultSet:
    """A canned answer for USE: switches the fake session's keyspace."""
    session.keyspace = cql.split()[1].strip('"')
    return ResultSet(kind="set_keyspace", keyspace=session.keyspace)


def factory(session: FakeSession) -> Callable[[str | None], FakeSession]:
    """A session factory that always hands out ``session``."""
    return lambda keyspace: session
