"""The schema catalog: DDL statements, their validation and messages, JSON round trip."""

import uuid

import pytest

from logtide.cql import ast
from logtide.errors import AlreadyExists, ConfigurationException, InvalidRequest, SyntaxException, Unauthorized
from logtide.result import SchemaChange
from logtide.schema.model import CLUSTERING, PARTITION_KEY, REGULAR, STATIC

from .helpers import NOW, Catalog, apply, keyspace_catalog, run

SIMPLE = "org.apache.cassandra.locator.SimpleStrategy"
NTS = "org.apache.cassandra.locator.NetworkTopologyStrategy"


def fails(catalog, text, error, message, keyspace="ks"):
    """Assert that a statement raises ``error`` with exactly ``message``."""
    with pytest.raises(error) as info:
        apply(catalog, text, keyspace)
    assert str(info.value) == message
    return info.value


# ---------------------------------------------------------------- keyspaces


def test_create_keyspace_stores_replication_as_system_schema_shows_it():
    cat, change = apply(Catalog.empty(), "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    assert cat.keyspace("ks").replication == {"class": SIMPLE, "replication_factor": "1"}
    assert cat.keyspace("ks").durable_writes is True
    assert change == SchemaChange("CREATED", "KEYSPACE", "ks")


def test_create_keyspace_full_class_name_and_durable_writes():
    cat = run(Catalog.empty(), f"CREATE KEYSPACE k2 WITH replication = {{'class': '{SIMPLE}', 'replication_factor': '3'}} AND durable_writes = false")
    assert cat.keyspace("k2").replication == {"class": SIMPLE, "replication_factor": "3"}
    assert cat.keyspace("k2").durable_writes is False


def test_network_topology_strategy_keeps_datacenters():
    cat = run(Catalog.empty(), "CREATE KEYSPACE k WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 3}")
    assert cat.keyspace("k").replication == {"class": NTS, "datacenter1": "3"}


def test_network_topology_replication_factor_expands_to_local_datacenter():
    cat = run(Catalog.empty(), "CREATE KEYSPACE k WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1}")
    assert cat.keyspace("k").replication == {"class": NTS, "datacenter1": "1"}


def test_create_existing_keyspace():
    error = fails(keyspace_catalog(), "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
                  AlreadyExists, 'Cannot add existing keyspace "ks"')
    assert (error.keyspace, error.table) == ("ks", "")


def test_create_keyspace_if_not_exists_changes_nothing(cat):
    new, change = apply(cat, "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}")
    assert new is cat and change is None


@pytest.mark.parametrize("text", [
    "CREATE KEYSPACE k",
    "CREATE KEYSPACE k WITH durable_writes = true",
    "CREATE KEYSPACE k WITH replication = {}",
    "CREATE KEYSPACE k WITH replication = {'class': 'NetworkTopologyStrategy'}",
    "CREATE KEYSPACE k WITH replication = {'replication_factor': 1}",
])
def test_replication_defaults_to_network_topology_with_one_replica(text):
    """ScyllaDB: no WITH clause, no replication or no class mean NetworkTopologyStrategy, one replica per rack."""
    ks = run(Catalog.empty(), text).keyspace("k")
    assert ks.replication == {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy", "datacenter1": "1"}


def test_network_topology_checks_data_centers():
    fails(Catalog.empty(), "CREATE KEYSPACE k WITH replication = {'class': 'NetworkTopologyStrategy', 'dc9': 1}",
          ConfigurationException, "Unrecognized strategy option {dc9} passed to NetworkTopologyStrategy")
    fails(Catalog.empty(), "CREATE KEYSPACE k WITH replication = {'class': 'NetworkTopologyStrategy', 'Replication_factor': 1}",
          ConfigurationException, "Unrecognized strategy option {Replication_factor} passed to NetworkTopologyStrategy")
    ks = run(Catalog.empty(), "CREATE KEYSPACE k WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 0}")
    assert ks.keyspace("k").replication == {"class": "org.apache.cassandra.locator.NetworkTopologyStrategy"}


def test_alter_replication_needs_a_class(cat):
    fails(cat, "ALTER KEYSPACE ks WITH replication = {'replication_factor': 1}",
          ConfigurationException, "Missing replication strategy class")


def test_keyspace_storage_is_local():
    run(Catalog.empty(), "CREATE KEYSPACE k WITH storage = {'type': 'LOCAL'}")
    fails(Catalog.empty(), "CREATE KEYSPACE k WITH storage = {'type': 'LOCAL', 'x': '1'}",
          InvalidRequest, "Extraneous options for LOCAL: x; allowed: ")
    fails(Catalog.empty(), "CREATE KEYSPACE k WITH storage = {'type': 'S3', 'bucket': 'b', 'endpoint': 'e'}",
          InvalidRequest, "Keyspace storage options not supported in the cluster")
    fails(Catalog.empty(), "CREATE KEYSPACE k WITH storage = {'type': 'S4'}", InvalidRequest, "Unknown storage type: S4")


def test_unknown_replication_class():
    fails(Catalog.empty(), "CREATE KEYSPACE k WITH replication = {'class': 'Foo'}",
          ConfigurationException, "Unable to find replication strategy class 'org.apache.cassandra.locator.Foo'")


def test_simple_strategy_requires_replication_factor():
    fails(Catalog.empty(), "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy'}",
          ConfigurationException, "SimpleStrategy requires a replication_factor strategy option.")


def test_simple_strategy_refuses_other_options():
    fails(Catalog.empty(), "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1, 'dc1': 1}",
          ConfigurationException, "Unrecognized strategy option {dc1} passed to SimpleStrategy for keyspace k")


def test_local_strategy_is_reserved():
    fails(Catalog.empty(), "CREATE KEYSPACE k WITH replication = {'class': 'LocalStrategy'}",
          InvalidRequest, "Unable to use given strategy class: LocalStrategy is reserved for internal use.")


def test_unknown_keyspace_property():
    fails(Catalog.empty(), "CREATE KEYSPACE k WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND foo = 1",
          SyntaxException, "Unknown property 'foo'")


def test_keyspace_name_validation():
    run(Catalog.empty(), f"CREATE KEYSPACE {'k' * 192}")  # ScyllaDB's limit, not Cassandra's 48
    name = "k" * 193
    fails(Catalog.empty(), f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}",
          InvalidRequest, f'Keyspace names shouldn\'t be more than 192 characters long (got "{name}")')
    fails(Catalog.empty(), 'CREATE KEYSPACE "a-b"', InvalidRequest, '"a-b" is not a valid keyspace name')


def test_table_name_validation(cat):
    run(cat, f"CREATE TABLE {'t' * 192} (k int PRIMARY KEY)")
    fails(cat, f"CREATE TABLE {'t' * 193} (k int PRIMARY KEY)", InvalidRequest,
          f'Table names shouldn\'t be more than 192 characters long (got "{"t" * 193}")')
    fails(cat, 'CREATE TABLE "a b" (k int PRIMARY KEY)', InvalidRequest,
          '"a b" is not a valid table name (must be alphanumeric character only: [0-9A-Za-z]+)')


def test_system_keyspace_not_modifiable(cat):
    # ScyllaDB's access check: system and system_schema are Unauthorized
    fails(cat, "CREATE TABLE system.t (k int PRIMARY KEY)", Unauthorized, "system keyspace is not user-modifiable.")
    for ddl in ("ALTER TABLE system.local WITH comment = ''", "ALTER TABLE system.local ADD x int",
                "DROP TABLE system.peers", "CREATE TYPE system.ty (a int)", "CREATE INDEX ON system.local (bootstrapped)",
                "ALTER TABLE system.local WITH memtable_flush_period_in_ms = 80000 AND comment = ''",
                "ALTER KEYSPACE system WITH durable_writes = false"):
        fails(cat, ddl, Unauthorized, "system keyspace is not user-modifiable.")
    fails(cat, "DROP TABLE system_schema.tables", Unauthorized, "system_schema keyspace is not user-modifiable.")
    # logtide's other system keyspaces (real tables in ScyllaDB) keep an InvalidRequest
    fails(cat, "DROP TABLE system_auth.roles", InvalidRequest, "System keyspace 'system_auth' is not user-modifiable")


def test_memtable_flush_period_alone_is_accepted_on_a_system_table_and_changes_nothing(cat):
    # ScyllaDB's one exception (its issue #21223); logtide has no memtable, so nothing changes
    new, change = apply(cat, "ALTER TABLE system.compaction_history WITH memtable_flush_period_in_ms = 80000")
    assert change is None and new.version == cat.version
    assert apply(cat, "ALTER TABLE system_schema.tables WITH memtable_flush_period_in_ms = 0")[1] is None
    # the value is checked as on any table, and the table must exist
    fails(cat, "ALTER TABLE system.local WITH memtable_flush_period_in_ms = 5", ConfigurationException,
          "memtable_flush_period_in_ms must be 0 or greater than 60000")
    fails(cat, "ALTER TABLE system.nosuch WITH memtable_flush_period_in_ms = 80000", InvalidRequest,
          "Table 'system.nosuch' doesn't exist")


def test_alter_keyspace(cat):
    new, change = apply(cat, "ALTER KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 2} AND durable_writes = false")
    assert new.keyspace("ks").replication == {"class": NTS, "datacenter1": "2"}
    assert new.keyspace("ks").durable_writes is False
    assert change == SchemaChange("UPDATED", "KEYSPACE", "ks")
    assert new.version != cat.version


def test_alter_keyspace_durable_writes_only_keeps_replication(cat):
    new = run(cat, "ALTER KEYSPACE ks WITH durable_writes = false")
    assert new.keyspace("ks").replication == {"class": SIMPLE, "replication_factor": "1"}


def test_alter_missing_keyspace(cat):
    fails(cat, "ALTER KEYSPACE nope WITH durable_writes = false", InvalidRequest, "Keyspace 'nope' doesn't exist")


def test_drop_keyspace(cat):
    new, change = apply(cat, "DROP KEYSPACE ks")
    assert new.find_keyspace("ks") is None
    assert change == SchemaChange("DROPPED", "KEYSPACE", "ks")


def test_drop_missing_keyspace(cat):
    fails(cat, "DROP KEYSPACE nope", ConfigurationException, "Cannot drop non existing keyspace 'nope'.")
    assert apply(cat, "DROP KEYSPACE IF EXISTS nope") == (cat, None)


def test_keyspace_lookup_messages(cat):
    with pytest.raises(InvalidRequest, match="^Keyspace 'nope' does not exist$"):
        cat.keyspace("nope")
    with pytest.raises(InvalidRequest, match="^unconfigured table t$"):
        cat.table("ks", "t")
    assert cat.find_table("ks", "t") is None


def test_system_keyspaces_are_visible(cat):
    assert cat.table("system_schema", "tables").keyspace == "system_schema"
    assert cat.table("system", "local").partition_key[0].name == "key"
    assert [k.name for k in cat.all_keyspaces()] == ["ks", "system", "system_auth", "system_distributed", "system_logtide",
                                                     "system_schema", "system_traces"]
    assert cat.find_keyspace("system_virtual_schema") is not None  # readable, but not listed (virtual)


# ---------------------------------------------------------------- tables


def test_create_table_column_order_and_kinds(cat):
    new, change = apply(cat, "CREATE TABLE t (z int, b int, a int, s2 int static, s1 int static, y text, x text, "
                             "PRIMARY KEY ((z, b), a)) WITH CLUSTERING ORDER BY (a DESC)")
    t = new.table("ks", "t")
    assert [c.name for c in t.columns] == ["z", "b", "a", "s1", "s2", "x", "y"]
    assert [c.kind for c in t.columns] == [PARTITION_KEY, PARTITION_KEY, CLUSTERING, STATIC, STATIC, REGULAR, REGULAR]
    assert [c.position for c in t.columns] == [0, 1, 0, -1, -1, -1, -1]
    assert t.column("a").clustering_order == "desc"
    assert t.column("x").clustering_order == "none"
    assert change == SchemaChange("CREATED", "TABLE", "ks", "t")
    assert t.store_id == 1 and new.next_store_id == 2
    assert isinstance(t.id, uuid.UUID)


def test_store_ids_are_never_reused(cat):
    cat = run(cat, "CREATE TABLE t (k int PRIMARY KEY)", "DROP TABLE t", "CREATE TABLE t (k int PRIMARY KEY)")
    assert cat.table("ks", "t").store_id == 2


def test_no_keyspace_specified():
    fails(keyspace_catalog(), "CREATE TABLE t (k int PRIMARY KEY)", InvalidRequest,
          "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename", keyspace=None)


def test_create_table_in_missing_keyspace(cat):
    fails(cat, "CREATE TABLE nope.t (k int PRIMARY KEY)", InvalidRequest, "Keyspace 'nope' doesn't exist")


def test_create_existing_table(cat):
    cat = run(cat, "CREATE TABLE t (k int PRIMARY KEY)")
    error = fails(cat, "CREATE TABLE t (k int PRIMARY KEY)", AlreadyExists, 'Cannot add already existing table "t" to keyspace "ks"')
    assert (error.keyspace, error.table) == ("ks", "t")
    assert apply(cat, "CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY, v int)") == (cat, None)


def test_missing_primary_key(cat):
    stmt = ast.CreateTable(ast.QualifiedName(None, "t"), (ast.ColumnDef("k", ast.TypeExpr("int")),), ())
    with pytest.raises(InvalidRequest, match=r"^No PRIMARY KEY specifed for table 't' \(exactly one required\)$"):
        cat.apply(stmt, "ks", NOW)


def test_duplicate_column_declaration(cat):
    int_t = ast.TypeExpr("int")
    stmt = ast.CreateTable(ast.QualifiedName("ks", "t"), (ast.ColumnDef("k", int_t), ast.ColumnDef("k", int_t)), ("k",))
    with pytest.raises(InvalidRequest, match="^Duplicate column 'k' declaration for table 'ks.t'$"):
        cat.apply(stmt, None, NOW)


def test_unknown_primary_key_column(cat):
    fails(cat, "CREATE TABLE t (k int, v int, PRIMARY KEY (k, x))", InvalidRequest,
          "Unknown column 'x' referenced in PRIMARY KEY for table 't'")


def test_duplicate_primary_key_column(cat):
    fails(cat, "CREATE TABLE t (k int, v int, PRIMARY KEY (k, k))", InvalidRequest,
          "Duplicate column 'k' in PRIMARY KEY clause for table 't'")


def test_non_frozen_collection_in_primary_key(cat):
    fails(cat, "CREATE TABLE t (k int, v list<int>, PRIMARY KEY (k, v))", InvalidRequest,
          "Invalid non-frozen collection type for PRIMARY KEY component v")


def test_non_frozen_udt_in_primary_key(cat):
    cat = run(cat, "CREATE TYPE ut (a int)")
    fails(cat, "CREATE TABLE t (k ut PRIMARY KEY)", InvalidRequest,
          "Invalid non-frozen user-defined type for PRIMARY KEY component k")


def test_frozen_collections_allowed_in_primary_key(cat):
    cat = run(cat, "CREATE TYPE ut (a int)", "CREATE TABLE t (k frozen<list<int>>, c frozen<ut>, PRIMARY KEY (k, c))")
    assert cat.table("ks", "t").column("c").type.cql() == "frozen<ut>"


def test_counter_in_primary_key(cat):
    fails(cat, "CREATE TABLE t (k counter PRIMARY KEY)", InvalidRequest, "counter type is not supported for PRIMARY KEY column 'k'")


def test_duration_in_clustering_key(cat):
    fails(cat, "CREATE TABLE t (k int, c duration, PRIMARY KEY (k, c))", InvalidRequest,
          "duration type is not supported for PRIMARY KEY column 'c'")


def test_nested_duration_in_primary_key(cat):
    fails(cat, "CREATE TABLE t (k int, c frozen<list<duration>>, PRIMARY KEY (k, c))", InvalidRequest,
          "duration type is not supported for PRIMARY KEY column 'c'")


def test_static_column_in_primary_key(cat):
    fails(cat, "CREATE TABLE t (k int, c int static, PRIMARY KEY (k, c))", InvalidRequest,
          "Static column 'c' cannot be part of the PRIMARY KEY")


def test_static_column_without_clustering_columns(cat):
    fails(cat, "CREATE TABLE t (k int PRIMARY KEY, s int static)", InvalidRequest,
          "Static columns are only useful (and thus allowed) if the table has at least one clustering column")


def test_counter_mixed_with_other_columns(cat):
    fails(cat, "CREATE TABLE t (k int PRIMARY KEY, c counter, v int)", InvalidRequest,
          "Cannot mix counter and non counter columns in the same table")


def test_counter_table_refuses_default_ttl(cat):
    fails(cat, "CREATE TABLE t (k int PRIMARY KEY, c counter) WITH default_time_to_live = 10", InvalidRequest,
          "Cannot set default_time_to_live on a table with counters")


def test_counter_table(cat):
    cat = run(cat, "CREATE TABLE t (k int PRIMARY KEY, c counter, d counter)")
    assert cat.table("ks", "t").is_counter_table


def test_clustering_order_on_non_clustering_column(cat):
    fails(cat, "CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c ASC, v DESC)",
          InvalidRequest, "Only clustering columns can be defined in CLUSTERING ORDER directive")


def test_clustering_order_wrong_order(cat):
    fails(cat, "CREATE TABLE t (k int, a int, b int, PRIMARY KEY (k, a, b)) WITH CLUSTERING ORDER BY (b ASC, a DESC)",
          InvalidRequest,
          "The order of columns in the CLUSTERING ORDER directive must match that of the clustering columns "
          "(a must appear before b)")


def test_clustering_order_missing_column(cat):
    fails(cat, "CREATE TABLE t (k int, a int, b int, PRIMARY KEY (k, a, b)) WITH CLUSTERING ORDER BY (b DESC)",
          InvalidRequest, "Missing CLUSTERING ORDER for column a")


def test_clustering_order_prefix_is_enough(cat):
    cat = run(cat, "CREATE TABLE t (k int, a int, b int, PRIMARY KEY (k, a, b)) WITH CLUSTERING ORDER BY (a DESC)")
    assert [c.clustering_order for c in cat.table("ks", "t").clustering_key] == ["desc", "asc"]


def test_non_frozen_udt_with_non_frozen_collection(cat):
    cat = run(cat, "CREATE TYPE ut (a list<int>)")
    fails(cat, "CREATE TABLE t (k int PRIMARY KEY, v ut)", InvalidRequest,
          "Non-frozen UDTs with nested non-frozen collections are not supported")


def test_compact_storage_refused(cat):
    fails(cat, "CREATE TABLE t (k int PRIMARY KEY, v int) WITH COMPACT STORAGE", InvalidRequest,
          "Compact tables are not allowed in Cassandra starting with 4.0 version.")


def test_user_type_from_another_keyspace(cat):
    cat = run(cat, "CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
              "CREATE TYPE other.ut (a int)")
    fails(cat, "CREATE TABLE t (k int PRIMARY KEY, v frozen<other.ut>)", InvalidRequest,
          "Statement on keyspace ks cannot refer to a user type in keyspace other; "
          "user types can only be used in the keyspace they are defined in")


# ---------------------------------------------------------------- table options


def test_table_options_are_kept(cat):
    cat = run(cat, "CREATE TABLE t (k int PRIMARY KEY) WITH comment = 'hello' AND default_time_to_live = 100 "
                   "AND gc_grace_seconds = 5 AND compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 160} "
                   "AND caching = {'keys': 'NONE'} AND bloom_filter_fp_chance = 0.1 AND speculative_retry = '95percentile' "
                   "AND compression = {'class': 'SnappyCompressor'} AND crc_check_chance = 0.5 AND read_repair = 'NONE' "
                   "AND memtable_flush_period_in_ms = 60000 AND min_index_interval = 64 AND max_index_interval = 1024")
    t = cat.table("ks", "t")
    assert t.options["comment"] == "hello"
    assert t.default_ttl == 100 and t.gc_grace_seconds == 5
    assert t.options["compaction"] == {"class": "LeveledCompactionStrategy", "sstable_size_in_mb": "160"}
    assert t.options["caching"] == {"keys": "NONE", "rows_per_partition": "ALL"}
    assert t.options["bloom_filter_fp_chance"] == 0.1
    assert t.options["speculative_retry"] == "95.0PERCENTILE"
    assert t.options["compression"] == {"sstable_compression": "org.apache.cassandra.io.compress.SnappyCompressor"}
    assert t.options["crc_check_chance"] == 0.5
    assert t.options["read_repair"] == "NONE"
    assert (t.options["min_index_interval"], t.options["max_index_interval"]) == (64, 1024)
    assert t.cdc is None


def test_default_table_options(cat):
    t = run(cat, "CREATE TABLE t (k int PRIMARY KEY)").table("ks", "t")
    assert t.default_ttl == 0 and t.gc_grace_seconds == 864000
    assert t.options["compaction"] == {"class": "SizeTieredCompactionStrategy"}


def test_unknown_table_property(cat):
    fails(cat, "CREATE TABLE t (k int PRIMARY KEY) WITH foo = 1", SyntaxException, "Unknown property 'foo'")


def test_invalid_integer_option(cat):
    fails(cat, "CREATE TABLE t (k int PRIMARY KEY) WITH gc_grace_seconds = 'x'", SyntaxException,
          "Invalid integer value x for 'gc_grace_seconds'")


def test_map_option_given_as_string(cat):
    fails(cat, "CREATE TABLE t (k int PRIMARY KEY) WITH compaction = 'x'", SyntaxException,
          "Invalid value for property 'compaction'. It should be a map.")


def test_compaction_class_required(cat):
    fails(cat, "CREATE TABLE t (k int PRIMARY KEY) WITH compaction = {'min_threshold': 2}", ConfigurationException,
          "Missing sub-option 'class' for the 'compaction' option.")


def test_bloom_filter_range(cat):
    fails(cat, "CREATE TABLE t (k int PRIMARY KEY) WITH bloom_filter_fp_chance = 2", ConfigurationException,
          "bloom_filter_fp_chance must be larger than 6.71e-05 and less than or equal to 1.0 (got 2)")


def test_negative_default_ttl(cat):
    fails(cat, "CREATE TABLE t (k int PRIMARY KEY) WITH default_time_to_live = -1", ConfigurationException,
          "default_time_to_live cannot be smaller than 0, (default 0)")


def test_cdc_option_is_stored_as_dict_of_strings(cat):
    cat = run(cat, "CREATE TABLE t (k int PRIMARY KEY) WITH cdc = {'enabled': true, 'preimage': true}")
    assert cat.table("ks", "t").cdc == {"delta": "full", "enabled": "true", "postimage": "false", "preimage": "true", "ttl": "86400"}


def test_alter_table_with_options(cat):
    cat = run(cat, "CREATE TABLE t (k int PRIMARY KEY) WITH comment = 'a'")
    new, change = apply(cat, "ALTER TABLE t WITH gc_grace_seconds = 10 AND cdc = {'enabled': 'true'}")
    t = new.table("ks", "t")
    assert t.gc_grace_seconds == 10 and t.options["comment"] == "a"
    assert t.cdc["enabled"] == "true"
    assert change == SchemaChange("UPDATED", "TABLE", "ks", "t")


def test_alter_counter_table_default_ttl(cat):
    cat = run(cat, "CREATE TABLE t (k int PRIMARY KEY, c counter)")
    fails(cat, "ALTER TABLE t WITH default_time_to_live = 5", InvalidRequest, "Cannot set default_time_to_live on a table with counters")


# ---------------------------------------------------------------- ALTER TABLE


@pytest.fixture
def table_cat(cat):
    return run(cat, "CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))")


def test_alter_missing_table(cat):
    fails(cat, "ALTER TABLE nope ADD v int", InvalidRequest, "Table 'ks.nope' doesn't exist")


def test_add_columns(table_cat):
    new, change = apply(table_cat, "ALTER TABLE t ADD (b text, s int static)")
    t = new.table("ks", "t")
    assert [c.name for c in t.columns] == ["k", "c", "s", "b", "v"]
    assert t.column("s").kind == STATIC
    assert change == SchemaChange("UPDATED", "TABLE", "ks", "t")


def test_add_existing_column(table_cat):
    fails(table_cat, "ALTER TABLE t ADD v text", InvalidRequest, "Column with name 'v' already exists")
    assert apply(table_cat, "ALTER TABLE t ADD IF NOT EXISTS v text") == (table_cat, None)


def test_add_static_without_clustering(cat):
    cat = run(cat, "CREATE TABLE t (k int PRIMARY KEY)")
    fails(cat, "ALTER TABLE t ADD s int static", InvalidRequest,
          "Static columns are only useful (and thus allowed) if the table has at least one clustering column")


def test_add_counter_to_regular_table(table_cat):
    fails(table_cat, "ALTER TABLE t ADD n counter", ConfigurationException, 'Cannot have a counter column ("n") in a non counter table')


def test_add_regular_to_counter_table(cat):
    cat = run(cat, "CREATE TABLE t (k int PRIMARY KEY, n counter)")
    fails(cat, "ALTER TABLE t ADD v int", ConfigurationException, 'Cannot have a non counter column ("v") in a counter table')


def test_drop_column_records_drop(table_cat):
    new, change = apply(table_cat, "ALTER TABLE t DROP v")
    t = new.table("ks", "t")
    assert t.column("v") is None
    assert t.dropped_columns == {"v": ("int", NOW)}
    assert change == SchemaChange("UPDATED", "TABLE", "ks", "t")


def test_drop_missing_column(table_cat):
    fails(table_cat, "ALTER TABLE t DROP x", InvalidRequest, "Column x was not found in table 'ks.t'")
    assert apply(table_cat, "ALTER TABLE t DROP IF EXISTS x") == (table_cat, None)


def test_drop_primary_key_column(table_cat):
    fails(table_cat, "ALTER TABLE t DROP c", InvalidRequest, "Cannot drop PRIMARY KEY column c")


def test_drop_non_frozen_udt_column(cat):
    cat = run(cat, "CREATE TYPE ut (a int)", "CREATE TABLE t (k int PRIMARY KEY, u ut)")
    fails(cat, "ALTER TABLE t DROP u", InvalidRequest, "Cannot drop non-frozen column u of user type ut")


def test_readd_dropped_column_with_other_type(table_cat):
    cat = run(table_cat, "ALTER TABLE t DROP v")
    fails(cat, "ALTER TABLE t ADD v text", InvalidRequest,
          "Cannot re-add previously dropped column 'v' of type text, incompatible with previous type int")
    assert run(cat, "ALTER TABLE t ADD v int").table("ks", "t").column("v") is not None


def test_rename_primary_key_column(table_cat):
    t = run(table_cat, "ALTER TABLE t RENAME k TO key AND c TO ck").table("ks", "t")
    assert [c.name for c in t.primary_key] == ["key", "ck"]


def test_rename_non_primary_key_column(table_cat):
    fails(table_cat, "ALTER TABLE t RENAME v TO w", InvalidRequest, "Cannot rename non PRIMARY KEY column v")


def test_rename_missing_column(table_cat):
    fails(table_cat, "ALTER TABLE t RENAME x TO y", InvalidRequest, "Column x was not found in table ks.t")


def test_rename_to_existing_column(table_cat):
    fails(table_cat, "ALTER TABLE t RENAME c TO v", InvalidRequest,
          "Cannot rename column c to v in table 'ks.t'; another column with that name already exists")


def test_alter_column_type_refused(table_cat):
    fails(table_cat, "ALTER TABLE t ALTER v TYPE bigint", InvalidRequest, "Altering column types is no longer supported")


def test_drop_table(table_cat):
    new, change = apply(table_cat, "DROP TABLE ks.t")
    assert new.find_table("ks", "t") is None
    assert change == SchemaChange("DROPPED", "TABLE", "ks", "t")


def test_drop_missing_table(cat):
    fails(cat, "DROP TABLE t", InvalidRequest, "Table 'ks.t' doesn't exist")
    assert apply(cat, "DROP TABLE IF EXISTS t") == (cat, None)


# ---------------------------------------------------------------- user types


def test_create_type(cat):
    new, change = apply(cat, "CREATE TYPE ut (a int, b frozen<list<text>>)")
    udt = new.user_type("ks", "ut")
    assert udt.field_names == ("a", "b")
    assert [t.cql() for t in udt.field_types] == ["int", "frozen<list<text>>"]
    assert change == SchemaChange("CREATED", "TYPE", "ks", "ut")
    assert new.lookup_udt("ks", "ut").field_names == ("a", "b")
    assert new.lookup_udt("ks", "nope") is None


def test_create_existing_type(cat):
    cat = run(cat, "CREATE TYPE ut (a int)")
    fails(cat, "CREATE TYPE ut (a int)", InvalidRequest, "A user type with name 'ut' already exists")
    assert apply(cat, "CREATE TYPE IF NOT EXISTS ut (b int)") == (cat, None)


def test_type_duplicate_field(cat):
    fails(cat, "CREATE TYPE ut (a int, a text)", InvalidRequest, "Duplicate field name 'a' in type 'ut'")


def test_type_with_counter(cat):
    fails(cat, "CREATE TYPE ut (a counter)", InvalidRequest, "A user type cannot contain counters")


def test_type_with_non_frozen_udt(cat):
    cat = run(cat, "CREATE TYPE inner (a int)")
    fails(cat, "CREATE TYPE ut (a inner)", InvalidRequest, "A user type cannot contain non-frozen UDTs")


def test_alter_type_add_updates_tables(cat):
    cat = run(cat, "CREATE TYPE ut (a int)", "CREATE TYPE outer (u frozen<ut>)",
              "CREATE TABLE t (k int PRIMARY KEY, u frozen<ut>, o frozen<outer>, l list<frozen<ut>>)")
    new, change = apply(cat, "ALTER TYPE ut ADD b text")
    assert new.user_type("ks", "ut").field_names == ("a", "b")
    t = new.table("ks", "t")
    assert t.column("u").type.field_names == ("a", "b")
    assert t.column("u").type.frozen
    assert t.column("l").type.element.field_names == ("a", "b")
    assert t.column("o").type.field_types[0].field_names == ("a", "b")
    assert new.user_type("ks", "outer").field_types[0].field_names == ("a", "b")
    assert change == SchemaChange("UPDATED", "TYPE", "ks", "ut")


def test_alter_type_add_existing_field(cat):
    cat = run(cat, "CREATE TYPE ut (a int)")
    fails(cat, "ALTER TYPE ut ADD a text", InvalidRequest, "Cannot add field a to type ks.ut: a field with name a already exists")


def test_alter_type_add_circular(cat):
    cat = run(cat, "CREATE TYPE ut (a int)")
    fails(cat, "ALTER TYPE ut ADD b frozen<ut>", InvalidRequest,
          "Cannot add new field b of type frozen<ut> to user type ks.ut as it would create a circular reference")


def test_alter_missing_type(cat):
    fails(cat, "ALTER TYPE nope ADD a int", InvalidRequest, "Type ks.nope doesn't exist")


def test_alter_type_rename_keeps_order(cat):
    cat = run(cat, "CREATE TYPE ut (a int, b text)", "CREATE TABLE t (k int PRIMARY KEY, u frozen<ut>)")
    new = run(cat, "ALTER TYPE ut RENAME a TO x")
    assert new.user_type("ks", "ut").field_names == ("x", "b")
    assert new.table("ks", "t").column("u").type.field_names == ("x", "b")


def test_alter_type_rename_unknown_field(cat):
    cat = run(cat, "CREATE TYPE ut (a int)")
    fails(cat, "ALTER TYPE ut RENAME z TO y", InvalidRequest, "Unkown field z in user type ks.ut")


def test_alter_type_rename_to_existing_field(cat):
    cat = run(cat, "CREATE TYPE ut (a int, b int)")
    fails(cat, "ALTER TYPE ut RENAME a TO b", InvalidRequest, "Duplicate field name b in type ks")


def test_drop_type(cat):
    cat = run(cat, "CREATE TYPE ut (a int)")
    new, change = apply(cat, "DROP TYPE ut")
    assert new.lookup_udt("ks", "ut") is None
    assert change == SchemaChange("DROPPED", "TYPE", "ks", "ut")


def test_drop_missing_type(cat):
    fails(cat, "DROP TYPE ut", InvalidRequest, "Type 'ks.ut' doesn't exist")
    assert apply(cat, "DROP TYPE IF EXISTS ut") == (cat, None)


def test_drop_type_used_by_table(cat):
    cat = run(cat, "CREATE TYPE ut (a int)", "CREATE TABLE t (k int PRIMARY KEY, v map<int, frozen<ut>>)")
    fails(cat, "DROP TYPE ut", InvalidRequest, "Cannot drop user type ks.ut as it is still used by table ks.t")


def test_drop_type_used_by_type(cat):
    cat = run(cat, "CREATE TYPE ut (a int)", "CREATE TYPE outer (u frozen<ut>)")
    fails(cat, "DROP TYPE ut", InvalidRequest, "Cannot drop user type ks.ut as it is still used by user type outer")


# ---------------------------------------------------------------- versions and JSON


def test_version_changes_only_on_change(cat):
    new = run(cat, "CREATE TABLE t (k int PRIMARY KEY)")
    assert new.version != cat.version
    assert run(new, "CREATE TABLE IF NOT EXISTS t (k int PRIMARY KEY)").version == new.version


def test_json_round_trip(cat):
    cat = run(
        cat,
        "CREATE TYPE ut (a int, b frozen<list<text>>)",
        "CREATE TYPE outer (u frozen<ut>, t frozen<tuple<int, text>>)",
        "ALTER TYPE ut ADD c bigint",
        'CREATE TABLE "Tab" (k int, "C" text, s set<int> static, m map<int, text>, u ut, o frozen<outer>, '
        "d duration, PRIMARY KEY (k, \"C\")) WITH CLUSTERING ORDER BY (\"C\" DESC) AND comment = 'x' "
        "AND cdc = {'enabled': true}",
        'ALTER TABLE "Tab" DROP d',
        "CREATE KEYSPACE k2 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 2} AND durable_writes = false",
    )
    back = Catalog.from_json(cat.to_json())
    assert back == cat
    assert back.table("ks", "Tab").column("u").type.field_names == ("a", "b", "c")


def test_from_json_of_empty_catalog():
    cat = Catalog.empty()
    assert Catalog.from_json(cat.to_json()) == cat


def test_alter_type_used_in_partition_key(cat):
    cat = run(cat, "CREATE TYPE ut (a int)", "CREATE TABLE t (k frozen<ut> PRIMARY KEY)")
    fails(cat, "ALTER TYPE ut ADD b int", InvalidRequest,
          "Cannot add new field b of type int to user type ks.ut as the type is being used in partition key "
          "by the following tables: ks.t")


def test_drop_system_keyspace_refused(cat):
    fails(cat, "DROP KEYSPACE system_schema", Unauthorized, "system_schema keyspace is not user-modifiable.")
