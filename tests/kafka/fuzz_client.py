"""The Kafka fuzzing client: ``python -m tests.kafka.fuzz_client HOST PORT SECONDS SEED USER PASSWORD`` prints
a JSON tally.

It runs in its own process, so that its work does not compete for the GIL with the test's well-behaved
client.  Loopback only; seeded; bounded in time (``SECONDS``) and in concurrency (``TASKS`` connections
at a time).  Each connection does one of: random bytes; a truncated frame; a huge or negative declared
size; frames of random API keys and versions with random bodies; valid requests with bits flipped;
SaslAuthenticate with made-up PLAIN tokens; or, logged in as ``USER`` with SCRAM-SHA-256, random frames of
served APIs (so that the decoders behind the login are fuzzed too; SCRAM rather than PLAIN because its
proof costs the server an HMAC, not an scrypt hash: a login is not what is measured).
"""

from __future__ import annotations

import asyncio
import json
import random
import struct
import sys
import time

from logtide.kafka.messages import APIS

from .test_scram import client_final

TASKS = 24
CONNECTION_SECONDS = 2.0  # a connection is given up after this long whatever happens
SERVED = sorted(APIS)


def frame(api_key: int, version: int, cid: int, body: bytes, client_id: bytes | None = b"fuzz") -> bytes:
    head = struct.pack(">hhi", api_key, version, cid)
    head += struct.pack(">h", -1) if client_id is None else struct.pack(">h", len(client_id)) + client_id
    return struct.pack(">i", len(head) + len(body)) + head + body


def kafka_string(s: bytes) -> bytes:
    return struct.pack(">h", len(s)) + s


def random_api_frame(rng: random.Random, cid: int, served_only: bool = False) -> bytes:
    if served_only or rng.random() < 0.6:
        api = APIS[rng.choice(SERVED)]
        version = rng.randrange(api.min_version, api.max_version + 1)
        key = api.key
    else:
        key, version = rng.randrange(-10, 100), rng.randrange(-5, 30)
    body = rng.randbytes(rng.choice([0, 1, 4, 16, 64, 300, 2000]))
    if rng.random() < 0.3:  # lengths that claim far more than the frame holds
        body = struct.pack(">i", rng.choice([2**31 - 1, 1 << 20, -2])) * rng.randrange(1, 8) + body
    return frame(key, version, cid, body, rng.choice([None, b"", b"fuzz", b"\xff\xfe" * 40]))


def flipped_metadata(rng: random.Random, cid: int) -> bytes:
    data = bytearray(frame(3, 1, cid, struct.pack(">i", 1) + kafka_string(b"ks.t.feed")))
    for _ in range(rng.randrange(1, 4)):
        data[rng.randrange(4, len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def sasl_plain(user: bytes, password: bytes, cid: int) -> bytes:
    """SaslHandshake v1 PLAIN, then SaslAuthenticate v1 with the token."""
    token = b"\0" + user + b"\0" + password
    return frame(17, 1, cid, kafka_string(b"PLAIN")) + frame(36, 1, cid + 1, struct.pack(">i", len(token)) + token)


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


async def scram_login(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, user: str, password: str,
                      nonce: str) -> None:
    """SaslHandshake v1 SCRAM-SHA-256, then the two SaslAuthenticate v1 steps (RFC 5802)."""
    first_bare = f"n={user},r={nonce}"
    first = ("n,," + first_bare).encode()
    writer.write(frame(17, 1, 1, kafka_string(b"SCRAM-SHA-256"))
                 + frame(36, 1, 2, struct.pack(">i", len(first)) + first))
    await read_frame(reader)
    answer = await read_frame(reader)
    pos = 4 + 2  # correlation id, error code
    (n,) = struct.unpack_from(">h", answer, pos)
    pos += 2 + max(n, 0)
    (n,) = struct.unpack_from(">i", answer, pos)
    server_first = answer[pos + 4:pos + 4 + n].decode()
    final, _ = client_final(password, first_bare, server_first)
    writer.write(frame(36, 1, 3, struct.pack(">i", len(final)) + final.encode()))
    await read_frame(reader)


async def drain(reader: asyncio.StreamReader, tally: dict[str, int]) -> None:
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                return
            tally["bytes_answered"] += len(data)
    except (ConnectionError, OSError):
        return


async def one_connection(host: str, port: int, rng: random.Random, user: bytes, password: bytes,
                         tally: dict[str, int]) -> None:
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        tally["refused"] += 1
        return
    tally["connections"] += 1
    kind = rng.randrange(7)
    if kind == 6:
        try:
            await asyncio.wait_for(scram_login(reader, writer, user.decode(), password.decode(),
                                               rng.randbytes(12).hex()), CONNECTION_SECONDS)
            tally["logins"] += 1
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError, struct.error):
            writer.transport.abort()
            return
    drainer = asyncio.ensure_future(drain(reader, tally))
    try:
        if kind == 0:  # random bytes
            writer.write(rng.randbytes(rng.randrange(1, 3000)))
            tally["frames"] += 1
        elif kind == 1:  # a truncated frame: the size says more than comes
            f = random_api_frame(rng, 1)
            writer.write(f[: rng.randrange(1, len(f))])
            tally["frames"] += 1
        elif kind == 2:  # a huge or negative declared size, and some bytes
            writer.write(struct.pack(">i", rng.choice([2**31 - 1, 100 << 20, 3 << 20, -1, -2**31]))
                         + rng.randbytes(rng.randrange(0, 5000)))
            tally["frames"] += 1
        elif kind == 3:  # random API keys and versions with random bodies, pipelined
            n = rng.randrange(1, 40)
            writer.write(b"".join(random_api_frame(rng, i) for i in range(n)))
            tally["frames"] += n
        elif kind == 4:  # a valid request with bits flipped
            writer.write(flipped_metadata(rng, 1))
            tally["frames"] += 1
        elif kind == 5:  # made-up credentials
            writer.write(sasl_plain(rng.randbytes(8).hex().encode(), rng.randbytes(8), 1))
            tally["frames"] += 2
        else:  # logged in (above), then random frames of served APIs
            n = rng.randrange(1, 40)
            writer.write(b"".join(random_api_frame(rng, 10 + i, served_only=True) for i in range(n)))
            tally["frames"] += n
        await asyncio.wait_for(writer.drain(), CONNECTION_SECONDS)
        await asyncio.wait_for(asyncio.shield(drainer), rng.uniform(0.05, CONNECTION_SECONDS))
    except (asyncio.TimeoutError, ConnectionError, OSError):
        pass
    finally:
        drainer.cancel()
        writer.transport.abort()


async def main(host: str, port: int, seconds: float, seed: int, user: str, password: str) -> dict[str, int]:
    tally = {"connections": 0, "refused": 0, "frames": 0, "logins": 0, "bytes_answered": 0}
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds

    async def worker(n: int) -> None:
        wrng = random.Random(rng.random() + n)
        while time.monotonic() < deadline:
            await one_connection(host, port, wrng, user.encode(), password.encode(), tally)

    await asyncio.gather(*(worker(n) for n in range(TASKS)))
    return tally


if __name__ == "__main__":
    h, p, secs, s, u, pw = sys.argv[1:7]
    print(json.dumps(asyncio.run(main(h, int(p), float(secs), int(s), u, pw))))
