"""A compressed frame is refused by the uncompressed length it declares, before it is inflated."""

from __future__ import annotations

import asyncio
import struct

import pytest

from logtide.server import compression as C
from logtide.server import frame as F

AVAILABLE = C.available()


def read_one(body: bytes, algorithm: str, max_body: int) -> F.Frame:
    async def go() -> F.Frame:
        reader = asyncio.StreamReader()
        reader.feed_data(F.HEADER.pack(4, 0x01, 1, 0x07, len(body)) + body)  # QUERY, compressed
        reader.feed_eof()
        frames = F.FrameReader(reader, max_body)
        frames.compression = AVAILABLE[algorithm]
        return await frames.read()
    return asyncio.run(go())


@pytest.mark.skipif("lz4" not in AVAILABLE, reason="lz4 is not installed")
def test_an_lz4_frame_declaring_more_than_the_cap_is_refused_unread():
    # 200 MiB declared, a few garbage bytes that would fail to decompress if they were tried
    body = struct.pack(">i", 200 * 1024 * 1024) + b"\xff\x00\xff"
    with pytest.raises(F.FrameError, match="Request is too big: length 209715200 exceeds maximum allowed length 131072"):
        read_one(body, "lz4", 128 * 1024)


@pytest.mark.skipif("snappy" not in AVAILABLE, reason="python-snappy is not installed")
def test_a_snappy_frame_declaring_more_than_the_cap_is_refused_unread():
    body = bytes([0x80, 0x80, 0x80, 0x64]) + b"\x00"  # varint 200 MiB, then garbage
    with pytest.raises(F.FrameError, match="Request is too big: length 209715200"):
        read_one(body, "snappy", 128 * 1024)


@pytest.mark.parametrize("algorithm", sorted(AVAILABLE))
def test_a_compressed_frame_within_the_cap_is_read(algorithm):
    body = AVAILABLE[algorithm].compress_body(b"x" * 1000)
    assert read_one(body, algorithm, 128 * 1024).body == b"x" * 1000
