"""Arithmetic assignments: ``c = c + x`` and ``c = c - x`` on a counter, and (ScyllaDB's extension) on a
numeric column of a lightweight transaction, from the value the write reads first.
"""

from __future__ import annotations

import decimal
from typing import Any

from ..cql import ast
from ..errors import InvalidRequest
from ..schema import types as T
from ..schema.model import Column
from .cells import Cell
from .collections import op_text
from .targets import Target
from .writer import RowWriter


ARITHMETIC_TYPES = (T.TINYINT, T.SMALLINT, T.INT, T.BIGINT, T.VARINT, T.FLOAT, T.DOUBLE, T.DECIMAL)
_INT_BITS = {T.TINYINT: 8, T.SMALLINT: 16, T.INT: 32, T.BIGINT: 64}


def add_to_counter(a: Any, col: Column, w: RowWriter, tg: Target) -> None:
    """``c = c + x`` / ``c = c - x`` on a counter column: the counter's current value (read before the write)
    plus or minus ``x``, refused past a bigint as ScyllaDB refuses it."""
    ctx = w.ctx
    if isinstance(a, ast.PrependTo):
        raise InvalidRequest(f"Invalid operation ({op_text(a)}) for non list column {col.name}")
    delta = ctx.ev.value(a.value, T.BIGINT, col.name)
    if delta is T.UNSET:
        return
    if delta is None:
        raise InvalidRequest("Invalid null value for counter increment/decrement")
    current = ctx.reader.live_cell(w.pu.table, tg.pk, tg.token, w.ck, col)
    base = T.BIGINT.deserialize(current.value) if current is not None and current.value else 0
    pending = w.row.cells.get(col.name)
    if pending is not None and pending.value is not None:
        base = T.BIGINT.deserialize(pending.value)
    new = base + (delta if isinstance(a, ast.AddTo) else -delta)
    if not -(2**63) <= new < 2**63:
        raise InvalidRequest("Counter value overflow")
    w.row.cells[col.name] = Cell(w.attrs.timestamp, T.BIGINT.serialize(new))


def arithmetic(a: Any, col: Column, w: RowWriter, tg: Target) -> None:
    """ScyllaDB's ``SET c = c + x`` / ``c - x`` on a numeric column of a lightweight transaction: the
    old value (read in the same write transaction as the condition) plus or minus ``x``; null when
    the old value is null; fixed-width integers refuse to overflow."""
    t = col.type
    ctx = w.ctx
    delta = ctx.ev.value(a.value, t, col.name)
    if delta is T.UNSET:
        return
    pending = w.row.cells.get(col.name)
    if pending is not None:
        old = None if pending.value is None else t.deserialize(pending.value)
    else:
        current = ctx.reader.live_cell(w.pu.table, tg.pk, tg.token, w.ck, col)
        old = None if current is None or current.value is None else t.deserialize(current.value)
    if old is None or delta is None:
        return  # null plus anything is null: the column stays as it is
    if t == T.DECIMAL:
        new = _decimal_sum(old, delta if isinstance(a, ast.AddTo) else -delta)
    else:
        new = old + delta if isinstance(a, ast.AddTo) else old - delta
    bits = _INT_BITS.get(t)
    if bits is not None and not -(2 ** (bits - 1)) <= new < 2 ** (bits - 1):
        raise InvalidRequest(f"Arithmetic {'ADD' if isinstance(a, ast.AddTo) else 'SUB'} overflow")
    w.set_value(col, new)


def _decimal_sum(a: Any, b: Any) -> Any:
    """``a + b`` exactly, refused when aligning the two scales would take more than 10,000 digits."""
    if not (a.is_finite() and b.is_finite()):
        raise InvalidRequest("Arithmetic on a non-finite decimal value")
    ea, eb = a.as_tuple(), b.as_tuple()
    width = max(len(ea.digits) + ea.exponent, len(eb.digits) + eb.exponent) - min(ea.exponent, eb.exponent) + 1
    if width > 10_000:
        raise InvalidRequest("Arithmetic ADD on decimal values of too different magnitudes")
    with decimal.localcontext() as dc:
        dc.prec = max(width, 28)
        return a + b
