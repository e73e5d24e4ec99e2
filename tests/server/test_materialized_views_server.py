"""Materialized views through the real ``logtide serve``: cassandra-driver's metadata (``keyspace.views``) and
schema events (target TABLE for views, as the driver expects), errors on the wire, and a SIGKILL while writing
to a table with a view (base and view agree after the restart)."""

from __future__ import annotations

import time
from contextlib import contextmanager

import pytest
from cassandra import InvalidRequest

import logtide

from ..sigkill import write_until_killed
from .conftest import KEYSPACE_DDL, cluster
from .serveproc import Serve


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    with Serve("--data-dir", str(tmp_path_factory.mktemp("views")), "--synchronous", "OFF") as srv:
        srv.wait_listening()
        yield srv
        assert srv.stop() == 0


@contextmanager
def base_table(port, keyspace, columns):
    """A client (cluster, session) of the server on ``port``, with a fresh ``keyspace`` holding the base table
    ``keyspace.t (columns)``; the client shut down after."""
    c = cluster(port)
    s = c.connect()
    s.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
    s.execute(KEYSPACE_DDL.format(keyspace))
    s.execute(f"CREATE TABLE {keyspace}.t ({columns})")
    try:
        yield c, s
    finally:
        c.shutdown()


def test_the_driver_sees_a_view_in_its_keyspace_metadata(serve):
    with base_table(serve.port, "mvs", "p int, c int, v text, PRIMARY KEY (p, c)") as (c, s):
        s.execute("CREATE MATERIALIZED VIEW mvs.by_v AS SELECT * FROM mvs.t WHERE v IS NOT NULL AND p IS NOT NULL "
                  "AND c IS NOT NULL PRIMARY KEY (v, p, c) WITH CLUSTERING ORDER BY (p DESC)")
        ks = c.metadata.keyspaces["mvs"]
        assert list(ks.views) == ["by_v"]
        assert "by_v" not in ks.tables
        view = ks.views["by_v"]
        assert view.base_table_name == "t" and view.include_all_columns
        assert [col.name for col in view.partition_key] == ["v"]
        assert [col.name for col in view.clustering_key] == ["p", "c"]
        assert view.where_clause == "v IS NOT null AND p IS NOT null AND c IS NOT null"
        assert list(ks.tables["t"].views) == ["by_v"]
        assert "CREATE MATERIALIZED VIEW mvs.by_v AS" in view.as_cql_query()
        s.execute("INSERT INTO mvs.t (p, c, v) VALUES (1, 2, 'x')")
        assert list(s.execute("SELECT v, p, c FROM mvs.by_v")) == [("x", 1, 2)]
        with pytest.raises(InvalidRequest, match="Cannot directly modify a materialized view"):
            s.execute("INSERT INTO mvs.by_v (v, p, c) VALUES ('y', 1, 1)")
        with pytest.raises(InvalidRequest, match="Cannot directly modify a materialized view"):
            s.prepare("UPDATE mvs.by_v SET p = ? WHERE v = 'y'")  # refused at PREPARE, as ScyllaDB does
        assert s.prepare("SELECT * FROM mvs.by_v WHERE v = ?") is not None
        s.execute("ALTER MATERIALIZED VIEW mvs.by_v WITH comment = 'kept'")
        assert c.metadata.keyspaces["mvs"].views["by_v"].options["comment"] == "kept"
        s.execute("DROP MATERIALIZED VIEW mvs.by_v")
        assert "by_v" not in c.metadata.keyspaces["mvs"].views


def test_another_client_learns_of_a_view_through_its_schema_events(serve):
    watcher = cluster(serve.port)
    watcher.connect()
    with base_table(serve.port, "mve", "p int PRIMARY KEY, v int") as (_, s):
        s.execute("CREATE MATERIALIZED VIEW mve.mv AS SELECT * FROM mve.t WHERE v IS NOT NULL PRIMARY KEY (v, p)")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            ks = watcher.metadata.keyspaces.get("mve")
            if ks is not None and "mv" in ks.views:
                break
            time.sleep(0.1)
        assert "mv" in watcher.metadata.keyspaces["mve"].views
    watcher.shutdown()


def test_sigkill_while_writing_leaves_base_and_view_agreeing(tmp_path):
    data = tmp_path / "data"
    with Serve("--data-dir", str(data)) as srv:
        with base_table(srv.wait_listening(), "kv", "k int PRIMARY KEY, v int") as (_, s):
            s.execute("CREATE MATERIALIZED VIEW kv.mv AS SELECT * FROM kv.t WHERE v IS NOT NULL PRIMARY KEY (v, k)")
            write = s.prepare("UPDATE kv.t SET v = ? WHERE k = ?")
            # each key's view key moves several times
            acknowledged = write_until_killed(s, write, [(i, i % 300) for i in range(3000)], srv.proc)
    assert acknowledged
    with logtide.open(data) as db:
        s = db.session()
        base = sorted((r.v, r.k) for r in s.execute("SELECT k, v FROM kv.t"))
        view = sorted((r.v, r.k) for r in s.execute("SELECT v, k FROM kv.mv"))
    assert base == view
    assert {i % 300 for i in acknowledged} <= {k for _, k in base}


def test_a_traced_write_names_the_views_with_synchronous_updates(serve):
    with base_table(serve.port, "mvt", "p int PRIMARY KEY, v text") as (_, s):
        for name, extra in (("sync", " WITH synchronous_updates = true"), ("plain", "")):
            s.execute(f"CREATE MATERIALIZED VIEW mvt.{name} AS SELECT * FROM mvt.t WHERE v IS NOT NULL "
                      f"PRIMARY KEY (v, p){extra}")
        trace = s.execute("INSERT INTO mvt.t (p, v) VALUES (1, 'a')", trace=True).get_query_trace()
        activities = [e.description for e in trace.events]
    assert "Forcing mvt.sync view update to be synchronous" in activities
    assert not any("mvt.plain" in a for a in activities)
