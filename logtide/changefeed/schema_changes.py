"""Schema-change records of changefeeds with ``SCHEMA_CHANGES = TRUE`` (YDB's JSON format only).

YDB writes, when an ALTER TABLE changes the columns of a table with such a
changefeed, one record naming the table's new schema::

    {"tableChanges":[{"table":{"schemaVersion":N,"primaryKeyColumnNames":[...],
                               "columns":{"name":"type",...}}}],"ts":[step,txId]}

``primaryKeyColumnNames`` is an array, as YDB's own reader requires (YDB's
serializer writes a string by mistake).  ``columns`` holds every column in
``SELECT *`` order with its CQL type name (logtide has no YDB types).
``docs/changefeeds.md`` ("Schema-change records") gives the decisions.
Pure functions, no I/O.
"""

from __future__ import annotations

from typing import Any

from ..schema.changefeed_options import ChangefeedOptions
from .values import json_bytes


def column_signature(table: Any) -> tuple:
    """What a schema-change record reports about a table: its columns with their types, in order.

    Types are compared as type objects, so a user type that gains or renames a
    field changes the signature of every table holding it even though its CQL
    name stays the same.
    """
    return tuple((c.name, c.type, c.kind) for c in table.columns)


def schema_changed(old: Any, new: Any) -> bool:
    """Whether an altered table's columns (names, types or key) differ from before."""
    return column_signature(old) != column_signature(new)


def render_schema_change(table: Any, opts: ChangefeedOptions, schema_version: int, step: int, tx_id: int) -> bytes:
    """The schema-change record of ``table`` as it is after the change (``ts`` with VIRTUAL_TIMESTAMPS only)."""
    body: dict[str, object] = {"tableChanges": [{"table": {
        "schemaVersion": schema_version,
        "primaryKeyColumnNames": [c.name for c in table.primary_key],
        "columns": {c.name: c.type.cql() for c in table.columns},
    }}]}
    if opts.virtual_timestamps:
        body["ts"] = [step, tx_id]
    return json_bytes(body)
