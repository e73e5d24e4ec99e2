"""Robustness: >= 100k malformed, truncated and random frames over many loopback connections.

The fuzzing client (``fuzz_client.py``, its own process) pipelines mangled
request bodies behind well-formed headers on handshaken v3/v4/v5 connections
and sends garbage, unsupported versions, bogus lengths and corrupt segments
on thousands of fresh ones.  Every frame gets an answer (ERROR or a
well-formed response) or the connection is closed; the server never dies,
logs no unexpected error, leaks no connection or task, and a well-behaved
cassandra-driver client working at the same time sees no error.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logtide.errors import ProtocolError
from logtide.server import messages as M
from logtide.server.frame import MAX_SEGMENT_PAYLOAD, Frame, FrameError, SegmentCodec

from .conftest import KEYSPACE_DDL, cluster
from .fuzz_client import FRAMES_PER_PIPELINED_CONNECTION, GARBAGE_CONNECTIONS, PIPELINED_CONNECTIONS, TIME_LIMIT

ROOT = Path(__file__).resolve().parents[2]


def test_fuzz_never_breaks_the_server(server, port, caplog):
    caplog.set_level(logging.ERROR, logger="logtide.server")
    c = cluster(port)
    session = c.connect()
    session.execute(KEYSPACE_DDL.format("fuzz_ok"))
    session.execute("CREATE TABLE fuzz_ok.t (k int PRIMARY KEY, v int)")
    insert = session.prepare("INSERT INTO fuzz_ok.t (k, v) VALUES (?, ?)")
    select = session.prepare("SELECT v FROM fuzz_ok.t WHERE k = ?")
    baseline = server.stats()["connections"]

    stop = threading.Event()
    good = {"ok": 0, "failed": []}

    def well_behaved() -> None:
        i = 0
        while not stop.is_set():
            try:
                session.execute(insert, (i % 100, i))
                assert session.execute(select, (i % 100,)).one().v == i
                good["ok"] += 1
            except Exception as e:  # recorded, asserted on below
                good["failed"].append(repr(e))
            i += 1

    client = threading.Thread(target=well_behaved)
    client.start()
    started = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "tests.server.fuzz_client", str(port)], cwd=ROOT,
                              capture_output=True, text=True, timeout=TIME_LIMIT + 30)
    finally:
        stop.set()
        client.join(30)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-3000:]
    tally = json.loads(done.stdout)

    assert tally["frames_sent"] >= 100_000
    assert tally["answers"] == PIPELINED_CONNECTIONS * FRAMES_PER_PIPELINED_CONNECTION
    assert tally["errors"] > tally["answers"] // 2
    assert tally["closed"] == tally["garbage_connections"] == GARBAGE_CONNECTIONS
    assert good["failed"] == [] and good["ok"] > 0, (good["failed"][:3], elapsed)

    deadline = time.monotonic() + 15
    stats = server.stats()
    while (stats["connections"] > baseline or stats["tasks"]) and time.monotonic() < deadline:
        time.sleep(0.1)
        stats = server.stats()
    assert stats["connections"] == baseline and stats["tasks"] == 0 and stats["queued"] == 0, stats
    assert session.execute(select, (1,)).one() is not None
    assert [r.getMessage() for r in caplog.records if r.name == "logtide.server"] == []
    print(f"fuzz: {tally['frames_sent']} frames, {tally['answers']} answers ({tally['errors']} errors), "
          f"{tally['closed']} garbage connections closed, {good['ok']} good requests, {elapsed:.1f}s")
    c.shutdown()


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(version=st.sampled_from([3, 4, 5]), flags=st.sampled_from([0, 0x02, 0x04, 0x10]),
       opcode=st.integers(0, 255), body=st.binary(max_size=200))
def test_decoding_any_body_raises_only_protocol_errors(version, flags, opcode, body):
    try:
        M.decode_request(Frame(version, flags, 0, opcode, body))
    except ProtocolError:
        pass


@settings(max_examples=500, deadline=None)
@given(data=st.binary(min_size=6, max_size=64))
def test_segment_headers_from_garbage_raise_frame_errors(data):
    codec = SegmentCodec()
    try:
        length, _, _ = codec.decode_header(data)
    except FrameError:
        return
    assert 0 <= length <= MAX_SEGMENT_PAYLOAD
