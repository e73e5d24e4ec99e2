"""ScyllaDB's system tables that issue #24 measured, against the real ``logtide serve`` (docs/server.md "System
tables"): ``system.size_estimates`` read by a driver and by cqlsh, ALTER of a system table refused as ScyllaDB
refuses it (Unauthorized, ``memtable_flush_period_in_ms`` alone accepted), and the view ScyllaDB backs a secondary
index with listed in ``system_schema.views``: drivers' metadata follows it through the schema events ScyllaDB
pushes, while DESCRIBE (and so cqlsh's dumps) leaves it out and a dump restores."""

from __future__ import annotations

import pytest
from cassandra import Unauthorized
from cassandra.protocol import ConfigurationException

from .conftest import KEYSPACE_DDL, cluster, run_cqlsh, wait_for
from .serveproc import Serve


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A real ``logtide serve`` and two driver clients of it: (server, (cluster, session), (cluster, session))."""
    with Serve("--data-dir", str(tmp_path_factory.mktemp("systables")), "--synchronous", "OFF") as srv:
        srv.wait_listening()
        a, b = cluster(srv.port), cluster(srv.port)
        yield srv, (a, a.connect()), (b, b.connect())
        a.shutdown()
        b.shutdown()
        assert srv.stop() == 0


def test_size_estimates_count_the_partitions_written_through_the_driver(served, tmp_path):
    serve, (_, s), _ = served
    s.execute(KEYSPACE_DDL.format("sizes"))
    s.execute("CREATE TABLE sizes.t (k int PRIMARY KEY, v text)")
    insert = s.prepare("INSERT INTO sizes.t (k, v) VALUES (?, ?)")
    for k in range(300):
        s.execute(insert, (k, "v" * 50))
    found = list(s.execute("SELECT * FROM system.size_estimates WHERE keyspace_name = 'sizes' AND table_name = 't'"))
    ring = list(s.execute("SELECT start_token, end_token FROM system.token_ring WHERE keyspace_name = 'sizes'"))
    assert [(r.range_start, r.range_end) for r in found] == [(r.start_token, r.end_token) for r in ring]
    assert sum(r.partitions_count for r in found) == 300
    assert all(60 < r.mean_partition_size < 200 for r in found if r.partitions_count)
    home = tmp_path / "home"
    home.mkdir()
    status, out, err = run_cqlsh(serve.port, home, "-e", "DESC KEYSPACES; SELECT * FROM system.size_estimates "
                                 "WHERE keyspace_name = 'sizes'")
    assert (status, err) == (0, "")
    assert "sizes" in out and f"({len(found)} rows)" in out and "partitions_count" in out


def test_ddl_on_system_tables_is_unauthorized_but_the_memtable_flush_period_alone(served):
    _, (_, s), _ = served
    for ddl in ("ALTER TABLE system.compaction_history WITH comment = ''",
                "ALTER TABLE system.compaction_history WITH memtable_flush_period_in_ms = 80000 AND comment = ''",
                "DROP TABLE system.local"):
        with pytest.raises(Unauthorized, match="system keyspace is not user-modifiable."):
            s.execute(ddl)
    s.execute("ALTER TABLE system.compaction_history WITH memtable_flush_period_in_ms = 80000")  # a no-op
    with pytest.raises(ConfigurationException, match="memtable_flush_period_in_ms must be 0 or greater than 60000"):
        s.execute("ALTER TABLE system.compaction_history WITH memtable_flush_period_in_ms = 10")
    assert list(s.execute("SELECT * FROM system.compaction_history")) == []  # logtide never compacts


def test_the_view_behind_an_index_is_in_the_drivers_metadata_as_with_scylladb(served):
    _, (a, sa), (b, _) = served
    sa.execute(KEYSPACE_DDL.format("iv"))
    sa.execute("CREATE TABLE iv.t (p int, c int, v int, PRIMARY KEY (p, c))")
    wait_for(lambda: "t" in getattr(b.metadata.keyspaces.get("iv"), "tables", {}))
    sa.execute("CREATE INDEX ON iv.t (v)")
    # the CREATED TABLE event of iv.t_v_idx_index: both clients see the view, with the index on its table
    for c in (a, b):
        # two events (UPDATED TABLE iv.t, CREATED TABLE iv.t_v_idx_index), which the other client may follow apart
        wait_for(lambda c=c: "t_v_idx_index" in c.metadata.keyspaces["iv"].views
                 and "t_v_idx" in c.metadata.keyspaces["iv"].tables["t"].indexes)
        ks = c.metadata.keyspaces["iv"]
        assert list(ks.tables["t"].views) == ["t_v_idx_index"] and list(ks.tables["t"].indexes) == ["t_v_idx"]
        view = ks.views["t_v_idx_index"]
        assert (view.base_table_name, view.include_all_columns, view.where_clause) == ("t", False, "v IS NOT NULL")
        assert [col.name for col in view.partition_key] == ["v"]
        assert [col.name for col in view.clustering_key] == ["idx_token", "p", "c"]
    # the server's DESCRIBE (what cqlsh prints) has the index and not its view; the drivers' own export has both,
    # as it has against ScyllaDB
    described = "\n".join(r.create_statement for r in sa.execute("DESC KEYSPACE iv"))
    assert "CREATE INDEX t_v_idx ON iv.t(v)" in described and "MATERIALIZED VIEW" not in described
    assert "CREATE MATERIALIZED VIEW iv.t_v_idx_index" in a.metadata.keyspaces["iv"].export_as_string()
    sa.execute("DROP INDEX iv.t_v_idx")
    for c in (a, b):
        wait_for(lambda c=c: "t_v_idx_index" not in c.metadata.keyspaces["iv"].views
                 and not c.metadata.keyspaces["iv"].tables["t"].indexes)
        assert c.metadata.keyspaces["iv"].tables["t"].views == {}


def test_a_described_keyspace_with_an_index_restores_into_an_empty_keyspace(served):
    _, (_, s), _ = served
    s.execute(KEYSPACE_DDL.format("dumped"))
    s.execute("CREATE TABLE dumped.t (p int, c int, v int, PRIMARY KEY (p, c))")
    s.execute("CREATE INDEX ON dumped.t (v)")
    s.execute("CREATE MATERIALIZED VIEW dumped.mv AS SELECT * FROM dumped.t WHERE v IS NOT NULL AND p IS NOT NULL "
              "AND c IS NOT NULL PRIMARY KEY (v, p, c)")
    dump = [r.create_statement for r in s.execute("DESC KEYSPACE dumped")]
    before = sorted(r.view_name for r in s.execute("SELECT view_name FROM system_schema.views "
                                                   "WHERE keyspace_name = 'dumped'"))
    assert before == ["mv", "t_v_idx_index"]
    s.execute("DROP KEYSPACE dumped")
    for statement in dump:
        s.execute(statement)
    after = sorted(r.view_name for r in s.execute("SELECT view_name FROM system_schema.views "
                                                  "WHERE keyspace_name = 'dumped'"))
    assert after == before
    assert [r.create_statement for r in s.execute("DESC KEYSPACE dumped")] == dump
