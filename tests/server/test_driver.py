"""cassandra-driver against the server: negotiated protocol, pinned v4 and pinned v5 (and a v3 smoke test)."""

from __future__ import annotations

import datetime
import time
import uuid

import pytest
from cassandra import AlreadyExists, InvalidRequest
from cassandra.concurrent import execute_concurrent_with_args
from cassandra.protocol import SyntaxException
from cassandra.query import BatchStatement, BatchType, SimpleStatement

from .conftest import KEYSPACE_DDL, cluster

PROTOCOLS = [None, 4, 5]
ROWS = 10_000


@pytest.fixture(scope="module", params=PROTOCOLS, ids=lambda v: f"v{v}" if v else "negotiated")
def conn(request, port):
    """(cluster, session, keyspace) per protocol version; each version gets its own keyspace."""
    c = cluster(port, request.param)
    session = c.connect()
    ks = f"drv_{request.param or 'auto'}"
    session.execute(KEYSPACE_DDL.format(ks))
    yield c, session, ks
    c.shutdown()


@pytest.fixture(scope="module")
def big_table(port):
    """ks big_ks.big with ROWS rows, written through the driver with 100 requests in flight."""
    c = cluster(port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("big_ks"))
    s.execute("CREATE TABLE big_ks.big (pk int, ck int, v text, PRIMARY KEY (pk, ck))")
    insert = s.prepare("INSERT INTO big_ks.big (pk, ck, v) VALUES (?, ?, ?)")
    results = execute_concurrent_with_args(s, insert, [(i % 10, i, f"v{i}") for i in range(ROWS)],
                                           concurrency=100)
    assert all(ok for ok, _ in results)
    c.shutdown()
    return "big_ks.big"


def test_negotiated_version(conn):
    c, session, _ = conn
    assert c.protocol_version in (4, 5)
    row = session.execute("SELECT release_version, rpc_address, schema_version FROM system.local "
                          "WHERE key = 'local'").one()
    assert row.release_version == "5.0.0"
    assert row.rpc_address == "127.0.0.1"
    assert list(session.execute("SELECT * FROM system.peers")) == []


def test_v3_smoke(port):
    c = cluster(port, 3)
    s = c.connect()
    assert s.execute("SELECT cluster_name FROM system.local").one().cluster_name == "logtide"
    s.execute(KEYSPACE_DDL.format("drv_v3"))
    s.execute("CREATE TABLE drv_v3.t (k int PRIMARY KEY, d date, sm smallint, dur duration)")
    p = s.prepare("INSERT INTO drv_v3.t (k, d, sm) VALUES (?, ?, ?)")
    s.execute(p, [1, datetime.date(2020, 1, 2), 7])
    row = s.execute("SELECT k, d, sm FROM drv_v3.t").one()
    assert (row.k, str(row.d), row.sm) == (1, "2020-01-02", 7)
    c.shutdown()


def test_ddl_schema_agreement_and_metadata(conn):
    c, session, ks = conn
    rs = session.execute(f"CREATE TYPE {ks}.addr (street text, num int, tags frozen<set<text>>)")
    assert rs.response_future.is_schema_agreed
    session.execute(f"""CREATE TABLE {ks}.meta (
        a int, b text, c timeuuid, s int static, l list<int>, st set<text>, m map<text, frozen<list<int>>>,
        fm frozen<map<int, text>>, tu tuple<int, text>, ad frozen<addr>, ad2 addr,
        PRIMARY KEY ((a, b), c)) WITH CLUSTERING ORDER BY (c DESC)""")
    table = c.metadata.keyspaces[ks].tables["meta"]
    assert [col.name for col in table.partition_key] == ["a", "b"]
    assert [col.name for col in table.clustering_key] == ["c"]
    assert table.clustering_key[0].is_reversed
    types = {name: col.cql_type for name, col in table.columns.items()}
    assert types == {
        "a": "int", "b": "text", "c": "timeuuid", "s": "int", "l": "list<int>", "st": "set<text>",
        "m": "map<text, frozen<list<int>>>", "fm": "frozen<map<int, text>>", "tu": "frozen<tuple<int, text>>",
        "ad": "frozen<addr>", "ad2": "addr",
    }
    assert table.columns["s"].is_static
    udt = c.metadata.keyspaces[ks].user_types["addr"]
    assert udt.field_names == ["street", "num", "tags"]
    assert udt.field_types == ["text", "int", "frozen<set<text>>"]
    assert c.metadata.keyspaces[ks].replication_strategy.replication_factor == 1
    assert "CREATE TABLE" in table.export_as_string()


