"""``logtide replay --verify``: compare a replica with its source cell by cell, in CQL terms.

Spec ``000`` promises that replaying delta rows reproduces "the exact same
write"; this checks it.  Both tables are read in one snapshot each; every
live row is compared on its row marker and, per column, its value,
write timestamp and TTL.  Each difference is one line naming the row by its
primary key as a CQL condition and the values as CQL literals::

    pk = 1 AND ck = 2: v: source 'a' (writetime 1700000000000000, ttl 60), replica 'b' (writetime 1700000000000001)
    pk = 3 AND ck = 0: row missing from the replica
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..format.literal import cql_literal, key_condition, name, serialized_literal
from ..query.read import LiveRow, stored_partitions
from ..schema import types as T
from ..schema.model import Table


@dataclass(frozen=True)
class CellView:
    """A column's live content: a literal, and the write timestamps and TTLs of its cell(s)."""

    literal: str
    writetimes: tuple[int, ...]
    ttls: tuple[int, ...]

    def describe(self) -> str:
        stamps = sorted(set(self.writetimes))
        ttls = sorted(set(t for t in self.ttls if t))
        meta = ("writetime " if len(stamps) == 1 else "writetimes ") + ", ".join(map(str, stamps))
        if ttls:
            meta += (", ttl " if len(ttls) == 1 else ", ttls ") + ", ".join(map(str, ttls))
        return f"{self.literal} ({meta})"


@dataclass
class RowView:
    """One live row (or static row) of a table as the comparison sees it."""

    where: str
    marker: bool
    columns: dict[str, CellView] = field(default_factory=dict)


@dataclass(frozen=True)
class Difference:
    """One difference between source and replica: the row (as a CQL condition) and what differs."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


def _udt_literal(ctype: T.UserType, fields: list[tuple[bytes, bytes | None]]) -> str:
    parts = []
    for k, v in fields:
        (i,) = struct.unpack(">h", k)
        parts.append(f"{name(ctype.field_names[i])}: {serialized_literal(ctype.field_types[i], v)}")
    return "{" + ", ".join(parts) + "}"


def complex_literal(ctype: Any, elements: list[tuple[bytes, bytes | None]]) -> str:
    """The literal of a non-frozen collection or UDT from its live element cells (key, value)."""
    if isinstance(ctype, T.UserType):
        return _udt_literal(ctype, elements)
    frozen = ctype.freeze() if hasattr(ctype, "freeze") else ctype
    if isinstance(ctype, T.ListType):
        value: Any = [ctype.element.deserialize(v) for _, v in elements]
    elif isinstance(ctype, T.SetType):
        value = [ctype.element.deserialize(k) for k, _ in elements]
        return "{" + ", ".join(cql_literal(ctype.element, v) for v in value) + "}"
    else:
        value = {ctype.key.deserialize(k): ctype.value.deserialize(v) for k, v in elements}
    return cql_literal(frozen, value)


def row_view(table: Table, lr: LiveRow, static: bool) -> RowView:
    """The comparable content of one live row."""
    where = key_condition(table.partition_key, lr.key)
    if static:
        where += " (static row)"
    elif table.clustering_key:
        where += " AND " + key_condition(table.clustering_key, lr.clustering)
    view = RowView(where, lr.marker_live)
    for col in table.columns:
        if col.name in lr.cells:
            c = lr.cells[col.name]
            view.columns[col.name] = CellView(serialized_literal(col.type, c.value), (c.timestamp,), (c.ttl,))
        elif lr.complex.get(col.name):
            elems = lr.complex[col.name]
            view.columns[col.name] = CellView(complex_literal(col.type, [(k, c.value) for k, c in elems]),
                                              tuple(c.timestamp for _, c in elems), tuple(c.ttl for _, c in elems))
    return view


def table_rows(db: Any, table: Table) -> dict[tuple[bytes, bytes | None], RowView]:
    """Every live row of a table (static rows under ck None), read in one snapshot."""
    now = db.now_seconds()
    out: dict[tuple[bytes, bytes | None], RowView] = {}
    with db.store.snapshot() as txn:
        for part in stored_partitions(table, txn, now, None, True, None, True):
            static = part.static_row()
            if static is not None:
                out[(part.pk, None)] = row_view(table, static, True)
            for lr in part.rows(None, None):
                out[(part.pk, lr.ck)] = row_view(table, lr, False)
    return out


def _row_differences(src: RowView, dst: RowView, table: Table) -> Iterator[Difference]:
    if src.marker != dst.marker:
        yield Difference(src.where, f"row marker: source {'live' if src.marker else 'none'}, "
                                    f"replica {'live' if dst.marker else 'none'}")
    for col in table.columns:
        a, b = src.columns.get(col.name), dst.columns.get(col.name)
        if a != b:
            yield Difference(src.where, f"{name(col.name)}: source {a.describe() if a else 'null'}, "
                                        f"replica {b.describe() if b else 'null'}")


def compare_tables(a_db: Any, a: Table, b_db: Any, b: Table) -> list[Difference]:
    """Differences between two tables' live rows: markers, values, timestamps and TTLs (source ``a``)."""
    left = table_rows(a_db, a)
    right = table_rows(b_db, b)
    diffs: list[Difference] = []
    for key in sorted(set(left) | set(right), key=lambda k: (k[0], k[1] or b"")):
        src, dst = left.get(key), right.get(key)
        if dst is None:
            assert src is not None
            diffs.append(Difference(src.where, "row missing from the replica"))
        elif src is None:
            diffs.append(Difference(dst.where, "row only in the replica"))
        else:
            diffs.extend(_row_differences(src, dst, a))
    return diffs

