"""The system keyspaces (``system_schema``, ``system``) as data.

Their tables are ordinary ``Table`` objects with Cassandra 4.0's column names
and types, so the query engine can run SELECT over them; ``system_rows``
produces their rows from a catalog.  Rows cover user keyspaces and the system
keyspaces themselves, so drivers see the system tables in their metadata.
Values follow cassandra-driver conventions (sets as ``SortedSet``, maps as
dicts, uuids as ``uuid.UUID``, inet as str, timestamps as naive UTC datetimes).
"""

from __future__ import annotations

import datetime
import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

from cassandra.util import SortedSet

from logtide.schema.cdc_options import extension_blob
from logtide.schema import properties, types
from logtide.schema.model import CLUSTERING, PARTITION_KEY, REGULAR, Column, Keyspace, Table, UserTypeDef
from logtide.schema.system_ring import scylla_tables_rows, size_estimates_rows, token_ring_rows

Catalog = Any  # a logtide.schema.catalog.Catalog: the catalog imports this module (system keyspaces), not back

SYSTEM_SCHEMA = "system_schema"
SYSTEM = "system"
SYSTEM_DISTRIBUTED = "system_distributed"
SYSTEM_AUTH = "system_auth"
SYSTEM_LOGTIDE = "system_logtide"
SYSTEM_VIRTUAL_SCHEMA = "system_virtual_schema"
SYSTEM_TRACES = "system_traces"
# the keyspaces ScyllaDB calls system keyspaces (``is_system_keyspace``): DDL on them is Unauthorized there
SCYLLA_SYSTEM_KEYSPACES = frozenset({SYSTEM, SYSTEM_SCHEMA})

# logtide's own tables: every YDB changefeed (logtide.schema.system_changefeeds fills the rows)
_LOGTIDE_TABLES: dict[str, tuple] = {
    "changefeeds": (
        "YDB changefeeds: options, state, partitions, initial-scan progress, retention",
        [("keyspace_name", "text")],
        [("table_name", "text"), ("changefeed_name", "text")],
        [("topic", "text"), ("feed_id", "bigint"), ("mode", "text"), ("format", "text"), ("state", "text"),
         ("partitions", "int"), ("virtual_timestamps", "boolean"), ("barriers_interval_ms", "bigint"),
         ("retention_seconds", "bigint"), ("initial_scan", "boolean"), ("scan_partitions_done", "bigint"),
         ("scan_partitions_total", "bigint"), ("aws_region", "text"), ("schema_changes", "boolean"),
         ("settings", "text")],
    ),
}

# Cassandra's role tables, listed so that clients (cqlsh's LIST ROLES) find the keyspace; their
# rows are not exposed (roles live in logtide.auth; ScyllaDB's system.roles and system.role_permissions show them)
_AUTH_TABLES: dict[str, tuple] = {
    "roles": (
        "role definitions",
        [("role", "text")],
        [],
        [("can_login", "boolean"), ("is_superuser", "boolean"), ("member_of", "set<text>"), ("salted_hash", "text")],
    ),
    "role_permissions": (
        "permissions granted to db roles",
        [("role", "text")],
        [("resource", "text")],
        [("permissions", "set<text>")],
    ),
}

# ScyllaDB's CDC generation tables (clustering columns may carry a "desc" order)
_DISTRIBUTED_TABLES: dict[str, tuple] = {
    "cdc_generation_timestamps": (
        "CDC generation timestamps",
        [("key", "text")],
        [("time", "timestamp", "desc")],
        [("expired", "timestamp")],
    ),
    "cdc_streams_descriptions_v2": (
        "CDC streams of each generation, by token range",
        [("time", "timestamp")],
        [("range_end", "bigint")],
        [("streams", "frozen<set<blob>>")],
    ),
    "view_build_status": (
        "materialized views build status",
        [("keyspace_name", "text"), ("view_name", "text")],
        [("host_id", "uuid")],
        [("status", "text")],
    ),
}

