"""ScyllaDB's ``speculative_retry_user_table_default`` (``db/config.cc``): the ``speculative_retry`` that a table,
materialized view, secondary index or CDC log table created without one gets.

The setting is live-updatable (``UPDATE system.config``); it applies to what is created after the update, and
existing tables keep theirs.  A value that is no valid ``speculative_retry`` is ignored: the last valid one stays
in force (ScyllaDB's rule).  Views and indexes do not inherit their base table's value; they get the default
unless their own statement gives one.  logtide keeps the option as a table property only (it has no replicas to
retry against); DESCRIBE and ``system_schema`` show it.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from ..cql import ast
from ..errors import CqlError
from ..schema.catalog import Catalog
from ..schema.properties import table_defaults
from ..schema.table_options import speculative_retry

SETTING = "speculative_retry_user_table_default"
BUILT_IN = table_defaults()["speculative_retry"]


class SpeculativeRetryDefault:
    """The default in force: the last valid value the setting had."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = BUILT_IN

    def changed(self, text: Any) -> None:
        """The setting changed: use it if it is a valid ``speculative_retry``, else keep the last valid one."""
        try:
            value = speculative_retry(str(text))
        except CqlError:
            return
        with self._lock:
            self.value = value

    def apply(self, old: Catalog, new: Catalog, stmt: Any) -> Catalog:
        """``new`` (a DDL's result) with the default set on the tables, views, indexes and logs it created
        without an explicit ``speculative_retry``."""
        value = self.value
        if value == BUILT_IN:
            return new  # what every table got already
        explicit = any(name == "speculative_retry" for name, _ in getattr(stmt, "options", ()) or ())
        target = _target_name(stmt)
        keyspaces = dict(new.keyspaces)
        changed = False
        for ks_name, ks in new.keyspaces.items():
            before = old.keyspaces.get(ks_name)
            tables = dict(ks.tables)
            for name, table in ks.tables.items():
                earlier = before.tables.get(name) if before is not None else None
                if not (earlier is None or earlier.id != table.id):
                    indexes = _new_indexes(earlier, table, value, explicit, target)
                    if indexes is not None:
                        tables[name] = replace(table, indexes=indexes)
                        changed = True
                    continue
                if not (explicit and name == target):
                    tables[name] = table = replace(table, options={**table.options, "speculative_retry": value})
                    changed = True
                indexes = _new_indexes(None, table, value, explicit, target)
                if indexes is not None:
                    tables[name] = replace(table, indexes=indexes)
            keyspaces[ks_name] = replace(ks, tables=tables)
        if not changed:
            return new
        return replace(new, keyspaces=keyspaces)


def _target_name(stmt: Any) -> str | None:
    """The name of what ``stmt`` creates (a table, view or index), for its explicit options."""
    if isinstance(stmt, ast.CreateTable):
        return stmt.table.name
    if isinstance(stmt, ast.CreateIndex):
        return None  # an index's options are on the index itself (``_new_indexes``)
    name = getattr(stmt, "name", None)
    return getattr(name, "name", None)


def _new_indexes(earlier: Any, table: Any, value: str, explicit: bool, target: str | None) -> tuple[Any, ...] | None:
    """The table's indexes with the default set on those new since ``earlier`` (None: nothing changed)."""
    known = {ix.store_id for ix in earlier.indexes} if earlier is not None else set()
    out = []
    changed = False
    for ix in table.indexes:
        if ix.store_id not in known and not explicit:
            out.append(replace(ix, options={**ix.options, "speculative_retry": value}))
            changed = True
        else:
            out.append(ix)
    return tuple(out) if changed else None
