"""Log rows beyond the spec examples: timestamps, TTLs, images, streams, generations, consumer queries."""

from __future__ import annotations

import struct
import threading
import uuid

import pytest
from cassandra.metadata import Murmur3Token

import logtide
from logtide.cdc.streams import Topology, shard_of
from logtide.errors import InvalidRequest

from ..conftest import rows

GREGORIAN_OFFSET = 0x01B21DD213814000


def micros(u: uuid.UUID) -> int:
    return (u.time - GREGORIAN_OFFSET) // 10


def log(session, cols='"cdc$batch_seq_no", "cdc$operation"', table="t"):
    return rows(session.execute(f"SELECT {cols} FROM {table}_scylla_cdc_log"))


def test_cdc_time_carries_the_write_timestamp_and_tombstone_compensation(session, clock):
    clock.micros = 1606390225590000
    session.execute("CREATE TABLE t (pk int, ck int, v map<int, text>, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}")
    session.execute("UPDATE t USING TIMESTAMP 1606390225588947 SET v = {1: 'v1', 2: 'v2'} WHERE pk = 0 AND ck = 0")
    session.execute("DELETE v FROM t USING TIMESTAMP 1606390225588950 WHERE pk = 0 AND ck = 0")
    times = [micros(r[0]) for r in session.execute('SELECT "cdc$time" FROM t_scylla_cdc_log')]
    assert times == [1606390225588947, 1606390225588951]


def test_end_of_batch_marks_the_last_row_of_each_group(session):
    session.execute("CREATE TABLE t (pk int, ck int, s int static, v int, PRIMARY KEY (pk, ck)) "
                    "WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}")
    session.execute("INSERT INTO t (pk, ck, s, v) VALUES (0, 0, 1, 1)")
    session.execute("UPDATE t SET v = 2 WHERE pk = 0 AND ck = 0")
    got = log(session, '"cdc$batch_seq_no", "cdc$operation", "cdc$end_of_batch"')
    assert got == [(0, 1, None), (1, 2, None), (2, 9, None), (3, 9, True),
                   (0, 0, None), (1, 1, None), (2, 9, True)]


def test_log_cells_expire_with_the_cdc_ttl(session, clock):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true, 'ttl': 60}")
    session.execute("CREATE TABLE n (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true, 'ttl': 0}")
    session.execute("INSERT INTO t (pk, v) VALUES (1, 1)")
    session.execute("INSERT INTO n (pk, v) VALUES (1, 1)")
    assert rows(session.execute('SELECT ttl(v) FROM t_scylla_cdc_log')) == [(60,)]
    clock.advance(seconds=60)
    assert log(session) == []
    assert log(session, table="n") == [(0, 2)]
    assert rows(session.execute("SELECT v FROM t")) == [(1,)]


def test_delta_keys_only(session):
    session.execute("CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true, 'delta': 'keys'}")
    session.execute("INSERT INTO t (pk, ck, v) VALUES (0, 1, 5)")
    session.execute("UPDATE t SET v = null WHERE pk = 0 AND ck = 1")
    assert log(session, 'pk, ck, v, "cdc$deleted_v", "cdc$operation"') == [(0, 1, None, None, 2), (0, 1, None, None, 1)]


def test_images_have_no_ttl_and_no_deleted_elements(session):
    session.execute("CREATE TABLE t (pk int, ck int, m map<int, int>, PRIMARY KEY (pk, ck)) "
                    "WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}")
    session.execute("UPDATE t USING TTL 100 SET m = m + {1: 1} WHERE pk = 0 AND ck = 0")
    session.execute("UPDATE t USING TTL 100 SET m = m - {1} WHERE pk = 0 AND ck = 0")
    got = log(session, '"cdc$operation", "cdc$ttl", "cdc$deleted_elements_m", "cdc$deleted_m"')
    assert got[0] == (1, 100, None, None)
    ops = [g[0] for g in got]
    assert ops == [1, 9, 0, 1, 9]
    pre = got[2]
    assert pre[1] is None and pre[2] is None
    post = got[4]
    assert post[1] is None and post[2] is None and post[3] is None


def test_partition_delete_without_clustering_gets_a_preimage(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}")
    session.execute("INSERT INTO t (pk, v) VALUES (0, 7)")
    session.execute("DELETE FROM t WHERE pk = 0")
    assert log(session, '"cdc$operation", v') == [(2, 7), (9, 7), (0, 7), (4, None)]


def test_batch_with_row_delete_gets_no_postimage(session):
    session.execute("CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true, 'postimage': true}")
    session.execute("BEGIN UNLOGGED BATCH DELETE FROM t USING TIMESTAMP 10 WHERE pk = 0 AND ck = 0; "
                    "UPDATE t USING TIMESTAMP 10 SET v = 1 WHERE pk = 0 AND ck = 0; APPLY BATCH")
    assert [r[1] for r in log(session)] == [1, 3]  # ScyllaDB's split order: updates before row deletions


