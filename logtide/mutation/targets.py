"""Key checks: the rows and partitions a statement addresses (``Target``), its key values checked as
ScyllaDB checks them (null, unset, too long, missing parts, filters on non-key columns), and the row of a
partition update that a target writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cql import ast
from ..errors import InvalidRequest
from ..query.restrictions import Evaluator, KeyRestrictions, restricted_columns
from ..schema import types as T
from ..schema.model import CLUSTERING, PARTITION_KEY, STATIC, Column, Table, check_key_length, check_partition_key
from ..storage.keys import clustering_key, partition_token, serialize_partition_key
from .cells import RowData
from .model import PartitionUpdate


@dataclass
class Target:
    """One addressed row: partition key values, partition key bytes, token, clustering values and key."""

    key: tuple[bytes, ...]
    pk: bytes
    token: int
    clustering: tuple[bytes, ...]
    ck: bytes


def partition_targets(table: Table, kr: KeyRestrictions) -> list[tuple[tuple[bytes, ...], bytes, int]]:
    """The partitions a statement's WHERE clause names: (key values, serialized key, token) each, once; every
    partition key column must be restricted (no token range)."""
    if kr.partition_keys is None:
        present = {f.column.name for f in kr.filters if f.column.kind == PARTITION_KEY}
        missing = [c.name for c in table.partition_key if c.name not in present]
        if missing and len(missing) == len(table.partition_key) and (kr.token_lo or kr.token_hi):
            raise InvalidRequest("The token function cannot be used in WHERE clauses for UPDATE and DELETE statements")
        raise InvalidRequest(f"Missing mandatory PRIMARY KEY part {(missing or [table.partition_key[0].name])[0]}")
    out = []
    seen = set()
    for key in kr.partition_keys:
        pk = serialize_partition_key(key)
        if pk in seen:
            continue
        seen.add(pk)
        check_partition_key(key)
        out.append((key, pk, partition_token(table, pk)))
    return out


def check_no_filters(kr: KeyRestrictions) -> None:
    """An UPDATE or DELETE restricts primary-key columns only, without gaps in the clustering columns."""
    bad = [f.column.name for f in kr.filters if not f.column.is_primary_key]
    if bad:
        raise InvalidRequest("Non PRIMARY KEY columns found in where clause: " + ", ".join(bad))
    if any(f.column.kind == CLUSTERING and f.op in ("CONTAINS", "CONTAINS KEY") for f in kr.filters):
        raise InvalidRequest("Cannot restrict clustering columns by a CONTAINS relation without a secondary index "
                             "or filtering")  # ScyllaDB's words (process_clustering_columns_restrictions)
    if any(f.column.kind == CLUSTERING for f in kr.filters):
        raise InvalidRequest(kr.clustering_gap_error or "Invalid clustering restrictions")


def full_clusterings(table: Table, kr: KeyRestrictions) -> list[tuple[bytes, ...]]:
    """The full clustering keys an UPDATE names (no slice, no missing column)."""
    ck_cols = table.clustering_key
    if kr.clustering_slice is not None:
        raise InvalidRequest("Slice restrictions are not supported on the clustering columns in UPDATE statements")
    prefixes = kr.clustering_prefixes
    if ck_cols and (not prefixes or len(prefixes[0]) < len(ck_cols)):
        have = len(prefixes[0]) if prefixes else 0
        raise InvalidRequest(f"Missing mandatory PRIMARY KEY part {ck_cols[have].name}")
    return prefixes




def check_value_size(col: Column, data: bytes) -> None:
    """A primary-key value longer than 65,535 bytes is refused."""
    if col.is_primary_key and len(data) > 0xFFFF:
        raise InvalidRequest(f"Key length of {len(data)} is longer than maximum of 65535")




def key_bytes(col: Column, value: Any) -> bytes:
    """A primary-key column's value serialized; null, unset and oversized values refused as ScyllaDB does."""
    if value is None:
        raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
    if value is T.UNSET:
        raise InvalidRequest(f"Invalid unset value for column {col.name}")
    data = col.type.serialize(value)
    check_value_size(col, data)
    return data




def changed_columns(stmt: Any, table: Table) -> list[Column]:
    """The columns an UPDATE sets or a DELETE deletes (its column operations; none for an INSERT), those the table
    has."""
    names = stmt.changed_names if isinstance(stmt, (ast.Update, ast.Delete)) else ()
    return [c for c in (table.column(n) for n in names) if c is not None]


