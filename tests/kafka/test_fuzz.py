"""Malformed Kafka frames over many connections: the broker survives and a good consumer keeps reading.

Bounded and local: a fixed number of frames to a loopback broker from a
seeded generator, a few threads, no timing assertions.
"""

from __future__ import annotations

import logging
import random
import socket
import struct
import threading

from logtide.kafka.messages import APIS

from .clients import GroupConsumer
from .conftest import wait_for
from .rawclient import request_frame

FRAMES = 100_000
PER_CONNECTION = 400
THREADS = 4
SERVED = sorted(APIS)


def answered_frame(rnd: random.Random, cid: int) -> bytes:
    """A frame the broker answers with UNSUPPORTED_VERSION: an unknown API key or a version not served."""
    body = rnd.randbytes(rnd.randrange(0, 40))
    if rnd.random() < 0.5:
        key = rnd.choice([k for k in range(-5, 80) if k not in APIS])
        version = rnd.randrange(-3, 20)
    else:
        api = APIS[rnd.choice(SERVED)]
        key = api.key
        version = rnd.choice([api.max_version + 1 + rnd.randrange(0, 40), api.min_version - 1 - rnd.randrange(0, 5)])
    return request_frame(key, version, body, cid, client_id=rnd.choice([None, "", "fuzz", "é" * 30]))


def closing_frame(rnd: random.Random, topic: str) -> bytes:
    """A frame after which the broker may close the connection: a bad body, header or size, or a random Fetch."""
    kind = rnd.randrange(6)
    api = APIS[rnd.choice(SERVED)]
    version = rnd.randrange(api.min_version, api.max_version + 1)
    if kind == 0:  # garbage body for a served API
        return request_frame(api.key, version, rnd.randbytes(rnd.randrange(0, 200)))
    if kind == 1:  # a truncated header
        data = rnd.randbytes(rnd.randrange(0, 9))
        return struct.pack(">i", len(data)) + data
    if kind == 2:  # a size no frame may have
        return struct.pack(">i", rnd.choice([-1, -2**31, 2**31 - 1, 200 << 20]))
    if kind == 3:  # a body claiming huge arrays or strings
        return request_frame(api.key, version, b"\x7f\xff\xff\xff" * 8)
    if kind == 4:  # a Fetch with absurd partitions and offsets, no waiting
        body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": rnd.randrange(-5, 100),
                "topics": [{"topic": rnd.choice([topic, "x", ""]), "partitions": [
                    {"partition": rnd.randrange(-3, 5), "fetch_offset": rnd.randrange(-10, 10**12),
                     "partition_max_bytes": rnd.randrange(-5, 1 << 20)}]}]}
        return request_frame(1, 4, body)
    valid = request_frame(3, 1, {"topics": [{"name": topic}]})  # a valid request with bits flipped
    flipped = bytearray(valid)
    for _ in range(rnd.randrange(1, 4)):
        flipped[rnd.randrange(4, len(flipped))] ^= 1 << rnd.randrange(8)
    return bytes(flipped)


def hammer(host: str, port: int, seed: int, frames: int, topic: str, sent: list[int]) -> None:
    rnd = random.Random(seed)
    done = 0
    while done < frames:
        n = min(PER_CONNECTION, frames - done)
        batch = b"".join(answered_frame(rnd, i) for i in range(n - 1)) + closing_frame(rnd, topic)
        with socket.create_connection((host, port), timeout=60) as s:
            reader = threading.Thread(target=_drain, args=(s,), daemon=True)
            reader.start()
            try:
                s.sendall(batch)
                s.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the broker closed first: fine
            reader.join(60)
        done += n
    sent.append(done)


def _drain(s: socket.socket) -> None:
    try:
        while s.recv(1 << 16):
            pass
    except OSError:
        pass


def test_malformed_frames_break_nothing(broker, changefeeds, caplog):
    feed = changefeeds.make("JSON", partitions=2)
    for i in range(50):
        feed.write(i)
    good = GroupConsumer("kafka-python", broker.bootstrap, feed.topic, "steady").start()
    host, port = broker.broker.advertised
    sent: list[int] = []
    threads = [threading.Thread(target=hammer, args=(host, port, seed, FRAMES // THREADS, feed.topic, sent))
               for seed in range(THREADS)]
    for t in threads:
        t.start()
    i = 50
    while any(t.is_alive() for t in threads):
        feed.write(i)
        i += 1
        threads[0].join(0.05)
    for t in threads:
        t.join()
    assert sum(sent) >= FRAMES
    wait_for(lambda: {feed.row_id(r.key, r.value) for r in good.records} >= set(range(i)),
             what="the good consumer to read everything written during the fuzzing")
    good.stop()
    wait_for(lambda: broker.stats()["connections"] == 0, what="every fuzz connection to be closed")
    assert [r.getMessage() for r in caplog.records if r.name == "logtide.kafka" and r.levelno >= logging.ERROR] == []