def test_schema_change_events_refresh_other_clients(conn, port):
    c, session, ks = conn
    other = cluster(port, schema_event_refresh_window=0.05)
    other.connect()
    try:
        session.execute(f"CREATE TABLE {ks}.pushed (k int PRIMARY KEY)")
        deadline = time.time() + 10
        while "pushed" not in other.metadata.keyspaces.get(ks, _Empty).tables and time.time() < deadline:
            time.sleep(0.05)
        assert "pushed" in other.metadata.keyspaces[ks].tables
        session.execute(f"ALTER TABLE {ks}.pushed ADD v text")
        deadline = time.time() + 10
        while "v" not in other.metadata.keyspaces[ks].tables["pushed"].columns and time.time() < deadline:
            time.sleep(0.05)
        assert "v" in other.metadata.keyspaces[ks].tables["pushed"].columns
    finally:
        other.shutdown()


class _Empty:
    tables: dict = {}


def test_simple_prepared_and_batch_statements(conn):
    c, session, ks = conn
    session.execute(f"CREATE TABLE {ks}.kv (k int, c int, v text, PRIMARY KEY (k, c))")
    session.execute(f"INSERT INTO {ks}.kv (k, c, v) VALUES (%s, %s, %s)", (1, 1, "simple"))
    insert = session.prepare(f"INSERT INTO {ks}.kv (k, c, v) VALUES (?, ?, ?)")
    assert insert.routing_key_indexes == [0]
    session.execute(insert, (1, 2, "prepared"))
    session.execute(insert.bind({"k": 1, "c": 3, "v": "named"}))
    batch = BatchStatement(BatchType.LOGGED)
    batch.add(insert, (1, 4, "batched prepared"))
    batch.add(SimpleStatement(f"INSERT INTO {ks}.kv (k, c, v) VALUES (%s, %s, %s)"), (1, 5, "batched simple"))
    batch.add(f"UPDATE {ks}.kv SET v = 'batched literal' WHERE k = 1 AND c = 6")
    session.execute(batch)
    unlogged = BatchStatement(BatchType.UNLOGGED)
    unlogged.add(insert, (2, 1, "u"))
    unlogged.add(f"DELETE FROM {ks}.kv WHERE k = 1 AND c = 1")
    session.execute(unlogged)
    rows = session.execute(f"SELECT c, v FROM {ks}.kv WHERE k = 1")
    assert [(r.c, r.v) for r in rows] == [(2, "prepared"), (3, "named"), (4, "batched prepared"),
                                          (5, "batched simple"), (6, "batched literal")]
    select = session.prepare(f"SELECT v FROM {ks}.kv WHERE k = ? AND c = ?")
    assert session.execute(select, (2, 1)).one().v == "u"

    session.execute(f"CREATE TABLE {ks}.counts (k int PRIMARY KEY, n counter)")
    bump = session.prepare(f"UPDATE {ks}.counts SET n = n + ? WHERE k = ?")
    counter_batch = BatchStatement(BatchType.COUNTER)
    counter_batch.add(bump, (5, 1))
    counter_batch.add(bump, (2, 1))
    session.execute(counter_batch)
    assert session.execute(f"SELECT n FROM {ks}.counts WHERE k = 1").one().n == 7


def test_lightweight_transactions(conn):
    c, session, ks = conn
    session.execute(f"CREATE TABLE {ks}.lwt (k int PRIMARY KEY, v int)")
    insert = session.prepare(f"INSERT INTO {ks}.lwt (k, v) VALUES (?, ?) IF NOT EXISTS")
    assert session.execute(insert, (1, 1)).was_applied
    rs = session.execute(insert, (1, 2))
    assert not rs.was_applied and rs.one().v == 1


