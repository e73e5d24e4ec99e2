"""Values to cells: a statement's writes into one row of a partition update (``RowWriter``), a whole
non-frozen collection or UDT as element cells with the collection tombstone at ``T - 1`` (spec ``002``), and
non-frozen UDT fields as cells keyed by the field index (a smallint).
"""

from __future__ import annotations

import struct
from typing import Any

from ..errors import InvalidRequest
from ..schema import types as T
from ..schema.model import Column
from .cells import Cell, ComplexColumn, Deletion, RowData, reconcile, reconcile_deletion
from .context import Attributes, WriteContext
from .model import PartitionUpdate


def field_key(index: int) -> bytes:
    """The cell key of a non-frozen UDT field: its index as a big-endian smallint."""
    return struct.pack(">h", index)


def collection_cells(col: Column, value: Any, attrs: Attributes, ctx: WriteContext, prepend: bool = False) -> dict[bytes, Cell]:
    """Element cells for a whole non-frozen collection or UDT value."""
    t = col.type
    cells: dict[bytes, Cell] = {}
    if value is None:
        return cells
    if isinstance(t, T.ListType):
        items = list(value)
        for v in items:
            if v is None:
                raise InvalidRequest("null is not supported inside collections")
        keys = ctx.list_keys.prepend(len(items)) if prepend else ctx.list_keys.append(len(items))
        for k, v in zip(keys, items):
            cells[k] = attrs.cell(t.element.serialize(v), ctx.now)
    elif isinstance(t, T.SetType):
        for v in value:
            if v is None:
                raise InvalidRequest("null is not supported inside collections")
            cells[t.element.serialize(v)] = attrs.cell(b"", ctx.now)
    elif isinstance(t, T.MapType):
        for k, v in value.items():
            if k is None or v is None:
                raise InvalidRequest("null is not supported inside collections")
            cells[t.key.serialize(k)] = attrs.cell(t.value.serialize(v), ctx.now)
    elif isinstance(t, T.UserType):
        for i, (fname, ftype) in enumerate(zip(t.field_names, t.field_types)):
            fv = _udt_field(value, fname, i)
            if fv is not None:
                cells[field_key(i)] = attrs.cell(ftype.serialize(fv), ctx.now)
    return cells


def _udt_field(value: Any, name: str, index: int) -> Any:
    if isinstance(value, dict):
        return value.get(name)
    if hasattr(value, "_fields"):
        return getattr(value, name, None) if name in value._fields else (value[index] if index < len(value) else None)
    return value[index] if index < len(value) else None


class RowWriter:
    """Accumulates the writes of one statement into a row of a partition update."""

    def __init__(self, pu: PartitionUpdate, row: RowData, attrs: Attributes, ctx: WriteContext, ck: bytes) -> None:
        self.pu = pu
        self.row = row
        self.attrs = attrs
        self.ctx = ctx
        self.ck = ck

    def _complex(self, name: str) -> ComplexColumn:
        col = self.row.complex.get(name)
        if col is None:
            col = self.row.complex[name] = ComplexColumn()
        return col

    def put_cell(self, name: str, cell: Cell) -> None:
        cur = self.row.cells.get(name)
        self.row.cells[name] = cell if cur is None else reconcile(cur, cell)

    def put_element(self, name: str, key: bytes, cell: Cell) -> None:
        col = self._complex(name)
        cur = col.cells.get(key)
        col.cells[key] = cell if cur is None else reconcile(cur, cell)

    def delete_collection(self, name: str, timestamp: int) -> None:
        col = self._complex(name)
        col.deletion = reconcile_deletion(col.deletion, Deletion(timestamp, self.ctx.now))

    def set_value(self, col: Column, value: Any) -> None:
        """``c = value`` / INSERT value: a cell, or a collection overwrite (tombstone at T-1 plus elements)."""
        if value is T.UNSET:
            return
        if col.type.is_multicell:
            self.delete_collection(col.name, self.attrs.timestamp - 1)
            for k, cell in collection_cells(col, value, self.attrs, self.ctx).items():
                self.put_element(col.name, k, cell)
            return
        data = None if value is None else col.type.serialize(value)
        self.put_cell(col.name, self.attrs.cell(data, self.ctx.now))
