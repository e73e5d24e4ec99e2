"""Shared test cases: values with their cqlsh rendering, result layouts and whole scripts.

``cqlsh_reference.py`` runs the same cases through cqlsh's own code
(``cqlshlib.cqlshmain.Shell``) to produce the golden outputs.
"""

from __future__ import annotations

import datetime
import uuid
from collections import namedtuple
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from cassandra.util import Date, Duration, OrderedMapSerializedKey, SortedSet, Time

from logtide.errors import AlreadyExists, ConfigurationException, InvalidRequest, SyntaxException
from logtide.result import ResultSet

from .fakes import describe_result, rows_result, types_module

T = types_module()
INT, TEXT = T.NativeType("int"), T.NativeType("text")
ADDRESS = T.UserType("ks", "address", ("street", "zip"), (TEXT, INT), True)
PERSON = T.UserType("ks", "person", ("name", "addr", "tags"),
                    (TEXT, ADDRESS, T.ListType(TEXT, True)), True)
Address = namedtuple("address", ["street", "zip"])
Person = namedtuple("person", ["name", "addr", "tags"])
TS = datetime.datetime(2020, 3, 23, 13, 10, 40, 910000)
UUID1 = uuid.UUID("5d4a6b0e-6d0d-11ea-8b6a-000000000001")
UUID4 = uuid.UUID("1b4e28ba-2fa1-11d2-883f-0016d3cca427")


def _text_map(items: list[tuple]) -> Any:
    """A map<text, ...> value as the driver decodes it."""
    from cassandra.cqltypes import UTF8Type

    value = OrderedMapSerializedKey(UTF8Type, 4)
    for k, v in items:
        value._insert_unchecked(k, UTF8Type.serialize(k, 4), v)
    return value


def n(name: str) -> Any:
    return T.NativeType(name)


