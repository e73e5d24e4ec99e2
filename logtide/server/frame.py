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
READ_SIZE = 64 * 1024  # bytes taken from the stream at a time


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


def _crc24_step(crc: int) -> int:
    """Eight steps of the CRC24 shift register (one byte's worth), bit by bit."""
    for _ in range(8):
        crc <<= 1
        if crc & 0x1000000:
            crc ^= CRC24_POLY
    return crc


CRC24_TABLE = tuple(_crc24_step(i << 16) for i in range(256))


def crc24(value: int, length: int) -> int:
    """CRC24 of the ``length`` low bytes of ``value`` (little-endian), as the v5 segment header uses
    (python-driver's ``compute_crc24``), a byte at a time through a 256-entry table."""
    crc = CRC24_INIT
    table = CRC24_TABLE
    for _ in range(length):
        crc = ((crc << 8) & 0xFFFFFF) ^ table[((crc >> 16) ^ value) & 0xFF]
        value >>= 8
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

    ``version`` is fixed by the first frame; every later frame must carry it.  Bytes are read from the
    stream in chunks of up to ``READ_SIZE`` and frames are cut out of them without awaiting anything:
    ``next_buffered`` returns the next frame the bytes read so far hold whole, ``read`` waits for one.
    More is read only when no whole frame is buffered, so at most one frame (up to ``max_body``) and one
    chunk are held beyond what the stream itself buffers.
    """

    def __init__(self, reader: asyncio.StreamReader, max_body: int = DEFAULT_MAX_FRAME_BODY) -> None:
        self.reader = reader
        self.max_body = max_body
        self.version: int | None = None
        self.compression: Compression | None = None  # v3/v4 frame-body compression
        self.segments: SegmentCodec | None = None
        self._buffer = bytearray()  # bytes read from the stream, not yet cut into frames or segments
        self._pending = bytearray()  # v5: segment payloads not yet cut into frames
        self._segment: tuple[int, int] | None = None  # v5: (length, uncompressed) of a segment whose header is read

    async def read(self) -> Frame:
        """The next frame; raises FrameError (or IncompleteReadError at end of stream)."""
        while True:
            frame = self.next_buffered()
            if frame is not None:
                return frame
            data = await self.reader.read(READ_SIZE)
            if not data:
                raise asyncio.IncompleteReadError(bytes(self._buffer), None)
            self._buffer += data

    def buffered(self) -> int:
        """Bytes read from the stream and not yet cut into frames."""
        return len(self._buffer) + len(self._pending)

    def next_buffered(self) -> Frame | None:
        """The next frame if the bytes read so far hold all of it, else None; raises FrameError as soon as
        the bytes read show a frame (or segment) to be bad."""
        if self.segments is not None:
            return self._next_from_segments()
        buf = self._buffer
        if not buf:
            return None
        if self.version is None and buf[0] & 0x7F < 3:
            if len(buf) < LEGACY_HEADER.size:
                return None
            raise UnsupportedVersion(buf[0] & 0x7F, LEGACY_HEADER.unpack_from(buf)[2])
        cut = self._cut(buf)
        if cut is None:
            return None
        version, flags, stream, opcode, body = cut
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

    def _check_header(self, header: bytes | bytearray) -> tuple[int, int, int, int, int]:
        raw_version, flags, stream, opcode, length = HEADER.unpack_from(header)
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

    def _next_from_segments(self) -> Frame | None:
        codec = self.segments
        assert codec is not None
        buf = self._buffer
        while True:
            frame = self._frame_from_pending()
            if frame is not None:
                return frame
            if self._segment is None:
                head = codec.header_length + 3
                if len(buf) < head:
                    return None
                self._segment = codec.decode_header(bytes(buf[:head]))[:2]
                del buf[:head]
            length, uncompressed = self._segment
            if len(buf) < length + 4:
                return None
            payload, checksum = bytes(buf[:length]), bytes(buf[length:length + 4])
            del buf[:length + 4]
            self._segment = None
            self._pending += codec.decode_payload(payload, checksum, uncompressed)

    def _cut(self, buf: bytearray) -> tuple[int, int, int, int, bytes] | None:
        """The first frame's (version, flags, stream, opcode, body), removed from ``buf``; None while
        ``buf`` does not hold all of it (its header is checked as soon as it is there)."""
        if len(buf) < HEADER_SIZE:
            return None
        version, flags, stream, opcode, length = self._check_header(buf)
        end = HEADER_SIZE + length
        if len(buf) < end:
            return None
        body = bytes(buf[HEADER_SIZE:end])
        del buf[:end]
        return version, flags, stream, opcode, body

    def _frame_from_pending(self) -> Frame | None:
        cut = self._cut(self._pending)
        if cut is None:
            return None
        version, flags, stream, opcode, body = cut
        if flags & FLAG_COMPRESSED:
            raise FrameError("Frames inside v5 segments must not be compressed", stream)
        return Frame(version, flags, stream, opcode, body)
