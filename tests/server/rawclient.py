"""A minimal blocking protocol client built on cassandra-driver's own message codecs.

Requests are encoded and responses decoded by ``cassandra.protocol`` and v5
segments by ``cassandra.segment``, so these tests check the server against
an independent implementation of the protocol, frame by frame.
"""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from cassandra.protocol import ProtocolHandler, StartupMessage
from cassandra.segment import SegmentCodec

HEADER = struct.Struct(">BBhBi")


def trickle(sock: socket.socket, data: bytes, gap: float = 0.25) -> None:
    """Send ``data`` one byte every ``gap`` seconds (a slowloris), until it is sent or the server closes."""
    import time

    for i in range(len(data)):
        try:
            sock.sendall(data[i:i + 1])
        except OSError:
            return
        time.sleep(gap)


class ServerClosed(Exception):
    """The server closed the connection."""


class RawClient:
    """One connection speaking ``version``; ``segmented`` switches on after READY/AUTHENTICATE in v5."""

    def __init__(self, port: int, version: int = 4, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.version = version
        self.codec: SegmentCodec | None = None
        self._frames = bytearray()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RawClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- sending --------------------------------------------------------------
    def encode(self, msg: Any, stream: int = 0, version: int | None = None) -> bytes:
        return ProtocolHandler.encode_message(msg, stream, version or self.version, None, False)

    def send_raw(self, data: bytes) -> None:
        """Send bytes as they are (wrapped in a segment when segmented)."""
        if self.codec is not None:
            buf = io.BytesIO()
            self.codec.encode(buf, data)
            data = buf.getvalue()
        self.sock.sendall(data)

    def send(self, msg: Any, stream: int = 0) -> None:
        self.send_raw(self.encode(msg, stream))

    # -- receiving ------------------------------------------------------------
    def _read_exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ServerClosed()
            out += chunk
        return bytes(out)

    def _fill(self) -> None:
        """Read one more segment into the frame buffer."""
        assert self.codec is not None
        head = self._read_exact(self.codec.header_length_with_crc)
        header = self.codec.decode_header(io.BytesIO(head))
        rest = self._read_exact(header.payload_length + 4)
        self._frames += self.codec.decode(io.BytesIO(rest), header).payload

    def recv_frame(self) -> tuple[int, int, int, int, bytes]:
        """(version byte, flags, stream, opcode, body) of the next frame."""
        if self.codec is None:
            head = self._read_exact(9)
            version, flags, stream, opcode, length = HEADER.unpack(head)
            return version, flags, stream, opcode, self._read_exact(length)
        while len(self._frames) < 9:
            self._fill()
        version, flags, stream, opcode, length = HEADER.unpack(bytes(self._frames[:9]))
        while len(self._frames) < 9 + length:
            self._fill()
        body = bytes(self._frames[9:9 + length])
        del self._frames[:9 + length]
        return version, flags, stream, opcode, body

    def recv(self, result_metadata: Any = None) -> Any:
        """The next response, decoded by cassandra-driver."""
        version, flags, stream, opcode, body = self.recv_frame()
        return ProtocolHandler.decode_message(version & 0x7F, {}, stream, flags, opcode, body, None, result_metadata)

    def request(self, msg: Any, stream: int = 0, result_metadata: Any = None) -> Any:
        self.send(msg, stream)
        return self.recv(result_metadata)

    def startup(self, options: dict[str, str] | None = None) -> Any:
        """STARTUP; switch to segments after the answer in v5."""
        reply = self.request(StartupMessage(cqlversion="3.4.5", options=options or {}))
        if self.version >= 5:
            self.codec = SegmentCodec()
        return reply

    def is_closed(self, timeout: float = 5.0) -> bool:
        """Whether the server closes the connection (EOF) within ``timeout``, after any pending output."""
        self.sock.settimeout(timeout)
        try:
            while True:
                if not self.sock.recv(65536):
                    return True
        except (socket.timeout, TimeoutError):
            return False
        except OSError:
            return True