def test_postimage_without_regular_columns(session):
    session.execute("CREATE TABLE t (pk int, ck int, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true, 'postimage': true}")
    session.execute("INSERT INTO t (pk, ck) VALUES (0, 0)")
    assert log(session, '"cdc$operation", pk, ck') == [(2, 0, 0), (9, 0, 0)]


def test_list_keys_are_revealed_and_udt_indices_used(session):
    session.execute("CREATE TYPE ut (a int, b int, c int)")
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, l list<int>, u ut) WITH cdc = {'enabled': true}")
    session.execute("UPDATE t SET l = l + [5, 6], u.c = null WHERE pk = 0")
    r = session.execute('SELECT l, u, "cdc$deleted_elements_u" FROM t_scylla_cdc_log').one()
    assert list(r.l.values()) == [5, 6] and all(k.version == 1 for k in r.l.keys())
    assert list(r.l.keys()) == sorted(r.l.keys(), key=lambda u: u.time)
    assert set(r[2]) == {2} and (r.u.a, r.u.b, r.u.c) == (None, None, None)
    stored = session.execute("SELECT l FROM t").one().l
    assert stored == [5, 6]


def test_writes_from_the_future_are_refused(session, clock):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    ts = clock.micros + 10_000_000
    with pytest.raises(InvalidRequest, match="from the future"):
        session.execute(f"INSERT INTO t (pk, v) VALUES (1, 1) USING TIMESTAMP {ts}")
    assert rows(session.execute("SELECT * FROM t")) == []


# -- streams ---------------------------------------------------------------------


def test_stream_id_layout_and_routing(session, db):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    gen = db.generations.current
    for pk in range(50):
        session.execute(f"INSERT INTO t (pk, v) VALUES ({pk}, {pk})")
    for r in session.execute('SELECT "cdc$stream_id", pk FROM t_scylla_cdc_log'):
        sid = r[0]
        assert len(sid) == 16
        token, low = struct.unpack(">qQ", sid)
        assert low & 0xF == 1
        vnode = (low >> 4) & ((1 << 22) - 1)
        key_token = Murmur3Token.hash_fn(struct.pack(">i", r.pk))
        ends = gen.range_ends
        # the key's range is the vnode the stream belongs to, its shard the stream's shard
        idx = next((i for i, e in enumerate(ends) if key_token <= e), 0)
        assert vnode == idx
        topo = gen.topology
        assert shard_of(token, topo.shards, topo.ignore_msb) == shard_of(key_token, topo.shards, topo.ignore_msb)
        assert sid == gen.stream_for(key_token)


def test_generation_tables(session, db):
    gens = rows(session.execute("SELECT key, time, expired FROM system_distributed.cdc_generation_timestamps"))
    assert len(gens) == 1 and gens[0][0] == "timestamps"
    descs = rows(session.execute("SELECT range_end, streams FROM system_distributed.cdc_streams_descriptions_v2"))
    topo = db.generations.current.topology
    assert len(descs) == topo.vnodes
    assert all(len(streams) == topo.shards for _, streams in descs)
    assert sorted(e for e, _ in descs) == [e for e, _ in descs]


def test_consumer_queries_by_stream_and_time_window(session, clock):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    for i in range(20):
        clock.advance(seconds=1)
        session.execute(f"INSERT INTO t (pk, v) VALUES ({i % 4}, {i})")
    streams = sorted({r[0] for r in session.execute('SELECT "cdc$stream_id" FROM t_scylla_cdc_log')})
    lo = uuid.UUID("00000000-0000-1000-8080-808080808080")  # the smallest timeuuid
    all_rows = rows(session.execute('SELECT "cdc$stream_id", "cdc$time", v FROM t_scylla_cdc_log'))
    mid = sorted(r[1] for r in all_rows)[10]
    q = 'SELECT v FROM t_scylla_cdc_log WHERE "cdc$stream_id" IN ? AND "cdc$time" > ? AND "cdc$time" <= ?'
    got = sorted(r.v for r in session.execute(q, [streams, mid, max(r[1] for r in all_rows)]))
    assert got == sorted(r[2] for r in all_rows if micros(r[1]) > micros(mid))
    one = session.execute('SELECT v FROM t_scylla_cdc_log WHERE "cdc$stream_id" = ? AND "cdc$time" > ?', [streams[0], lo])
    assert len(one) > 0
    bounded = session.execute('SELECT v FROM t_scylla_cdc_log WHERE "cdc$stream_id" = ? '
                              "AND \"cdc$time\" > minTimeuuid('1970-01-02') AND \"cdc$time\" < maxTimeuuid('2100-01-01')",
                              [streams[0]])
    assert len(bounded) == len(one)
    assert rows(session.execute('SELECT * FROM t_scylla_cdc_log WHERE "cdc$stream_id" = 0x00')) == []
    tok = rows(session.execute('SELECT token("cdc$stream_id") FROM t_scylla_cdc_log WHERE "cdc$stream_id" = ?', [streams[0]]))
    assert tok[0][0] == struct.unpack(">q", streams[0][:8])[0]


