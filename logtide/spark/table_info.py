"""A table's columns as ``system_schema`` describes them (works on logtide and ScyllaDB/Cassandra alike)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..schema import types as T
from .client import Client
from .options import OptionError


@dataclass(frozen=True)
class ColumnInfo:
    """One column: name, kind (partition_key, clustering, static, regular) and CQL type."""

    name: str
    kind: str
    position: int
    type: Any

    @property
    def is_primary_key(self) -> bool:
        return self.kind in ("partition_key", "clustering")


@dataclass(frozen=True)
class TableInfo:
    """Columns in CQL's order: partition key, clustering key, then the others by name."""

    keyspace: str
    name: str
    columns: tuple[ColumnInfo, ...]

    @property
    def partition_key(self) -> tuple[ColumnInfo, ...]:
        return tuple(c for c in self.columns if c.kind == "partition_key")

    @property
    def clustering(self) -> tuple[ColumnInfo, ...]:
        return tuple(c for c in self.columns if c.kind == "clustering")

    @property
    def regular(self) -> tuple[ColumnInfo, ...]:
        return tuple(c for c in self.columns if not c.is_primary_key)

    def column(self, name: str) -> ColumnInfo | None:
        return next((c for c in self.columns if c.name == name), None)


_KIND_ORDER = {"partition_key": 0, "clustering": 1, "static": 2, "regular": 2}


def load_table(client: Client, keyspace: str, table: str) -> TableInfo:
    """Read the table's columns and the user types they use; OptionError if the table does not exist."""
    rows = list(client.rows("SELECT column_name, kind, position, type FROM system_schema.columns "
                            "WHERE keyspace_name = ? AND table_name = ?", (keyspace, table)))
    if not rows:
        raise OptionError(f"option table: table {keyspace}.{table} does not exist")
    udt_rows = {r[0]: (r[1], r[2]) for r in client.rows(
        "SELECT type_name, field_names, field_types FROM system_schema.types WHERE keyspace_name = ?", (keyspace,))}
    cache: dict[str, T.UserType] = {}

    def lookup(ks: str | None, name: str) -> T.UserType | None:
        if name in cache:
            return cache[name]
        if name not in udt_rows:
            return None
        names, types = udt_rows[name]
        ft = tuple(T.parse_type_string(s, keyspace, lookup) for s in types)
        cache[name] = T.UserType(keyspace, name, tuple(names), ft, True)
        return cache[name]

    cols = [ColumnInfo(n, k, p if p is not None else -1, T.parse_type_string(t, keyspace, lookup))
            for n, k, p, t in rows]
    cols.sort(key=lambda c: (_KIND_ORDER.get(c.kind, 2), c.position if c.kind in ("partition_key", "clustering")
                             else 0, c.name))
    return TableInfo(keyspace, table, tuple(cols))
