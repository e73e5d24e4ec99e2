"""UPDATE to cells: the SET assignments of regular columns (``c = v``, a UDT field, and through
``mutation.collections`` and ``mutation.arithmetic`` the collection, counter and numeric ``c = c + x`` forms),
and the checks ScyllaDB makes of them when a statement is prepared.
"""

from __future__ import annotations

from typing import Any

from ..cql import ast
from ..errors import InvalidRequest
from ..query.restrictions import analyse
from ..schema import types as T
from ..schema.model import STATIC, Column, Table
from ..schema.types_literal import term_text
from .arithmetic import ARITHMETIC_TYPES, add_to_counter, arithmetic
from .collections import collection_op, op_text, set_element
from .context import WriteContext, resolve_attributes
from .model import Mutation
from .targets import Target, addressed_rows, check_primary_key_parts, check_static_only_statement, row_for
from .writer import RowWriter, field_key


def _assigned_columns(stmt: ast.Update, table: Table) -> list[Column]:
    cols = []
    for a in stmt.assignments:
        col = table.column(a.column)
        if col is None:
            raise InvalidRequest(f"Unknown identifier {a.column}")  # ScyllaDB's words
        if col.is_primary_key:
            raise InvalidRequest(f"PRIMARY KEY part {col.name} found in SET part")
        cols.append(col)
    return cols




def build_update(stmt: ast.Update, table: Table, ctx: WriteContext, mutation: Mutation) -> list[Target]:
    """Add an UPDATE to the mutation; returns the rows it addresses."""
    cols = _assigned_columns(stmt, table)
    attrs = resolve_attributes(stmt.using, table, ctx)
    if table.is_counter_table:
        if stmt.using.timestamp is not None:
            raise InvalidRequest("Cannot provide custom timestamp for counter updates")
        if stmt.using.ttl is not None:
            raise InvalidRequest("Cannot provide custom TTL for counter updates")
    # a condition on a regular column makes it a write of the clustering row (ScyllaDB's
    # ``applies_only_to_static_columns``)
    static_only = (bool(cols) and all(c.kind == STATIC for c in cols) and table.clustering_key != ()
                   and not _regular_conditions(stmt, table))
    if static_only:
        check_static_only_statement(stmt, table)
    shape = None if static_only else ctx.key_shape(stmt, table)
    if shape is not None:  # every key column once by ``=``: the clause's shape analysed once (``targets.KeyShape``)
        targets = shape.targets(ctx.ev)
    else:
        check_primary_key_parts(stmt, table)  # by names, even when an empty ``IN`` leaves no row to write
        kr = analyse(table, stmt.where, ctx.ev)  # static columns set by a row an IF condition names: that row's key
        targets = addressed_rows(table, kr, static_only and not kr.clustering_restricted)
    conditional = is_conditional(stmt)
    for tg in targets:
        pu = mutation.partition(table, tg.key, tg.pk, tg.token)
        for a, col in zip(stmt.assignments, cols):
            static = col.kind == STATIC
            row, ck = row_for(pu, table, () if static else tg.clustering, static, tg.ck)
            w = RowWriter(pu, row, attrs, ctx, ck)
            if conditional and isinstance(a, (ast.AddTo, ast.SubtractFrom)) and col.type in ARITHMETIC_TYPES:
                arithmetic(a, col, w, tg)
            else:
                assign(a, col, w, tg)
    return targets


def _regular_conditions(stmt: ast.Update, table: Table) -> bool:
    for c in stmt.conditions:
        col = table.column(c.lhs.name if isinstance(c.lhs, ast.ColumnRef) else c.lhs.column)
        if col is not None and col.kind != STATIC:
            return True
    return False


def is_conditional(stmt: Any) -> bool:
    """Whether a statement is a lightweight transaction (IF EXISTS, IF NOT EXISTS or IF conditions)."""
    return bool(getattr(stmt, "if_not_exists", False) or getattr(stmt, "if_exists", False)
                or getattr(stmt, "conditions", ()))


def check_assignments(stmt: ast.Update, table: Table) -> None:
    """The checks of an UPDATE's assignments made when it is prepared (ScyllaDB refuses them at PREPARE):
    ``c = c + x`` / ``c = c - x`` needs a counter, collection or UDT column, or a numeric column in a
    lightweight transaction (ScyllaDB's extension)."""
    conditional = is_conditional(stmt)
    for a in stmt.assignments:
        col = table.column(a.column)
        if col is not None and col.is_primary_key:
            raise InvalidRequest(f"PRIMARY KEY part {col.name} found in SET part")
        if col is None or not isinstance(a, (ast.AddTo, ast.SubtractFrom)):
            continue
        t = col.type
        if t.is_counter or t.is_collection or isinstance(t, T.UserType):
            continue
        if not (conditional and t in ARITHMETIC_TYPES):
            raise InvalidRequest(f"Invalid operation ({op_text(a)}) for non counter column {col.name}")
        if isinstance(a.value, ast.Constant):
            T.term_to_value(a.value, t, col.name, None)  # a literal of the wrong type is refused now


def assign(a: Any, col: Column, w: RowWriter, tg: Target) -> None:
    """One SET assignment of an UPDATE into the row ``w`` writes."""
    t = col.type
    ctx = w.ctx
    if isinstance(a, ast.SetColumn):
        if t.is_counter:
            raise InvalidRequest(f"Cannot set the value of counter column {col.name} (counters can only be incremented/decremented, not set)")
        w.set_value(col, ctx.ev.value(a.value, t, col.name))
    elif isinstance(a, (ast.AddTo, ast.SubtractFrom, ast.PrependTo)):
        if t.is_counter:
            add_to_counter(a, col, w, tg)
        else:
            collection_op(a, col, w, tg)
    elif isinstance(a, ast.SetElement):
        set_element(a, col, w, tg)
    elif isinstance(a, ast.SetField):
        text = f"{col.name}.{a.field} = {term_text(a.value)}"  # ScyllaDB's words (operation::set_field)
        if not isinstance(t, T.UserType):
            raise InvalidRequest(f"Invalid operation ({text}) for non-UDT column {col.name}")
        if not t.is_multicell:
            raise InvalidRequest(f"Invalid operation ({text}) for frozen UDT column {col.name}")
        if a.field not in t.field_names:
            raise InvalidRequest(f"UDT column {col.name} does not have a field named {a.field}")
        idx = t.field_names.index(a.field)
        ftype = t.field_types[idx]
        v = ctx.ev.value(a.value, ftype, f"{col.name}.{a.field}")
        if v is T.UNSET:
            return
        w.put_element(col.name, field_key(idx), w.attrs.cell(None if v is None else ftype.serialize(v), ctx.now))
    else:  # pragma: no cover - parser produces only the kinds above
        raise InvalidRequest(f"Unsupported assignment {a!r}")
