"""Write stage 3.4, build: INSERT, UPDATE and DELETE statements become timestamped cell writes and tombstones.

The rules are Cassandra's/ScyllaDB's (see spec ``003`` for row markers and
statement kinds, ``002`` for collections):

* INSERT writes a row marker; UPDATE does not.  Static columns live in the
  static row, which has no marker.
* Assigning a whole non-frozen collection or UDT (``SET c = ...`` and INSERT)
  writes a collection tombstone at ``T - 1`` plus the new elements at ``T``;
  ``DELETE c`` writes the collection tombstone at ``T``.
* Lists are maps keyed by timeuuids: appends take increasing keys from the
  clock, prepends decreasing keys below every earlier prepend, and
  ``l[i] = v``, ``DELETE l[i]`` and ``l = l - [v]`` read the list first.
* Non-frozen UDT fields are cells keyed by the field index (a smallint).

One idea a module: ``context`` (timestamp, TTL, list keys, the read-before-write), ``targets`` (key checks),
``writer`` (values to cells), ``insert``, ``assignments`` (UPDATE), ``collections``, ``arithmetic`` (counters and
numeric ``c = c + x``), ``deletion``; this module dispatches a statement to them and checks a batch's size.
"""

from __future__ import annotations

from typing import Any

from ..cql import ast
from ..errors import InvalidRequest
from ..schema.model import Table
from .assignments import build_update
from .context import WriteContext
from .deletion import build_delete
from .insert import build_insert
from .model import Mutation
from .targets import Target


BATCH_SIZE_WARN_THRESHOLD = 128 * 1024   # ScyllaDB's batch_size_warn_threshold_in_kb default
BATCH_SIZE_FAIL_THRESHOLD = 1024 * 1024  # ScyllaDB's batch_size_fail_threshold_in_kb default
_PARTITION_OVERHEAD, _ROW_OVERHEAD, _CELL_OVERHEAD = 128, 96, 64


def mutation_size(mutation: Mutation) -> int:
    """The in-memory size of a mutation as ScyllaDB measures a batch (an estimate: key and value bytes plus a
    fixed overhead per partition, row and cell)."""
    size = 0
    for pu in mutation.partitions.values():
        size += _PARTITION_OVERHEAD + len(pu.pk) + len(pu.range_deletions) * _ROW_OVERHEAD
        for row in ([pu.static] if pu.static is not None else []) + list(pu.rows.values()):
            size += _ROW_OVERHEAD + sum(len(c) for c in row.clustering)
            for cell in row.cells.values():
                size += _CELL_OVERHEAD + len(cell.value or b"")
            for cc in row.complex.values():
                size += sum(_CELL_OVERHEAD + len(k) + len(c.value or b"") for k, c in cc.cells.items())
    return size


def check_batch_size(mutation: Mutation, logged: bool) -> str | None:
    """ScyllaDB's batch size rule, for a batch touching more than one partition: over the fail threshold it
    is refused ("Batch too large"), over the warn threshold the returned warning goes to the client."""
    if len(mutation.partitions) <= 1:
        return None
    size = mutation_size(mutation)
    if size <= BATCH_SIZE_WARN_THRESHOLD:
        return None
    if size > BATCH_SIZE_FAIL_THRESHOLD:
        raise InvalidRequest("Batch too large")
    tables = ", ".join(sorted({f"{pu.table.keyspace}.{pu.table.name}" for pu in mutation.partitions.values()}))
    return (f"{'Logged' if logged else 'Unlogged'} batch modifying {len(mutation.partitions)} partitions in "
            f"{tables} is of size {size} bytes, exceeding specified WARN threshold of "
            f"{BATCH_SIZE_WARN_THRESHOLD} by {size - BATCH_SIZE_WARN_THRESHOLD}.")


def build(stmt: Any, table: Table, ctx: WriteContext, mutation: Mutation) -> list[Target]:
    """Add one INSERT/UPDATE/DELETE to ``mutation``."""
    if isinstance(stmt, ast.Insert):
        return build_insert(stmt, table, ctx, mutation)
    if isinstance(stmt, ast.Update):
        return build_update(stmt, table, ctx, mutation)
    if isinstance(stmt, ast.Delete):
        return build_delete(stmt, table, ctx, mutation)
    raise InvalidRequest(f"Unsupported statement in a batch: {type(stmt).__name__}")