# (label, type, value, what cqlsh prints)
VALUES: list[tuple[str, Any, Any, str]] = [
    ("ascii", n("ascii"), "abc", "abc"),
    ("text", TEXT, "it's", "it's"),
    ("text_unicode", TEXT, "Größe 日本", "Größe 日本"),
    ("text_control", TEXT, "a\nb\tc", "a\\nb\\tc"),
    ("text_backslash", TEXT, "a\\b", "a\\\\b"),
    ("text_empty", TEXT, "", ""),
    ("bigint", n("bigint"), -9223372036854775808, "-9223372036854775808"),
    ("int", INT, -42, "-42"),
    ("smallint", n("smallint"), 32767, "32767"),
    ("tinyint", n("tinyint"), -128, "-128"),
    ("varint", n("varint"), 123456789012345678901234567890, "123456789012345678901234567890"),
    ("counter", n("counter"), 7, "7"),
    ("blob", n("blob"), b"\x00\xca\xfe", "0x00cafe"),
    ("blob_empty", n("blob"), b"", "0x"),
    ("boolean_true", n("boolean"), True, "True"),
    ("boolean_false", n("boolean"), False, "False"),
    ("decimal", n("decimal"), Decimal("1.50"), "1.50"),
    ("decimal_exp", n("decimal"), Decimal("1E+10"), "1E+10"),
    ("double_pi", n("double"), 3.141592653589793, "3.14159"),
    ("double_big", n("double"), 1e20, "1e+20"),
    ("double_small", n("double"), 0.0001234, "0.000123"),
    ("double_int", n("double"), 2.0, "2"),
    ("double_nan", n("double"), float("nan"), "NaN"),
    ("double_inf", n("double"), float("-inf"), "-Infinity"),
    ("float", n("float"), 1.5, "1.5"),
    ("float_digits", n("float"), 123456.789, "1.2346e+05"),
    ("float_third", n("float"), 0.3333333432674408, "0.333333"),
    ("date", n("date"), Date("2020-03-23"), "2020-03-23"),
    ("time", n("time"), Time("13:10:40.910"), "13:10:40.910000000"),
    ("timestamp", n("timestamp"), TS, "2020-03-23 13:10:40.910000+0000"),
    ("timestamp_epoch", n("timestamp"), datetime.datetime(1970, 1, 1), "1970-01-01 00:00:00.000000+0000"),
    ("duration", n("duration"), Duration(14, 3, 3723000000001), "1y2mo3d1h2m3s1ns"),
    ("duration_neg", n("duration"), Duration(0, -2, 0), "-2d"),
    ("inet", n("inet"), "127.0.0.1", "127.0.0.1"),
    ("inet6", n("inet"), "::1", "::1"),
    ("uuid", n("uuid"), UUID4, "1b4e28ba-2fa1-11d2-883f-0016d3cca427"),
    ("timeuuid", n("timeuuid"), UUID1, "5d4a6b0e-6d0d-11ea-8b6a-000000000001"),
    ("null", INT, None, "null"),
    ("list_int", T.ListType(INT, False), [3, 1, 2], "[3, 1, 2]"),
    ("list_text", T.ListType(TEXT, False), ["it's", "b"], "['it''s', 'b']"),
    ("frozen_list_ts", T.ListType(n("timestamp"), True), [TS], "['2020-03-23 13:10:40.910000+0000']"),
    ("list_blob", T.ListType(n("blob"), False), [b"\x01"], "[0x01]"),
    ("list_double", T.ListType(n("double"), False), [3.141592653589793], "[3.14159]"),
    ("set_text", T.SetType(TEXT, False), SortedSet(["b", "a"]), "{'a', 'b'}"),
    ("set_uuid", T.SetType(n("uuid"), True), SortedSet([UUID4]), "{1b4e28ba-2fa1-11d2-883f-0016d3cca427}"),
    ("map_text_int", T.MapType(TEXT, INT, False), _text_map([("b", 2), ("a", 1)]), "{'a': 1, 'b': 2}"),
    ("map_int_date", T.MapType(INT, n("date"), True), {1: Date("2000-01-01")}, "{1: 2000-01-01}"),
    ("map_int_bool", T.MapType(INT, n("boolean"), False), {1: True}, "{1: True}"),
    ("tuple", T.TupleType((INT, TEXT, n("inet"))), (1, "x", "10.0.0.1"), "(1, 'x', '10.0.0.1')"),
    ("tuple_null", T.TupleType((INT, TEXT)), (1, None), "(1, None)"),  # sic: cqlsh prints None
    ("udt", ADDRESS, Address("Main St", 12345), "{street: 'Main St', zip: 12345}"),
    ("udt_null_field", ADDRESS, Address(None, 1), "{street: null, zip: 1}"),
    ("udt_nested", PERSON, Person("Ann", Address("Elm", 2), ["a"]),
     "{name: 'Ann', addr: {street: 'Elm', zip: 2}, tags: ['a']}"),
    ("list_udt", T.ListType(ADDRESS, True), [Address("x", 1)], "[{street: 'x', zip: 1}]"),
    ("map_udt", T.MapType(INT, ADDRESS, False), {1: Address("y", 2)}, "{1: {street: 'y', zip: 2}}"),
]


@dataclass
class LayoutCase:
    """A result and the cqlsh mode it is printed in."""

    result: ResultSet
    how: str = "select"  # select | lwt | describe:<what>
    tty: bool = False
    expand: bool = False
    page_size: int = 100
    current_keyspace: str | None = "ks"


def _basic() -> ResultSet:
    return rows_result([("pk", INT), ("ck", INT), ("v1", INT), ("v2", INT)], [(0, 0, 0, None)])


def _mixed() -> ResultSet:
    cols = [("pk", INT), ("name", TEXT), ("cdc$time", n("timeuuid")), ("writetime(v)", n("bigint")),
            ("system.tounixtimestamp(cdc$time)", n("bigint")), ("m", T.MapType(TEXT, INT, False))]
    rows = [(1, "a", UUID1, 1584969040910000, 1584969040910, {"k": 1}),
            (22, "日本語", UUID1, None, 5, None),
            (-3, "", UUID1, 1, 1, {})]
    return rows_result(cols, rows)


def _empty() -> ResultSet:
    return rows_result([("pk", INT), ("long_column_name", TEXT)], [])


