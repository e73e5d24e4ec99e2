"""DESCRIBE output (ScyllaDB 5.x server-side format) and DESCRIBE result rows."""

from pathlib import Path

import pytest

from logtide.errors import InvalidRequest
from logtide.schema.describe import (
    columnize,
    describe_keyspace,
    describe_keyspaces,
    describe_rows,
    describe_schema,
    describe_table,
    describe_tables,
    describe_type,
    describe_types,
    quote_identifier,
)

from .helpers import keyspace_catalog, parse, run

GOLDEN = Path(__file__).parent / "golden"


def golden(name: str) -> str:
    """Expected text kept in tests/schema/golden (without its final newline)."""
    return (GOLDEN / name).read_text().rstrip("\n")


def rows(catalog, text, keyspace="ks"):
    return describe_rows(parse(text).statement, catalog, keyspace)


@pytest.fixture
def schema():
    return run(
        keyspace_catalog(),
        "CREATE TYPE ut (a int, b frozen<list<text>>)",
        'CREATE TYPE "Outer" (u frozen<ut>, "select" text)',
        "CREATE TABLE t (pk1 int, pk2 text, c1 timeuuid, c2 int, s int static, v ut, m map<int, text>, "
        '"cdc$time" timestamp, "Upper" frozen<"Outer">, PRIMARY KEY ((pk1, pk2), c1, c2)) '
        "WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC) AND cdc = {'enabled': true} AND comment = 'it''s'",
        "CREATE TABLE simple (k int PRIMARY KEY, v text)",
    )


@pytest.mark.parametrize(
    "name, quoted",
    [
        ("abc", "abc"),
        ("a_1", "a_1"),
        ("Abc", '"Abc"'),
        ("cdc$time", '"cdc$time"'),
        ("select", '"select"'),
        ("1a", '"1a"'),
        ("_a", '"_a"'),
        ('we"ird', '"we""ird"'),
        ("", '""'),
        ("key", "key"),
    ],
)
def test_quote_identifier(name, quoted):
    assert quote_identifier(name) == quoted


def test_describe_simple_table(schema):
    assert describe_table(schema.table("ks", "simple"), schema) == golden("simple_table.cql") + "\n"


def test_describe_table_with_every_column_kind_and_cdc(schema):
    assert describe_table(schema.table("ks", "t"), schema) == golden("table_t.cql") + "\n"


def test_describe_table_with_options():
    cat = run(keyspace_catalog(), "CREATE TABLE o (k int PRIMARY KEY, n counter) WITH comment = 'c' "
                                  "AND compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 160} "
                                  "AND gc_grace_seconds = 3600 AND bloom_filter_fp_chance = 0.1 AND crc_check_chance = 0.5 "
                                  "AND speculative_retry = 'ALWAYS' AND caching = {'keys': 'NONE', 'rows_per_partition': '10'}")
    assert describe_table(cat.table("ks", "o"), cat) == golden("table_options.cql") + "\n"


def test_describe_type(schema):
    assert describe_type(schema.user_type("ks", "ut")) == "CREATE TYPE ks.ut (\n    a int,\n    b frozen<list<text>>\n);"


def test_describe_keyspace_with_contents(schema):
    assert describe_keyspace(schema.keyspace("ks"), schema, True) == golden("keyspace_ks.cql")


def test_describe_keyspace_only(schema):
    assert describe_keyspace(schema.keyspace("ks"), schema, False) == (
        "CREATE KEYSPACE ks WITH replication = {'class': 'org.apache.cassandra.locator.SimpleStrategy', "
        "'replication_factor': '1'} AND durable_writes = true AND tablets = {'enabled': false};"
    )


def test_describe_nts_keyspace():
    cat = run(keyspace_catalog(), "CREATE KEYSPACE \"K2\" WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 3} "
                                  "AND durable_writes = false")
    assert describe_keyspace(cat.keyspace("K2"), cat, True) == (
        "CREATE KEYSPACE \"K2\" WITH replication = {'class': 'org.apache.cassandra.locator.NetworkTopologyStrategy', "
        "'datacenter1': '3'} AND durable_writes = false AND tablets = {'enabled': false};"
    )


def test_describe_schema_skips_system_keyspaces(schema):
    assert describe_schema(schema, full=False) == golden("keyspace_ks.cql")
    full = describe_schema(schema, full=True)
    assert "CREATE KEYSPACE system_schema WITH replication = {'class': 'org.apache.cassandra.locator.LocalStrategy'}" in full
    assert "CREATE TABLE system.local (" in full


