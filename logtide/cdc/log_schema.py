"""The CDC log table of a base table, and keeping log tables in step with schema changes.

Spec ``001`` (The CDC Log Table) and ``002`` (non-atomic columns):

* ``<table>_scylla_cdc_log`` in the base table's keyspace;
* ``"cdc$stream_id" blob`` partition key, ``"cdc$time" timeuuid`` and
  ``"cdc$batch_seq_no" int`` clustering columns (ascending);
* ``"cdc$operation" tinyint``, ``"cdc$ttl" bigint`` and, as current
  ScyllaDB writes it, ``"cdc$end_of_batch" boolean``;
* every base key column with its type; static columns become regular;
* every atomic non-key column ``X`` gives ``X`` and ``"cdc$deleted_X" boolean``;
  a non-frozen collection or UDT also gives ``"cdc$deleted_elements_X"``: a
  map ``map<K, V>`` logs as ``frozen<map<K, V>>`` / ``frozen<set<K>>``, a set
  as ``frozen<set<K>>`` twice, a list as ``frozen<map<timeuuid, V>>`` /
  ``frozen<set<timeuuid>>``, a UDT as ``frozen<T>`` / ``frozen<set<smallint>>``.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from ..cql import ast
from ..errors import InvalidRequest, Unauthorized
from ..schema import properties
from ..schema import types as T
from ..schema.catalog import Catalog, order_columns
from ..schema.model import CLUSTERING, PARTITION_KEY, REGULAR, Column, Keyspace, Table
from ..schema.cdc_options import CdcOptions

LOG_SUFFIX = "_scylla_cdc_log"
STREAM_ID = "cdc$stream_id"
TIME = "cdc$time"
BATCH_SEQ_NO = "cdc$batch_seq_no"
OPERATION = "cdc$operation"
TTL = "cdc$ttl"
END_OF_BATCH = "cdc$end_of_batch"
DELETED = "cdc$deleted_"
DELETED_ELEMENTS = "cdc$deleted_elements_"

SMALLINT = T.SMALLINT
TIMEUUID = T.TIMEUUID


def log_name(base: str) -> str:
    """The log table's name: the base name plus ``_scylla_cdc_log``."""
    return base + LOG_SUFFIX


def is_log_table(table: Table) -> bool:
    return table.cdc_base is not None


def added_elements_type(t: Any) -> Any:
    """The log type of a non-frozen collection/UDT's value column (spec 002)."""
    if isinstance(t, T.ListType):
        return T.MapType(TIMEUUID, t.element, False).freeze()
    return t.freeze()


def deleted_elements_type(t: Any) -> Any:
    """The log type of ``cdc$deleted_elements_X`` (spec 002)."""
    if isinstance(t, T.MapType):
        key = t.key
    elif isinstance(t, T.SetType):
        key = t.element
    elif isinstance(t, T.ListType):
        key = TIMEUUID
    else:
        key = SMALLINT
    return T.SetType(key, False).freeze()


def log_columns(base: Table) -> tuple[Column, ...]:
    """The log table's columns, in ``SELECT *`` order."""
    cols = [
        Column(STREAM_ID, T.BLOB, PARTITION_KEY, 0),
        Column(TIME, TIMEUUID, CLUSTERING, 0, "asc"),
        Column(BATCH_SEQ_NO, T.INT, CLUSTERING, 1, "asc"),
        Column(OPERATION, T.TINYINT),
        Column(TTL, T.BIGINT),
        Column(END_OF_BATCH, T.BOOLEAN),
    ]
    for c in base.primary_key:
        cols.append(Column(c.name, c.type, REGULAR))
    for c in base.columns:
        if c.is_primary_key:
            continue
        if c.type.is_multicell:
            cols.append(Column(c.name, added_elements_type(c.type), REGULAR))
            cols.append(Column(DELETED_ELEMENTS + c.name, deleted_elements_type(c.type), REGULAR))
        else:
            cols.append(Column(c.name, c.type, REGULAR))
        cols.append(Column(DELETED + c.name, T.BOOLEAN, REGULAR))
    _check_no_collision(base, cols)
    return order_columns(cols)


