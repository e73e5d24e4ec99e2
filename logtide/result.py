"""Results of executed statements: column specs, rows and result sets.

Rows support attribute access (``row.pk``), mapping access by CQL column name
(``row["cdc$time"]``) and positional access (``row[0]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence


@dataclass(frozen=True)
class ColumnSpec:
    """One result column: where it comes from, its name as CQL prints it, and its type object."""

    keyspace: str
    table: str
    name: str
    type: Any  # a logtide.schema.types type


class Row(tuple):
    """A result row: a tuple with access by column name (``row["v"]``, ``row.v``)."""

    _names: tuple[str, ...]

    def __new__(cls, names: tuple[str, ...], values: Sequence[Any]) -> "Row":
        row = super().__new__(cls, values)
        row._names = names
        return row

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self._names.index(key))
            except ValueError:
                raise KeyError(key) from None
        return tuple.__getitem__(self, key)

    def __getattr__(self, name: str) -> Any:
        try:
            return tuple.__getitem__(self, self._names.index(name))
        except ValueError:
            raise AttributeError(name) from None

    def keys(self) -> tuple[str, ...]:
        return self._names

    def items(self) -> list[tuple[str, Any]]:
        return list(zip(self._names, self))

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._names, self))

    def __repr__(self) -> str:
        return "Row(" + ", ".join(f"{n}={v!r}" for n, v in zip(self._names, self)) + ")"


@dataclass
class SchemaChange:
    """What a DDL statement changed: change_type CREATED/UPDATED/DROPPED, target KEYSPACE/TABLE/TYPE."""

    change_type: str
    target: str
    keyspace: str
    name: str | None = None
    argument_types: tuple[str, ...] = ()  # a FUNCTION's or AGGREGATE's signature
    # an implied CREATED TABLE holds the DDL's answer until listening clients read it (server.schema_events); the
    # views behind secondary indexes are only announced
    hold: bool = field(default=True, compare=False)


@dataclass
class ResultSet:
    """The result of one statement.

    ``kind`` is ``'rows'`` (a SELECT, an LWT result or a DESCRIBE),
    ``'void'``, ``'set_keyspace'`` or ``'schema_change'``.  ``describe`` is
    true for DESCRIBE results (rows ``keyspace_name, type, name,
    create_statement``).
    """

    kind: str = "void"
    columns: tuple[ColumnSpec, ...] = ()
    rows: list[Row] = field(default_factory=list)
    keyspace: str | None = None
    schema_change: SchemaChange | None = None
    describe: bool = False
    warnings: list[str] = field(default_factory=list)
    paging_state: bytes | None = None  # set when more rows may follow (SELECT with a page size)
    # schema changes the statement caused besides its own (e.g. a CDC log table created with its base)
    implied_changes: list[SchemaChange] = field(default_factory=list)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def column_types(self) -> list[Any]:
        return [c.type for c in self.columns]

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> Row:
        return self.rows[i]

    def one(self) -> Row | None:
        """The first row, or None."""
        return self.rows[0] if self.rows else None

    def all(self) -> list[Row]:
        return list(self.rows)

    @property
    def was_applied(self) -> bool:
        """For a conditional statement: the ``[applied]`` column of its single row."""
        if self.rows and self.column_names and self.column_names[0] == "[applied]":
            return bool(self.rows[0][0])
        return True
