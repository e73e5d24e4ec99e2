"""A slow statement or a client that stops reading does not hold up other clients; stop is clean."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

import logtide
from logtide.server import BackgroundServer, ServerConfig

from .conftest import KEYSPACE_DDL, cluster

SLOW_MARKER = "/* slow */"


@pytest.fixture
def slow_server(tmp_path):
    """A server whose QUERYs containing SLOW_MARKER take 1.5 s (a stand-in for a long scan)."""
    db = logtide.open(tmp_path / "data", synchronous="OFF")
    srv = BackgroundServer(db, ServerConfig(port=0, workers=4), close_db=True).start()
    runner = srv.server.runner
    plain_query = runner.query

    def query(session, req, version):
        if SLOW_MARKER in req.query:
            time.sleep(1.5)
        return plain_query(session, req, version)

    runner.query = query
    yield srv
    srv.stop()


def test_slow_statement_does_not_stall_other_clients(slow_server):
    c = cluster(slow_server.port)
    s = c.connect()
    slow = s.execute_async(f"SELECT key FROM system.local {SLOW_MARKER}")
    slow_done: list[float] = []
    slow.add_callback(lambda _: slow_done.append(time.monotonic()))
    time.sleep(0.1)
    started = time.monotonic()
    for _ in range(20):
        assert s.execute("SELECT cluster_name FROM system.local").one().cluster_name == "logtide"
    fast_done = time.monotonic()
    assert fast_done - started < 1.0
    assert slow.result().one().key == "local"
    assert slow_done and slow_done[0] > fast_done  # the slow one was still running meanwhile
    c.shutdown()


def test_client_that_stops_reading_does_not_stall_others(slow_server):
    c = cluster(slow_server.port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("lazy"))
    s.execute("CREATE TABLE lazy.t (k int PRIMARY KEY, v text)")
    s.execute("INSERT INTO lazy.t (k, v) VALUES (1, %s)", ("x" * 60_000,))
    lazy = socket.create_connection(("127.0.0.1", slow_server.port))
    startup = struct.pack(">H", 1) + struct.pack(">H", 11) + b"CQL_VERSION" + struct.pack(">H", 5) + b"3.4.5"
    lazy.sendall(struct.pack(">BBhBi", 4, 0, 0, 0x01, len(startup)) + startup)
    text = b"SELECT v FROM lazy.t WHERE k = 1"
    body = struct.pack(">i", len(text)) + text + struct.pack(">HB", 1, 0)
    request = struct.pack(">BBhBi", 4, 0, 1, 0x07, len(body)) + body
    lazy.setblocking(False)
    sent = 0
    deadline = time.monotonic() + 5
    while sent < 2000 and time.monotonic() < deadline:  # ~120 MB of answers it never reads
        try:
            lazy.send(request)
            sent += 1
        except BlockingIOError:
            time.sleep(0.01)
    started = time.monotonic()
    for _ in range(20):
        assert len(s.execute("SELECT v FROM lazy.t WHERE k = 1").one().v) == 60_000
    assert time.monotonic() - started < 2.0
    stats = slow_server.stats()
    assert stats["connections"] >= 3
    lazy.close()
    deadline = time.monotonic() + 10
    while slow_server.stats()["connections"] > stats["connections"] - 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert slow_server.stats()["connections"] == stats["connections"] - 1
    c.shutdown()


def test_stop_lets_statements_in_flight_finish(slow_server):
    c = cluster(slow_server.port)
    s = c.connect()
    slow = s.execute_async(f"SELECT key FROM system.local {SLOW_MARKER}")
    time.sleep(0.2)
    stopper = threading.Thread(target=slow_server.stop)
    stopper.start()
    assert slow.result().one().key == "local"  # answered before the connection closed
    stopper.join(30)
    assert not stopper.is_alive()
    c.shutdown()
