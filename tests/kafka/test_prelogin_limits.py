"""The Kafka endpoint's defences, as the CQL port's (docs/kafka.md "Before login and limits"): small frames
before login, a login deadline, idle connections closed, one connection cap shared with the CQL port, and
no descriptors left handled without a traceback.

Each test runs a real ``logtide serve`` process (``--kafka-port auto``), most with small limits so that they
are reached quickly; ``ulimit -n`` is set in the child with ``setrlimit``.
"""

from __future__ import annotations

import os
import resource
import socket
import struct
import threading
import time
from pathlib import Path

import pytest
from cassandra.auth import PlainTextAuthProvider

from logtide.kafka import errors as E
from logtide.kafka.records import Record, encode_batch
from tests.server.conftest import cluster
from tests.server.rawclient import trickle

from .kafkaserve import ADMIN, ADMIN_PW, KafkaServe, auth_args, limit_descriptors, make_feed, rss_bytes
from .rawclient import RawClient, request_frame

MIB = 1 << 20
pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc for RSS and limits")


def produce_frame(topic: str, value_bytes: int) -> bytes:
    """A Produce v8 request carrying one record of ``value_bytes`` bytes."""
    batch = encode_batch([Record(0, 1, None, b"x" * value_bytes)])
    return request_frame(0, 8, {"transactional_id": None, "acks": 1, "timeout_ms": 1000,
                                "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]})


def test_frames_before_login_are_refused_from_their_size_and_memory_stays_flat(tmp_path):
    """With --auth, 150 connections each announcing a 100 MiB frame (Kafka's own limit) and three sending
    one: each is closed from the size prefix, the body never read; the server stays within 64 MiB of where
    it was.  After login, requests up to --kafka-max-request-bytes are read and answered."""
    with KafkaServe(tmp_path / "d", *auth_args(tmp_path)) as srv:
        port = srv.wait_listening()
        make_feed(port, auth=(ADMIN, ADMIN_PW))
        before = rss_bytes(srv.proc.pid)
        clients = []
        for i in range(150):
            c = RawClient("127.0.0.1", srv.kafka_port, timeout=20)
            clients.append(c)
            c.send(struct.pack(">i", 100 * MIB) + b"\0" * 65536)
        for c in clients:
            assert c.is_closed(10)
            c.close()
        senders = [RawClient("127.0.0.1", srv.kafka_port, timeout=20) for _ in range(3)]
        for c in senders:
            send_until_closed(c, struct.pack(">i", 100 * MIB) + b"\0" * (100 * MIB))
            assert c.is_closed(10)
            c.close()
        growth = rss_bytes(srv.proc.pid) - before
        assert growth < 64 * MIB, f"server grew by {growth / MIB:.0f} MiB"
        # a frame just over 128 KiB before login is refused too; the same request after login is answered
        c = RawClient("127.0.0.1", srv.kafka_port)
        send_until_closed(c, produce_frame("ks.t.feed", 200 << 10))
        assert c.is_closed(10)
        c.close()
        c = RawClient("127.0.0.1", srv.kafka_port)
        assert c.login(ADMIN, ADMIN_PW)["error_code"] == E.NONE
        for size in (200 << 10, 1 * MIB):  # a producer's default largest request fits: answered, not cut off
            c.send(produce_frame("ks.t.feed", size))
            part = c.decode(0, 8, answer_body(c))["responses"][0]["partition_responses"][0]
            assert part["error_code"] == E.POLICY_VIOLATION
        send_until_closed(c, produce_frame("ks.t.feed", 3 * MIB))  # past --kafka-max-request-bytes (2 MiB)
        assert c.is_closed(10)
        c.close()
        assert srv.stop() == 0
    out = srv.output()
    assert "over the 131072 allowed before login" in out and "after login (--kafka-max-request-bytes)" in out
    assert "Traceback" not in out


def send_until_closed(c: RawClient, data: bytes) -> None:
    """Send ``data``; the server may close the connection before it has all of it (the point)."""
    try:
        c.send(data)
    except OSError:
        pass


def answer_body(c: RawClient):
    """The next answer's body (after its correlation id)."""
    frame = c.recv_frame()
    assert frame is not None, "connection closed"
    from logtide.kafka.codec import Reader
    r = Reader(frame)
    r.int32()
    return r


def test_kafka_max_request_bytes_sets_the_limit_after_login(tmp_path):
    with KafkaServe(tmp_path / "d", "--kafka-max-request-bytes", str(4 * MIB)) as srv:
        port = srv.wait_listening()
        make_feed(port)
        c = RawClient("127.0.0.1", srv.kafka_port)
        c.send(produce_frame("ks.t.feed", 3 * MIB))  # no --auth: every connection is past login
        part = c.decode(0, 8, answer_body(c))["responses"][0]["partition_responses"][0]
        assert part["error_code"] == E.POLICY_VIOLATION
        send_until_closed(c, produce_frame("ks.t.feed", 5 * MIB))
        assert c.is_closed(10)
        c.close()
        assert srv.stop() == 0


def test_kafka_max_request_bytes_below_the_login_limit_is_a_startup_error(tmp_path):
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "logtide", "serve", "--port", "0", "--data-dir", str(tmp_path / "d"),
                           "--kafka-max-request-bytes", "1000"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "kafka_max_request_bytes must be between 131072 and 1073741824 (1 GiB), not 1000" in done.stderr


def test_connections_not_logged_in_in_time_are_closed(tmp_path):
    """Silent, slowloris (a SaslHandshake trickled byte by byte) and a login never finished all end at
    --auth-timeout; a logged-in connection is not subject to it."""
    with KafkaServe(tmp_path / "d", *auth_args(tmp_path), "--auth-timeout", "1") as srv:
        srv.wait_listening()
        logged_in = RawClient("127.0.0.1", srv.kafka_port)
        assert logged_in.login(ADMIN, ADMIN_PW)["error_code"] == E.NONE
        silent = RawClient("127.0.0.1", srv.kafka_port)
        slow = RawClient("127.0.0.1", srv.kafka_port)
        hanging = RawClient("127.0.0.1", srv.kafka_port)
        assert hanging.request(17, 1, {"mechanism": "PLAIN"})["error_code"] == E.NONE  # and nothing more
        started = time.monotonic()
        trickle(slow.sock, request_frame(17, 1, {"mechanism": "PLAIN"}))
        for c in (silent, slow, hanging):
            assert c.is_closed(10)
            c.close()
        assert time.monotonic() - started < 12
        assert logged_in.request(3, 1, {"topics": []})["topics"] == []  # still served after 1 s
        logged_in.close()
        assert srv.stop() == 0
    out = srv.output()
    assert "not logged in within 1 s (--auth-timeout)" in out and "Traceback" not in out


def test_idle_connections_are_closed_after_the_kafka_idle_timeout(tmp_path):
    """A connection with no request for --kafka-idle-timeout is closed (Kafka's connections.max.idle.ms);
    one sending requests is not, nor one waiting in a long-poll Fetch longer than the timeout."""
    with KafkaServe(tmp_path / "d", "--kafka-idle-timeout", "1") as srv:
        port = srv.wait_listening()
        make_feed(port)
        idle = RawClient("127.0.0.1", srv.kafka_port)
        busy = RawClient("127.0.0.1", srv.kafka_port)
        polling = RawClient("127.0.0.1", srv.kafka_port)
        assert idle.request(18, 0, {})["error_code"] == E.NONE
        fetch = {"replica_id": -1, "max_wait_ms": 2500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                 "topics": [{"topic": "ks.t.feed", "partitions": [
                     {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}
        answered: list[float] = []

        def long_poll() -> None:
            started = time.monotonic()
            polling.request(1, 4, fetch)  # nothing to read: waits 2.5 s
            answered.append(time.monotonic() - started)
        poller = threading.Thread(target=long_poll)
        poller.start()
        for _ in range(7):  # 2.1 s of requests, 0.3 s apart: never idle for 1 s
            assert busy.request(18, 0, {})["error_code"] == E.NONE
            time.sleep(0.3)
        poller.join(10)
        assert answered and answered[0] >= 2.4  # the wait ran its course
        assert idle.is_closed(5)
        assert busy.request(18, 0, {})["error_code"] == E.NONE
        for c in (idle, busy, polling):
            c.close()
        assert srv.stop() == 0
    assert "no request for 1 s (--kafka-idle-timeout)" in srv.output()


def test_one_cap_shared_with_the_cql_port_keeps_each_port_its_share(tmp_path):
    """--max-connections 20: a flood of Kafka connections gets 15 places, the CQL port keeps its quarter
    (and the other way round); refusals are logged once per port; freed places are taken again."""
    with KafkaServe(tmp_path / "d", "--max-connections", "20") as srv:
        port = srv.wait_listening()
        flood = [socket.create_connection(("127.0.0.1", srv.kafka_port), timeout=10) for _ in range(30)]
        kept = [s for s in flood if not refused(s)]
        assert len(kept) == 15, len(kept)
        c = cluster(port)  # the CQL port still takes sessions: its quarter of the cap is kept for it
        session = c.connect()
        assert session.execute("SELECT release_version FROM system.local").one() is not None
        more_cql = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(10)]
        # the driver holds at least 2 connections (control, pool): the CQL port has at most 3 places left
        assert sum(not refused(s) for s in more_cql) <= 3
        for s in flood + more_cql:
            s.close()
        c.shutdown()
        time.sleep(0.5)
        again = RawClient("127.0.0.1", srv.kafka_port)  # places are freed: a Kafka client gets in again
        assert again.request(18, 0, {})["error_code"] == E.NONE
        again.close()
        assert srv.stop() == 0
    out = srv.output()
    assert len([x for x in out.splitlines() if "refusing connections on the Kafka port" in x]) == 1, out
    assert len([x for x in out.splitlines() if "refusing connections on the CQL port" in x]) == 1, out
    assert "Traceback" not in out


def refused(s: socket.socket, wait: float = 0.5) -> bool:
    """True when the server closed ``s`` (refused it) within ``wait`` seconds."""
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except (TimeoutError, socket.timeout):
        return False
    except OSError:
        return True


def test_unauthenticated_kafka_connections_cannot_use_up_the_descriptors(tmp_path):
    """``ulimit -n 400`` with --auth: 400 idle unauthenticated Kafka connections (before, 380 used up every
    descriptor and the CQL port accepted nobody).  The excess is refused, the CQL port and storage keep
    working, a logged-in Kafka client reads, the flood ends at --auth-timeout and stopping is clean."""
    with KafkaServe(tmp_path / "d", *auth_args(tmp_path), "--auth-timeout", "3",
                    preexec_fn=limit_descriptors(400)) as srv:
        port = srv.wait_listening()
        make_feed(port, auth=(ADMIN, ADMIN_PW), rows=5)
        reader = RawClient("127.0.0.1", srv.kafka_port)
        assert reader.login(ADMIN, ADMIN_PW)["error_code"] == E.NONE
        flood = []
        for _ in range(400):
            try:
                flood.append(socket.create_connection(("127.0.0.1", srv.kafka_port), timeout=10))
            except OSError:
                break
        time.sleep(0.5)
        c = cluster(port, auth_provider=PlainTextAuthProvider(ADMIN, ADMIN_PW))
        s = c.connect()
        for i in range(20):  # writes and reads need descriptors for storage: they were kept
            s.execute("INSERT INTO ks.t (id, v) VALUES (%s, 'x')", (100 + i,))
            assert s.execute("SELECT v FROM ks.t WHERE id = %s", (100 + i,)).one().v == "x"
        fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
                 "topics": [{"topic": "ks.t.feed", "partitions": [
                     {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20} for p in (0, 1)]}]}
        parts = reader.request(1, 4, fetch)["responses"][0]["partitions"]
        assert sum(len(p["records"]) for p in parts) > 0 and all(p["error_code"] == 0 for p in parts)
        # the flood is refused past the Kafka port's share, and ends at the login deadline
        open_now = sum(not refused(x, 0.05) for x in flood)
        assert 0 < open_now < 400
        deadline = time.monotonic() + 15
        while sum(not refused(x, 0.01) for x in flood) and time.monotonic() < deadline:
            time.sleep(0.5)
        for x in flood:
            x.close()
        late = RawClient("127.0.0.1", srv.kafka_port)
        assert late.login(ADMIN, ADMIN_PW)["error_code"] == E.NONE
        late.close()
        reader.close()
        c.shutdown()
        assert srv.stop() == 0
    out = srv.output()
    assert len([x for x in out.splitlines() if "refusing connections on the Kafka port" in x]) == 1, out
    assert "Traceback" not in out and "unable to open" not in out and "cannot accept" not in out


def test_running_out_of_descriptors_pauses_accepting_logs_once_and_stops_cleanly(tmp_path):
    """When accept() itself fails for want of descriptors, each port logs it once a minute and retries a second
    later, with no traceback, also when the server stops (before: 1.55 million failed accepts a minute, and
    21,200 tracebacks at stop).  No port lets a client take every descriptor any more (each has a cap within the
    open file limit), so the test lowers the running server's limit to what it holds plus a few
    (``prlimit``), which the console/metrics port's idle connections then take."""
    from tests.ops.serving import free_port
    metrics = free_port()
    with KafkaServe(tmp_path / "d", "--metrics-port", str(metrics), preexec_fn=limit_descriptors(300)) as srv:
        port = srv.wait_listening()
        pid = srv.proc.pid
        held = len(os.listdir(f"/proc/{pid}/fd"))
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (held + 16, 300))
        hogs = []
        for _ in range(40):  # each idle HTTP connection holds a descriptor of the console/metrics port (cap 64)
            try:
                hogs.append(socket.create_connection(("127.0.0.1", metrics), timeout=5))
            except OSError:
                break
        time.sleep(1)
        waiting = []
        for p in (port, srv.kafka_port) * 3:  # queued in the backlog: accept() fails with EMFILE
            waiting.append(socket.create_connection(("127.0.0.1", p), timeout=5))
        time.sleep(3)
        for h in hogs:
            h.close()
        time.sleep(1.5)  # accepting resumes: the queued connections are served
        c = RawClient("127.0.0.1", srv.kafka_port)
        assert c.request(18, 0, {})["error_code"] == E.NONE
        c.close()
        cl = cluster(port)
        cl.connect().execute("SELECT release_version FROM system.local")
        cl.shutdown()
        for w in waiting:
            w.close()
        assert srv.stop() == 0
    out = srv.output()
    for name in ("CQL", "Kafka"):
        lines = [x for x in out.splitlines() if f"cannot accept new {name} connections: Too many open files" in x]
        assert len(lines) == 1, out
    assert "Traceback" not in out and "Exception in callback" not in out
