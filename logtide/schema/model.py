"""Schema objects: keyspaces, tables, columns and user-defined types.

Values are frozen dataclasses; a schema change builds new objects (see
``logtide.schema.catalog``).  Column kinds and clustering orders use the
words ``system_schema.columns`` uses.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Sequence

from ..errors import InvalidRequest

PARTITION_KEY = "partition_key"
CLUSTERING = "clustering"
STATIC = "static"
REGULAR = "regular"


@dataclass(frozen=True)
class Column:
    """A table column: ``kind`` is partition_key/clustering/static/regular; ``position`` its index in the key (-1 otherwise)."""

    name: str
    type: Any  # a logtide.schema.types type
    kind: str = REGULAR
    position: int = -1
    clustering_order: str = "none"  # 'asc' | 'desc' | 'none'

    @property
    def is_primary_key(self) -> bool:
        return self.kind in (PARTITION_KEY, CLUSTERING)

    @property
    def is_static(self) -> bool:
        return self.kind == STATIC

    @property
    def reversed(self) -> bool:
        return self.clustering_order == "desc"


@dataclass(frozen=True)
class UserTypeDef:
    """A user-defined type as created by CREATE TYPE; field indices are positions in ``field_names``."""

    keyspace: str
    name: str
    field_names: tuple[str, ...]
    field_types: tuple[Any, ...]


@dataclass(frozen=True)
class Table:
    """A table.  ``columns`` is in ``SELECT *`` order: partition key, clustering key, static columns by name, then regular columns by name.

    ``options`` maps option names to values as DESCRIBE shows them (strings,
    numbers, or dicts of strings).  ``store_id`` is the integer key of this
    table's data in storage (never reused).  ``cdc`` holds the CDC options as
    a dict of strings or ``None`` when CDC was never configured.
    """

    keyspace: str
    name: str
    id: uuid.UUID
    store_id: int
    columns: tuple[Column, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    cdc: Mapping[str, str] | None = None
    cdc_base: str | None = None  # for a CDC log table: the base table's name
    # name -> (type string, drop time in microseconds); cells of that column
    # written at or before the drop time stay invisible if the column is re-added
    dropped_columns: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    # YDB changefeeds on this table (logtide.schema.changefeeds.Changefeed), in creation order
    changefeeds: tuple[Any, ...] = ()
    # a materialized view's base table and definition (logtide.schema.views.ViewInfo); None for a table
    view: Any = None
    # secondary indexes on this table (logtide.schema.indexes.SecondaryIndex), in creation order
    indexes: tuple[Any, ...] = ()
    # ScyllaDB's per-row TTL column (``logtide.schema.row_ttl``): a regular timestamp, bigint or int column whose
    # value is the time its row expires at; None when the table has none
    ttl_column: str | None = None

    # Derived views are computed once per (immutable) table.
    @cached_property
    def partition_key(self) -> tuple[Column, ...]:
        return tuple(sorted((c for c in self.columns if c.kind == PARTITION_KEY), key=lambda c: c.position))

    @cached_property
    def clustering_key(self) -> tuple[Column, ...]:
        return tuple(sorted((c for c in self.columns if c.kind == CLUSTERING), key=lambda c: c.position))

    @cached_property
    def primary_key(self) -> tuple[Column, ...]:
        return self.partition_key + self.clustering_key

    @cached_property
    def static_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.kind == STATIC)

    @cached_property
    def regular_columns(self) -> tuple[Column, ...]:
        return tuple(c for c in self.columns if c.kind == REGULAR)

    @cached_property
    def value_columns(self) -> tuple[Column, ...]:
        """Non-key columns (static and regular) sorted by name."""
        return tuple(sorted((c for c in self.columns if not c.is_primary_key), key=lambda c: c.name))

    @cached_property
    def regular_by_name(self) -> tuple[Column, ...]:
        """Regular columns sorted by name (a clustered row's image columns, as changefeeds render them)."""
        return tuple(c for c in self.value_columns if c.kind == REGULAR)

    @cached_property
    def multicell_names(self) -> frozenset[str]:
        """Names of the non-frozen collection and UDT columns (stored as cells per element)."""
        return frozenset(c.name for c in self.columns if c.type.is_multicell)

    @cached_property
    def _by_name(self) -> dict[str, Column]:
        return {c.name: c for c in self.columns}

    def column(self, name: str) -> Column | None:
        return self._by_name.get(name)

    @cached_property
    def is_counter_table(self) -> bool:
        return any(c.type.is_counter for c in self.columns if not c.is_primary_key)

    @property
    def default_ttl(self) -> int:
        return int(self.options.get("default_time_to_live", 0) or 0)

    @property
    def gc_grace_seconds(self) -> int:
        return int(self.options.get("gc_grace_seconds", 864000))


@dataclass(frozen=True)
class Keyspace:
    """A keyspace with its replication options (a dict of strings, ``class`` included) and its objects."""

    name: str
    replication: Mapping[str, str]
    durable_writes: bool = True
    tables: Mapping[str, Table] = field(default_factory=dict)
    types: Mapping[str, UserTypeDef] = field(default_factory=dict)
    functions: Mapping[str, Any] = field(default_factory=dict)  # signature -> udf.UserFunction
    aggregates: Mapping[str, Any] = field(default_factory=dict)  # signature -> udf.UserAggregate


MAX_KEY_LENGTH = 0xFFFF


def check_key_length(parts: Sequence[bytes]) -> None:
    """ScyllaDB's limit on a partition or clustering key: 65535 bytes, counted for a key of several
    columns as each component with its 2-byte length (so two components reach 65531)."""
    total = len(parts[0]) if len(parts) == 1 else sum(2 + len(p) for p in parts)
    if total > MAX_KEY_LENGTH:
        raise InvalidRequest(f"Key length of {total} is longer than maximum of {MAX_KEY_LENGTH}")


def check_partition_key(parts: Sequence[bytes]) -> None:
    """A partition key a write may use: not over 64 KiB, and not empty (a single-column key of an empty
    value, e.g. ``''``, is refused by Cassandra and ScyllaDB alike; an empty clustering key is fine)."""
    if len(parts) == 1 and not parts[0]:
        raise InvalidRequest("Key may not be empty")
    check_key_length(parts)
