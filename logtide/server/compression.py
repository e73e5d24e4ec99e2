"""Frame body compression: lz4 and snappy, each only when its library is installed.

Protocol v3/v4 compress each frame body (flag 0x01): lz4 bodies start with the
uncompressed length as a big-endian int, snappy bodies are raw snappy.
Protocol v5 compresses whole segments with lz4 only (the uncompressed length
lives in the segment header), see ``frame.SegmentCodec``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

from logtide.errors import ProtocolError

MAX_UNCOMPRESSED = 256 * 1024 * 1024


@dataclass(frozen=True)
class Compression:
    """One algorithm: frame-body codecs and, for lz4, raw block codecs for v5 segments."""

    name: str
    compress_body: Callable[[bytes], bytes]
    decompress_body: Callable[[bytes], bytes]
    compress_block: Callable[[bytes], bytes] | None = None
    decompress_block: Callable[[bytes, int], bytes] | None = None
    # the uncompressed length a frame body declares (None if it declares none), read before decompressing
    # so that a small compressed frame cannot make the server inflate past its frame cap
    declared_size: Callable[[bytes], int | None] = lambda data: None


def _lz4_declared_size(data: bytes) -> int | None:
    """An lz4 frame body's uncompressed length: its big-endian int prefix."""
    return struct.unpack_from(">i", data)[0] if len(data) >= 4 else None


def _snappy_declared_size(data: bytes) -> int | None:
    """A snappy body's uncompressed length: the varint that starts it."""
    n = shift = 0
    for i, b in enumerate(data[:5]):
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n
        shift += 7
    return None


def _lz4() -> Compression | None:
    try:
        from lz4 import block
    except ImportError:
        return None

    def compress_body(data: bytes) -> bytes:
        return struct.pack(">i", len(data)) + block.compress(data, store_size=False)

    def decompress_body(data: bytes) -> bytes:
        if len(data) < 4:
            raise ProtocolError("Truncated lz4-compressed body")
        (n,) = struct.unpack_from(">i", data)
        if n < 0 or n > MAX_UNCOMPRESSED:
            raise ProtocolError(f"Invalid uncompressed length {n} in lz4-compressed body")
        return decompress_block(data[4:], n)

    def compress_block(data: bytes) -> bytes:
        return block.compress(data, store_size=False)

    def decompress_block(data: bytes, size: int) -> bytes:
        try:
            out = block.decompress(data, uncompressed_size=size)
        except Exception as e:  # lz4.block.LZ4BlockError and friends
            raise ProtocolError(f"Invalid lz4-compressed data: {e}") from None
        if len(out) != size:
            raise ProtocolError("Invalid lz4-compressed data: wrong uncompressed length")
        return out

    return Compression("lz4", compress_body, decompress_body, compress_block, decompress_block, _lz4_declared_size)


def _snappy() -> Compression | None:
    try:
        import snappy
    except ImportError:
        return None
    if not hasattr(snappy, "compress") or not hasattr(snappy, "decompress"):
        return None

    def decompress_body(data: bytes) -> bytes:
        try:
            return bytes(snappy.decompress(data))
        except Exception as e:  # snappy.UncompressError and friends
            raise ProtocolError(f"Invalid snappy-compressed data: {e}") from None

    return Compression("snappy", lambda d: bytes(snappy.compress(d)), decompress_body,
                       declared_size=_snappy_declared_size)


def available() -> dict[str, Compression]:
    """The algorithms whose libraries are installed, lz4 first (drivers prefer the first)."""
    out = {}
    for make in (_lz4, _snappy):
        c = make()
        if c is not None:
            out[c.name] = c
    return out