# (table, comment, partition key, clustering key, regular columns) with (name, type string) pairs
# the options columns a table and a materialized view share in system_schema.tables and .views
_TABLE_OPTIONS: list[tuple[str, str]] = [
    ("additional_write_policy", "text"),
    ("bloom_filter_fp_chance", "double"),
    ("caching", "frozen<map<text, text>>"),
    ("cdc", "boolean"),
    ("comment", "text"),
    ("compaction", "frozen<map<text, text>>"),
    ("compression", "frozen<map<text, text>>"),
    ("crc_check_chance", "double"),
    ("dclocal_read_repair_chance", "double"),
    ("default_time_to_live", "int"),
    ("extensions", "frozen<map<text, blob>>"),
    ("gc_grace_seconds", "int"),
    ("id", "uuid"),
    ("max_index_interval", "int"),
    ("memtable_flush_period_in_ms", "int"),
    ("min_index_interval", "int"),
    ("read_repair", "text"),
    ("read_repair_chance", "double"),
    ("speculative_retry", "text"),
]
_SCHEMA_TABLES: dict[str, tuple[str, list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]]]] = {
    "keyspaces": (
        "keyspace definitions",
        [("keyspace_name", "text")],
        [],
        [("durable_writes", "boolean"), ("replication", "frozen<map<text, text>>")],
    ),
    "tables": (
        "table definitions",
        [("keyspace_name", "text")],
        [("table_name", "text")],
        sorted(_TABLE_OPTIONS + [("flags", "frozen<set<text>>")]),
    ),
    "columns": (
        "column definitions",
        [("keyspace_name", "text")],
        [("table_name", "text"), ("column_name", "text")],
        [
            ("clustering_order", "text"),
            ("column_name_bytes", "blob"),
            ("kind", "text"),
            ("position", "int"),
            ("type", "text"),
        ],
    ),
    "dropped_columns": (
        "dropped column registry",
        [("keyspace_name", "text")],
        [("table_name", "text"), ("column_name", "text")],
        [("dropped_time", "timestamp"), ("kind", "text"), ("type", "text")],
    ),
    "triggers": (
        "trigger definitions",
        [("keyspace_name", "text")],
        [("table_name", "text"), ("trigger_name", "text")],
        [("options", "frozen<map<text, text>>")],
    ),
    "views": (
        "view definitions",
        [("keyspace_name", "text")],
        [("view_name", "text")],
        sorted(_TABLE_OPTIONS + [("base_table_id", "uuid"), ("base_table_name", "text"),
                                 ("include_all_columns", "boolean"), ("where_clause", "text")]),
    ),
    "types": (
        "user defined type definitions",
        [("keyspace_name", "text")],
        [("type_name", "text")],
        [("field_names", "frozen<list<text>>"), ("field_types", "frozen<list<text>>")],
    ),
    "functions": (
        "user defined function definitions",
        [("keyspace_name", "text")],
        [("function_name", "text"), ("argument_types", "frozen<list<text>>")],
        [
            ("argument_names", "frozen<list<text>>"),
            ("body", "text"),
            ("called_on_null_input", "boolean"),
            ("language", "text"),
            ("return_type", "text"),
        ],
    ),
    "aggregates": (
        "user defined aggregate definitions",
        [("keyspace_name", "text")],
        [("aggregate_name", "text"), ("argument_types", "frozen<list<text>>")],
        [
            ("final_func", "text"),
            ("initcond", "text"),
            ("return_type", "text"),
            ("state_func", "text"),
            ("state_type", "text"),
        ],
    ),
    "scylla_aggregates": (  # ScyllaDB's: the reduce function of each aggregate that has one
        "scylla-specific information for user defined aggregates",
        [("keyspace_name", "text")],
        [("aggregate_name", "text"), ("argument_types", "frozen<list<text>>")],
        [("reduce_func", "text"), ("state_type", "text")],
    ),
    "scylla_tables": (  # ScyllaDB's per-table extras (schema.system_ring)
        "ScyllaDB-specific information about tables",
        [("keyspace_name", "text")],
        [("table_name", "text")],
        [("version", "uuid"), ("cdc", "map<text, text>"), ("partitioner", "text"), ("in_memory", "boolean"),
         ("committed_by_group0", "boolean"), ("tablets", "map<text, text>"), ("storage_engine", "text"),
         ("large_data_guardrails_enabled", "boolean")],
    ),
    # ScyllaDB's: consumers (scylla-cdc-go, -rust) ask it whether a keyspace uses tablets; no rows = vnodes
    "scylla_keyspaces": (
        "ScyllaDB-specific information about keyspaces",
        [("keyspace_name", "text")],
        [],
        [("initial_tablets", "int"), ("storage_options", "frozen<map<text, text>>"), ("storage_type", "text")],
    ),
    "indexes": (
        "secondary index definitions",
        [("keyspace_name", "text")],
        [("table_name", "text"), ("index_name", "text")],
        [("kind", "text"), ("options", "frozen<map<text, text>>")],
    ),
}

# query traces (logtide.tracing fills the rows): Cassandra 4.0's columns and ScyllaDB's request_size,
# response_size and username
_TRACES_TABLES: dict[str, tuple] = {
    "sessions": (
        "tracing sessions",
        [("session_id", "uuid")],
        [],
        [("client", "inet"), ("command", "text"), ("coordinator", "inet"), ("coordinator_port", "int"),
         ("duration", "int"), ("parameters", "map<text, text>"), ("request", "text"), ("request_size", "int"),
         ("response_size", "int"), ("started_at", "timestamp"), ("username", "text")],
    ),
    "events": (
        "tracing events",
        [("session_id", "uuid")],
        [("event_id", "timeuuid")],
        [("activity", "text"), ("source", "inet"), ("source_elapsed", "int"), ("source_port", "int"),
         ("thread", "text")],
    ),
}
TRACES_REPLICATION = {"class": properties.SIMPLE_STRATEGY, "replication_factor": "2"}  # as Cassandra and ScyllaDB