def test_paging_through_ten_thousand_rows(conn, big_table):
    c, session, _ = conn
    stmt = SimpleStatement(f"SELECT pk, ck FROM {big_table}", fetch_size=100)
    result = session.execute(stmt)
    assert result.has_more_pages
    seen = [(r.pk, r.ck) for r in result]
    assert len(seen) == ROWS and len(set(seen)) == ROWS
    assert sorted(ck for _, ck in seen) == list(range(ROWS))

    prepared = session.prepare(f"SELECT ck FROM {big_table} WHERE pk = ?")
    prepared.fetch_size = 100
    page = session.execute(prepared, (3,))
    first = [r.ck for r in page.current_rows]
    assert len(first) == 100
    resumed = session.execute(prepared, (3,), paging_state=page.paging_state)
    assert [r.ck for r in resumed.current_rows][0] == first[-1] + 10
    assert [r.ck for r in session.execute(prepared, (3,))] == list(range(3, ROWS, 10))


def test_client_timestamps_become_write_timestamps(port):
    stamp = [1_111_111]
    c = cluster(port)
    c.timestamp_generator = lambda: stamp[0]
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("drv_ts"))
    s.execute("CREATE TABLE drv_ts.t (k int PRIMARY KEY, v text)")
    insert = s.prepare("INSERT INTO drv_ts.t (k, v) VALUES (?, ?)")
    stamp[0] = 3_333_333
    s.execute(insert, (1, "x"))
    assert s.execute("SELECT writetime(v) FROM drv_ts.t WHERE k = 1").one()[0] == 3_333_333
    stamp[0] = 4_444_444
    batch = BatchStatement()
    batch.add(insert, (2, "y"))
    s.execute(batch)
    assert s.execute("SELECT writetime(v) FROM drv_ts.t WHERE k = 2").one()[0] == 4_444_444
    stamp[0] = 5_555_555
    s.execute("UPDATE drv_ts.t SET v = 'z' WHERE k = 3")
    assert s.execute("SELECT writetime(v) FROM drv_ts.t WHERE k = 3").one()[0] == 5_555_555
    c.shutdown()


def test_errors_map_to_driver_exceptions(conn):
    c, session, ks = conn
    with pytest.raises(SyntaxException) as e:
        session.execute("SELEC 1")
    assert e.value.code == 0x2000
    with pytest.raises(InvalidRequest, match="unconfigured table nope"):
        session.execute(f"SELECT * FROM {ks}.nope")
    with pytest.raises(AlreadyExists) as already:
        session.execute(KEYSPACE_DDL.format(ks))
    assert already.value.keyspace == ks and not already.value.table


def test_unprepared_statements_are_prepared_again(conn, server):
    c, session, ks = conn
    session.execute(f"CREATE TABLE IF NOT EXISTS {ks}.again (k int PRIMARY KEY, v int)")
    insert = session.prepare(f"INSERT INTO {ks}.again (k, v) VALUES (?, ?)")
    server.call(lambda: server.server.runner.cache._entries.clear())
    session.execute(insert, (1, 10))  # Unprepared -> the driver prepares again and retries
    assert session.execute(f"SELECT v FROM {ks}.again WHERE k = 1").one().v == 10


def test_use_keyspace_and_connect_to_keyspace(conn, port):
    c, session, ks = conn
    session.execute(f"CREATE TABLE IF NOT EXISTS {ks}.kv2 (k int PRIMARY KEY, v text)")
    c2 = cluster(port, c.protocol_version)
    s2 = c2.connect(ks)
    s2.execute("INSERT INTO kv2 (k, v) VALUES (1, 'a')")
    p = s2.prepare("SELECT v FROM kv2 WHERE k = ?")
    s2.set_keyspace("system")
    assert s2.execute(p, (1,)).one().v == "a"  # prepared statements keep their keyspace
    c2.shutdown()


def test_many_concurrent_requests_on_one_connection(conn):
    c, session, ks = conn
    session.execute(f"CREATE TABLE IF NOT EXISTS {ks}.conc (k uuid PRIMARY KEY, n int)")
    insert = session.prepare(f"INSERT INTO {ks}.conc (k, n) VALUES (?, ?)")
    futures = [session.execute_async(insert, (uuid.uuid4(), i)) for i in range(500)]
    for f in futures:
        f.result()
    assert session.execute(f"SELECT count(*) FROM {ks}.conc").one()[0] == 500


def test_no_compression_and_lz4(port):
    for compression in (False, True):
        c = cluster(port, 4, compression=compression)
        s = c.connect()
        rows = list(s.execute("SELECT keyspace_name FROM system_schema.keyspaces"))
        assert any(r.keyspace_name == "system" for r in rows)
        c.shutdown()
