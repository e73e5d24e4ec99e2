"""``spark.read.format("logtide")``: a batch read equals ``SELECT *``, over CQL and from a data directory."""

from __future__ import annotations

import datetime
import decimal
import uuid

import pytest

from logtide.spark.compat import has_filter_pushdown

from .conftest import KEYSPACE_DDL

DDL = [
    KEYSPACE_DDL.format("src"),
    "CREATE TYPE src.addr (street text, n int)",
    "CREATE TABLE src.t (pk int, ck text, v bigint, d double, b blob, u uuid, ts timestamp, dt date, dec decimal,"
    " vi varint, l list<int>, s set<text>, m map<text, int>, a addr, fa frozen<addr>, tu tuple<int, text>,"
    " st int static, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}",
]


@pytest.fixture(scope="module")
def table(cql):
    for s in DDL:
        cql.execute(s)
    ins = cql.prepare("INSERT INTO src.t (pk, ck, v, d, b, u, ts, dt, dec, vi, l, s, m, a, fa, tu, st) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?")
    for i in range(200):
        cql.execute(ins, (i % 37, f"c{i}", i * 1000, i / 3, bytes([i % 256]), uuid.UUID(int=i),
                          datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=i), datetime.date(2026, 1, 1 + i % 28),
                          decimal.Decimal(f"{i}.50"), 10 ** 30 + i, [i, i + 1], {f"x{i}"}, {"k": i},
                          (f"s{i}", i), ("f", -i), (i, "t"), i, 0 if i % 2 else 3600))
    return "src.t"


def expected(cql) -> list[tuple]:
    out = []
    for r in cql.execute("SELECT pk, ck, v, dec, vi, l, s, m, a, tu, st FROM src.t"):
        out.append((r.pk, r.ck, r.v, str(r.dec), decimal.Decimal(r.vi), list(r.l), sorted(r.s), dict(r.m),
                    (r.a.street, r.a.n), (r.tu[0], r.tu[1]), r.st))
    return sorted(out)


def spark_rows(df) -> list[tuple]:
    out = []
    for r in df.collect():
        out.append((r.pk, r.ck, r.v, r.dec, r.vi, list(r.l), sorted(r.s), dict(r.m), (r.a.street, r.a.n),
                    (r.tu["_1"], r.tu["_2"]), r.st))
    return sorted(out)


def test_batch_read_over_cql_equals_select_star(spark, server, cql, table):
    df = spark.read.format("logtide").option("host", "127.0.0.1").option("port", server.port) \
        .option("table", table).option("splits", 5).load()
    assert df.count() == 200
    assert spark_rows(df) == expected(cql)


def test_batch_read_from_a_data_directory_while_the_server_runs(spark, server, cql, table):
    df = spark.read.format("logtide").option("path", str(server.data_dir)).option("table", table).load()
    assert spark_rows(df) == expected(cql)


def test_pushed_down_partition_key_and_write_times_and_ttls(spark, server, cql, table):
    reader = (spark.read.format("logtide").option("host", "127.0.0.1").option("port", server.port)
              .option("table", table).option("writetime", "true").option("ttl", "true"))
    if not has_filter_pushdown():  # Spark 4.0: refused, not silently ignored; Spark filters the rows itself
        from pyspark.errors import PySparkException

        with pytest.raises(PySparkException, match="option filterPushdown: needs Spark 4.1 or later"):
            reader.option("filterPushdown", "true").load().where("pk in (3, 4)").collect()
    df = reader.option("filterPushdown", str(has_filter_pushdown())).load()
    got = df.where("pk in (3, 4)").select("pk", "ck", "v", "_writetime_v", "_ttl_v").collect()
    want = {(r.pk, r.ck, r.v, r.writetime_v_, r.ttl_v_) for r in cql.execute(
        "SELECT pk, ck, v, writetime(v) AS writetime_v_, ttl(v) AS ttl_v_ FROM src.t WHERE pk IN (3, 4)")}
    assert len(got) == len(want) > 0
    for r in got:  # a TTL counts down between the two reads
        match = [w for w in want if w[:4] == (r.pk, r.ck, r.v, r._writetime_v)]
        assert match and (r._ttl_v is None) == (match[0][4] is None)


def test_bad_options_get_clear_errors(spark, server, table):
    from pyspark.errors import PySparkException

    reader = spark.read.format("logtide")
    cases = [
        ({"table": table}, "option host"),
        ({"host": "127.0.0.1", "port": str(server.port), "table": "nodot"}, "expected keyspace.table"),
        ({"host": "127.0.0.1", "port": str(server.port), "table": "src.nope"}, "does not exist"),
        ({"host": "127.0.0.1", "port": str(server.port), "table": table, "splits": "0"}, "splits: must be at least 1"),
        ({"host": "127.0.0.1", "port": str(server.port), "table": table, "colour": "red"}, "unknown option 'colour'"),
    ]
    for opts, message in cases:
        with pytest.raises(PySparkException) as e:
            reader.options(**opts).load().collect()
        assert message in str(e.value)


META = ("pk, ck, logtide_element_writetimes(l), logtide_element_writetimes(s), logtide_element_writetimes(m), "
        "logtide_element_writetimes(a), writetime(v), logtide_original_ttl(v), "
        "logtide_original_ttl(s), logtide_list_keys(l), logtide_marker_writetime(), logtide_marker_ttl()")


def _meta_rows(df) -> list[tuple]:
    got = df.select("pk", "ck", "_writetime_l", "_writetime_s", "_writetime_m", "_writetime_a", "_writetime_v",
                    "_ttl_v", "_ttl_s", "_listkeys_l", "_marker_writetime", "_marker_ttl").collect()
    return sorted((r[0], r[1], *[list(x) if isinstance(x, list) else x for x in r[2:9]],
                   [uuid.UUID(k) for k in r[9]], r[10], r[11]) for r in got)


