"""The rules of a WHERE clause that need no bound value, checked when a statement is prepared and when it runs.

ScyllaDB checks these while it prepares a statement (``expr::validate_and_prepare_new_restriction`` for each
relation, then the loop of ``statement_restrictions`` over them), so a prepared statement that breaks one is
refused at PREPARE, before any value is bound:

* ``!=`` is no relation of a WHERE clause (``Unsupported "!=" relation: b != 5``);
* a relation on a whole non-frozen collection may only be ``CONTAINS`` or ``CONTAINS KEY`` (``Collection column
  'b' (set<int>) cannot be restricted by a '=' relation``); ``CONTAINS`` needs a collection, ``LIKE`` a string;
* a multi-column relation names clustering columns, the first of them and the ones after it in key order
  (``Clustering columns may not be skipped in multi-column relations. They should appear in the PRIMARY KEY
  order``);
* single-column and multi-column relations on clustering columns do not mix (ScyllaDB's issue #4244; Cassandra
  reads some mixes), and a column restricted by two multi-column relations gets ScyllaDB's messages.
"""

from __future__ import annotations

from typing import Sequence

from ..cql import ast
from ..errors import InvalidRequest
from ..schema import types as T
from ..schema.model import CLUSTERING, Column, Table
from ..schema.types_literal import term_text

SLICE_OPS = ("<", "<=", ">", ">=")
MIXING_MESSAGE = "Mixing single column relations and multi column relations on clustering columns is not allowed"


class UnrecognizedName(InvalidRequest):
    """ScyllaDB's error for a name in a WHERE clause, an IF condition or a selector that is no column of the
    table (``unrecognized_entity_exception``; Cassandra says "Undefined column name")."""

    def __init__(self, entity: str) -> None:
        super().__init__(f"Unrecognized name {entity}")
        self.entity = entity


def unrecognized_name(name: str) -> UnrecognizedName:
    """The error for a name that is no column of the table (:class:`UnrecognizedName`)."""
    return UnrecognizedName(name)


def where_column(table: Table, name: str, aliases: frozenset[str] | set[str] = frozenset()) -> Column:
    """The column a WHERE clause or condition names; an unknown name is ScyllaDB's "Unrecognized name", or
    "Aliases aren't allowed in the WHERE clause" when it is an alias of the SELECT's selectors."""
    col = table.column(name)
    if col is None:
        if name in aliases:
            raise InvalidRequest(f"Aliases aren't allowed in the WHERE clause (name: '{name}')")
        raise unrecognized_name(name)
    return col


def lhs_text(lhs: ast.ColumnRef | ast.ColumnTuple | ast.TokenOf | ast.ElementRef) -> str:
    """The left side of a relation as ScyllaDB prints it in its messages."""
    if isinstance(lhs, ast.ColumnTuple):
        return "(" + ", ".join(lhs.columns) + ")"
    if isinstance(lhs, ast.TokenOf):
        return "token(" + ", ".join(lhs.columns) + ")"
    if isinstance(lhs, ast.ElementRef):
        return f"{lhs.column}[{term_text(lhs.key)}]"
    return lhs.name


def check_operator(rel: ast.Relation) -> None:
    """ScyllaDB's first checks of a relation, before its names are looked up: the operators a WHERE clause
    refuses whatever the columns."""
    if rel.op == "!=":
        raise InvalidRequest(f'Unsupported "!=" relation: {lhs_text(rel.lhs)} != {term_text(rel.rhs)}')
    if isinstance(rel.lhs, ast.ColumnTuple):
        width = len(rel.lhs.columns)
        for item in rel.rhs.items if isinstance(rel.rhs, ast.InValues) else (rel.rhs,):
            if isinstance(item, ast.TupleLiteral) and len(item.items) != width:
                raise InvalidRequest(f"Expected {width} elements in value tuple, but got {len(item.items)}: "
                                     f"{term_text(item)}")


def check_relation(table: Table, rel: ast.Relation) -> None:
    """ScyllaDB's checks of one relation against the table's columns (``validate_single_column_relation``,
    ``validate_multi_column_relation``)."""
    lhs = rel.lhs
    if isinstance(lhs, ast.ColumnTuple):
        _check_multi_column(table, lhs)
    elif isinstance(lhs, ast.TokenOf):
        _check_token(table, lhs)
    elif isinstance(lhs, ast.ElementRef):
        _check_element(where_column(table, lhs.column), rel.op)
    elif isinstance(lhs, ast.ColumnRef):
        col = where_column(table, lhs.name)
        t = col.type
        if rel.op == "CONTAINS" and not t.is_collection:
            raise InvalidRequest(f"Cannot use CONTAINS on non-collection column \"{col.name}\"")
        if rel.op == "CONTAINS KEY" and not isinstance(t, T.MapType):
            raise InvalidRequest(f"Cannot use CONTAINS KEY on non-map column {col.name}")
        if rel.op == "LIKE" and getattr(t, "name", None) not in ("text", "ascii", "varchar"):
            raise InvalidRequest(f"LIKE is allowed only on string types, which {col.name} is not")
        if t.is_collection and t.is_multicell and rel.op not in ("CONTAINS", "CONTAINS KEY"):
            raise InvalidRequest(f"Collection column '{col.name}' ({t.cql()}) cannot be restricted by a "
                                 f"'{rel.op}' relation")


