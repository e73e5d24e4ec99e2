"""The server answers failures with the right CQL error code and a message a user understands, and a
repeated failure is logged once per interval, not once per statement."""

from __future__ import annotations

import pytest
from cassandra import WriteFailure

from ..diskfull import fill, small_disk  # noqa: F401 - small_disk is a fixture
from .conftest import KEYSPACE_DDL, cluster
from .serveproc import Serve


@pytest.mark.parametrize("protocol_version", [4, 5])
def test_full_disk_is_write_failure_logged_once(small_disk, protocol_version):
    with Serve("--data-dir", str(small_disk / "data")) as srv:
        port = srv.wait_listening()
        c = cluster(port, protocol_version=protocol_version)
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("ks"))
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
        s.execute("INSERT INTO ks.t (k, v) VALUES (1, 'kept')")
        insert = s.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        fill(small_disk / "filler")
        failed = 0
        for i in range(2, 150):
            try:
                s.execute(insert, (i, "x" * 4096))
            except WriteFailure as e:
                assert "disk is full" in str(e) and "nothing was applied" in str(e), e
                failed += 1
        assert failed > 100
        assert s.execute("SELECT v FROM ks.t WHERE k = 1").one().v == "kept"
        (small_disk / "filler").unlink()
        s.execute(insert, (1000, "after"))
        assert s.execute("SELECT v FROM ks.t WHERE k = 1000").one().v == "after"
        c.shutdown()
        srv.stop()
        out = srv.output()
        assert "Traceback" not in out
        assert len([line for line in out.splitlines() if "disk is full" in line]) == 1, out


def test_a_bug_is_server_error_logged_with_its_traceback_once(tmp_path, caplog):
    """Fault injection: a statement runner that raises a Python exception stands for a bug."""
    import logging

    from cassandra.protocol import ErrorMessage, QueryMessage, ReadyMessage

    import logtide
    from logtide.server import BackgroundServer, ServerConfig

    from .rawclient import RawClient

    db = logtide.open(tmp_path / "d", synchronous="OFF")
    with BackgroundServer(db, ServerConfig(port=0), close_db=True) as srv:
        def broken(*_args):
            raise ZeroDivisionError("division by zero")

        srv.server.runner.query = broken
        with caplog.at_level(logging.ERROR, logger="logtide.server"), RawClient(srv.port) as c:
            assert isinstance(c.startup(), ReadyMessage)
            for stream in range(1, 6):
                reply = c.request(QueryMessage("SELECT * FROM system.local", 1), stream)
                assert isinstance(reply, ErrorMessage) and reply.code == 0x0000, reply
                assert "Internal error in logtide (ZeroDivisionError: division by zero)" in reply.message
        records = [r for r in caplog.records if r.name == "logtide.server"]
        assert len(records) == 1 and records[0].exc_info is not None, records