def test_per_element_write_times_original_ttls_list_keys_and_markers_over_cql_and_from_a_directory(
        spark, server, cql, table):
    want = sorted((*r[:9], list(r[9]), r[10], r[11]) for r in cql.execute(f"SELECT {META} FROM {table}"))
    for where in ({"host": "127.0.0.1", "port": str(server.port)}, {"path": str(server.data_dir)}):
        df = (spark.read.format("logtide").options(**where).option("table", table).option("writetime", "elements")
              .option("ttl", "original").option("listKeys", "true").option("rowMarker", "true").load())
        types = {f.name: f.dataType.simpleString() for f in df.schema.fields}
        assert (types["_writetime_l"], types["_ttl_s"], types["_listkeys_l"], types["_marker_ttl"]) == (
            "array<bigint>", "array<int>", "array<string>", "int")
        assert _meta_rows(df) == want
    assert any(r[7] == 3600 for r in want) and any(r[10] is not None for r in want)


def test_metadata_option_values_are_checked(spark, server, table):
    from pyspark.errors import PySparkException

    for opts, message in [({"writetime": "some"}, "option writetime: expected false, true or elements"),
                          ({"ttl": "elements!"}, "option ttl: expected false, true, elements or original"),
                          ({"listKeys": "maybe"}, "option listKeys: expected true or false")]:
        with pytest.raises(PySparkException) as e:
            spark.read.format("logtide").option("host", "127.0.0.1").option("port", server.port) \
                .option("table", table).options(**opts).load().collect()
        assert message in str(e.value)


def test_spark_cassandra_connector_names_read_what_logtides_names_read(spark, server, cql, table):
    ours = {"host": "127.0.0.1", "port": str(server.port), "table": "src.t", "consistency": "ONE", "pageSize": "50",
            "timeout": "30"}
    theirs = {"keyspace": "src", "table": "t", "spark.cassandra.connection.host": "127.0.0.1",
              "spark.cassandra.connection.port": str(server.port), "spark.cassandra.input.consistency.level": "ONE",
              "spark.cassandra.input.fetch.sizeInRows": "50", "spark.cassandra.read.timeoutMS": "30000"}
    want = spark_rows(spark.read.format("logtide").options(**ours).load())
    assert want == expected(cql)
    assert spark_rows(spark.read.format("logtide").options(**theirs).load()) == want


def test_spark_cassandra_connector_settings_are_taken_from_the_spark_conf(spark, server, cql, table):
    import logtide.spark

    conf = {"spark.cassandra.connection.host": "127.0.0.1", "spark.cassandra.connection.port": str(server.port),
            "spark.cassandra.input.consistency.level": "LOCAL_ONE"}
    for k, v in conf.items():
        spark.conf.set(k, v)
    logtide.spark.register(spark)  # reads the session's spark.cassandra.* settings, as the connector does
    try:
        df = spark.read.format("logtide").option("keyspace", "src").option("table", "t").load()
        assert spark_rows(df) == expected(cql)
        # an option wins over the conf, and a path read ignores the conf's host
        local = spark.read.format("logtide").options(keyspace="src", table="t", path=str(server.data_dir)).load()
        assert spark_rows(local) == expected(cql)
    finally:
        for k in conf:
            spark.conf.unset(k)
        logtide.spark.register(spark)


@pytest.mark.parametrize("options, message", [
    ({"keyspace": "src", "table": "t", "host": "127.0.0.1", "spark.cassandra.connection.host": "127.0.0.1"},
     "options spark.cassandra.connection.host and host mean the same: give one"),
    ({"keyspace": "src", "host": "127.0.0.1"}, "option table is required with keyspace"),
    ({"keyspace": "src", "table": "t", "host": "127.0.0.1", "spark.cassandra.connection.keepAliveMS": "64"},
     "unknown option 'spark.cassandra.connection.keepalivems': of the Spark Cassandra Connector's settings these mean "
     "something here: keyspace, spark.cassandra.connection.host"),
    ({"keyspace": "src", "table": "t", "host": "127.0.0.1", "spark.cassandra.read.timeoutMS": "soon"},
     "option spark.cassandra.read.timeoutMS: expected milliseconds"),
])
def test_connector_names_are_checked_like_logtides(spark, server, table, options, message):
    with pytest.raises(Exception) as e:
        spark.read.format("logtide").options(**{"port": str(server.port), **options}).load().schema
    assert message in str(e.value)


def test_a_materialized_view_reads_like_a_table(spark, server, cql, table):
    cql.execute("CREATE MATERIALIZED VIEW IF NOT EXISTS src.t_by_v AS SELECT pk, ck, v FROM src.t "
                "WHERE v IS NOT NULL AND ck IS NOT NULL PRIMARY KEY (v, pk, ck)")
    import time
    deadline = time.monotonic() + 60  # built in the background over the table's rows
    while time.monotonic() < deadline and [r.status for r in cql.execute(
            "SELECT status FROM system_distributed.view_build_status WHERE keyspace_name = 'src' "
            "AND view_name = 't_by_v'")] != ["SUCCESS"]:
        time.sleep(0.1)
    df = spark.read.format("logtide").option("host", "127.0.0.1").option("port", server.port) \
        .option("table", "src.t_by_v").option("splits", 3).load()
    assert sorted((r.v, r.pk, r.ck) for r in df.collect()) == sorted(
        (r.v, r.pk, r.ck) for r in cql.execute("SELECT v, pk, ck FROM src.t"))
