"""Before login a connection gets little: small frames, a deadline, a place among a capped number.

Each test runs a real ``logtide serve`` process with small limits, so the limits are reached quickly.
"""

from __future__ import annotations

import resource
import socket
import struct
import time
from pathlib import Path

import pytest
from cassandra.auth import PlainTextAuthProvider
from cassandra.protocol import AuthenticateMessage, AuthResponseMessage, ErrorMessage, QueryMessage, ReadyMessage

from .conftest import KEYSPACE_DDL, cluster
from .rawclient import HEADER, RawClient, ServerClosed, trickle
from .serveproc import Serve

AUTH_RESPONSE, STARTUP, QUERY = 0x0F, 0x01, 0x07
MIB = 1 << 20


def password_file(tmp_path: Path, password: str = "s3cret") -> str:
    path = tmp_path / "admin.password"
    path.write_text(password + "\n")
    return str(path)


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def sasl(user: str, password: str) -> bytes:
    return b"\x00" + user.encode() + b"\x00" + password.encode()


def test_unauthenticated_connections_cannot_hold_big_frames(tmp_path):
    """200 connections each announcing a 16 MiB frame before login: refused at the header, memory stays flat."""
    with Serve("--data-dir", str(tmp_path / "d"), "--synchronous", "OFF", "--auth", "--superuser", "admin",
               "--superuser-password-file", password_file(tmp_path)) as srv:
        port = srv.wait_listening()
        before = rss_bytes(srv.proc.pid)
        clients = []
        for i in range(200):
            c = RawClient(port, version=4, timeout=20)
            clients.append(c)
            if i % 2:  # a STARTUP frame announcing 16 MiB - 1 before anything else
                c.send_raw(HEADER.pack(4, 0, 0, STARTUP, 16 * MIB - 1) + b"\x00" * 65536)
            else:  # a proper STARTUP, then a nearly complete 16 MiB AUTH_RESPONSE
                assert isinstance(c.startup(), AuthenticateMessage)
                c.send_raw(HEADER.pack(4, 0, 1, AUTH_RESPONSE, 16 * MIB - 1) + b"\x00" * 65536)
        for c in clients:
            reply = c.recv()
            assert isinstance(reply, ErrorMessage) and reply.code == 0x000A, reply
            assert "too big" in reply.message and str(128 * 1024) in reply.message
            assert c.is_closed(10)
            c.close()
        growth = rss_bytes(srv.proc.pid) - before
        assert growth < 64 * MIB, f"server grew by {growth / MIB:.0f} MiB"
        # a real client still logs in and works; after login, large frames are allowed again
        c = cluster(port, auth_provider=PlainTextAuthProvider("admin", "s3cret"))
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("ks"))
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v blob)")
        s.execute("INSERT INTO ks.t (k, v) VALUES (1, %s)", (b"x" * (512 * 1024),))
        assert len(s.execute("SELECT v FROM ks.t WHERE k = 1").one().v) == 512 * 1024
        c.shutdown()
        srv.stop()


def test_connections_beyond_the_cap_are_closed_and_logged_once(tmp_path):
    with Serve("--data-dir", str(tmp_path / "d"), "--synchronous", "OFF", "--max-connections", "5") as srv:
        port = srv.wait_listening()
        held = [RawClient(port) for _ in range(5)]
        for c in held:
            assert isinstance(c.startup(), ReadyMessage)
        extra = [RawClient(port) for _ in range(10)]
        for c in extra:
            assert c.is_closed(10)
            c.close()
        # the sessions in place keep working, and a freed place is taken again
        reply = held[0].request(QueryMessage("SELECT release_version FROM system.local", 1))
        assert not isinstance(reply, ErrorMessage), reply
        held.pop().close()
        deadline = time.monotonic() + 10
        while True:
            c = RawClient(port)
            try:
                assert isinstance(c.startup(), ReadyMessage)
                break
            except (ServerClosed, ConnectionError):
                c.close()
                assert time.monotonic() < deadline, "a freed connection place was never reused"
                time.sleep(0.1)
        held.append(c)
        for c in held:
            c.close()
        srv.stop()
        refusals = [line for line in srv.output().splitlines() if "refusing connections" in line]
        assert len(refusals) == 1, srv.output()
        assert "Traceback" not in srv.output()


