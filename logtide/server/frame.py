"""Native-protocol framing: v3/v4 frames, v5 frames inside checksummed segments.

A frame is a 9-byte header (version with the response bit 0x80, flags,
signed 2-byte stream id, opcode, 4-byte body length) and a body.  Protocol v5
wraps frames in *segments* once the connection is set up (after READY or
AUTHENTICATE): a 3-byte little-endian header (17-bit payload length,
self-contained bit; 5 bytes with an extra 17-bit uncompressed length when lz4
is on) protected by a CRC24, a payload of at most 128 KiB - 1 holding whole
frames or part of one large frame, and a CRC32 of the payload -- exactly as
python-driver's ``cassandra/segment.py`` does.
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from dataclasses import dataclass

from logtide.errors import ProtocolError

from .compression import Compression

SUPPORTED_VERSIONS = (3, 4, 5)
SUPPORTED_TEXT = "3/v3, 4/v4, 5/v5"
RESPONSE_BIT = 0x80

FLAG_COMPRESSED = 0x01
FLAG_TRACING = 0x02
FLAG_CUSTOM_PAYLOAD = 0x04
FLAG_WARNING = 0x08
FLAG_BETA = 0x10

HEADER = struct.Struct(">BBhBi")
HEADER_SIZE = HEADER.size  # 9
LEGACY_HEADER = struct.Struct(">BBbBi")  # v1/v2: one-byte stream id

CRC24_INIT = 0x875060
CRC24_POLY = 0x1974F0B
CRC32_INITIAL = zlib.crc32(b"\xfa\x2d\x55\xca")
MAX_SEGMENT_PAYLOAD = 128 * 1024 - 1
DEFAULT_MAX_FRAME_BODY = 16 * 1024 * 1024  # Cassandra 4.0: native_transport_max_frame_size_in_mb
DEFAULT_MAX_AUTH_FRAME_BODY = 128 * 1024  # Cassandra: native_transport_max_auth_message_size (before a session)


class FrameError(ProtocolError):
    """A frame that cannot be read; the connection is answered with ERROR and closed."""

    def __init__(self, message: str, stream: int = 0) -> None:
        super().__init__(message)
        self.stream = stream


class UnsupportedVersion(FrameError):
    """A frame whose protocol version this server does not speak."""

    def __init__(self, version: int, stream: int = 0) -> None:
        super().__init__(f"Invalid or unsupported protocol version ({version}); "
                         f"supported versions are ({SUPPORTED_TEXT})", stream)
        self.version = version


@dataclass(frozen=True)
class Frame:
    """One request frame, body already decompressed."""

    version: int
    flags: int
    stream: int
    opcode: int
    body: bytes


def encode_frame(version: int, flags: int, stream: int, opcode: int, body: bytes) -> bytes:
    """A response frame (the response bit is set here)."""
    return HEADER.pack(version | RESPONSE_BIT, flags, stream, opcode, len(body)) + body


def encode_legacy_error_frame(version: int, stream: int, body: bytes) -> bytes:
    """An ERROR frame with the v1/v2 8-byte header, readable by a client speaking that version."""
    return LEGACY_HEADER.pack(version | RESPONSE_BIT, 0, max(-128, min(127, stream)), 0x00, len(body)) + body


def crc24(value: int, length: int) -> int:
    """CRC24 of the ``length`` low bytes of ``value`` (little-endian), as the v5 segment header uses."""
    crc = CRC24_INIT
    for _ in range(length):
        crc ^= (value & 0xFF) << 16
        value >>= 8
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= CRC24_POLY
    return crc


def crc32(data: bytes) -> int:
    return zlib.crc32(data, CRC32_INITIAL)


class SegmentCodec:
    """Encodes and decodes v5 segments, optionally lz4-compressed."""

    def __init__(self, compression: Compression | None = None) -> None:
        self.compression = compression if compression is not None and compression.compress_block else None
        self.header_length = 5 if self.compression else 3

    def encode(self, message: bytes) -> bytes:
        """One or more segments carrying ``message`` (one or more whole frames)."""
        if len(message) <= MAX_SEGMENT_PAYLOAD:
            return self._segment(message, True)
        return b"".join(self._segment(message[i:i + MAX_SEGMENT_PAYLOAD], False)
                        for i in range(0, len(message), MAX_SEGMENT_PAYLOAD))

    def encode_frames(self, frames: list[bytes]) -> bytes:
        """Segments for several frames: whole frames packed into self-contained segments, a frame
        too large for one segment alone in a run of segments that are not self-contained."""
        out: list[bytes] = []
        batch: list[bytes] = []
        size = 0
        for f in frames:
            if size + len(f) > MAX_SEGMENT_PAYLOAD and batch:
                out.append(self._segment(b"".join(batch), True))
                batch, size = [], 0
            if len(f) > MAX_SEGMENT_PAYLOAD:
                out.append(self.encode(f))
            else:
                batch.append(f)
                size += len(f)
        if batch:
            out.append(self._segment(b"".join(batch), True))
        return b"".join(out)

    def _segment(self, payload: bytes, self_contained: bool) -> bytes:
        uncompressed_length = 0
        if self.compression is not None:
            packed = self.compression.compress_block(payload)  # type: ignore[misc]
            if len(packed) < len(payload):
                uncompressed_length = len(payload)
                payload = packed
        header = len(payload)
        offset = 17
        if self.compression is not None:
            header |= uncompressed_length << 17
            offset = 34
        if self_contained:
            header |= 1 << offset
        n = self.header_length
        return (header.to_bytes(n, "little") + crc24(header, n).to_bytes(3, "little")
                + payload + crc32(payload).to_bytes(4, "little"))

    def decode_header(self, data: bytes) -> tuple[int, int, bool]:
        """(payload length, uncompressed length or 0, self-contained) from header + CRC24 bytes."""
        n = self.header_length
        header = int.from_bytes(data[:n], "little")
        expected = int.from_bytes(data[n:n + 3], "little")
        if crc24(header, n) != expected:
            raise FrameError("CRC mismatch on segment header")
        length = header & MAX_SEGMENT_PAYLOAD
        header >>= 17
        uncompressed = 0
        if self.compression is not None:
            uncompressed = header & MAX_SEGMENT_PAYLOAD
            header >>= 17
        return length, uncompressed, bool(header & 1)

    def decode_payload(self, payload: bytes, checksum: bytes, uncompressed: int) -> bytes:
        if crc32(payload) != int.from_bytes(checksum, "little"):
            raise FrameError("CRC mismatch on segment payload")
        if uncompressed and self.compression is not None:
            return self.compression.decompress_block(payload, uncompressed)  # type: ignore[misc]
        return payload


class FrameReader:
    """Reads request frames from a stream: legacy frames first, segments once switched on.

    ``version`` is fixed by the first frame; every later frame must carry it.
    """

    def __init__(self, reader: asyncio.StreamReader, max_body: int = DEFAULT_MAX_FRAME_BODY) -> None:
        self.reader = reader
        self.max_body = max_body
        self.version: int | None = None
        self.compression: Compression | None = None  # v3/v4 frame-body compression
        self.segments: SegmentCodec | None = None
        self._pending = bytearray()

    async def read(self) -> Frame:
        """The next frame; raises FrameError (or IncompleteReadError at end of stream)."""
        if self.segments is not None:
            return await self._read_from_segments()
        if self.version is None:
            first = await self.reader.readexactly(1)
            version = first[0] & 0x7F
            if version < 3:
                rest = await self.reader.readexactly(LEGACY_HEADER.size - 1)
                raise UnsupportedVersion(version, LEGACY_HEADER.unpack(first + rest)[2])
            header = first + await self.reader.readexactly(HEADER_SIZE - 1)
        else:
            header = await self.reader.readexactly(HEADER_SIZE)
        version, flags, stream, opcode, length = self._check_header(header)
        body = await self.reader.readexactly(length) if length else b""
        if flags & FLAG_COMPRESSED:
            if self.compression is None:
                raise FrameError("Received a compressed frame but no compression was negotiated", stream)
            declared = self.compression.declared_size(body)
            if declared is not None and declared > self.max_body:  # refused before inflating it
                raise FrameError(f"Request is too big: length {declared} exceeds maximum allowed length "
                                 f"{self.max_body}.", stream)
            body = self.compression.decompress_body(body)
            if len(body) > self.max_body:
                raise FrameError(f"Request is too big: length {len(body)} exceeds maximum allowed length "
                                 f"{self.max_body}.", stream)
        return Frame(version, flags, stream, opcode, body)

    def _check_header(self, header: bytes) -> tuple[int, int, int, int, int]:
        raw_version, flags, stream, opcode, length = HEADER.unpack(header)
        version = raw_version & 0x7F
        if self.version is None:
            if version not in SUPPORTED_VERSIONS:
                raise UnsupportedVersion(version, stream)
            self.version = version
        elif version != self.version:
            raise FrameError(f"Invalid message version. Got {version} but previous messages on this "
                             f"connection had version {self.version}", stream)
        if raw_version & RESPONSE_BIT:
            raise FrameError("Invalid frame: the response bit is set on a request", stream)
        if length < 0:
            raise FrameError(f"Invalid frame body length {length}", stream)
        if length > self.max_body:
            raise FrameError(f"Request is too big: length {length} exceeds maximum allowed length "
                             f"{self.max_body}.", stream)
        return version, flags, stream, opcode, length

    async def _read_from_segments(self) -> Frame:
        codec = self.segments
        assert codec is not None
        while True:
            frame = self._frame_from_pending()
            if frame is not None:
                return frame
            head = await self.reader.readexactly(codec.header_length + 3)
            length, uncompressed, _ = codec.decode_header(head)
            payload = await self.reader.readexactly(length + 4)
            self._pending += codec.decode_payload(payload[:length], payload[length:], uncompressed)

    def _frame_from_pending(self) -> Frame | None:
        buf = self._pending
        if len(buf) < HEADER_SIZE:
            return None
        version, flags, stream, opcode, length = self._check_header(bytes(buf[:HEADER_SIZE]))
        end = HEADER_SIZE + length
        if len(buf) < end:
            return None
        body = bytes(buf[HEADER_SIZE:end])
        del buf[:end]
        if flags & FLAG_COMPRESSED:
            raise FrameError("Frames inside v5 segments must not be compressed", stream)
        return Frame(version, flags, stream, opcode, body)