def _many(count: int) -> ResultSet:
    return rows_result([("k", INT), ("v", TEXT)], [(i, "x" * (i % 7)) for i in range(count)])


def _lwt(applied: bool) -> ResultSet:
    if applied:
        return rows_result([("[applied]", n("boolean"))], [(True,)])
    return rows_result([("[applied]", n("boolean")), ("pk", INT), ("v", TEXT)], [(False, 1, "old")])


def _describe_table() -> ResultSet:
    stmt = ("CREATE TABLE ks.t (\n    pk int,\n    ck int,\n    v int,\n    PRIMARY KEY (pk, ck)\n"
            ") WITH CLUSTERING ORDER BY (ck ASC)\n    AND gc_grace_seconds = 864000;")
    return describe_result([("ks", "table", "t", stmt)])


def _describe_keyspace() -> ResultSet:
    return describe_result([
        ("ks", "keyspace", "ks", "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', "
                                 "'replication_factor': '1'}  AND durable_writes = true;"),
        ("ks", "type", "address", "CREATE TYPE ks.address (\n    street text,\n    zip int\n);"),
        ("ks", "table", "t", "CREATE TABLE ks.t (\n    pk int PRIMARY KEY\n);"),
    ])


def _keyspaces() -> ResultSet:
    names = ["ks", "system", "system_auth", "system_distributed", "system_schema", "system_traces",
             "system_virtual_schema", "system_views", "a_rather_long_keyspace_name_for_layout"]
    return rows_result([("keyspace_name", TEXT), ("type", TEXT), ("name", TEXT)],
                       [(k, "keyspace", k) for k in names], "", "", describe=True)


def _tables() -> ResultSet:
    rows = [("ks", "table", "t"), ("ks", "table", "t_scylla_cdc_log"), ("ks", "table", "users"),
            ("other", "table", "events")]
    return rows_result([("keyspace_name", TEXT), ("type", TEXT), ("name", TEXT)], rows, "", "",
                       describe=True)


def _cluster() -> ResultSet:
    return rows_result([("cluster", TEXT), ("partitioner", TEXT), ("snitch", TEXT)],
                       [("logtide", "org.apache.cassandra.dht.Murmur3Partitioner",
                         "org.apache.cassandra.locator.SimpleSnitch")], "", "", describe=True)


def layout_cases() -> dict[str, LayoutCase]:
    """Named layouts, each written to ``golden/layout_<name>.txt``."""
    return {
        "basic": LayoutCase(_basic()),
        "basic_tty": LayoutCase(_basic(), tty=True),
        "mixed": LayoutCase(_mixed()),
        "mixed_expand": LayoutCase(_mixed(), expand=True),
        "empty": LayoutCase(_empty()),
        "empty_tty": LayoutCase(_empty(), tty=True),
        "empty_expand": LayoutCase(_empty(), expand=True),
        "paged": LayoutCase(_many(12), page_size=5),
        "paged_tty": LayoutCase(_many(12), page_size=5, tty=True),
        "paged_expand": LayoutCase(_many(3), page_size=2, expand=True),
        "lwt_applied": LayoutCase(_lwt(True), how="lwt"),
        "lwt_not_applied": LayoutCase(_lwt(False), how="lwt"),
        "lwt_tty": LayoutCase(_lwt(False), how="lwt", tty=True),
        "describe_table": LayoutCase(_describe_table(), how="describe:table"),
        "describe_keyspace": LayoutCase(_describe_keyspace(), how="describe:keyspace"),
        "describe_keyspaces": LayoutCase(_keyspaces(), how="describe:keyspaces"),
        "describe_tables_in_ks": LayoutCase(_tables(), how="describe:tables"),
        "describe_tables_no_ks": LayoutCase(_tables(), how="describe:tables", current_keyspace=None),
        "describe_tables_empty": LayoutCase(rows_result([("keyspace_name", TEXT), ("type", TEXT),
                                                          ("name", TEXT)], [], describe=True),
                                             how="describe:tables"),
        "describe_cluster": LayoutCase(_cluster(), how="describe:cluster"),
    }


