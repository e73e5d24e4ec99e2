"""Key checks: the rows and partitions a statement addresses (``Target``), its key values checked as
ScyllaDB checks them (null, unset, too long, missing parts, filters on non-key columns), and the row of a
partition update that a target writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cql import ast
from ..errors import InvalidRequest
from ..query.restrictions import KeyRestrictions
from ..schema import types as T
from ..schema.model import CLUSTERING, PARTITION_KEY, Column, Table, check_key_length, check_partition_key
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
        raise InvalidRequest("Some partition key parts are missing: " + ", ".join(missing or [c.name for c in table.partition_key]))
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
        missing = [c.name for c in ck_cols[have:]]
        raise InvalidRequest("Some clustering keys are missing: " + ", ".join(missing))
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




def row_for(pu: PartitionUpdate, table: Table, clustering: tuple[bytes, ...], static: bool) -> tuple[RowData, bytes]:
    """The row of ``pu`` that a write to ``clustering`` (or to the static row) goes to, made when new, with its
    clustering key."""
    if static:
        if pu.static is None:
            pu.static = RowData(())
        return pu.static, b""
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
