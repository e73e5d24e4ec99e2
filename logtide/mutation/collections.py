"""Collections to cells (spec ``002``): appends, prepends, additions and removals of elements, ``l[i] = v``
and ``m[k] = v``; lists are maps keyed by timeuuids, so ``l[i] = v``, ``DELETE l[i]`` and ``l = l - [v]`` read
the list first (the write's ``RowReader``).
"""

from __future__ import annotations

from typing import Any

from ..cql import ast
from ..errors import InvalidRequest
from ..schema import types as T
from ..schema.model import Column
from ..schema.types_literal import term_text
from .targets import Target
from .writer import RowWriter, collection_cells


def collection_op(a: Any, col: Column, w: RowWriter, tg: Target) -> None:
    """``c = c + x``, ``c = x + c`` and ``c = c - x`` on a non-frozen collection or UDT (not a counter:
    ``mutation.arithmetic``); lists by value read the list first."""
    t = col.type
    ctx = w.ctx
    if not t.is_collection and not isinstance(t, T.UserType):
        raise InvalidRequest(f"Invalid operation ({op_text(a)}) for non counter column {col.name}")
    if not t.is_multicell:
        raise InvalidRequest(f"Invalid operation ({op_text(a)}) for frozen collection column {col.name}")
    if isinstance(a, ast.PrependTo) and not isinstance(t, T.ListType):
        raise InvalidRequest(f"Invalid operation ({op_text(a)}) for non list column {col.name}")
    if isinstance(a, ast.SubtractFrom):
        subtract(a, col, w, tg)
        return
    if isinstance(t, T.UserType):
        raise InvalidRequest(f"Invalid operation ({op_text(a)}) for non counter column {col.name}")
    value = ctx.ev.value(a.value, t, col.name)
    if value is T.UNSET or value is None:
        return
    for k, cell in collection_cells(col, value, w.attrs, ctx, prepend=isinstance(a, ast.PrependTo)).items():
        w.put_element(col.name, k, cell)


def subtract(a: ast.SubtractFrom, col: Column, w: RowWriter, tg: Target) -> None:
    """``c = c - x``: removes a map's keys, a set's elements, or a list's elements equal to one of ``x`` (read
    first)."""
    t = col.type
    ctx = w.ctx
    if isinstance(t, (T.MapType, T.SetType)):  # a map's keys or a set's elements, each removed by a tombstone
        is_map = isinstance(t, T.MapType)
        key_type = t.key if is_map else t.element
        keys = ctx.ev.value(a.value, T.SetType(t.key, False) if is_map else t, col.name)
        if keys is T.UNSET or keys is None:
            return
        for k in keys:
            w.put_element(col.name, key_type.serialize(k), w.attrs.cell(None, ctx.now))
    elif isinstance(t, T.ListType):
        values = ctx.ev.value(a.value, t, col.name)
        if values is T.UNSET or values is None:
            return
        doomed = {t.element.serialize(v) for v in values}
        for key, cell in ctx.reader.live_complex(w.pu.table, tg.pk, tg.token, w.ck, col):
            if cell.value in doomed:
                w.put_element(col.name, key, w.attrs.cell(None, ctx.now))
    else:
        raise InvalidRequest(f"Invalid operation ({op_text(a)}) for non counter column {col.name}")


def list_key_at(col: Column, w: RowWriter, tg: Target, index: Any) -> bytes:
    """The key of the element at ``index`` of a list as it is before the write (read first)."""
    if index is None:
        raise InvalidRequest("Invalid null value for list index")
    items = w.ctx.reader.live_complex(w.pu.table, tg.pk, tg.token, w.ck, col)
    if index < 0 or index >= len(items):
        raise InvalidRequest(f"List index {index} out of bound, list has size {len(items)}")
    return items[index][0]


def set_element(a: ast.SetElement, col: Column, w: RowWriter, tg: Target) -> None:
    """``m[k] = v`` on a map, ``l[i] = v`` on a list (by index, read first, or by timeuuid key)."""
    t = col.type
    ctx = w.ctx
    if not t.is_collection or isinstance(t, T.SetType):
        raise InvalidRequest(f"Invalid operation ({col.name}[...] = ...) for non list/map column {col.name}"
                             if not isinstance(t, T.SetType) else
                             f"Invalid operation ({col.name}[...] = ...) for set column {col.name}")
    if not t.is_multicell:
        # ScyllaDB names the terms: (m['k'] = 'v')
        key_text = term_text(a.key.key) if isinstance(a.key, ast.TimeuuidListIndex) else term_text(a.key)
        raise InvalidRequest(f"Invalid operation ({col.name}[{key_text}] = {term_text(a.value)}) for frozen "
                             f"collection column {col.name}")
    if isinstance(t, T.MapType):
        key = ctx.ev.value(a.key, t.key, f"key({col.name})")
        if key is None:
            raise InvalidRequest("Invalid null value for map key")
        if key is T.UNSET:
            raise InvalidRequest("Invalid unset map key")
        v = ctx.ev.value(a.value, t.value, f"value({col.name})")
        if v is T.UNSET:
            return
        w.put_element(col.name, t.key.serialize(key), w.attrs.cell(None if v is None else t.value.serialize(v), ctx.now))
        return
    # list
    if isinstance(a.key, ast.TimeuuidListIndex):
        k = ctx.ev.value(a.key.key, T.TIMEUUID, f"key({col.name})")
        if k is None:
            raise InvalidRequest("Invalid null value for list index")
        key = T.TIMEUUID.serialize(k)
    else:
        idx = ctx.ev.value(a.key, T.INT, f"idx({col.name})")
        if idx is T.UNSET:
            raise InvalidRequest("Invalid unset value for list index")
        key = list_key_at(col, w, tg, idx)
    v = ctx.ev.value(a.value, t.element, f"value({col.name})")
    if v is T.UNSET:
        return
    w.put_element(col.name, key, w.attrs.cell(None if v is None else t.element.serialize(v), ctx.now))


def op_text(a: Any) -> str:
    """How an arithmetic assignment reads in ScyllaDB's messages: ``c = c + ...``, ``c = c - ...``, ``c = ... + c``."""
    if isinstance(a, ast.AddTo):
        return f"{a.column} = {a.column} + ..."
    if isinstance(a, ast.SubtractFrom):
        return f"{a.column} = {a.column} - ..."
    return f"{a.column} = ... + {a.column}"
