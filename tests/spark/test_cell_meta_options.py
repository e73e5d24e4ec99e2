"""The table source's metadata columns: which selectors each option asks for, and what a server
without per-element write times or logtide's selectors refuses (no Spark needed)."""

from __future__ import annotations

import pytest

from logtide.schema import types as T
from logtide.spark.cell_meta import MetaOptions, Support
from logtide.spark.options import OptionError
from logtide.spark.table_info import ColumnInfo, TableInfo

INFO = TableInfo("ks", "t", (ColumnInfo("pk", "partition_key", 0, T.INT), ColumnInfo("ck", "clustering", 0, T.INT),
                             ColumnInfo("l", "regular", -1, T.ListType(T.TEXT)), ColumnInfo("v", "regular", -1, T.INT)))


def test_true_keeps_atomic_columns_and_elements_adds_collections():
    assert [(m.name, m.selector) for m in MetaOptions("true", "true").columns(INFO)] == [
        ("_writetime_v", 'WRITETIME("v")'), ("_ttl_v", 'TTL("v")')]
    assert [(m.name, m.selector, m.type) for m in MetaOptions("elements", "original", True, True).columns(INFO)] == [
        ("_writetime_l", 'LOGTIDE_ELEMENT_WRITETIMES("l")', T.ListType(T.BIGINT)),
        ("_writetime_v", 'WRITETIME("v")', None),
        ("_ttl_l", 'LOGTIDE_ORIGINAL_TTL("l")', T.ListType(T.INT)), ("_ttl_v", 'LOGTIDE_ORIGINAL_TTL("v")', None),
        ("_listkeys_l", 'LOGTIDE_LIST_KEYS("l")', T.ListType(T.TIMEUUID)),
        ("_marker_writetime", "LOGTIDE_MARKER_WRITETIME()", T.BIGINT), ("_marker_ttl", "LOGTIDE_MARKER_TTL()", T.INT)]


def test_elements_of_a_server_that_is_not_logtide_are_cassandra_5s_writetime_and_ttl():
    assert [(m.name, m.selector) for m in MetaOptions("elements", "elements").columns(INFO, logtide=False)] == [
        ("_writetime_l", 'WRITETIME("l")'), ("_writetime_v", 'WRITETIME("v")'), ("_ttl_l", 'TTL("l")'),
        ("_ttl_v", 'TTL("v")')]
    assert [m.selector for m in MetaOptions("elements", "elements").columns(INFO)] == [
        'LOGTIDE_ELEMENT_WRITETIMES("l")', 'WRITETIME("v")', 'LOGTIDE_ELEMENT_TTLS("l")', 'TTL("v")']


def test_a_server_without_the_selectors_is_refused_naming_the_option():
    with pytest.raises(OptionError, match="option writetime=elements: scylla-1 does not give write times"):
        MetaOptions("elements").check(Support(False, False), "scylla-1")
    with pytest.raises(OptionError, match="option ttl=original: scylla-1 is not logtide"):
        MetaOptions(ttl="original").check(Support(True, False), "scylla-1")
    with pytest.raises(OptionError, match="option rowMarker: cassandra-5 is not logtide"):
        MetaOptions(writetime="elements", row_marker=True).check(Support(True, False), "cassandra-5")
    MetaOptions("elements", "elements").check(Support(True, False), "cassandra-5")


def test_server_support_asks_the_server_and_takes_a_refusal_as_no(tmp_path):
    import logtide
    from logtide.spark.cell_meta import server_support
    from logtide.spark.client import open_client
    from logtide.spark.options import Connection

    db = logtide.open(tmp_path / "d", synchronous="OFF")
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE ks.t (pk int, ck int, l list<text>, v int, PRIMARY KEY (pk, ck))")
    db.close()
    with open_client(Connection.parse({"path": str(tmp_path / "d"), "table": "ks.t"})) as client:
        assert server_support(client, INFO) == Support(True, True)
        # a table the server refuses every selector on stands in for ScyllaDB refusing LOGTIDE_* and WRITETIME(l)
        assert server_support(client, TableInfo("ks", "gone", INFO.columns)) == Support(False, False)