# Cassandra 4.0's virtual schema (drivers probe it to list virtual keyspaces): it describes itself only, since
# logtide has no other virtual table; it is not listed in system_schema, as in Cassandra
_VIRTUAL_SCHEMA_TABLES: dict[str, tuple] = {
    "keyspaces": ("virtual keyspace definitions", [("keyspace_name", "text")], [], []),
    "tables": ("virtual table definitions", [("keyspace_name", "text")], [("table_name", "text")],
               [("comment", "text")]),
    "columns": ("virtual column definitions", [("keyspace_name", "text")],
                [("table_name", "text"), ("column_name", "text")],
                [("clustering_order", "text"), ("column_name_bytes", "blob"), ("kind", "text"), ("position", "int"),
                 ("type", "text")]),
}

_SYSTEM_TABLES: dict[str, tuple[str, list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]]]] = {
    "local": (
        "information about the local node",
        [("key", "text")],
        [],
        [
            ("bootstrapped", "text"),
            ("broadcast_address", "inet"),
            ("broadcast_port", "int"),
            ("cluster_name", "text"),
            ("cql_version", "text"),
            ("data_center", "text"),
            ("gossip_generation", "int"),
            ("host_id", "uuid"),
            ("listen_address", "inet"),
            ("listen_port", "int"),
            ("native_protocol_version", "text"),
            ("partitioner", "text"),
            ("rack", "text"),
            ("release_version", "text"),
            ("rpc_address", "inet"),
            ("rpc_port", "int"),
            ("schema_version", "uuid"),
            ("tokens", "set<text>"),
            ("truncated_at", "map<uuid, blob>"),
        ],
    ),
    # ScyllaDB's: the table a SELECT without FROM reads (``SELECT 1``, ``SELECT now()``)
    "IndexInfo": (  # secondary indexes once built: table_name is the keyspace's name, as in ScyllaDB
        "built column indexes",
        [("table_name", "text")],
        [("index_name", "text")],
        [],
    ),
    "clients": (
        "ScyllaDB's virtual table of connected clients (the CQL server fills the rows)",
        [("address", "inet")],
        [("port", "int"), ("client_type", "text")],
        [("shard_id", "int"), ("connection_stage", "text"), ("driver_name", "text"), ("driver_version", "text"),
         ("hostname", "text"), ("protocol_version", "int"), ("ssl_cipher_suite", "text"), ("ssl_enabled", "boolean"),
         ("ssl_protocol", "text"), ("username", "text"), ("scheduling_group", "text"),
         ("client_options", "frozen<map<text, text>>")],
    ),
    "config": (  # ScyllaDB's db_config_table (db/virtual_tables.cc)
        "ScyllaDB's virtual table of the server's configuration (logtide.live_config fills the rows)",
        [("name", "text")],
        [],
        [("source", "text"), ("type", "text"), ("value", "text")],
    ),
    "protocol_servers": (  # ScyllaDB's protocol_servers_table (db/virtual_tables.cc)
        "ScyllaDB's virtual table of the protocol servers this node runs",
        [("name", "text")],
        [],
        [("listen_addresses", "frozen<list<text>>"), ("protocol", "text"), ("protocol_version", "text")],
    ),
    "versions": (  # ScyllaDB's versions_table
        "ScyllaDB's virtual table of the node's version",
        [("key", "text")],
        [],
        [("build_id", "text"), ("build_mode", "text"), ("version", "text")],
    ),
    "roles": (
        "roles (ScyllaDB's auth table; logtide.auth fills the rows: salted_hash is the stored hash)",
        [("role", "text")],
        [],
        [("can_login", "boolean"), ("is_superuser", "boolean"), ("member_of", "set<text>"), ("salted_hash", "text")],
    ),
    "token_ring": (  # ScyllaDB's virtual table (schema.system_ring)
        "the ring's token ranges and their endpoints, per keyspace",
        [("keyspace_name", "text")],
        [("table_name", "text"), ("start_token", "text"), ("endpoint", "inet")],
        [("end_token", "text"), ("dc", "text"), ("rack", "text")],
    ),
    "role_permissions": (
        "permissions granted to roles (ScyllaDB's auth tables live in system; logtide.auth fills the rows)",
        [("role", "text")],
        [("resource", "text")],
        [("permissions", "set<text>")],
    ),
    "one_row": (
        "A table with exactly one row, backing SELECT statements without a FROM clause.",
        [("system$dummy", "text")],
        [],
        [],
    ),
    "peers": (
        "information about known peers in the cluster",
        [("peer", "inet")],
        [],
        [
            ("data_center", "text"),
            ("host_id", "uuid"),
            ("preferred_ip", "inet"),
            ("rack", "text"),
            ("release_version", "text"),
            ("rpc_address", "inet"),
            ("schema_version", "uuid"),
            ("tokens", "set<text>"),
        ],
    ),
    "peers_v2": (
        "information about known peers in the cluster",
        [("peer", "inet")],
        [("peer_port", "int")],
        [
            ("data_center", "text"),
            ("host_id", "uuid"),
            ("native_address", "inet"),
            ("native_port", "int"),
            ("preferred_ip", "inet"),
            ("preferred_port", "int"),
            ("rack", "text"),
            ("release_version", "text"),
            ("schema_version", "uuid"),
            ("tokens", "set<text>"),
        ],
    ),
    "runtime_info": (  # ScyllaDB's virtual table (db/virtual_tables.cc): the items logtide has (docs/server.md)
        "Runtime system information.",
        [("group", "text")],
        [("item", "text")],
        [("value", "text")],
    ),
    "compaction_history": (  # ScyllaDB's: always empty in logtide, which never compacts (docs/server.md)
        "week-long compaction history",
        [("id", "uuid")],
        [],
        [("bytes_in", "bigint"), ("bytes_out", "bigint"), ("columnfamily_name", "text"), ("started_at", "timestamp"),
         ("compacted_at", "timestamp"), ("compaction_type", "text"), ("keyspace_name", "text"),
         ("rows_merged", "map<int, bigint>"), ("shard_id", "int"), ("sstables_in", "list<frozen<sstableinfo>>"),
         ("sstables_out", "list<frozen<sstableinfo>>"), ("total_tombstone_purge_attempt", "bigint"),
         ("total_tombstone_purge_failure_due_to_overlapping_with_memtable", "bigint"),
         ("total_tombstone_purge_failure_due_to_overlapping_with_uncompacting_sstable", "bigint")],
    ),
    "size_estimates": (  # ScyllaDB's virtual table (schema.system_ring, storage.estimates)
        "per-table primary range size estimates",
        [("keyspace_name", "text")],
        [("table_name", "text"), ("range_start", "text"), ("range_end", "text")],
        [("mean_partition_size", "bigint"), ("partitions_count", "bigint")],
    ),
    "built_views": ("built views", [("keyspace_name", "text")], [("view_name", "text")], []),
    "views_builds_in_progress": (
        "views builds current progress",
        [("keyspace_name", "text")],
        [("view_name", "text")],
        [("generation_number", "int"), ("last_token", "text")],
    ),
}

