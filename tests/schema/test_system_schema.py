"""The system keyspaces: their table definitions and the rows produced from a catalog."""

import datetime
import uuid

import pytest
from cassandra.util import SortedSet

from logtide.schema.system_schema import NodeInfo, system_keyspaces, system_rows, system_table_id

from .helpers import NOW, keyspace_catalog, run


@pytest.fixture
def catalog():
    return run(
        keyspace_catalog(),
        "CREATE TYPE ut (a int, b frozen<list<text>>)",
        "CREATE TABLE t (pk int, ck1 text, ck2 frozen<map<int, text>>, s int static, v set<int>, u ut, "
        "f frozen<ut>, PRIMARY KEY (pk, ck1, ck2)) WITH CLUSTERING ORDER BY (ck1 ASC, ck2 DESC) AND comment = 'hi'",
        "CREATE TABLE c (k int PRIMARY KEY, n counter)",
        "ALTER TABLE t ADD gone int",
        "ALTER TABLE t DROP gone",
    )


def by_key(rows, *keys):
    return {tuple(r[k] for k in keys): r for r in rows}


def test_system_table_definitions():
    ks = system_keyspaces()
    assert set(ks) == {"system", "system_auth", "system_distributed", "system_logtide", "system_schema", "system_traces"}
    assert set(ks["system_distributed"].tables) == {"cdc_generation_timestamps", "cdc_streams_descriptions_v2",
                                                    "view_build_status"}
    assert set(ks["system_schema"].tables) == {
        "keyspaces", "tables", "columns", "dropped_columns", "triggers", "views", "types", "functions", "aggregates", "indexes",
        "scylla_aggregates", "scylla_keyspaces", "scylla_tables",
    }
    assert set(ks["system"].tables) == {"IndexInfo", "local", "one_row", "peers", "peers_v2", "built_views",
                                        "views_builds_in_progress", "clients", "role_permissions", "roles",
                                        "token_ring", "config", "protocol_servers", "versions", "size_estimates",
                                        "compaction_history", "runtime_info"}
    columns = ks["system_schema"].tables["columns"]
    assert [c.name for c in columns.primary_key] == ["keyspace_name", "table_name", "column_name"]
    assert {c.name: c.type.cql() for c in columns.columns}["position"] == "int"
    tables = ks["system_schema"].tables["tables"]
    assert {c.name: c.type.cql() for c in tables.columns}["flags"] == "frozen<set<text>>"
    local = ks["system"].tables["local"]
    assert {c.name: c.type.cql() for c in local.columns}["tokens"] == "set<text>"
    assert tables.id == system_table_id("system_schema", "tables")
    assert all(t.store_id < 0 for k in ks.values() for t in k.tables.values())


def test_system_table_id_is_javas_name_uuid():
    # java.util.UUID.nameUUIDFromBytes("system_schematables".getBytes())
    assert system_table_id("system_schema", "tables") == uuid.UUID("afddfb9d-bc1e-3068-8056-eed6c302ba09")