@dataclass
class ScriptCase:
    """A whole shell run: input, how it is given (-e, -f or stdin) and the engine's answers."""

    script: str
    mode: str = "f"  # e | f | stdin
    answers: dict[str, Any] = field(default_factory=dict)


def _answers() -> dict[str, Any]:
    warn = rows_result([("k", INT)], [(1,)], warnings=["Aggregation query used without partition key"])
    return {
        "SELECT * FROM ks.t": _basic(),
        "SELECT *\nFROM ks.t": _basic(),
        "SELECT * FROM ks.empty": _empty(),
        "select count(*) from ks.t": warn,
        "SELECT * FROM ks.missing": InvalidRequest("unconfigured table missing"),
        "SELEC * FROM ks.t": SyntaxException("line 1:0 no viable alternative at input 'SELEC' ([SELEC]...)"),
        "CREATE TABLE ks.t (pk int PRIMARY KEY)": AlreadyExists("Cannot add already existing table \"t\" to keyspace \"ks\"", "ks", "t"),
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}":
            AlreadyExists("Cannot add existing keyspace \"ks\"", "ks"),
        "ALTER TABLE ks.t WITH cdc = {'nope': 'x'}": ConfigurationException("Invalid CDC option: nope"),
        "INSERT INTO ks.t (pk, ck) VALUES (1, 1) IF NOT EXISTS": _lwt(False),
        "UPDATE ks.t SET v1 = 1 WHERE pk = 0 AND ck = 0 IF v1 = 0": _lwt(True),
        "DESCRIBE TABLE ks.t": _describe_table(),
        "DESC KEYSPACES": _keyspaces(),
        "DESCRIBE TABLES": _tables(),
        "DESCRIBE TABLE ks.nope": InvalidRequest("Table 'nope' not found in keyspace 'ks'"),
        "SELECT * FROM ks.many": _many(7),
    }


SCRIPT = """-- a comment line
SELECT * FROM ks.t;
SELECT * FROM ks.empty; SELECT * FROM ks.missing;
INSERT INTO ks.t (pk, ck) VALUES (1, 1)
  IF NOT EXISTS;
SELEC * FROM ks.t;
UPDATE ks.t SET v1 = 1 WHERE pk = 0 AND ck = 0 IF v1 = 0;
CONSISTENCY QUORUM
CONSISTENCY
CONSISTENCY BOGUS
select count(*) from ks.t;
EXPAND ON
SELECT * FROM ks.t;
EXPAND
EXPAND OFF;
PAGING 3
SELECT * FROM ks.many;
PAGING OFF
PAGING
DESCRIBE TABLE ks.t;
DESC KEYSPACES
DESCRIBE TABLES;
DESCRIBE TABLE ks.nope;
CREATE TABLE ks.t (pk int PRIMARY KEY);
CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
ALTER TABLE ks.t WITH cdc = {'nope': 'x'};
SERIAL CONSISTENCY LOCAL_SERIAL
SERIAL CONSISTENCY
INSERT INTO ks.t (pk, ck) VALUES (2, 2);
SELECT * FROM ks.t
"""


def script_cases() -> dict[str, ScriptCase]:
    """Named whole runs, each written to ``golden/script_<name>.out`` / ``.err``."""
    answers = _answers()
    return {
        "file": ScriptCase(SCRIPT, "f", answers),
        "file_incomplete": ScriptCase("SELECT * FROM ks.t;\nSELECT * FROM\n  ks.t", "f", answers),
        "stdin": ScriptCase(SCRIPT, "stdin", answers),
        "execute": ScriptCase("SELECT * FROM ks.t; SELECT * FROM ks.missing; SELEC * FROM ks.t;"
                              " SELECT * FROM ks.empty", "e", answers),
        "execute_multiline": ScriptCase("SELECT *\nFROM ks.t;\nEXPAND ON\nSELECT * FROM ks.t", "e", answers),
        "execute_incomplete": ScriptCase("SELECT * FROM ks.t; BEGIN BATCH INSERT INTO ks.t (pk, ck) "
                                         "VALUES (1, 1);", "e", answers),
        "execute_ok": ScriptCase("INSERT INTO ks.t (pk, ck) VALUES (2, 2)", "e", answers),
    }