SCHEMA_GC_GRACE_SECONDS = 7 * 24 * 3600
LOCAL_REPLICATION = {"class": properties.LOCAL_STRATEGY}


@dataclass(frozen=True)
class NodeInfo:
    """What ``system.local`` says about this (only) node."""

    cluster_name: str = "logtide"
    # the Cassandra release cqlsh (cqlshlib.serverversion) was built against: cqlsh warns on every call
    # when the server reports another one; drivers choose the same schema parser for 4.x and 5.0
    release_version: str = "5.0.0"
    cql_version: str = "3.4.5"
    native_protocol_version: str = "4"
    partitioner: str = "org.apache.cassandra.dht.Murmur3Partitioner"
    tokens: frozenset[str] = frozenset({"0"})
    data_center: str = "datacenter1"
    rack: str = "rack1"
    host_id: uuid.UUID = field(default_factory=lambda: uuid.UUID(int=1))
    # materialized views and indexes being built: store id -> last base token built (text, None before the first)
    view_builds: Mapping[int, str | None] = field(default_factory=dict)
    broadcast_address: str = "127.0.0.1"
    listen_address: str = "127.0.0.1"
    rpc_address: str = "127.0.0.1"
    native_port: int = 9042
    storage_port: int = 7000
    gossip_generation: int = 0
    schema_version: uuid.UUID | None = None  # None: the catalog's version
    cdc_generations: Any = None  # logtide.cdc.streams.Generations, for system_distributed
    traces: Any = None  # logtide.tracing.TraceStore, for system_traces
    role_permissions: Any = None  # () -> the rows of system.role_permissions (logtide.auth)
    roles: Any = None  # () -> the rows of system.roles (logtide.auth)
    clients: Any = None  # () -> the rows of system.clients (the CQL server's connections)
    config: Any = None  # () -> the rows of system.config (logtide.live_config.LiveConfig.rows)
    runtime_info: Any = None  # () -> {item: value} of system.runtime_info's group "generic"
    # (store id, range start, range end) -> (partitions_count, mean_partition_size) of system.size_estimates
    size_estimates: Any = None


def system_table_id(keyspace: str, table: str) -> uuid.UUID:
    """Cassandra's TableId.forSystemTable: a name-based (MD5, version 3) UUID of keyspace + table."""
    return uuid.UUID(bytes=hashlib.md5((keyspace + table).encode()).digest(), version=3)