def test_keyspaces_rows(catalog):
    rows = by_key(system_rows(catalog, "system_schema", "keyspaces", NodeInfo()), "keyspace_name")
    assert rows[("ks",)] == {
        "keyspace_name": "ks",
        "durable_writes": True,
        "replication": {"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "1"},
    }
    assert rows[("system_schema",)]["replication"] == {"class": "org.apache.cassandra.locator.LocalStrategy"}


def test_tables_rows(catalog):
    rows = by_key(system_rows(catalog, "system_schema", "tables", NodeInfo()), "keyspace_name", "table_name")
    t = rows[("ks", "t")]
    assert t["flags"] == SortedSet(["compound"])
    assert t["comment"] == "hi"
    assert t["id"] == catalog.table("ks", "t").id
    assert t["gc_grace_seconds"] == 864000 and t["default_time_to_live"] == 0
    assert t["bloom_filter_fp_chance"] == 0.01
    assert t["caching"] == {"keys": "ALL", "rows_per_partition": "ALL"}
    assert t["cdc"] is False
    assert rows[("ks", "c")]["flags"] == SortedSet(["compound", "counter"])
    assert ("system_schema", "columns") in rows
    assert rows[("system_schema", "columns")]["gc_grace_seconds"] == 7 * 24 * 3600


def test_columns_rows(catalog):
    rows = by_key(system_rows(catalog, "system_schema", "columns", NodeInfo()), "table_name", "column_name")
    expected = {
        "pk": ("partition_key", 0, "none", "int"),
        "ck1": ("clustering", 0, "asc", "text"),
        "ck2": ("clustering", 1, "desc", "frozen<map<int, text>>"),
        "s": ("static", -1, "none", "int"),
        "v": ("regular", -1, "none", "set<int>"),
        "u": ("regular", -1, "none", "ut"),
        "f": ("regular", -1, "none", "frozen<ut>"),
    }
    for name, (kind, position, order, type_string) in expected.items():
        row = rows[("t", name)]
        assert (row["kind"], row["position"], row["clustering_order"], row["type"]) == (kind, position, order, type_string)
        assert row["keyspace_name"] == "ks"
        assert row["column_name_bytes"] == name.encode()
    assert ("t", "gone") not in rows
    assert rows[("keyspaces", "replication")]["type"] == "frozen<map<text, text>>"


def test_dropped_columns_rows(catalog):
    rows = system_rows(catalog, "system_schema", "dropped_columns", NodeInfo())
    assert rows == [
        {
            "keyspace_name": "ks",
            "table_name": "t",
            "column_name": "gone",
            "dropped_time": datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=NOW),
            "kind": "regular",
            "type": "int",
        }
    ]


def test_types_rows(catalog):
    assert system_rows(catalog, "system_schema", "types", NodeInfo()) == [
        {"keyspace_name": "ks", "type_name": "ut", "field_names": ["a", "b"], "field_types": ["int", "frozen<list<text>>"]},
        # ScyllaDB's type of system.compaction_history's sstables_in / sstables_out
        {"keyspace_name": "system", "type_name": "sstableinfo", "field_names": ["generation", "origin", "size"],
         "field_types": ["uuid", "text", "bigint"]},
    ]


@pytest.mark.parametrize("table", ["triggers", "views", "functions", "aggregates", "indexes"])
def test_empty_schema_tables(catalog, table):
    assert system_rows(catalog, "system_schema", table, NodeInfo()) == []


def test_local_row(catalog):
    host = uuid.uuid4()
    node = NodeInfo(host_id=host, tokens=frozenset({"-5", "7"}))
    (row,) = system_rows(catalog, "system", "local", node)
    assert row["key"] == "local"
    assert row["cluster_name"] == "logtide"
    assert row["release_version"] == "5.0.0"
    assert row["cql_version"] == "3.4.5"
    assert row["native_protocol_version"] == "4"
    assert row["partitioner"] == "org.apache.cassandra.dht.Murmur3Partitioner"
    assert row["data_center"] == "datacenter1" and row["rack"] == "rack1"
    assert row["host_id"] == host
    assert row["tokens"] == SortedSet(["-5", "7"])
    assert row["schema_version"] == catalog.version
    assert row["rpc_address"] == "127.0.0.1"
    local = system_keyspaces()["system"].tables["local"]
    assert set(row) == {c.name for c in local.columns}


def test_peers_are_empty(catalog):
    assert system_rows(catalog, "system", "peers", NodeInfo()) == []
    assert system_rows(catalog, "system", "peers_v2", NodeInfo()) == []


def test_every_row_has_exactly_the_table_columns(catalog):
    for ks_name, ks in system_keyspaces().items():
        for name, table in ks.tables.items():
            for row in system_rows(catalog, ks_name, name, NodeInfo()):
                assert set(row) == {c.name for c in table.columns}, name


def test_unknown_system_table(catalog):
    with pytest.raises(KeyError):
        system_rows(catalog, "system", "nope", NodeInfo())
