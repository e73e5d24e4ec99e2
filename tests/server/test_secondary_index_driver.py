"""Secondary indexes through a real ``logtide serve`` and cassandra-driver (docs/views-and-indexes.md,
"Secondary indexes"): the driver's ``table.indexes`` filled from system_schema.indexes, another client's
metadata following through the schema event, queries served by the index with the driver's paging, and
ScyllaDB's errors on the wire."""

from __future__ import annotations


import pytest
from cassandra import InvalidRequest
from cassandra.query import SimpleStatement

from .conftest import KEYSPACE_DDL, cluster, wait_for
from .serveproc import Serve


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    with Serve("--data-dir", str(tmp_path_factory.mktemp("indexes")), "--synchronous", "OFF") as srv:
        srv.wait_listening()
        yield srv
        assert srv.stop() == 0


@pytest.fixture(scope="module")
def clients(serve):
    a, b = cluster(serve.port), cluster(serve.port)
    sa, sb = a.connect(), b.connect()
    sa.execute(KEYSPACE_DDL.format("ks"))
    sa.execute("CREATE TABLE ks.t (p int, c int, v int, m map<int, text>, PRIMARY KEY (p, c))")
    for p in range(10):
        for c in range(3):
            sa.execute("INSERT INTO ks.t (p, c, v, m) VALUES (%s, %s, %s, %s)", (p, c, c, {c: f"x{p}"}))
    yield a, sa, b, sb
    a.shutdown()
    b.shutdown()


def test_the_driver_sees_an_index_in_its_table_metadata_and_another_client_follows(clients):
    a, sa, b, sb = clients
    wait_for(lambda: "t" in getattr(b.metadata.keyspaces.get("ks"), "tables", {}))  # b knows the table first
    sa.execute("CREATE INDEX ON ks.t (v)")
    sa.execute("CREATE INDEX entries_idx ON ks.t (entries(m))")
    ix = a.metadata.keyspaces["ks"].tables["t"].indexes["t_v_idx"]
    assert (ix.kind, dict(ix.index_options)) == ("COMPOSITES", {"target": "v"})
    assert ix.as_cql_query() == "CREATE INDEX t_v_idx ON ks.t (v)"
    assert a.metadata.keyspaces["ks"].tables["t"].indexes["entries_idx"].index_options["target"] == "entries(m)"
    wait_for(lambda: "entries_idx" in b.metadata.keyspaces["ks"].tables["t"].indexes)
    sa.execute("DROP INDEX ks.entries_idx")
    wait_for(lambda: "entries_idx" not in b.metadata.keyspaces["ks"].tables["t"].indexes)
    assert "t_v_idx" in b.metadata.keyspaces["ks"].tables["t"].indexes


def test_a_query_served_by_an_index_pages_with_the_driver(clients):
    a, sa, b, sb = clients
    sa.execute("CREATE INDEX IF NOT EXISTS ON ks.t (v)")
    stmt = SimpleStatement("SELECT p, c FROM ks.t WHERE v = 2", fetch_size=3)
    result = sb.execute(stmt)
    assert len(result.current_rows) == 3 and result.has_more_pages
    rows = [(r.p, r.c) for r in result]
    assert sorted(rows) == [(p, 2) for p in range(10)]
    assert rows == [(r.p, r.c) for r in sb.execute("SELECT p, c FROM ks.t WHERE v = 2 ALLOW FILTERING")]


def test_scylladb_errors_reach_the_driver(clients):
    a, sa, b, sb = clients
    with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
        sb.execute("SELECT p, c FROM ks.t WHERE m CONTAINS 'x1'")
    with pytest.raises(InvalidRequest, match="Cannot create secondary index on partition key column p"):
        sb.execute("CREATE INDEX ON ks.t (p)")
    with pytest.raises(InvalidRequest, match="Non-supported custom class 'x.Y' provided"):
        sb.execute("CREATE CUSTOM INDEX ON ks.t (v) USING 'x.Y'")


def test_a_descending_read_through_a_local_index_pages_exactly_while_another_client_writes(clients):
    """``ORDER BY c DESC`` through a local index, paged by the driver while another client inserts rows on
    both sides of the reader's position: every page goes on from the row the last one ended at (no row twice,
    descending throughout), every row that was there all along comes, and no row that never matched."""
    import threading

    a, sa, b, sb = clients
    sa.execute("CREATE TABLE ks.r (p int, c int, v int, PRIMARY KEY (p, c))")
    sa.execute("CREATE INDEX ON ks.r ((p), v)")
    insert = sa.prepare("INSERT INTO ks.r (p, c, v) VALUES (0, ?, ?)")
    for c in range(0, 1200, 2):
        sa.execute(insert, (c, 1 if c % 6 else 2))  # even c; every third has v = 2
    stop = threading.Event()
    written: list[int] = []

    def write() -> None:
        c = 1
        while not stop.is_set() and c < 1200:
            sa.execute(insert, (c, 1))  # odd c, v = 1: ahead of the reader or behind it
            written.append(c)
            c += 2

    writer = threading.Thread(target=write)
    writer.start()
    try:
        result = sb.execute(SimpleStatement("SELECT c, v FROM ks.r WHERE p = 0 AND v = 1 ORDER BY c DESC",
                                            fetch_size=25))
        got = [(r.c, r.v) for r in result]
    finally:
        stop.set()
        writer.join()
    cs = [c for c, _ in got]
    assert cs == sorted(set(cs), reverse=True)
    assert all(v == 1 for _, v in got)
    assert {c for c in range(0, 1200, 2) if c % 6} <= set(cs)
    assert set(cs) - {c for c in range(0, 1200, 2) if c % 6} <= set(written)
