"""``system.clients``, ScyllaDB's virtual table of connected clients (docs/server.md): one row per CQL connection of
the running ``logtide serve``, with its address and port, its stage, what its driver said in STARTUP, its protocol
version and its role."""

from __future__ import annotations

import socket

import cassandra

from cassandra.auth import PlainTextAuthProvider

from .conftest import cluster
from .serveproc import Serve


def test_system_clients_lists_each_connection_with_its_stage_driver_and_role(tmp_path):
    (tmp_path / "pw").write_text("s3cret\n")
    with Serve("--data-dir", str(tmp_path / "d"), "--synchronous", "OFF", "--auth", "--superuser", "admin",
               "--superuser-password-file", str(tmp_path / "pw")) as srv:
        srv.wait_listening()
        pending = socket.create_connection(("127.0.0.1", srv.port))  # connected, no STARTUP yet
        c = cluster(srv.port, 4, auth_provider=PlainTextAuthProvider("admin", "s3cret"))
        s = c.connect()
        rows = list(s.execute("SELECT * FROM system.clients"))
        ready = [r for r in rows if r.connection_stage == "READY"]
        assert ready and all(r.username == "admin" and r.client_type == "cql" and r.protocol_version == 4
                             and "Python Driver" in r.driver_name and r.driver_version == cassandra.__version__
                             and r.address == "127.0.0.1"
                             and r.ssl_enabled is False and r.shard_id == 0 for r in ready)
        assert pending.getsockname()[1] in [r.port for r in rows if r.connection_stage == "ESTABLISHED"]
        assert [r.port for r in rows] == sorted(r.port for r in rows)
        ports = {r.port for r in ready}
        pending.close()
        c.shutdown()
        c = cluster(srv.port, 4, auth_provider=PlainTextAuthProvider("admin", "s3cret"))
        s = c.connect()
        left = {r.port for r in s.execute("SELECT port FROM system.clients")}
        assert not ports & left  # closed connections are gone
        c.shutdown()
