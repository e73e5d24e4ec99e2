"""Selectors that read a cell's metadata: write times, TTLs, list keys and the row marker.

ScyllaDB's ``WRITETIME`` and ``TTL``, Cassandra 5.0's ``MAXWRITETIME`` (CASSANDRA-17425), and
logtide's extensions for exact copies of a table (docs/semantics.md, "Write times and TTLs"):

* on an atomic column (or a frozen collection/UDT) one ``bigint``/``int`` for its cell;
* ``WRITETIME``/``TTL`` of a whole non-frozen collection or UDT is refused, as ScyllaDB refuses it
  (``WRITETIME expects an atomic column, but m is a non-frozen collection``); Cassandra 5.0's
  per-element form is logtide's ``LOGTIDE_ELEMENT_WRITETIMES(c)``/``LOGTIDE_ELEMENT_TTLS(c)``: a
  ``list<bigint>``/``list<int>`` with one entry per element in element order (a UDT: one per field in
  declaration order, null for a field without a value), what ``logtide pipeline replicate`` copies;
  ``MAXWRITETIME`` gives the greatest of them as one ``bigint``;
* on one element or field (``WRITETIME(m[k])``, ``TTL(u.f)``) that element's value (ScyllaDB: of a
  non-frozen map or set, or a non-frozen UDT; a frozen value is one cell);
* ``TTL`` is the remaining time to live, null for a cell written without one;
* ``LOGTIDE_ORIGINAL_TTL`` is the TTL the cell was written with (what ``cdc$ttl`` logs and
  ``logtide replay --verify`` compares), in the shapes of ``TTL``;
* ``LOGTIDE_LIST_KEYS(l)`` is a non-frozen list's element keys (``list<timeuuid>``, in order): the
  keys ``l[SCYLLA_TIMEUUID_LIST_INDEX(k)] = v`` writes;
* ``LOGTIDE_MARKER_WRITETIME()``/``LOGTIDE_MARKER_TTL()`` are the clustering row's live row marker's
  write time and original TTL (null when the row has no live marker, and for a static row).

Counters and primary-key columns are refused with Cassandra's and ScyllaDB's messages.

One idea split for size with ``select.py``, ``projection.py``, ``read.py`` and ``select_result.py``: the
SELECT pipeline (its cell-metadata selectors here).
"""

from __future__ import annotations

from typing import Any, Callable

from ..cql import ast
from ..errors import InvalidRequest
from ..schema import types as T
from ..schema.model import STATIC, Column, Table
from .restrictions import unrecognized_name

WRITETIME, MAXWRITETIME, TTL = "writetime", "maxwritetime", "ttl"
ORIGINAL_TTL, LIST_KEYS = "logtide_original_ttl", "logtide_list_keys"
ELEMENT_WRITETIMES, ELEMENT_TTLS = "logtide_element_writetimes", "logtide_element_ttls"
MARKER_WRITETIME, MARKER_TTL = "logtide_marker_writetime", "logtide_marker_ttl"
CELL_FUNCTIONS = (WRITETIME, MAXWRITETIME, TTL, ORIGINAL_TTL, ELEMENT_WRITETIMES, ELEMENT_TTLS)
FUNCTIONS = CELL_FUNCTIONS + (LIST_KEYS, MARKER_WRITETIME, MARKER_TTL)
_LABELS = {WRITETIME: "writeTime", MAXWRITETIME: "maxwritetime", TTL: "ttl", ORIGINAL_TTL: "logtide_original_ttl",
           LIST_KEYS: "logtide_list_keys", ELEMENT_WRITETIMES: ELEMENT_WRITETIMES, ELEMENT_TTLS: ELEMENT_TTLS}


def _source(r: Any, col: Column) -> Any:
    return r.static if col.kind == STATIC else r.row


def _complex(r: Any, col: Column) -> list:
    src = _source(r, col)
    return [] if src is None else src.complex.get(col.name) or []


def _of_cell(name: str, now: int) -> Callable[[Any], Any]:
    """What the function gives for one cell."""
    if name in (WRITETIME, MAXWRITETIME, ELEMENT_WRITETIMES):
        return lambda c: c.timestamp
    if name in (TTL, ELEMENT_TTLS):
        return lambda c: (c.ldt - now) if c.ttl else None
    return lambda c: c.ttl or None


def _column(fc: ast.FunctionCall, table: Table, name: str) -> tuple[Column, Any]:
    """The column a metadata function reads, and the element or field it selects (or None)."""
    label = _LABELS[name]
    if len(fc.args) != 1:
        raise InvalidRequest(f"{label} requires exactly one column argument")
    arg, selector = fc.args[0], None
    if isinstance(arg, (ast.ElementSelection, ast.FieldSelection)) and isinstance(arg.expr, ast.ColumnRef):
        selector, arg = arg, arg.expr
    if not isinstance(arg, ast.ColumnRef):
        raise InvalidRequest(f"{label} requires exactly one column argument")
    col = table.column(arg.name)
    if col is None:
        raise unrecognized_name(arg.name)
    if col.is_primary_key:
        if name in (WRITETIME, TTL):  # ScyllaDB's words (prepare_column_mutation_attribute)
            where = "partition key" if selector is None else "primary key"
            raise InvalidRequest(f"{name.upper()} is not legal on {where} component {col.name}")
        raise InvalidRequest(f"Cannot use selection function {label} on PRIMARY KEY part {col.name}")
    if col.type.is_counter:
        raise InvalidRequest(f"Cannot use selection function {label} on counter column {col.name}")
    return col, selector


