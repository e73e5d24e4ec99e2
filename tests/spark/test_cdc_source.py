"""``logtide-cdc``: the CDC log as a batch and as a stream (exactly once across restarts and generation switches)."""

from __future__ import annotations

import time

import pytest

from logtide.spark.compat import has_admission_control

from .conftest import KEYSPACE_DDL, cluster, refused_stream, serve

LOG_KEY = "`cdc$stream_id`, `cdc$time`, `cdc$batch_seq_no`"


def log_rows(session, table="ks.t_scylla_cdc_log") -> set[tuple]:
    return {(bytes(r[0]), str(r[1]), r[2], r[3]) for r in session.execute(
        f'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no", "cdc$operation" FROM {table}')}


def write(session, start: int, n: int) -> None:
    ins = session.prepare("INSERT INTO ks.t (pk, ck, v, s) VALUES (?, ?, ?, ?)")
    for i in range(start, start + n):
        session.execute(ins, (i % 7, i, f"v{i}", {i}))
        if i % 5 == 0:
            session.execute("UPDATE ks.t SET v = 'u', s = s + {0} WHERE pk = %s AND ck = %s", (i % 7, i))
        if i % 9 == 0:
            session.execute("DELETE FROM ks.t WHERE pk = %s AND ck = %s", (i % 7, i))


def start_with_table(data, cdc: str):
    """A server on ``data`` (4 vnodes) holding ks.t with the given CDC options: (server, cluster, session)."""
    srv = serve(data, "--vnodes", "4")
    c = cluster(srv.port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("ks"))
    s.execute(f"CREATE TABLE ks.t (pk int, ck int, v text, s set<int>, PRIMARY KEY (pk, ck)) WITH cdc = {cdc}")
    return srv, c, s


def test_batch_read_of_the_log_equals_the_log_table_with_change_columns(spark, tmp_path):
    srv, c, s = start_with_table(tmp_path / "d", "{'enabled': true, 'preimage': true}")
    try:
        write(s, 0, 30)
        df = (spark.read.format("logtide-cdc").option("host", "127.0.0.1").option("port", srv.port)
              .option("table", "ks.t").option("confidenceWindow", "0s").load())
        rows = df.collect()
        got = {(bytes(r["cdc$stream_id"]), r["cdc$time"], r["cdc$batch_seq_no"], r["cdc$operation"]) for r in rows}
        assert got == log_rows(s) and len(rows) == len(got)
        # Delta's change types: a delete's preimage is its delete row (the deleted values), its delta has none
        kinds = {(r["cdc$operation"], r["_change_type"]) for r in rows}
        assert kinds == {(0, "update_preimage"), (1, "update_postimage"), (2, "insert"), (0, "delete"), (3, None)}
        assert_one_change_row_per_change(rows)
        inserted = {(r.pk, r.ck, r.v, tuple(r.s)) for r in rows if r._change_type == "insert"}
        assert (3, 3, "v3", (3,)) in inserted
        assert all(r._commit_version == int(r._commit_timestamp.timestamp() * 1_000_000) for r in rows)
        # the local form reads the same rows next to the running server
        local = (spark.read.format("logtide-cdc").option("path", str(tmp_path / "d")).option("table", "ks.t")
                 .option("confidenceWindow", "0s").load())
        assert local.count() == len(rows)
        # splits: the 4 vnode groups in 2 input partitions, each reading its streams' queries overlapped
        packed = (spark.read.format("logtide-cdc").option("host", "127.0.0.1").option("port", srv.port)
                  .option("table", "ks.t").option("confidenceWindow", "0s").option("splits", "2").load())
        assert packed.rdd.getNumPartitions() == 2
        assert sorted(map(tuple, packed.collect())) == sorted(map(tuple, rows))
    finally:
        c.shutdown()
        srv.stop()


def assert_one_change_row_per_change(rows) -> None:
    """Each change (a write's rows of one base row) has exactly one insert, update_postimage or delete row, and
    at most one update_preimage; a range delete (its two bounds) is one delete row."""
    changes: dict = {}
    for r in rows:
        if r["cdc$operation"] in (5, 6, 7, 8):
            continue
        changes.setdefault((bytes(r["cdc$stream_id"]), r["cdc$time"], r.pk, r.ck), []).append(r._change_type)
    for change, types in changes.items():
        assert sum(t in ("insert", "update_postimage", "delete") for t in types) == 1, (change, types)
        assert types.count("update_preimage") <= 1, (change, types)
    bounds = [r._change_type for r in rows if r["cdc$operation"] in (5, 6, 7, 8)]
    assert bounds.count("delete") * 2 == len(bounds) and bounds.count(None) * 2 == len(bounds)


