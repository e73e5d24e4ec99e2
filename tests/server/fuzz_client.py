"""The fuzzing client: ``python -m tests.server.fuzz_client PORT`` prints a JSON tally.

It runs in its own process so that its work does not compete for the GIL with
the server (in the test process) and the well-behaved driver client.
Loopback only; seeded; every loop is bounded in count and time.
"""

from __future__ import annotations

import asyncio
import io
import json
import random
import struct
import sys

from cassandra.segment import SegmentCodec

SEED = 20240601
PIPELINED_CONNECTIONS = 40
FRAMES_PER_PIPELINED_CONNECTION = 2_500  # 100k frames with a well-formed header and a mangled body
PIPELINE_DEPTH = 250
GARBAGE_CONNECTIONS = 2_000  # fresh connections sent garbage: ~12k more frames
TIME_LIMIT = 150.0

HEADER = struct.Struct(">BBhBi")
CONSISTENCY_ONE = struct.pack(">H", 1)


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">H", len(raw)) + raw


def _long_string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">i", len(raw)) + raw


TEMPLATES: list[tuple[int, bytes]] = [
    (0x05, b""),  # OPTIONS
    (0x07, _long_string("SELECT key, cluster_name FROM system.local") + CONSISTENCY_ONE + b"\x00"),
    (0x07, _long_string("SELECT k, v FROM fuzz_ok.t WHERE k = ?") + CONSISTENCY_ONE + b"\x01"
     + struct.pack(">H", 1) + struct.pack(">i", 4) + struct.pack(">i", 7)),
    (0x07, _long_string("SELECT * FROM system_schema.tables") + CONSISTENCY_ONE + b"\x04" + struct.pack(">i", 3)),
    (0x09, _long_string("SELECT v FROM fuzz_ok.t WHERE k = ?")),
    (0x0A, struct.pack(">H", 16) + bytes(16) + CONSISTENCY_ONE + b"\x00"),
    (0x0D, b"\x00" + struct.pack(">H", 1) + b"\x00" + _long_string("INSERT INTO fuzz_ok.nope (k) VALUES (1)")
     + struct.pack(">H", 0) + CONSISTENCY_ONE + b"\x00"),
    (0x0B, struct.pack(">H", 1) + _string("STATUS_CHANGE")),
    (0x01, struct.pack(">H", 1) + _string("CQL_VERSION") + _string("3.4.5")),
    (0x0F, struct.pack(">i", 5) + b"\x00a\x00b"),
]


def mangle(rng: random.Random, body: bytes) -> bytes:
    """A malformed variant of a valid body: truncated, bit-flipped, with bogus lengths, or random."""
    choice = rng.randrange(7)
    if choice == 0 and body:
        return body[: rng.randrange(len(body))]
    if choice == 1 and body:
        out = bytearray(body)
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        return bytes(out)
    if choice == 2:
        return rng.randbytes(rng.randrange(64))
    if choice == 3 and len(body) >= 4:
        bogus = rng.choice([0x7FFFFFFF, -3, -2, 0x10000, len(body) * 3])
        return struct.pack(">i", bogus) + body[4:]
    if choice == 4:
        return body + rng.randbytes(rng.randrange(1, 16))
    if choice == 5 and len(body) > 2:
        return body[:2] + b"\xff\xff" + body[4:]
    return body


def pipelined_frames(rng: random.Random, version: int, count: int) -> list[bytes]:
    frames = []
    for i in range(count):
        opcode, body = rng.choice(TEMPLATES)
        body = mangle(rng, body)
        if rng.random() < 0.15:
            opcode = rng.randrange(256)
        flags = 0x04 if rng.random() < 0.02 else 0  # a custom payload flag with no payload
        frames.append(HEADER.pack(version, flags, i % 30000, opcode, len(body)) + body)
    return frames


class Tally:
    def __init__(self) -> None:
        self.frames_sent = 0
        self.answers = 0
        self.errors = 0
        self.closed = 0
        self.garbage_connections = 0


async def read_frame(reader: asyncio.StreamReader, codec: SegmentCodec | None, buf: bytearray) -> tuple[int, int]:
    """(stream, opcode) of the next response frame."""
    if codec is None:
        head = await reader.readexactly(9)
        _, _, stream, opcode, length = HEADER.unpack(head)
        await reader.readexactly(length)
        return stream, opcode
    while True:
        if len(buf) >= 9:
            _, _, stream, opcode, length = HEADER.unpack(bytes(buf[:9]))
            if len(buf) >= 9 + length:
                del buf[:9 + length]
                return stream, opcode
        head = await reader.readexactly(codec.header_length_with_crc)
        header = codec.decode_header(io.BytesIO(head))
        rest = await reader.readexactly(header.payload_length + 4)
        buf += codec.decode(io.BytesIO(rest), header).payload