def _check_element(col: Column, op: str) -> None:
    """``m[key] = v`` on a non-frozen map and ``l[index] = v`` on a non-frozen list only."""
    t = col.type
    if not isinstance(t, (T.MapType, T.ListType)):
        raise InvalidRequest(f"Column {col.name} cannot be subscripted")
    if not t.is_multicell:
        kind, name = ("Map-entry", "map") if isinstance(t, T.MapType) else ("List element", "list")
        raise InvalidRequest(f"{kind} equality predicates on frozen {name} column {col.name} are not supported")
    if op != "=":
        raise InvalidRequest("Only EQ relations are supported on map/list entries")


def _check_token(table: Table, lhs: ast.TokenOf) -> None:
    """``token()`` takes the partition key's columns, each once, in key order."""
    names = [c.name for c in table.partition_key]
    given = list(lhs.columns)
    if given != names:
        for name in given:
            where_column(table, name)
        if len(set(given)) < len(given):
            raise InvalidRequest("The token() function contains duplicate partition key components")
        if len(set(given)) < len(names):
            raise InvalidRequest("The token() function must be applied to all partition key components or none of them")
        raise InvalidRequest("The token function arguments must be in the partition key order: " + ", ".join(names))


def _check_multi_column(table: Table, lhs: ast.ColumnTuple) -> None:
    """Clustering columns only, starting at the first one, each the next one in key order."""
    previous = -1
    for name in lhs.columns:
        col = where_column(table, name)
        if col.kind != CLUSTERING:
            raise InvalidRequest(f"Multi-column relations can only be applied to clustering columns but was "
                                 f"applied to: {col.name}")
        if col.position != previous + 1:
            if previous == -1:
                raise InvalidRequest("Clustering columns may not be skipped in multi-column relations. "
                                     "They should appear in the PRIMARY KEY order")
            raise InvalidRequest("Clustering columns must appear in the PRIMARY KEY order in multi-column relations")
        previous = col.position


def check_restrictions(table: Table, where: Sequence[ast.Relation], allow_filtering: bool = False) -> None:
    """ScyllaDB's ``statement_restrictions`` over the relations, in the order written: ``IS NOT NULL`` belongs
    to a materialized view's definition (refused in Cassandra's words); single-column and multi-column relations
    on clustering columns do not mix, whichever comes first; a second multi-column relation may only be a slice,
    after a slice, bounding the other side.  Without ``allow_filtering`` a single-column relation on a clustering
    column after a slice on an earlier one, or a slice on a clustering column written after a relation on a
    later one, is refused, naming the columns in the order written."""
    single = False
    last: Column | None = None  # the last clustering column of the single-column relations so far
    first: ast.Relation | None = None  # the first multi-column relation
    restricted: list[str] = []  # the columns of the multi-column relations so far
    has_slice = False
    for rel in where:
        lhs = rel.lhs
        if rel.op == "IS NOT":
            raise InvalidRequest(f"Unsupported restriction: {lhs_text(lhs)} IS NOT NULL")
        if isinstance(lhs, ast.ColumnRef):
            col = table.column(lhs.name)
            if col is not None and col.kind == CLUSTERING:
                if first is not None:
                    raise InvalidRequest(MIXING_MESSAGE)
                if last is not None and not allow_filtering:
                    _check_after_slice(col, last, has_slice, rel.op in SLICE_OPS)
                single, has_slice = True, has_slice or rel.op in SLICE_OPS
                if last is None or col.position > last.position:
                    last = col
            continue
        if not isinstance(lhs, ast.ColumnTuple):
            continue
        if first is None:
            if single:
                raise InvalidRequest(MIXING_MESSAGE)
            first, restricted, has_slice = rel, list(lhs.columns), rel.op in SLICE_OPS
            continue
        common = _in_common(table, restricted, lhs.columns)
        if rel.op == "=":
            raise InvalidRequest(f"{common} cannot be restricted by more than one relation if it includes an Equal")
        if rel.op == "IN":
            raise InvalidRequest(f"{common} cannot be restricted by more than one relation if it includes a IN")
        if not has_slice:
            raise InvalidRequest(f'Column "{common}" cannot be restricted by both an equality and an inequality '
                                 "relation")
        for side, ops in (("start", (">", ">=")), ("end", ("<", "<="))):
            if rel.op in ops and first.op in ops:
                raise InvalidRequest(f"More than one restriction was found for the {side} bound on "
                                     f"{_in_common(table, first.lhs.columns, lhs.columns)}")
        restricted.extend(lhs.columns)


def _check_after_slice(col: Column, last: Column, has_slice: bool, is_slice: bool) -> None:
    """ScyllaDB's two checks of a single-column clustering relation against the ones written before it."""
    if has_slice and col.position > last.position:
        raise InvalidRequest(f'Clustering column "{col.name}" cannot be restricted (preceding column "{last.name}" '
                             "is restricted by a non-EQ relation)")
    if is_slice and col.position < last.position:
        raise InvalidRequest(f'PRIMARY KEY column "{last.name}" cannot be restricted (preceding column "{col.name}" '
                             "is restricted by a non-EQ relation)")


def _in_common(table: Table, a: Sequence[str], b: Sequence[str]) -> str:
    """The columns two relations share, in key order, as ScyllaDB lists them (``get_columns_in_commons``:
    joined by " ,")."""
    both = set(a) & set(b)
    return " ,".join(c.name for c in table.clustering_key if c.name in both)


def check_where(table: Table, where: Sequence[ast.Relation], allow_filtering: bool = False) -> None:
    """Every rule of this module, in ScyllaDB's order, for a statement that runs without being prepared."""
    for rel in where:
        check_operator(rel)
        check_relation(table, rel)
    check_restrictions(table, where, allow_filtering)
