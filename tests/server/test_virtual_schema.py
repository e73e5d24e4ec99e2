"""``system_virtual_schema`` as Cassandra 4.0 serves it, so the drivers' probe of it succeeds (#21 item 8).

cassandra-driver reads system_virtual_schema.keyspaces, .tables and .columns with every full schema refresh
(at connect, and on cluster.refresh_schema_metadata()); each failure used to count as a request error.
"""

from __future__ import annotations

import pytest

from ..ops.serving import free_port
from ..ops.test_metrics import samples
from .conftest import KEYSPACE_DDL, cluster, run_cqlsh
from .serveproc import Serve


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    """A real ``logtide serve`` with its metrics endpoint."""
    with Serve("--data-dir", str(tmp_path_factory.mktemp("virtual")), "--metrics-port", str(free_port())) as srv:
        srv.wait_listening()
        yield srv
        assert srv.stop() == 0


def errors(url: str) -> dict:
    return {k: v for k, v in samples(url).items() if k[0] == "logtide_cql_request_errors_total" and v}


def test_driver_connections_and_schema_refreshes_count_no_request_error(serve, tmp_path):
    c = cluster(serve.port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("v"))
    s.execute("CREATE TABLE v.t (pk int PRIMARY KEY, x int) WITH cdc = {'enabled': true}")
    c.refresh_schema_metadata()
    c.shutdown()
    home = tmp_path / "home"
    home.mkdir()
    assert run_cqlsh(serve.port, home, "-e", "SELECT pk FROM v.t")[0] == 0
    assert errors(serve.metrics_url) == {}
    before = samples(serve.metrics_url)[("logtide_cql_requests_total", (("kind", "QUERY"),))]
    assert before > 10  # the connections did query the server


def test_the_driver_lists_the_virtual_keyspace_as_virtual_and_the_others_as_before(serve):
    c = cluster(serve.port)
    c.connect()
    ks = c.metadata.keyspaces
    virtual = ks["system_virtual_schema"]
    assert virtual.virtual
    assert sorted(virtual.tables) == ["columns", "keyspaces", "tables"]
    columns = virtual.tables["columns"]
    assert columns.virtual
    assert [col.name for col in columns.primary_key] == ["keyspace_name", "table_name", "column_name"]
    assert columns.columns["position"].cql_type == "int"
    assert virtual.tables["tables"].options["comment"] == "virtual table definitions"
    assert not any(k.virtual for name, k in ks.items() if name != "system_virtual_schema")
    c.shutdown()


def test_system_schema_and_describe_do_not_list_the_virtual_keyspace(serve, tmp_path):
    c = cluster(serve.port)
    s = c.connect()
    listed = {r.keyspace_name for r in s.execute("SELECT keyspace_name FROM system_schema.keyspaces")}
    assert "system_virtual_schema" not in listed and {"system", "system_schema", "system_traces"} <= listed
    described = {r.keyspace_name for r in s.execute("DESCRIBE KEYSPACES")}
    assert "system_virtual_schema" not in described
    rows = list(s.execute("SELECT * FROM system_virtual_schema.tables"))
    assert [(r.keyspace_name, r.table_name) for r in rows] == [
        ("system_virtual_schema", "columns"), ("system_virtual_schema", "keyspaces"),
        ("system_virtual_schema", "tables")]
    c.shutdown()
    home = tmp_path / "home"
    home.mkdir()
    status, out, err = run_cqlsh(serve.port, home, "-e", "SELECT * FROM system_virtual_schema.keyspaces")
    assert (status, err) == (0, "")
    assert out == """
 keyspace_name
-----------------------
 system_virtual_schema

(1 rows)
"""


def test_the_virtual_keyspace_cannot_be_changed(serve):
    c = cluster(serve.port)
    s = c.connect()
    from cassandra import InvalidRequest
    with pytest.raises(InvalidRequest, match="System keyspace 'system_virtual_schema' is not user-modifiable"):
        s.execute("CREATE TABLE system_virtual_schema.x (k int PRIMARY KEY)")
    c.shutdown()