def test_connections_that_do_not_start_a_session_in_time_are_closed(tmp_path):
    """Silent connections, a slowloris STARTUP and a login left hanging all end at --auth-timeout."""
    with Serve("--data-dir", str(tmp_path / "d"), "--synchronous", "OFF", "--auth", "--superuser", "admin",
               "--superuser-password-file", password_file(tmp_path), "--auth-timeout", "1") as srv:
        # (the driver below sends its credentials within 1 s; checking them may take longer on a busy machine)
        port = srv.wait_listening()
        silent = RawClient(port)
        slow = RawClient(port)
        hanging = RawClient(port)
        assert isinstance(hanging.startup(), AuthenticateMessage)
        started = time.monotonic()
        trickle(slow.sock, slow.encode(AuthResponseMessage(b""), 0)[:12])  # any bytes: one at a time
        for c in (silent, slow, hanging):
            assert c.is_closed(10)
            c.close()
        assert time.monotonic() - started < 12
        # a prompt client is unaffected
        c = cluster(port, auth_provider=PlainTextAuthProvider("admin", "s3cret"))
        c.connect().execute("SELECT release_version FROM system.local")
        time.sleep(1.5)  # a logged-in session is not subject to the login deadline
        c.connect().execute("SELECT release_version FROM system.local")
        c.shutdown()
        srv.stop()
        assert "no session started within 1 s" in srv.output()
        assert "Traceback" not in srv.output()


def test_idle_sessions_are_closed_after_the_idle_timeout(tmp_path):
    with Serve("--data-dir", str(tmp_path / "d"), "--synchronous", "OFF", "--idle-timeout", "1") as srv:
        port = srv.wait_listening()
        idle = RawClient(port)
        busy = RawClient(port)
        assert isinstance(idle.startup(), ReadyMessage)
        assert isinstance(busy.startup(), ReadyMessage)
        for _ in range(6):  # 1.8 s of requests, 0.3 s apart: never idle for 1 s
            reply = busy.request(QueryMessage("SELECT release_version FROM system.local", 1))
            assert not isinstance(reply, ErrorMessage), reply
            time.sleep(0.3)
        assert idle.is_closed(10)
        assert isinstance(busy.request(QueryMessage("SELECT release_version FROM system.local", 1)), object)
        idle.close()
        busy.close()
        srv.stop()


def _limit_descriptors(n: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return apply


def test_running_out_of_file_descriptors_refuses_connections_and_keeps_storage_working(tmp_path):
    """With ``ulimit -n 160`` the server keeps descriptors for storage: sessions keep reading and
    writing while excess connections are refused, with one log line."""
    with Serve("--data-dir", str(tmp_path / "d"), "--synchronous", "OFF", "--workers", "4",
               preexec_fn=_limit_descriptors(160)) as srv:
        port = srv.wait_listening()
        c = cluster(port)
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("ks"))
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        flood = []
        for _ in range(200):
            try:
                flood.append(socket.create_connection(("127.0.0.1", port), timeout=10))
            except OSError:
                break
        time.sleep(0.5)
        for i in range(50):  # every worker thread opens its reader while the flood holds its connections
            s.execute("INSERT INTO ks.t (k, v) VALUES (%s, %s)", (i, i))
            assert s.execute("SELECT v FROM ks.t WHERE k = %s", (i,)).one().v == i
        open_ = 0
        for sock in flood:
            sock.settimeout(0.5)
            try:
                if sock.recv(1) == b"":
                    continue
            except (TimeoutError, socket.timeout):
                open_ += 1
            except OSError:
                continue
        assert 0 < open_ < 160
        for sock in flood:
            sock.close()
        c.shutdown()
        srv.stop()
        out = srv.output()
        assert len([line for line in out.splitlines() if "refusing connections" in line]) == 1, out
        assert "Traceback" not in out and "unable to open" not in out


def test_a_descriptor_limit_too_low_for_storage_is_a_startup_error(tmp_path):
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "logtide", "serve", "--port", "0", "--data-dir", str(tmp_path / "d")],
                          capture_output=True, text=True, timeout=60, preexec_fn=_limit_descriptors(64))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "open file limit" in lines[0], done.stderr


pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc for the server's RSS")