# ScyllaDB's user types of the system keyspace (``db/system_keyspace.cc``): fields and their types
_SYSTEM_TYPES: dict[str, tuple[tuple[str, str], ...]] = {
    "sstableinfo": (("generation", "uuid"), ("origin", "text"), ("size", "bigint")),
}


# the options ScyllaDB's schema of a system table sets (``db/system_keyspace.cc``), over the defaults
_TABLE_OPTIONS: dict[tuple[str, str], dict[str, Any]] = {
    (SYSTEM, "compaction_history"): {"default_time_to_live": 7 * 24 * 3600},
    (SYSTEM, "size_estimates"): {"gc_grace_seconds": 0},
}


def _system_udt(keyspace: str, name: str) -> Any:
    fields = _SYSTEM_TYPES.get(name) if keyspace == SYSTEM else None
    if fields is None:
        return None
    return types.UserType(SYSTEM, name, tuple(f for f, _ in fields),
                          tuple(types.parse_type_string(t) for _, t in fields))


def _make_table(keyspace: str, name: str, spec: tuple, store_id: int) -> Table:
    comment, pk, ck, regular = spec

    def typ(s: str) -> Any:
        return types.parse_type_string(s, keyspace, _system_udt)

    columns = [Column(n, typ(t), PARTITION_KEY, i) for i, (n, t) in enumerate(pk)]
    columns += [Column(c[0], typ(c[1]), CLUSTERING, i, c[2] if len(c) > 2 else "asc") for i, c in enumerate(ck)]
    columns += [Column(n, typ(t), REGULAR) for n, t in sorted(regular)]
    options = properties.table_defaults()
    options["comment"] = comment
    options.update(_TABLE_OPTIONS.get((keyspace, name), {}))
    if keyspace == SYSTEM_SCHEMA:
        options["gc_grace_seconds"] = SCHEMA_GC_GRACE_SECONDS
    return Table(keyspace, name, system_table_id(keyspace, name), store_id, tuple(columns), options)


_CACHE: dict[str, Keyspace] = {}
_VIRTUAL_CACHE: dict[str, Keyspace] = {}


def _build_keyspaces(out: dict[str, Keyspace], store_id: int, keyspaces: tuple[tuple[str, dict], ...]) -> None:
    for ks_name, specs in keyspaces:
        tables = {}
        for name, spec in specs.items():
            tables[name] = _make_table(ks_name, name, spec, store_id)
            store_id -= 1
        replication = TRACES_REPLICATION if ks_name == SYSTEM_TRACES else LOCAL_REPLICATION
        udts = {} if ks_name != SYSTEM else {
            n: UserTypeDef(SYSTEM, n, tuple(f for f, _ in fields), tuple(types.parse_type_string(t) for _, t in fields))
            for n, fields in _SYSTEM_TYPES.items()}
        out[ks_name] = Keyspace(ks_name, dict(replication), True, tables, udts)


def system_keyspaces() -> dict[str, Keyspace]:
    """The system keyspaces listed in ``system_schema``, by name (built on first use; their tables have negative
    store ids)."""
    if not _CACHE:
        _build_keyspaces(_CACHE, -1, ((SYSTEM, _SYSTEM_TABLES), (SYSTEM_SCHEMA, _SCHEMA_TABLES),
                                      (SYSTEM_DISTRIBUTED, _DISTRIBUTED_TABLES), (SYSTEM_AUTH, _AUTH_TABLES),
                                      (SYSTEM_LOGTIDE, _LOGTIDE_TABLES), (SYSTEM_TRACES, _TRACES_TABLES)))
    return _CACHE


def virtual_keyspaces() -> dict[str, Keyspace]:
    """Cassandra 4.0's virtual keyspaces: readable like the others, described by ``system_virtual_schema``
    instead of ``system_schema`` (so ``system_schema`` and DESCRIBE list exactly what they listed before)."""
    if not _VIRTUAL_CACHE:
        _build_keyspaces(_VIRTUAL_CACHE, -1000, ((SYSTEM_VIRTUAL_SCHEMA, _VIRTUAL_SCHEMA_TABLES),))
    return _VIRTUAL_CACHE


def is_system_keyspace(name: str) -> bool:
    return name in (SYSTEM, SYSTEM_SCHEMA, SYSTEM_DISTRIBUTED, SYSTEM_AUTH, SYSTEM_LOGTIDE, SYSTEM_TRACES,
                    SYSTEM_VIRTUAL_SCHEMA)


# --------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------


def _all_tables(catalog: "Catalog") -> Iterator[Table]:
    for ks in catalog.all_keyspaces():
        for name in sorted(ks.tables):
            yield ks.tables[name]


def _keyspaces_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    return [
        {"keyspace_name": ks.name, "durable_writes": ks.durable_writes, "replication": dict(ks.replication)}
        for ks in catalog.all_keyspaces()
    ]