def _check_no_collision(base: Table, cols: list[Column]) -> None:
    """Refuse a base table whose columns would give its log two columns of one name.

    ScyllaDB has no such check: it builds a log schema with the name twice (``cdc/log.cc``
    ``add_columns_to_cdc_log``), which breaks reading the log.  logtide refuses the schema change
    instead, worded as ScyllaDB words a column name conflict in ``ALTER TABLE ... ADD``.
    """
    seen: set[str] = set()
    for c in cols:
        if c.name in seen:
            raise InvalidRequest(f"Invalid column name {c.name} because it conflicts with a column of the CDC log "
                                 f"table {base.keyspace}.{log_name(base.name)}")
        seen.add(c.name)


def log_options(base: Table, opts: CdcOptions) -> dict[str, Any]:
    """A new log table's properties, as ScyllaDB's ``set_default_properties_log_table`` (``cdc/log.cc``) sets them.

    A comment naming the base table, time-window compaction, caching disabled; with a CDC ``ttl`` of
    T > 0 seconds also ``gc_grace_seconds = 0`` and windows of ceil(T / 24) seconds (in whole minutes,
    rounded up), checked for expiry every half window (at least a second).  Only a new log table gets
    them: a log table keeps the properties it has (``ALTER TABLE <log> WITH ...``, re-attachment).
    """
    compaction: dict[str, str] = {"class": "TimeWindowCompactionStrategy"}
    given: list[tuple[str, Any]] = [("comment", f"CDC log for {base.keyspace}.{base.name}")]
    if opts.ttl > 0:
        window_seconds = -(-opts.ttl // 24)
        compaction.update({"compaction_window_unit": "MINUTES",
                           "compaction_window_size": str(-(-window_seconds // 60)),
                           "expired_sstable_check_frequency_seconds": str(max(1, window_seconds // 2))})
        given.append(("gc_grace_seconds", 0))
    given += [("compaction", compaction), ("caching", {"enabled": "false", "keys": "NONE", "rows_per_partition": "NONE"})]
    params, _ = properties.table_params(given, None, None)
    return params


def is_attached_log(catalog: Catalog, table: Table) -> bool:
    """A log table whose base table has CDC on (ScyllaDB's ``is_log_for_some_table``); a detached one is a plain table."""
    if not is_log_table(table):
        return False
    base = catalog.find_table(table.keyspace, table.cdc_base or "")
    return base is not None and CdcOptions.parse(base.cdc).enabled


def check_statement(catalog: Catalog, stmt: Any, current_keyspace: str | None) -> None:
    """Refuse what ScyllaDB refuses on log tables and CDC options, with its messages:

    * ``DROP TABLE`` of an attached log: Unauthorized ``Cannot DROP cdc log table <name>``
      (``drop_table_statement.cc``: "for legacy reasons" an unauthorized error);
    * changing a log table's columns, renaming them, or enabling CDC on a log table;
    * ``ALTER TABLE ... WITH cdc = {...}`` without ``'enabled'`` (``alter_table_statement.cc``).
    """
    if not isinstance(stmt, (ast.AlterTableAdd, ast.AlterTableDrop, ast.AlterTableRename, ast.AlterTableAlterType,
                             ast.AlterTableWith, ast.DropTable)):
        return
    ks = stmt.table.keyspace or current_keyspace
    table = catalog.find_table(ks, stmt.table.name) if ks else None
    if table is None:
        return
    if isinstance(stmt, ast.DropTable):
        if is_attached_log(catalog, table):
            raise Unauthorized(f"Cannot DROP cdc log table {table.name}")
        return
    if isinstance(stmt, ast.AlterTableWith):
        cdc = dict(stmt.options).get("cdc") if any(name == "cdc" for name, _ in stmt.options) else None
        if isinstance(cdc, dict) and not any(str(k).lower() == "enabled" for k in cdc):
            raise InvalidRequest('Altering CDC options requires specifying "enabled" flag')
    if not is_log_table(table):
        return
    attached = is_attached_log(catalog, table)
    if isinstance(stmt, ast.AlterTableRename):
        raise InvalidRequest("Cannot rename a column of a CDC log table." if attached else DETACHED_RENAME)
    if isinstance(stmt, ast.AlterTableWith):
        if any(name == "cdc" for name, _ in stmt.options):
            enabled = dict(stmt.options)["cdc"]
            if CdcOptions.parse(properties.cdc_options(enabled)).enabled:
                raise InvalidRequest(f"Cannot create a CDC log for a table {table.keyspace}.{table.name}, "
                                     "because creating nested CDC logs is not allowed")
        return
    raise InvalidRequest("You cannot modify the set of columns of a CDC log table directly. "
                         "Modify the base table instead." if attached else DETACHED_COLUMNS)


# ScyllaDB's messages for a log whose base table has CDC off (alter_table_statement.cc)
DETACHED_COLUMNS = (
    "You cannot modify the set of columns of a CDC log table directly. Although the base table has deactivated "
    "CDC, this table will continue being a CDC log table until it is dropped. If you want to modify the columns "
    "in it, you can only do that by reenabling CDC on the base table, which will reattach this log table. Then "
    "you will be able to modify the columns in the base table, and that will have effect on the log table too. "
    "Modifying the columns of a CDC log table directly is never allowed.")
DETACHED_RENAME = (
    "You cannot rename a column of a CDC log table. Although the base table has deactivated CDC, this table "
    "will continue being a CDC log table until it is dropped.")


def sync_log_tables(old: Catalog, new: Catalog, now_micros: int) -> Catalog:
    """Create, update or drop log tables so that every CDC-enabled table has an up-to-date log.

    Disabling CDC keeps (detaches) the log table; enabling it again re-attaches
    the same table, with its id and properties.  Dropping a base table drops its log.
    A log column that a base change removes is recorded as dropped at ``now_micros``
    (ScyllaDB's ``create_log_schema`` keeps the old log's dropped columns so that
    older cells of a re-added column stay hidden; DESCRIBE ... WITH INTERNALS shows them).
    """
    next_id = new.next_store_id
    keyspaces = dict(new.keyspaces)
    changed = False
    for ks_name, ks in new.keyspaces.items():
        tables = dict(ks.tables)
        old_ks = old.keyspaces.get(ks_name)
        # a dropped base table takes its log with it
        if old_ks is not None:
            for name, t in old_ks.tables.items():
                if t.cdc_base is not None and t.cdc_base not in ks.tables and name in tables:
                    del tables[name]
                    changed = True
        for name, base in ks.tables.items():
            if is_log_table(base):
                continue
            opts = CdcOptions.parse(base.cdc)
            if not opts.enabled:
                continue
            if base.is_counter_table:
                raise InvalidRequest(f"Cannot create CDC log for table {ks_name}.{name}. Counter support not implemented")
            lname = log_name(name)
            existing = tables.get(lname)
            if existing is not None and existing.cdc_base != name:
                raise InvalidRequest(f"Cannot create CDC log for table {ks_name}.{name} because a table of name "
                                     f"{ks_name}.{lname} already exists")
            columns = log_columns(base)
            if existing is None:
                tables[lname] = Table(ks_name, lname, uuid.uuid1(), next_id, columns, log_options(base, opts), None, name)
                next_id += 1
                changed = True
            elif existing.columns != columns:
                kept = {c.name for c in columns}
                dropped = dict(existing.dropped_columns)
                for c in existing.columns:
                    if c.name not in kept:
                        dropped[c.name] = (c.type.cql(), now_micros)
                tables[lname] = replace(existing, columns=columns, dropped_columns=dropped)
                changed = True
        if tables != dict(ks.tables):
            keyspaces[ks_name] = Keyspace(ks.name, ks.replication, ks.durable_writes, tables, ks.types)
    if not changed:
        return new
    return Catalog(keyspaces, new.version, next_id)


def validate(catalog: Catalog) -> None:
    """Check the CDC options of every table (ConfigurationException names the bad option)."""
    for ks in catalog.keyspaces.values():
        for t in ks.tables.values():
            if t.cdc:
                CdcOptions.parse(t.cdc)