def condition_columns(stmt: Any, table: Table) -> list[Column]:
    """The columns a statement's ``IF`` conditions test, those the table has."""
    return [c for c in (table.column(cond.column_name) for cond in getattr(stmt, "conditions", ())) if c is not None]


def check_static_only_statement(stmt: ast.Update | ast.Delete, table: Table) -> None:
    """An UPDATE or a DELETE that modifies static columns only (no ``IF`` condition on another column) may not
    restrict a clustering column: ScyllaDB refuses it when the statement is prepared
    (``statement_restrictions``: "... since the DELETE statement modifies only static columns")."""
    if not table.clustering_key:
        return
    names = stmt.changed_names
    if not names:  # a DELETE of whole rows or partitions
        return
    cols = [table.column(n) for n in (*names, *(c.column_name for c in stmt.conditions))]
    if any(c is None or c.kind != STATIC for c in cols):
        return
    for rel in stmt.where:
        if any((c := table.column(n)) is not None and c.kind == CLUSTERING for n in rel.column_names):
            kind = "UPDATE" if isinstance(stmt, ast.Update) else "DELETE"
            raise InvalidRequest(f"Invalid restrictions on clustering columns since the {kind} statement modifies "
                                 "only static columns")


FILTERING = ("Cannot execute this query as it might involve data filtering and thus may have unpredictable "
             "performance. If you want to execute this query despite the performance unpredictability, use ALLOW "
             "FILTERING")


def check_primary_key_parts(stmt: ast.Insert | ast.Update | ast.Delete, table: Table) -> None:
    """A write names its primary key, checked by names alone as ScyllaDB checks it when the statement is prepared,
    in its order and words (``statement_restrictions``' partition key and clustering processing, then
    ``modification_statement::process_where_clause``):

    * an INSERT naming only some parts of a composite partition key: ScyllaDB's filtering error;
    * a clustering column named while an earlier one is not: ``PRIMARY KEY column "b" cannot be restricted as
      preceding column "a" is not restricted``;
    * a clustering column missing from a write of regular columns: ``Missing mandatory PRIMARY KEY part c`` for
      an INSERT or UPDATE; for a DELETE of named columns without a slice, ``Primary key column 'c' must be
      specified in order to modify column 'v'`` (a DELETE of rows or ranges may leave clustering columns out);
    * then a partition key column missing: ``Missing mandatory PRIMARY KEY part p``;
    * then a DELETE of named columns with a clustering slice and no condition: ``Range deletions are not supported
      for specific columns`` (``delete_statement``'s prepare; a conditional one gets the LWT checks' message).

    A WHERE clause with ``token()``, a non-key column or (for INSERT and UPDATE) a clustering slice is left to the
    checks with their own messages; an INSERT JSON's key is checked with its values (``insert.json_values``)."""
    if isinstance(stmt, ast.Insert):
        if stmt.json is not None:
            return
        named = set(stmt.columns)
        changed = [c for c in (table.column(n) for n in stmt.columns) if c is not None and not c.is_primary_key]
        sliced = False
    else:
        named = set()
        sliced = False
        for rel in stmt.where:
            if isinstance(rel.lhs, ast.TokenOf):
                return
            names = rel.column_names
            cols = [table.column(n) for n in names]
            if any(c is None or not c.is_primary_key for c in cols):
                return
            if rel.op in ("<", "<=", ">", ">="):
                sliced = True
            named.update(names)
        if sliced and isinstance(stmt, ast.Update):
            return
        changed = changed_columns(stmt, table)
    pk_missing = [c.name for c in table.partition_key if c.name not in named]
    if isinstance(stmt, ast.Insert) and pk_missing and len(pk_missing) < len(table.partition_key):
        raise InvalidRequest(FILTERING)
    ck = table.clustering_key
    ck_named = [c.name in named for c in ck]
    if True in ck_named:
        last = len(ck_named) - 1 - ck_named[::-1].index(True)
        gap = next((i for i in range(last) if not ck_named[i]), None)
        if gap is not None:
            later = next(c.name for c in ck[gap + 1:] if c.name in named)
            raise InvalidRequest(f'PRIMARY KEY column "{later}" cannot be restricted as preceding column '
                                 f'"{ck[gap].name}" is not restricted')
    ck_missing = [c.name for c in ck if c.name not in named]
    only_static = (bool(changed) and all(c.kind == STATIC for c in changed)
                   and all(c.kind == STATIC for c in condition_columns(stmt, table)))
    if ck_missing and not only_static:
        if not isinstance(stmt, ast.Delete):
            raise InvalidRequest(f"Missing mandatory PRIMARY KEY part {ck_missing[0]}")
        regular = [c for c in changed if c.kind != STATIC]
        if regular and not sliced:
            raise InvalidRequest(f"Primary key column '{ck_missing[0]}' must be specified in order to modify column "
                                 f"'{regular[0].name}'")
    if pk_missing:
        raise InvalidRequest(f"Missing mandatory PRIMARY KEY part {pk_missing[0]}")
    if sliced and isinstance(stmt, ast.Delete) and stmt.targets and not (stmt.conditions or stmt.if_exists):
        # delete_statement's prepare, after the above (a conditional one is refused by the LWT checks before)
        raise InvalidRequest("Range deletions are not supported for specific columns")