def table_flags(table: Table) -> SortedSet:
    """system_schema.tables.flags: ``{'compound'}``, plus ``'counter'`` for counter tables."""
    return SortedSet(["compound", "counter"] if table.is_counter_table else ["compound"])


def table_row(table: Table) -> dict[str, Any]:
    o = {**properties.table_defaults(), **table.options}
    return {
        "keyspace_name": table.keyspace,
        "table_name": table.name,
        "additional_write_policy": o["additional_write_policy"],
        "bloom_filter_fp_chance": float(o["bloom_filter_fp_chance"]),
        "caching": dict(o["caching"]),
        "cdc": bool(table.cdc and table.cdc.get("enabled") == "true"),
        "comment": o["comment"],
        "compaction": dict(o["compaction"]),
        "compression": dict(o["compression"]),
        "crc_check_chance": float(o["crc_check_chance"]),
        "dclocal_read_repair_chance": float(o["dclocal_read_repair_chance"]),
        "default_time_to_live": int(o["default_time_to_live"]),
        "extensions": {"cdc": extension_blob(table.cdc)} if table.cdc else {},
        "flags": table_flags(table),
        "gc_grace_seconds": int(o["gc_grace_seconds"]),
        "id": table.id,
        "max_index_interval": int(o["max_index_interval"]),
        "memtable_flush_period_in_ms": int(o["memtable_flush_period_in_ms"]),
        "min_index_interval": int(o["min_index_interval"]),
        "read_repair": o["read_repair"],
        "read_repair_chance": float(o["read_repair_chance"]),
        "speculative_retry": o["speculative_retry"],
    }


def _tables_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    return [table_row(t) for t in _all_tables(catalog) if t.view is None]


def _schema_tables(catalog: "Catalog") -> Iterator[Table]:
    """The tables and views of each keyspace by name, with the views ScyllaDB backs secondary indexes with."""
    from logtide.schema.indexes import index_views
    for ks in catalog.all_keyspaces():
        tables = list(ks.tables.values()) + index_views(ks)
        yield from sorted(tables, key=lambda t: t.name)


def _columns_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    rows = []
    for table in _schema_tables(catalog):
        for c in sorted(table.columns, key=lambda c: c.name):
            rows.append(
                {
                    "keyspace_name": table.keyspace,
                    "table_name": table.name,
                    "column_name": c.name,
                    "clustering_order": c.clustering_order,
                    "column_name_bytes": c.name.encode("utf-8"),
                    "kind": c.kind,
                    "position": c.position,
                    "type": c.type.cql(),
                }
            )
    return rows


def _micros_to_datetime(micros: int) -> datetime.datetime:
    epoch = datetime.datetime(1970, 1, 1)
    return epoch + datetime.timedelta(microseconds=micros - micros % 1000)


def _dropped_columns_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    rows = []
    for table in _all_tables(catalog):
        for name in sorted(table.dropped_columns):
            type_string, micros = table.dropped_columns[name]
            rows.append(
                {
                    "keyspace_name": table.keyspace,
                    "table_name": table.name,
                    "column_name": name,
                    "dropped_time": _micros_to_datetime(micros),
                    "kind": REGULAR,
                    "type": type_string,
                }
            )
    return rows


def _functions_rows(catalog: "Catalog") -> list[dict[str, Any]]:
    """ScyllaDB's system_schema.functions: one row per user-defined function (types as CQL names them)."""
    return [{"keyspace_name": ks.name, "function_name": f.name, "argument_types": [t.cql() for t in f.arg_types],
             "argument_names": list(f.arg_names), "body": f.body, "called_on_null_input": f.called_on_null_input,
             "language": f.language, "return_type": f.return_type.cql()}
            for ks in catalog.keyspaces.values() for f in sorted(ks.functions.values(), key=_function_key)]


def _aggregates_rows(catalog: "Catalog") -> list[dict[str, Any]]:
    """ScyllaDB's system_schema.aggregates: the state and final functions by name, INITCOND as written."""
    rows = []
    for ks in catalog.keyspaces.values():
        for a in sorted(ks.aggregates.values(), key=_function_key):
            final = ks.functions.get(a.final_function) if a.final_function else None
            rows.append({"keyspace_name": ks.name, "aggregate_name": a.name,
                         "argument_types": [t.cql() for t in a.arg_types],
                         "final_func": final.name if final is not None else None, "initcond": a.initcond_text,
                         "return_type": (final.return_type if final is not None else a.state_type).cql(),
                         "state_func": a.state_function.split("(", 1)[0], "state_type": a.state_type.cql()})
    return rows


def _function_key(f: Any) -> tuple[str, list[str]]:
    return f.name, [t.cql() for t in f.arg_types]


def _types_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    rows = []
    for ks in catalog.all_keyspaces():
        for name in sorted(ks.types):
            udt = ks.types[name]
            rows.append(
                {
                    "keyspace_name": ks.name,
                    "type_name": name,
                    "field_names": list(udt.field_names),
                    "field_types": [t.cql() for t in udt.field_types],
                }
            )
    return rows