def test_describe_keyspaces(schema):
    assert describe_keyspaces(schema) == ("ks      system_auth         system_logtide  system_traces\n"
                                          "system  system_distributed  system_schema \n")


def test_describe_tables(schema):
    assert describe_tables(schema, "ks") == "simple  t\n"
    assert describe_tables(schema, None) == golden("tables_listing.txt") + "\n"


def test_describe_types(schema):
    assert describe_types(schema, "ks") == '"Outer"  ut\n'


def test_columnize_matches_cmd():
    import cmd
    import contextlib
    import io

    names = [f"table_{i:02d}_{'x' * (i % 7)}" for i in range(23)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cmd.Cmd(stdout=out).columnize(names)
    assert columnize(names) == out.getvalue()


# ---------------------------------------------------------------- rows


def test_rows_keyspaces(schema):
    assert rows(schema, "DESCRIBE KEYSPACES") == [
        ("ks", "keyspace", "ks", None),
        ("system", "keyspace", "system", None),
        ("system_auth", "keyspace", "system_auth", None),
        ("system_distributed", "keyspace", "system_distributed", None),
        ("system_logtide", "keyspace", "system_logtide", None),
        ("system_schema", "keyspace", "system_schema", None),
        ("system_traces", "keyspace", "system_traces", None),
    ]


def test_rows_tables_of_current_keyspace(schema):
    assert rows(schema, "DESCRIBE TABLES") == [("ks", "table", "simple", None), ("ks", "table", "t", None)]


def test_rows_types(schema):
    # as ScyllaDB lists them: every type after the types it uses
    assert rows(schema, "DESCRIBE TYPES") == [("ks", "type", "ut", None), ("ks", "type", '"Outer"', None)]


def test_rows_keyspace(schema):
    result = rows(schema, "DESCRIBE KEYSPACE ks", None)
    assert [(r[1], r[2]) for r in result] == [("keyspace", "ks"), ("type", "ut"), ("type", '"Outer"'), ("table", "simple"), ("table", "t")]
    assert result[3][3] == golden("simple_table.cql") + "\n"
    assert rows(schema, "DESCRIBE KEYSPACE") == result


def test_rows_table(schema):
    assert rows(schema, "DESCRIBE TABLE ks.simple", None) == [("ks", "table", "simple", golden("simple_table.cql") + "\n")]


def test_rows_type(schema):
    assert rows(schema, "DESCRIBE TYPE ut")[0][:3] == ("ks", "type", "ut")


def test_rows_generic_name(schema):
    assert rows(schema, "DESCRIBE simple")[0][:3] == ("ks", "table", "simple")
    assert rows(schema, "DESCRIBE ks", None)[0][:3] == ("ks", "keyspace", "ks")


def test_rows_schema(schema):
    assert {r[0] for r in rows(schema, "DESCRIBE SCHEMA")} == {"ks"}
    assert {r[0] for r in rows(schema, "DESCRIBE FULL SCHEMA")} == {"ks", "system", "system_auth", "system_distributed", "system_logtide", "system_schema",
                                                                    "system_traces"}


@pytest.mark.parametrize(
    "text, keyspace, message",
    [
        ("DESCRIBE KEYSPACE nope", None, "'nope' not found in keyspaces"),
        ("DESCRIBE KEYSPACE", None, "No keyspace specified and no current keyspace"),
        ("DESCRIBE TABLE nope", None, "No keyspace specified and no current keyspace"),
        ("DESCRIBE TABLE ks.nope", None, "Table 'nope' not found in keyspace 'ks'"),
        ("DESCRIBE TABLE nope.t", None, "'nope' not found in keyspaces"),
        ("DESCRIBE TYPE nope", "ks", "Type 'nope' not found in keyspace 'ks'"),
        ("DESCRIBE FUNCTION ks.f", None, "Function 'f' not found in keyspace 'ks'"),
        ("DESCRIBE TABLE ks.simple WITH INTERNALS AND PASSWORDS", None,
         "Option WITH PASSWORDS is only allowed with DESC SCHEMA"),
        ("DESCRIBE nope", "ks", "'nope' not found in keyspace 'ks'"),
    ],
)
def test_rows_errors(schema, text, keyspace, message):
    with pytest.raises(InvalidRequest) as info:
        rows(schema, text, keyspace)
    assert str(info.value) == message
