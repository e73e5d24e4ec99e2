"""A bare Kafka-protocol client for tests: frames encoded with the broker's own generated message classes."""

from __future__ import annotations

import socket
import struct
from typing import Any

from logtide.kafka.codec import Reader, Writer
from logtide.kafka.messages import APIS, request_header_flexible, response_header_flexible


def request_frame(api_key: int, version: int, body: dict[str, Any] | bytes, correlation_id: int = 1,
                  client_id: str | None = "raw") -> bytes:
    w = Writer()
    w.int16(api_key)
    w.int16(version)
    w.int32(correlation_id)
    w.string(client_id)
    if request_header_flexible(api_key, version):
        w.no_tagged_fields()
    if isinstance(body, bytes):
        w.buf += body
    else:
        APIS[api_key].requests[version].encode(body, w)
    return struct.pack(">i", len(w.buf)) + bytes(w.buf)


class RawClient:
    """One connection; ``call`` sends a request and decodes the answer."""

    def __init__(self, host: str, port: int, timeout: float = 30) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self._cid = 0

    def send(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def recv_frame(self) -> bytes | None:
        head = self._recv_exactly(4)
        if head is None:
            return None
        (size,) = struct.unpack(">i", head)
        return self._recv_exactly(size)

    def _recv_exactly(self, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def call(self, api_key: int, version: int, body: dict[str, Any] | bytes) -> tuple[int, Reader]:
        self._cid += 1
        self.send(request_frame(api_key, version, body, self._cid))
        frame = self.recv_frame()
        assert frame is not None, "connection closed"
        r = Reader(frame)
        cid = r.int32()
        api = APIS.get(api_key)
        served = api is not None and api.min_version <= version <= api.max_version  # else UNSUPPORTED_VERSION
        if served and response_header_flexible(api_key, version):  # response header v1: tagged fields after the id
            r.skip_tagged_fields()
        return cid, r

    def decode(self, api_key: int, version: int, r: Reader) -> dict[str, Any]:
        return APIS[api_key].responses[version].decode(r)

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """Send a request and decode its answer."""
        _, r = self.call(api_key, version, body)
        return self.decode(api_key, version, r)

    def login(self, user: str, password: str) -> dict[str, Any]:
        """SASL/PLAIN: SaslHandshake v1, then SaslAuthenticate v1; the SaslAuthenticate answer."""
        assert self.request(17, 1, {"mechanism": "PLAIN"})["error_code"] == 0
        return self.request(36, 1, {"auth_bytes": f"\0{user}\0{password}".encode()})

    def is_closed(self, timeout: float) -> bool:
        """True when the server closes the connection within ``timeout`` seconds (what it sends is read and
        dropped)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                if not self.sock.recv(1 << 16):
                    return True
        except (TimeoutError, socket.timeout):
            return False
        except OSError:
            return True

    def close(self) -> None:
        self.sock.close()