def check_conditional_delete(stmt: ast.Delete, table: Table) -> None:
    """A conditional DELETE (``IF`` conditions or ``IF EXISTS``) whose WHERE clause does not pin every clustering
    column by ``=`` may delete static columns only, under conditions on static columns only (ScyllaDB's
    ``delete_statement::validate_where_clause_for_conditions``, checked when the statement is prepared)."""
    ck_names = restricted_columns(stmt.where, CLUSTERING, table)
    ck_only_eq = all(rel.op == "=" for rel in stmt.where if isinstance(rel.lhs, (ast.ColumnRef, ast.ColumnTuple))
                     and any((c := table.column(n)) is not None and c.kind == CLUSTERING for n in rel.column_names))
    if all(c.name in ck_names for c in table.clustering_key) and ck_only_eq:
        return
    changed = changed_columns(stmt, table)
    if not changed or any(c.kind != STATIC for c in changed):
        raise InvalidRequest("DELETE statements must restrict all PRIMARY KEY columns with equality relations "
                             "in order to delete non static columns")
    if any(c.kind != STATIC for c in condition_columns(stmt, table)) or (stmt.if_exists and not table.static_columns):
        raise InvalidRequest("DELETE statements must restrict all PRIMARY KEY columns with equality relations "
                             "in order to use IF condition on non static columns")


def check_conditional_where(stmt: ast.Update | ast.Delete, table: Table) -> None:
    """A lightweight transaction addresses one row: ``IN`` on a key column is refused whatever its values, even
    none or one (ScyllaDB's ``validate_where_clause_for_conditions``, checked when the statement is prepared)."""
    kinds = set()
    for rel in stmt.where:
        if rel.op != "IN":
            continue
        kinds.update(c.kind for n in rel.column_names if (c := table.column(n)) is not None)
    done = "updates" if isinstance(stmt, ast.Update) else "deletions"
    if PARTITION_KEY in kinds:
        raise InvalidRequest(f"IN on the partition key is not supported with conditional {done}")
    if CLUSTERING in kinds:
        raise InvalidRequest(f"IN on the clustering key columns is not supported with conditional {done}")


def addressed_rows(table: Table, kr: KeyRestrictions, static_only: bool) -> list[Target]:
    """The rows an UPDATE or a DELETE of columns writes: each partition with each full clustering key, or
    its static row (``static_only``)."""
    check_no_filters(kr)
    parts = partition_targets(table, kr)
    if kr.empty:  # an empty IN (``b IN ()``) addresses no row
        return []
    if static_only:
        if kr.clustering_restricted:
            raise InvalidRequest("Invalid restrictions on clustering columns since the UPDATE statement modifies only static columns")
        clusterings: list[tuple[bytes, ...]] = [()]
    else:
        clusterings = full_clusterings(table, kr)
    out = []
    for key, pk, token in parts:
        for cl in clusterings:
            ck = b"" if static_only else clustering_key(table.clustering_key, cl)
            out.append(Target(key, pk, token, cl, ck))
    return out