def _no_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    return []


def _virtual_tables() -> Iterator[Table]:
    for ks_name in sorted(virtual_keyspaces()):
        ks = virtual_keyspaces()[ks_name]
        for name in sorted(ks.tables):
            yield ks.tables[name]


def _virtual_keyspaces_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    return [{"keyspace_name": name} for name in sorted(virtual_keyspaces())]


def _virtual_tables_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    return [{"keyspace_name": t.keyspace, "table_name": t.name, "comment": t.options["comment"]}
            for t in _virtual_tables()]


def _virtual_columns_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    return [{"keyspace_name": t.keyspace, "table_name": t.name, "column_name": c.name,
             "clustering_order": c.clustering_order, "column_name_bytes": c.name.encode("utf-8"), "kind": c.kind,
             "position": c.position, "type": c.type.cql()}
            for t in _virtual_tables() for c in sorted(t.columns, key=lambda c: c.name)]


def _local_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    return [
        {
            "key": "local",
            "bootstrapped": "COMPLETED",
            "broadcast_address": node.broadcast_address,
            "broadcast_port": node.storage_port,
            "cluster_name": node.cluster_name,
            "cql_version": node.cql_version,
            "data_center": node.data_center,
            "gossip_generation": node.gossip_generation,
            "host_id": node.host_id,
            "listen_address": node.listen_address,
            "listen_port": node.storage_port,
            "native_protocol_version": node.native_protocol_version,
            "partitioner": node.partitioner,
            "rack": node.rack,
            "release_version": node.release_version,
            "rpc_address": node.rpc_address,
            "rpc_port": node.native_port,
            "schema_version": node.schema_version or catalog.version,
            "tokens": SortedSet(node_tokens(node)),
            "truncated_at": None,
        }
    ]


def node_tokens(node: NodeInfo) -> frozenset[str]:
    """The node's tokens as ScyllaDB reports them: the range ends (vnode tokens) of the newest CDC generation.

    A generation is built from the node's tokens, so the newest one holds the tokens it owns now (a
    generation that starts in the future was made for the tokens taken at the last restart)."""
    gens = node.cdc_generations
    if gens is None:
        return node.tokens
    return frozenset(str(t) for t in gens.current.range_ends)


def _protocol_servers_rows(node: NodeInfo) -> list[dict[str, Any]]:
    """``system.protocol_servers``: the CQL server, where it listens and the CQL version it speaks."""
    return [{"name": "native transport", "listen_addresses": [f"{node.rpc_address}:{node.native_port}"],
             "protocol": "cql", "protocol_version": node.cql_version}]


def _versions_rows() -> list[dict[str, Any]]:
    """``system.versions``: logtide's version (it has no build id; ``build_mode`` release)."""
    from logtide.version import package_version
    return [{"key": "local", "build_id": "", "build_mode": "release", "version": package_version()}]


def _generation_time(micros: int) -> datetime.datetime:
    """A generation timestamp as the ``timestamp`` CQL type holds it (milliseconds)."""
    return _micros_to_datetime(micros - micros % 1000)


def _generation_timestamps_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    gens = node.cdc_generations
    if gens is None:
        return []
    return [{"key": "timestamps", "time": _generation_time(g.timestamp),
             "expired": None if g.expired is None else _generation_time(g.expired)} for g in gens.generations]


def _streams_descriptions_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    gens = node.cdc_generations
    if gens is None:
        return []
    return [{"time": _generation_time(g.timestamp), "range_end": end, "streams": SortedSet(streams)}
            for g in gens.generations for end, streams in zip(g.range_ends, g.streams)]


