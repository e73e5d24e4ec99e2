"""``spark.cassandra.input.split.sizeInMB`` on the ``logtide`` source: about that much of the table per input
partition, as the Spark Cassandra Connector cuts a read (docs/spark.md "Source 1")."""

from __future__ import annotations

import hashlib
import os

import pytest

import logtide
from logtide.spark.split_size import ring_estimate

from .conftest import KEYSPACE_DDL

ROWS, VALUE_BYTES = 800, 10_000  # 8,000,000 bytes of values: 7.63 MiB, plus the keys and the records' framing


@pytest.fixture(scope="module")
def sized(tmp_path_factory) -> tuple[str, list[tuple[int, int, str]]]:
    """A data directory whose table ks.sized holds 800 rows of 10,000 random bytes each: (path, rows as
    (pk, ck, digest of the value))."""
    path = tmp_path_factory.mktemp("sized") / "data"
    written = []
    with logtide.open(path, synchronous="OFF") as d:
        s = d.session()
        s.execute(KEYSPACE_DDL.format("ks"))
        s.execute("CREATE TABLE ks.sized (pk int, ck int, b blob, PRIMARY KEY (pk, ck))")
        ins = s.prepare("INSERT INTO ks.sized (pk, ck, b) VALUES (?, ?, ?)")
        for i in range(ROWS):
            value = os.urandom(VALUE_BYTES)
            s.execute(ins, (i % 97, i, value))
            written.append((i % 97, i, hashlib.sha256(value).hexdigest()))
    return str(path), sorted(written)


def read(spark, path: str, **options: str):
    df = spark.read.format("logtide").options(keyspace="ks", table="sized", path=path, **options).load()
    rows = sorted((r.pk, r.ck, hashlib.sha256(r.b).hexdigest()) for r in df.collect())
    return df.rdd.getNumPartitions(), rows


@pytest.mark.parametrize("size_mb, partitions", [("0.5", 15), ("1", 7), ("2", 3), ("3", 2), ("4", 1), ("512", 1)])
def test_split_size_in_mb_cuts_the_table_into_its_size_over_the_split_size(spark, sized, size_mb, partitions):
    path, written = sized
    count, rows = read(spark, path, **{"spark.cassandra.input.split.sizeInMB": size_mb})
    assert count == partitions  # 7.6 MiB of table: floor(size / split size), at least 1
    assert rows == written


def test_split_size_in_mb_from_the_spark_conf_and_its_refusals(spark, sized):
    import logtide.spark

    path, written = sized
    spark.conf.set("spark.cassandra.input.split.sizeInMB", "2")
    logtide.spark.register(spark)
    try:
        assert read(spark, path) == (3, written)
        assert read(spark, path, splits="5") == (5, written)  # an option wins over the conf
    finally:
        spark.conf.unset("spark.cassandra.input.split.sizeInMB")
        logtide.spark.register(spark)
    refusals = [
        ({"path": path, "splits": "4", "spark.cassandra.input.split.sizeInMB": "2"},
         "options splits and spark.cassandra.input.split.sizeInMB exclude each other: give one"),
        ({"path": path, "spark.cassandra.input.split.sizeInMB": "0"},
         "option spark.cassandra.input.split.sizeInMB: must be more than 0, got '0'"),
        ({"path": path, "spark.cassandra.input.split.sizeInMB": "big"},
         "option spark.cassandra.input.split.sizeInMB: expected megabytes, got 'big'"),
    ]
    for options, message in refusals:
        with pytest.raises(Exception) as e:
            spark.read.format("logtide").options(keyspace="ks", table="sized", **options).load().collect()
        assert message in str(e.value), str(e.value)


def test_split_size_in_mb_over_cql_cuts_by_the_servers_size_estimates(spark, server, cql):
    # logtide serve keeps system.size_estimates as ScyllaDB does: the connector's estimate over CQL
    cql.execute(KEYSPACE_DDL.format("served"))
    cql.execute("CREATE TABLE served.sized (pk int, ck int, b blob, PRIMARY KEY (pk, ck))")
    ins = cql.prepare("INSERT INTO served.sized (pk, ck, b) VALUES (?, ?, ?)")
    for i in range(200):
        cql.execute(ins, (i % 97, i, os.urandom(VALUE_BYTES)))
    estimated = ring_estimate(list(cql.execute(
        "SELECT range_start, range_end, mean_partition_size, partitions_count FROM system.size_estimates "
        "WHERE keyspace_name = 'served' AND table_name = 'sized'")))
    assert 2_000_000 <= estimated <= 2_200_000  # 200 values of 10,000 bytes, with their keys and framing
    df = spark.read.format("logtide").options(keyspace="served", table="sized", host="127.0.0.1",
                                              port=str(server.port),
                                              **{"spark.cassandra.input.split.sizeInMB": "0.5"}).load()
    assert df.rdd.getNumPartitions() == estimated // (512 * 1024)
    assert df.count() == 200


def test_size_estimates_of_one_node_are_scaled_to_the_whole_ring():
    # ScyllaDB's and Cassandra's system.size_estimates rows of a node: (range_start, range_end, mean size, count)
    quarter = 1 << 62
    rows = [(str(-(1 << 63)), str(-(1 << 63) + quarter), 1000, 50), (str(0), str(quarter), 3000, 10)]
    assert ring_estimate(rows) == (1000 * 50 + 3000 * 10) * 2  # half the ring holds 80,000 bytes
    wrapping = [(str((1 << 63) - quarter), str(-(1 << 63) + quarter), 100, 100)]  # past the ring's end
    assert ring_estimate(wrapping) == 100 * 100 * 2
    assert ring_estimate([]) is None
