"""The native protocol's primitive notations: ``[short]``, ``[int]``, ``[string]``, ``[bytes]``, maps ...

``BodyReader`` reads them from a message body and raises ``ProtocolError``
(code 0x000A) on anything truncated or malformed; ``BodyWriter`` appends them
to a growing body.  Both follow ``doc/native_protocol_v4.spec`` section 3.
"""

from __future__ import annotations

import ipaddress
import struct
from typing import Iterable, Mapping

from logtide.errors import ProtocolError

_BYTE = struct.Struct(">B")
_SHORT = struct.Struct(">H")
_INT = struct.Struct(">i")
_UINT = struct.Struct(">I")
_LONG = struct.Struct(">q")

NULL = -1
UNSET = -2


class BodyReader:
    """Reads protocol notations from a message body, front to back."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int, what: str) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise ProtocolError(f"Not enough bytes to read {what}")
        chunk = self.data[self.pos:end]
        self.pos = end
        return bytes(chunk)

    def _unpack(self, st: struct.Struct, what: str) -> int:
        if self.pos + st.size > len(self.data):
            raise ProtocolError(f"Not enough bytes to read {what}")
        (v,) = st.unpack_from(self.data, self.pos)
        self.pos += st.size
        return v

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def byte(self) -> int:
        return self._unpack(_BYTE, "a byte")

    def short(self) -> int:
        """An unsigned 2-byte integer."""
        return self._unpack(_SHORT, "a short")

    def int(self) -> int:
        return self._unpack(_INT, "an int")

    def uint(self) -> int:
        return self._unpack(_UINT, "an unsigned int")

    def long(self) -> int:
        return self._unpack(_LONG, "a long")

    def string(self) -> str:
        """``[string]``: a short length then UTF-8."""
        return self._decode(self._take(self.short(), "a string"))

    def long_string(self) -> str:
        """``[long string]``: an int length then UTF-8."""
        n = self.int()
        if n < 0:
            raise ProtocolError(f"Invalid negative length {n} for a long string")
        return self._decode(self._take(n, "a long string"))

    def bytes(self) -> bytes | None:
        """``[bytes]``: an int length (negative: null) then the bytes."""
        n = self.int()
        if n < 0:
            return None
        return self._take(n, "bytes")

    def short_bytes(self) -> bytes:
        return self._take(self.short(), "short bytes")

    def value(self, allow_unset: bool) -> bytes | None | int:
        """``[value]``: bytes, ``None`` for null, or the int ``UNSET`` for an unset value."""
        n = self.int()
        if n >= 0:
            return self._take(n, "a value")
        if n == NULL:
            return None
        if n == UNSET and allow_unset:
            return UNSET
        raise ProtocolError(f"Invalid length {n} for a value")

    def values(self, count: int, allow_unset: bool) -> list[bytes | None | int]:
        """``count`` consecutive ``[value]``s (as ``value``), read in one tight loop."""
        data, pos, end = self.data, self.pos, len(self.data)
        unpack = _INT.unpack_from
        out: list[bytes | None | int] = []
        append = out.append
        for _ in range(count):
            if pos + 4 > end:
                self.pos = pos
                raise ProtocolError("Not enough bytes to read an int")
            (n,) = unpack(data, pos)
            pos += 4
            if n >= 0:
                if pos + n > end:
                    self.pos = pos
                    raise ProtocolError("Not enough bytes to read a value")
                append(bytes(data[pos:pos + n]))
                pos += n
            elif n == NULL:
                append(None)
            elif n == UNSET and allow_unset:
                append(UNSET)
            else:
                self.pos = pos
                raise ProtocolError(f"Invalid length {n} for a value")
        self.pos = pos
        return out

    def string_list(self) -> list[str]:
        return [self.string() for _ in range(self.short())]

    def string_map(self) -> dict[str, str]:
        out = {}
        for _ in range(self.short()):
            k = self.string()
            out[k] = self.string()
        return out

    def bytes_map(self) -> dict[str, bytes | None]:
        out = {}
        for _ in range(self.short()):
            k = self.string()
            out[k] = self.bytes()
        return out

    @staticmethod
    def _decode(raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError("Invalid UTF-8 in a string") from None


class BodyWriter:
    """Builds a message body from protocol notations."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    def byte(self, v: int) -> "BodyWriter":
        self.buf += _BYTE.pack(v)
        return self

    def short(self, v: int) -> "BodyWriter":
        self.buf += _SHORT.pack(v)
        return self

    def int(self, v: int) -> "BodyWriter":
        self.buf += _INT.pack(v)
        return self

    def long(self, v: int) -> "BodyWriter":
        self.buf += _LONG.pack(v)
        return self

    def raw(self, data: bytes) -> "BodyWriter":
        self.buf += data
        return self

    def string(self, s: str) -> "BodyWriter":
        raw = s.encode("utf-8")
        self.buf += _SHORT.pack(len(raw))
        self.buf += raw
        return self

    def long_string(self, s: str) -> "BodyWriter":
        raw = s.encode("utf-8")
        self.buf += _INT.pack(len(raw))
        self.buf += raw
        return self

    def bytes(self, b: bytes | None) -> "BodyWriter":
        if b is None:
            self.buf += _INT.pack(NULL)
        else:
            self.buf += _INT.pack(len(b))
            self.buf += b
        return self

    def short_bytes(self, b: bytes) -> "BodyWriter":
        self.buf += _SHORT.pack(len(b))
        self.buf += b
        return self

    def string_list(self, items: Iterable[str]) -> "BodyWriter":
        items = list(items)
        self.short(len(items))
        for s in items:
            self.string(s)
        return self

    def string_multimap(self, m: Mapping[str, Iterable[str]]) -> "BodyWriter":
        self.short(len(m))
        for k, vs in m.items():
            self.string(k)
            self.string_list(vs)
        return self

    def inet(self, address: str, port: int) -> "BodyWriter":
        """``[inet]``: address bytes with a one-byte length, then an int port."""
        packed = ipaddress.ip_address(address).packed
        self.byte(len(packed))
        self.raw(packed)
        return self.int(port)