_ROWS: dict[tuple[str, str], Callable[["Catalog", NodeInfo], list[dict[str, Any]]]] = {
    (SYSTEM_SCHEMA, "keyspaces"): _keyspaces_rows,
    (SYSTEM_SCHEMA, "tables"): _tables_rows,
    (SYSTEM_SCHEMA, "columns"): _columns_rows,
    (SYSTEM_SCHEMA, "dropped_columns"): _dropped_columns_rows,
    (SYSTEM_SCHEMA, "types"): _types_rows,
    (SYSTEM_SCHEMA, "triggers"): _no_rows,
    (SYSTEM_SCHEMA, "views"): lambda catalog, node: _views_rows(catalog),
    (SYSTEM, "built_views"): lambda catalog, node: _built_views_rows(catalog, node),
    (SYSTEM, "views_builds_in_progress"): lambda catalog, node: _built_views_rows(catalog, node, "progress"),
    (SYSTEM_DISTRIBUTED, "view_build_status"): lambda catalog, node: _built_views_rows(catalog, node, "status"),
    (SYSTEM_SCHEMA, "functions"): lambda catalog, node: _functions_rows(catalog),
    (SYSTEM_SCHEMA, "aggregates"): lambda catalog, node: _aggregates_rows(catalog),
    (SYSTEM_SCHEMA, "scylla_aggregates"): lambda catalog, node: [
        {"keyspace_name": ks.name, "aggregate_name": a.name, "argument_types": [t.cql() for t in a.arg_types],
         "reduce_func": a.reduce_function.split("(", 1)[0], "state_type": a.state_type.cql()}
        for ks in catalog.keyspaces.values() for a in sorted(ks.aggregates.values(), key=_function_key)
        if a.reduce_function is not None],
    (SYSTEM_SCHEMA, "indexes"): lambda catalog, node: _index_rows(catalog),
    (SYSTEM, "IndexInfo"): lambda catalog, node: _built_index_rows(catalog, node),
    (SYSTEM_SCHEMA, "scylla_keyspaces"): _no_rows,
    (SYSTEM, "local"): _local_rows,
    (SYSTEM_AUTH, "roles"): _no_rows,
    (SYSTEM_AUTH, "role_permissions"): _no_rows,
    (SYSTEM_DISTRIBUTED, "cdc_generation_timestamps"): _generation_timestamps_rows,
    (SYSTEM_DISTRIBUTED, "cdc_streams_descriptions_v2"): _streams_descriptions_rows,
    (SYSTEM, "peers"): _no_rows,
    (SYSTEM, "one_row"): lambda catalog, node: [{"system$dummy": ""}],
    (SYSTEM, "role_permissions"): lambda catalog, node: node.role_permissions() if node.role_permissions else [],
    (SYSTEM, "roles"): lambda catalog, node: node.roles() if node.roles else [],
    (SYSTEM, "token_ring"): lambda catalog, node: token_ring_rows(catalog, node_tokens(node), node.broadcast_address,
                                                                  node.data_center, node.rack),
    (SYSTEM_SCHEMA, "scylla_tables"): lambda catalog, node: scylla_tables_rows(catalog),
    (SYSTEM, "clients"): lambda catalog, node: node.clients() if node.clients else [],
    (SYSTEM, "config"): lambda catalog, node: node.config() if node.config else [],
    (SYSTEM, "compaction_history"): _no_rows,
    (SYSTEM, "runtime_info"): lambda catalog, node: [
        {"group": "generic", "item": k, "value": v} for k, v in sorted((node.runtime_info() or {}).items())
    ] if node.runtime_info else [],
    (SYSTEM, "size_estimates"): lambda catalog, node: size_estimates_rows(
        catalog, node_tokens(node), node.size_estimates) if node.size_estimates else [],
    (SYSTEM, "protocol_servers"): lambda catalog, node: _protocol_servers_rows(node),
    (SYSTEM, "versions"): lambda catalog, node: _versions_rows(),
    (SYSTEM_LOGTIDE, "changefeeds"): lambda catalog, node: _changefeed_rows(catalog),
    (SYSTEM, "peers_v2"): _no_rows,
    (SYSTEM_TRACES, "sessions"): lambda catalog, node: node.traces.sessions_rows() if node.traces else [],
    (SYSTEM_TRACES, "events"): lambda catalog, node: node.traces.events_rows() if node.traces else [],
    (SYSTEM_VIRTUAL_SCHEMA, "keyspaces"): _virtual_keyspaces_rows,
    (SYSTEM_VIRTUAL_SCHEMA, "tables"): _virtual_tables_rows,
    (SYSTEM_VIRTUAL_SCHEMA, "columns"): _virtual_columns_rows,
}


def _views_rows(catalog: "Catalog") -> list[dict[str, Any]]:
    from logtide.schema.indexes import index_views
    from logtide.schema.views import views_rows
    return views_rows(catalog, table_row, index_views)


def _built_views_rows(catalog: "Catalog", node: NodeInfo, table: str = "built") -> list[dict[str, Any]]:
    from logtide.schema.views import view_build_rows
    return view_build_rows(catalog, node.host_id, node.view_builds, table)


def _index_rows(catalog: "Catalog") -> list[dict[str, Any]]:
    from logtide.schema.indexes import indexes_rows
    return indexes_rows(catalog)


def _built_index_rows(catalog: "Catalog", node: NodeInfo) -> list[dict[str, Any]]:
    from logtide.schema.indexes import built_index_rows
    return built_index_rows(catalog, node.view_builds)


def _changefeed_rows(catalog: "Catalog") -> list[dict[str, Any]]:
    from logtide.schema.system_changefeeds import changefeed_rows
    return changefeed_rows(catalog, None)


def system_rows(catalog: "Catalog", keyspace_name: str, table_name: str, node_info: NodeInfo) -> list[dict[str, Any]]:
    """The rows of a system table, in primary-key order, as dicts from column name to Python value."""
    producer = _ROWS.get((keyspace_name, table_name))
    if producer is None:
        raise KeyError(f"{keyspace_name}.{table_name} is not a system table")
    return producer(catalog, node_info)