@dataclass(frozen=True)
class KeyShape:
    """A write's WHERE clause that names every primary-key column once, each by ``column = term`` and nothing
    else (the commonest prepared UPDATE or DELETE), analysed once per statement and table: what
    ``query.restrictions.analyse`` and :func:`addressed_rows` make of it is then one target, whose values alone
    change from one execution to the next (:meth:`targets`).  ``relations`` holds each relation's column and
    term in the clause's order, ``pk_slots`` and ``ck_slots`` the relation of each partition and clustering key
    column in key order."""

    table: Table
    relations: tuple[tuple[Column, Any], ...]
    pk_slots: tuple[int, ...]
    ck_slots: tuple[int, ...]

    def targets(self, ev: Evaluator) -> list[Target]:
        """The one row the clause addresses with this execution's values: the target ``addressed_rows(table,
        analyse(table, where, ev), False)`` gives, with the same errors in the same order (each relation
        evaluated in the clause's order, a null or unset key value refused with ScyllaDB's words, then the
        partition key's length and emptiness)."""
        vals = []
        for col, term in self.relations:
            v = ev.value(term, col.type, col.name)
            if v is None:
                raise InvalidRequest(f"Invalid null value in condition for column {col.name}")
            if v is T.UNSET:
                raise InvalidRequest(f"Invalid unset value for column {col.name}")
            vals.append(col.type.serialize(v))
        key = tuple([vals[i] for i in self.pk_slots])
        check_partition_key(key)
        pk = serialize_partition_key(key)
        table = self.table
        clustering = tuple([vals[i] for i in self.ck_slots])
        return [Target(key, pk, partition_token(table, pk), clustering, clustering_key(table.clustering_key, clustering))]


def key_shape(table: Table, where: Any) -> KeyShape | None:
    """The :class:`KeyShape` of a write's WHERE clause, or None when it is any other clause (an ``IN``, a slice,
    a missing or repeated column, a token or multi-column relation, an unknown or non-key column): those take
    ``query.restrictions.analyse``, with its rules and messages."""
    pk_cols, ck_cols = table.partition_key, table.clustering_key
    if len(where) != len(pk_cols) + len(ck_cols):
        return None
    relations = []
    slot: dict[str, int] = {}
    for i, rel in enumerate(where):
        if rel.op != "=" or type(rel.lhs) is not ast.ColumnRef:
            return None
        col = table.column(rel.lhs.name)
        if col is None or not col.is_primary_key or col.name in slot:
            return None
        slot[col.name] = i
        relations.append((col, rel.rhs))
    # as many distinct key columns as the key has: each of them once
    return KeyShape(table, tuple(relations), tuple(slot[c.name] for c in pk_cols),
                    tuple(slot[c.name] for c in ck_cols))


class KeyShapes:
    """:func:`key_shape` of each write statement, made once per statement object and table (a prepared
    statement executes the same statement object again and again; a schema change makes new table
    objects), kept by the engine for every write."""

    def __init__(self) -> None:
        self._shapes: dict[int, tuple[Any, Table, KeyShape | None]] = {}

    def of(self, stmt: Any, table: Table) -> KeyShape | None:
        hit = self._shapes.get(id(stmt))
        if hit is None or hit[0] is not stmt or hit[1] is not table:
            if len(self._shapes) >= 1024:
                self._shapes.clear()
            hit = self._shapes[id(stmt)] = (stmt, table, key_shape(table, stmt.where))
        return hit[2]


def row_for(pu: PartitionUpdate, table: Table, clustering: tuple[bytes, ...], static: bool,
            ck: bytes | None = None) -> tuple[RowData, bytes]:
    """The row of ``pu`` that a write to ``clustering`` (or to the static row) goes to, made when new, with its
    clustering key (``ck``, when the caller has it: a ``Target``'s)."""
    if static:
        if pu.static is None:
            pu.static = RowData(())
        return pu.static, b""
    if ck is None:
        ck = clustering_key(table.clustering_key, clustering)
    row = pu.rows.get(ck)
    if row is None:
        if clustering:
            check_key_length(clustering)
        row = pu.rows[ck] = RowData(clustering)
    return row, ck



def non_key_column(table: Table, target: Any, key_message: str, unknown_message: str) -> Column:
    """The column a condition or a DELETE names (``c``, ``c[k]`` or ``c.f``): ``unknown_message`` for an unknown
    one (ScyllaDB: "Unknown identifier {name}" for a DELETE target, "Unrecognized name {name}" in a condition),
    ``key_message`` for a primary-key column (``{name}`` replaced by the name in both)."""
    name = target.name if isinstance(target, ast.ColumnRef) else target.column
    col = table.column(name)
    if col is None:
        raise InvalidRequest(unknown_message.format(name=name))
    if col.is_primary_key:
        raise InvalidRequest(key_message.format(name=name))
    return col