def compile_meta(fc: ast.FunctionCall, table: Table, ctx: Any, compile_selector: Callable) -> Any:
    """Compile one of :data:`FUNCTIONS` into a ``select.Selected``."""
    from .selection import Selected

    name = fc.name
    if name in (MARKER_WRITETIME, MARKER_TTL):
        if fc.args:
            raise InvalidRequest(f"{name} takes no arguments")
        pick = (lambda m: m.timestamp) if name == MARKER_WRITETIME else (lambda m: m.ttl or None)

        def marker(r: Any, pick=pick) -> Any:
            m = None if r.row is None else r.row.marker
            return None if m is None else pick(m)
        return Selected(f"{name}()", T.BIGINT if name == MARKER_WRITETIME else T.INT, marker)
    col, selector = _column(fc, table, name)
    text = f"{name}({selector_text(selector, col)})"
    if name == LIST_KEYS:
        if selector is not None or not (isinstance(col.type, T.ListType) and col.type.is_multicell):
            raise InvalidRequest(f"Cannot use selection function {name} on {text[len(name) + 1:-1]}: "
                                 f"it takes a non-frozen list column")
        return Selected(text, T.ListType(T.TIMEUUID),
                        lambda r, c=col: [T.TIMEUUID.deserialize(k) for k, _ in _complex(r, c)] or None,
                        columns=(col.name,))
    scalar = T.BIGINT if name in (WRITETIME, MAXWRITETIME, ELEMENT_WRITETIMES) else T.INT
    of_cell = _of_cell(name, ctx.now)
    if selector is not None:
        inner = compile_selector(selector, table, ctx)  # validates the element or field, as a plain selector
        _check_element_selector(name, selector, col)
        if col.type.is_multicell:
            return Selected(text, scalar, _element(col, selector, ctx, of_cell), columns=(col.name,))
        return Selected(text, scalar, lambda r, c=col, i=inner: _whole(r, c, of_cell) if i.compute(r) is not None
                        else None, columns=(col.name,))
    if not col.type.is_multicell:
        return Selected(text, scalar, lambda r, c=col: _whole(r, c, of_cell), columns=(col.name,))
    if name in (WRITETIME, TTL):  # ScyllaDB's words (prepare_column_mutation_attribute)
        raise InvalidRequest(f"{name.upper()} expects an atomic column, but {col.name} is a non-frozen collection")
    if name == MAXWRITETIME:
        return Selected(text, scalar, lambda r, c=col: max((x.timestamp for _, x in _complex(r, c)), default=None),
                        columns=(col.name,))
    per_element = _per_field(col.type, of_cell) if isinstance(col.type, T.UserType) else (
        lambda elems: [of_cell(c) for _, c in elems] or None)
    return Selected(text, T.ListType(scalar), lambda r, c=col: per_element(_complex(r, c)),
                    columns=(col.name,))


def _check_element_selector(name: str, selector: Any, col: Column) -> None:
    """ScyllaDB: the metadata of one element needs a non-frozen map or set, of one field a non-frozen UDT."""
    t = col.type
    label = name.upper()
    if isinstance(selector, ast.ElementSelection):
        if not (isinstance(t, (T.MapType, T.SetType)) and t.is_multicell):
            raise InvalidRequest(f"{label} on a subscript is only valid for non-frozen map or set columns")
    elif not (isinstance(t, T.UserType) and t.is_multicell):
        raise InvalidRequest(f"{label} on a field selection is only valid for non-frozen UDT columns")


def selector_text(selector: Any, col: Column) -> str:
    """How a metadata function names its argument in the result column."""
    from .evaluate import arg_text

    if isinstance(selector, ast.ElementSelection):
        return f"{col.name}[{arg_text(selector.key)}]"
    if isinstance(selector, ast.FieldSelection):
        return f"{col.name}.{selector.field}"
    return col.name


def _whole(r: Any, col: Column, of_cell: Callable) -> Any:
    src = _source(r, col)
    cell = None if src is None else src.cells.get(col.name)
    return None if cell is None else of_cell(cell)


def _per_field(t: T.UserType, of_cell: Callable) -> Callable[[list], Any]:
    """One entry per declared field, null where the field has no live cell (Cassandra 5.0)."""
    import struct

    def fields(elems: list) -> Any:
        if not elems:
            return None
        by_index = {struct.unpack(">h", k)[0]: c for k, c in elems}
        return [of_cell(by_index[i]) if i in by_index else None for i in range(len(t.field_names))]
    return fields


def _element(col: Column, selector: Any, ctx: Any, of_cell: Callable) -> Callable[[Any], Any]:
    """The metadata of one element (set/map) or field (UDT) of a non-frozen column."""
    t = col.type
    if isinstance(selector, ast.FieldSelection):
        import struct

        key = struct.pack(">h", t.field_names.index(selector.field))
    else:
        kt = t.key if isinstance(t, T.MapType) else t.element
        value = ctx.ev.value(selector.key, kt, col.name)
        key = None if value is None else kt.serialize(value)

    def element(r: Any) -> Any:
        for k, c in _complex(r, col):
            if k == key:
                return of_cell(c)
        return None
    return element