def test_new_topology_starts_a_new_generation_and_loses_nothing(tmp_path, clock):
    with logtide.open(tmp_path / "d", clock=clock, topology=Topology(vnodes=4, shards=1)) as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
        s.execute("INSERT INTO ks.t (pk, v) VALUES (1, 1)")
        first = set(db.generations.current.all_streams())
    clock.advance(seconds=5)
    with logtide.open(tmp_path / "d", clock=clock, topology=Topology(vnodes=8, shards=2)) as db:
        s = db.session("ks")
        gens = db.generations.generations
        assert len(gens) == 2 and gens[0].expired == gens[1].timestamp
        assert gens[1].timestamp > clock.micros
        s.execute("INSERT INTO t (pk, v) VALUES (2, 2)")  # before the switch: old generation
        clock.advance(seconds=2)
        s.execute("INSERT INTO t (pk, v) VALUES (3, 3)")  # after: new generation
        second = set(gens[1].all_streams())
        by_pk = {r.pk: r[0] for r in s.execute('SELECT "cdc$stream_id", pk FROM t_scylla_cdc_log')}
        assert set(by_pk) == {1, 2, 3}
        assert by_pk[1] in first and by_pk[2] in first and by_pk[3] in second
        stamps = rows(s.execute("SELECT time, expired FROM system_distributed.cdc_generation_timestamps"))
        assert len(stamps) == 2 and stamps[0][0] > stamps[1][0]  # time DESC
        assert len(rows(s.execute("SELECT * FROM system_distributed.cdc_streams_descriptions_v2"))) == 12


# -- preimages under concurrency -----------------------------------------------------


def test_preimages_are_consistent_under_concurrent_writers(tmp_path):
    with logtide.open(tmp_path / "d", synchronous="OFF") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) "
                  "WITH cdc = {'enabled': true, 'preimage': true}")
        s.execute("UPDATE ks.t SET v = 0 WHERE pk = 0 AND ck = 0")

        def writer(base: int) -> None:
            ws = db.session("ks")
            for i in range(60):
                ws.execute(f"UPDATE t SET v = {base + i} WHERE pk = 0 AND ck = 0")

        threads = [threading.Thread(target=writer, args=(k * 1000,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        entries = rows(s.execute('SELECT "cdc$time", "cdc$operation", v FROM ks.t_scylla_cdc_log'))
        assert len(entries) == 1 + 2 * 240
        previous = None
        for _, op, v in entries:
            if op == 0:
                assert v == previous, "preimage must equal the value written just before in timestamp order"
            else:
                previous = v


def test_range_delete_bounds_follow_clustering_order(session, db):
    session.execute("CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH CLUSTERING ORDER BY (ck DESC) "
                    "AND cdc = {'enabled': true}")
    for i in range(5):
        session.execute(f"INSERT INTO t (pk, ck, v) VALUES (0, {i}, {i})")
    session.execute("DELETE FROM t WHERE pk = 0 AND ck > 1 AND ck <= 3")
    got = [r for r in log(session, 'ck, "cdc$operation"') if r[1] >= 5]
    assert got == [(3, 5), (1, 8)]
    assert [r.ck for r in session.execute("SELECT ck FROM t")] == [4, 1, 0]
    target = db.session()
    target.execute("CREATE TABLE ks.copy (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH CLUSTERING ORDER BY (ck DESC)")
    from logtide.cdc.replay import replay
    assert replay(db, "ks", "t", db, "ks", "copy", verify=True).differences == []


def test_topology_options_of_the_command_line(tmp_path):
    import subprocess
    import sys
    cmd = [sys.executable, "-m", "logtide", "shell", "--data-dir", str(tmp_path / "d")]
    q = "SELECT count(*) FROM system_distributed.cdc_streams_descriptions_v2"
    first = subprocess.run(cmd + ["--vnodes", "4", "--shards", "1", "-e", q], capture_output=True, text=True)
    assert first.returncode == 0 and "     4" in first.stdout, first.stderr
    again = subprocess.run(cmd + ["-e", "SELECT count(*) FROM system_distributed.cdc_generation_timestamps"],
                           capture_output=True, text=True)
    assert "     1" in again.stdout  # no options: the stored topology stays, no new generation
    bad = subprocess.run(cmd + ["--shards", "0", "-e", q], capture_output=True, text=True)
    assert bad.returncode != 0 and "shards must be between 1 and 256" in bad.stderr