async def handshake(port: int, version: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, SegmentCodec | None]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = struct.pack(">H", 1) + _string("CQL_VERSION") + _string("3.4.5")
    writer.write(HEADER.pack(version, 0, 0, 0x01, len(body)) + body)
    head = await reader.readexactly(9)
    await reader.readexactly(HEADER.unpack(head)[4])
    assert head[4] == 0x02  # READY
    return reader, writer, SegmentCodec() if version >= 5 else None


async def pipelined_worker(port: int, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    version = rng.choice([3, 4, 5])
    reader, writer, codec = await handshake(port, version)
    buf = bytearray()
    frames = pipelined_frames(rng, version, FRAMES_PER_PIPELINED_CONNECTION)
    try:
        for start in range(0, len(frames), PIPELINE_DEPTH):
            chunk = frames[start:start + PIPELINE_DEPTH]
            data = b"".join(chunk)
            if codec is not None:
                out = io.BytesIO()
                for f in chunk:
                    codec.encode(out, f)
                data = out.getvalue()
            writer.write(data)
            tally.frames_sent += len(chunk)
            answered = 0
            while answered < len(chunk):
                stream, opcode = await asyncio.wait_for(read_frame(reader, codec, buf), 30)
                if stream == -1:
                    continue  # an event
                answered += 1
                tally.answers += 1
                tally.errors += opcode == 0x00
    finally:
        writer.close()


def garbage(rng: random.Random) -> tuple[bytes, int]:
    """Bytes for a fresh connection, and how many frames they pretend to hold."""
    kind = rng.randrange(6)
    if kind == 0:
        return rng.randbytes(rng.randrange(1, 300)), 1
    if kind == 1:  # unsupported versions
        v = rng.choice([0, 1, 2, 6, 0x41, 0x42, 0x83, 0xFF])
        return HEADER.pack(v, 0, 1, 0x05, 0), 1
    if kind == 2:  # a header promising more than is sent
        return HEADER.pack(4, 0, 1, 0x07, 1000) + rng.randbytes(rng.randrange(999)), 1
    if kind == 3:  # huge lengths, negative lengths
        return HEADER.pack(rng.choice([3, 4, 5]), 0, 1, 0x07, rng.choice([-1, -(2 ** 31), 2 ** 31 - 1])), 1
    if kind == 4:  # a burst of random frames with valid headers before STARTUP
        frames = [HEADER.pack(4, rng.randrange(256), rng.randrange(-5, 5), rng.randrange(256), n) + rng.randbytes(n)
                  for n in (rng.randrange(40) for _ in range(10))]
        return b"".join(frames), len(frames)
    return b"", 0  # connect and hang up at once


async def garbage_worker(port: int, seed: int, count: int, tally: Tally) -> None:
    rng = random.Random(seed)
    for _ in range(count):
        data, frames = garbage(rng)
        use_v5 = rng.random() < 0.2
        if use_v5:
            reader, writer, _ = await handshake(port, 5)
            data = rng.randbytes(rng.randrange(6, 200))  # not a valid segment
            frames = 1
        else:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(data)
        tally.frames_sent += frames
        tally.garbage_connections += 1
        if writer.can_write_eof():
            writer.write_eof()
        try:
            while await asyncio.wait_for(reader.read(65536), 30):
                pass
            tally.closed += 1
        except ConnectionError:
            tally.closed += 1
        finally:
            writer.close()


async def fuzz(port: int, tally: Tally) -> None:
    rng = random.Random(SEED)
    workers = [pipelined_worker(port, rng.randrange(2 ** 32), tally) for _ in range(PIPELINED_CONNECTIONS)]
    per = GARBAGE_CONNECTIONS // 20
    workers += [garbage_worker(port, rng.randrange(2 ** 32), per, tally) for _ in range(20)]
    await asyncio.wait_for(asyncio.gather(*workers), TIME_LIMIT)


if __name__ == "__main__":
    result = Tally()
    asyncio.run(fuzz(int(sys.argv[1]), result))
    print(json.dumps(vars(result)))