def test_postimages_carry_the_change_and_the_deltas_none(spark, tmp_path):
    """With postimages (and full preimages) a change is its preimage and its postimage, as Delta shows an update:
    one update_postimage per change, even where the log splits a write into several delta rows."""
    srv, c, s = start_with_table(tmp_path / "d", "{'enabled': true, 'preimage': 'full', 'postimage': true}")
    try:
        s.execute("INSERT INTO ks.t (pk, ck, v, s) VALUES (1, 1, 'a', {1}) USING TTL 1000")  # split in 3 delta rows
        s.execute("UPDATE ks.t SET v = 'b' WHERE pk = 1 AND ck = 1")
        s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (1, 2, 'c')")
        s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (1, 3, 'd')")
        s.execute("DELETE FROM ks.t WHERE pk = 1 AND ck = 2")
        s.execute("DELETE FROM ks.t WHERE pk = 1 AND ck >= 3 AND ck < 9")
        s.execute("DELETE FROM ks.t WHERE pk = 1")
        rows = (spark.read.format("logtide-cdc").option("host", "127.0.0.1").option("port", srv.port)
                .option("table", "ks.t").option("confidenceWindow", "0s").load()
                .orderBy("_commit_version", "cdc$batch_seq_no").collect())
        assert_one_change_row_per_change(rows)
        seen = [(r["cdc$operation"], r._change_type) for r in rows]
        assert seen == [
            (2, None), (1, None), (1, None), (9, "insert"),                  # the insert: its postimage
            (0, "update_preimage"), (1, None), (9, "update_postimage"),     # the update: before and after
            (2, None), (9, "insert"), (2, None), (9, "insert"),
            (0, "delete"), (3, None),                                       # the row delete: the deleted values
            (5, "delete"), (8, None),                                       # the range delete: its left bound
            (4, "delete"),                                                  # the partition delete
        ]
        assert [r.v for r in rows if r._change_type == "update_preimage"] == ["a"]
        assert [r.v for r in rows if r._change_type == "update_postimage"] == ["b"]
        assert [(r.ck, r.v) for r in rows if r._change_type == "delete" and r["cdc$operation"] == 0] == [(2, "c")]
    finally:
        c.shutdown()
        srv.stop()


def run_stream(spark, port, out, checkpoint, **opts):
    reader = (spark.readStream.format("logtide-cdc").option("host", "127.0.0.1").option("port", port)
              .option("table", "ks.t").option("confidenceWindow", "0s").option("startingOffsets", "earliest"))
    for k, v in opts.items():
        reader = reader.option(k, v)
    q = (reader.load().writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    q.awaitTermination(600)
    assert q.exception() is None
    return q


def test_stream_delivers_every_row_once_across_restarts_and_a_generation_switch(spark, tmp_path):
    data, out, ckpt = tmp_path / "d", tmp_path / "out", tmp_path / "ckpt"
    srv, c, s = start_with_table(data, "{'enabled': true}")
    try:
        write(s, 0, 20)
        if has_admission_control():
            q = run_stream(spark, srv.port, out, ckpt, maxRowsPerTrigger="9")
            assert len([p for p in q.recentProgress if p["numInputRows"]]) >= 3  # admission control cut batches
        else:
            reader = spark.readStream.format("logtide-cdc").options(host="127.0.0.1", port=str(srv.port),
                                                                    table="ks.t", maxRowsPerTrigger="9")
            assert "option maxRowsPerTrigger: needs Spark 4.2 or later" in refused_stream(reader, tmp_path / "c0")
            run_stream(spark, srv.port, out, ckpt)
        write(s, 20, 10)
        run_stream(spark, srv.port, out, ckpt)  # restart from the checkpoint
        c.shutdown()
        srv.stop()
        srv = serve(data, "--vnodes", "3")  # a new CDC generation, starting a second from now
        c = cluster(srv.port)
        s = c.connect()
        write(s, 30, 5)
        time.sleep(1.5)
        write(s, 35, 10)  # in the new generation
        run_stream(spark, srv.port, out, ckpt)
        gens = list(s.execute("SELECT time FROM system_distributed.cdc_generation_timestamps "
                              "WHERE key = 'timestamps'"))
        assert len(gens) == 2
        delivered = spark.read.parquet(str(out)).collect()
        keys = [(bytes(r["cdc$stream_id"]), r["cdc$time"], r["cdc$batch_seq_no"], r["cdc$operation"])
                for r in delivered]
        assert len(keys) == len(set(keys))
        assert set(keys) == log_rows(s)
    finally:
        c.shutdown()
        srv.stop()


def test_bad_cdc_options_get_clear_errors(spark, tmp_path):
    from pyspark.errors import PySparkException

    srv = serve(tmp_path / "d")
    try:
        c = cluster(srv.port)
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("ks"))
        s.execute("CREATE TABLE ks.plain (pk int PRIMARY KEY)")
        c.shutdown()
        base = {"host": "127.0.0.1", "port": str(srv.port)}
        cases = [({"table": "ks.plain"}, "has no CDC log"),
                 ({"table": "ks.plain", "confidenceWindow": "soon"}, "option confidenceWindow"),
                 ({"table": "ks.plain", "startingOffsets": "earliest", "startingTimestamp": "0"}, "exclude each other"),
                 ({"table": "ks.plain", "splits": "0"}, "option splits")]
        for opts, message in cases:
            with pytest.raises(PySparkException) as e:
                spark.read.format("logtide-cdc").options(**base, **opts).load().collect()
            assert message in str(e.value)
    finally:
        srv.stop()
