"""ScyllaDB's per-row TTL column (ScyllaDB issue #13000): DDL rules and the expiry test of a value.

A table may name one regular column of type ``timestamp``, ``bigint`` or ``int`` its TTL column
(``CREATE TABLE t (..., expiration timestamp TTL)``, ``ALTER TABLE t TTL expiration``, ``ALTER TABLE t TTL NULL``).
A row whose TTL column holds a time in the past is deleted by the server's expiration scan
(``engine.row_expiry``), as ScyllaDB's Alternator TTL scanner does (``alternator/ttl.cc``).  The checks and their
messages follow ScyllaDB's ``create_table_statement.cc`` and ``alter_table_statement.cc``; DROP of the column
clears the setting, RENAME never reaches it (only primary-key columns can be renamed).  Decision: a CDC log table
cannot have one (its rows expire with the CDC TTL); ScyllaDB does not say.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Mapping

from ..cql import ast
from ..errors import InvalidRequest
from .model import Table

TTL_TYPES = ("timestamp", "bigint", "int")
FIVE_YEARS_SECONDS = 5 * 31_556_952  # std::chrono::years(5): five years of 365.2425 days


def created_ttl_column(stmt: ast.CreateTable, resolved: Mapping[str, Any]) -> str | None:
    """The TTL column a CREATE TABLE marks (None: no column is marked), checked as ScyllaDB checks it:
    one column at most, of type timestamp, bigint or int, neither in the primary key nor static."""
    found: str | None = None
    for cd in stmt.columns:
        if not cd.ttl:
            continue
        if found is not None:
            raise InvalidRequest(f"Cannot have more than one TTL column in a table. Saw {found} and {cd.name}")
        type_name = resolved[cd.name].cql()
        if type_name not in TTL_TYPES:
            raise InvalidRequest(f"TTL column '{cd.name}' must be of type timestamp, bigint or int, can't be {type_name}")
        found = cd.name
    if found is None:
        return None
    if found in stmt.partition_key or found in stmt.clustering_key:
        raise InvalidRequest(f"TTL column {found} cannot be part of the PRIMARY KEY")
    if any(cd.name == found and cd.static for cd in stmt.columns):
        raise InvalidRequest(f"TTL column {found} cannot be a static column")
    return found


def altered_ttl_column(table: Table, column: str | None) -> Table:
    """``ALTER TABLE t TTL column`` (``column`` set) or ``ALTER TABLE t TTL NULL`` (None), with ScyllaDB's checks."""
    qualified = f"{table.keyspace}.{table.name}"
    if table.cdc_base is not None:
        raise InvalidRequest(f"Cannot set or unset a TTL column of the CDC log table {qualified}: its rows expire "
                             "with the log's own TTL (cdc = {'ttl': ...} on the base table)")
    if column is None:
        if table.ttl_column is None:
            raise InvalidRequest(f"Cannot unset TTL column, table {qualified} does not have a TTL column set")
        return replace(table, ttl_column=None)
    col = table.column(column)
    if col is None:
        raise InvalidRequest(f"Column '{column}' does not exist in table {qualified}")
    type_name = col.type.cql()
    if type_name not in TTL_TYPES:
        raise InvalidRequest(f"TTL column {column} must be of type timestamp, bigint or int, can't be {type_name}")
    if col.is_primary_key:
        raise InvalidRequest(f"Cannot use a primary key column {column} as a TTL column")
    if col.is_static:
        raise InvalidRequest(f"Cannot use a static column {column} as a TTL column")
    if table.ttl_column is not None:
        raise InvalidRequest(f"Cannot set TTL column, table {qualified} already has a TTL column defined: "
                             f"{table.ttl_column}")
    return replace(table, ttl_column=column)


def after_drop(table: Table, dropped: Iterable[str]) -> Table:
    """The table after ``ALTER TABLE DROP``: dropping its TTL column turns row expiry off (adding a column of
    that name again does not turn it back on)."""
    if table.ttl_column is not None and table.ttl_column in set(dropped):
        return replace(table, ttl_column=None)
    return table


def expiration_seconds(type_name: str, value: int) -> int:
    """The expiration time, in whole seconds since the epoch, of a TTL column's value: ``bigint`` and ``int``
    hold seconds, ``timestamp`` milliseconds (truncated to seconds, as ScyllaDB's gc_clock)."""
    return value // 1000 if type_name == "timestamp" else value


def is_expired(expiration: int, now_seconds: int) -> bool:
    """Whether a row whose TTL column says ``expiration`` (seconds) has expired at ``now_seconds``: at or before
    now, and not more than five years before it (an older time is taken as malformed and never expires,
    DynamoDB's rule that ScyllaDB keeps)."""
    return now_seconds - FIVE_YEARS_SECONDS < expiration <= now_seconds
