"""The Kafka protocol's primitive types (Kafka protocol guide, "Protocol Primitive Types").

``Reader`` decodes from a bytes buffer and raises ``MalformedFrame`` on any
overrun or impossible length; ``Writer`` appends to a bytearray.  Compact
forms (unsigned varint lengths + 1) and tagged fields serve flexible versions.
"""

from __future__ import annotations

import struct

_I8, _I16, _I32, _I64, _U32 = (struct.Struct(f">{c}") for c in "bhiqI")


class MalformedFrame(ValueError):
    """A request that does not decode as the schema of its API key and version."""


class Reader:
    """Sequential decoder over one frame."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf = buf
        self.pos = pos

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise MalformedFrame(f"frame ends early: needs {n} bytes at {self.pos}, has {len(self.buf) - self.pos}")
        out = self.buf[self.pos:end]
        self.pos = end
        return out

    def _fixed(self, st: struct.Struct) -> int:
        end = self.pos + st.size
        if end > len(self.buf):
            raise MalformedFrame(f"frame ends early at {self.pos}")
        (v,) = st.unpack_from(self.buf, self.pos)
        self.pos = end
        return v

    def int8(self) -> int:
        return self._fixed(_I8)

    def int16(self) -> int:
        return self._fixed(_I16)

    def int32(self) -> int:
        return self._fixed(_I32)

    def int64(self) -> int:
        return self._fixed(_I64)

    def uint32(self) -> int:
        return self._fixed(_U32)

    def boolean(self) -> bool:
        return self.int8() != 0

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            if self.pos >= len(self.buf):
                raise MalformedFrame("frame ends inside a varint")
            b = self.buf[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise MalformedFrame("varint longer than 10 bytes")

    def varint(self) -> int:
        v = self.uvarint()
        return (v >> 1) ^ -(v & 1)

    def string(self, nullable: bool = False, compact: bool = False) -> str | None:
        n = self.uvarint() - 1 if compact else self.int16()
        if n < 0:
            if nullable:
                return None
            raise MalformedFrame("null where a string is required")
        raw = self._take(n)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedFrame("string is not UTF-8") from None

    def bytes_(self, nullable: bool = False, compact: bool = False) -> bytes | None:
        n = self.uvarint() - 1 if compact else self.int32()
        if n < 0:
            if nullable:
                return None
            raise MalformedFrame("null where bytes are required")
        return bytes(self._take(n))

    def array_length(self, nullable: bool = False, compact: bool = False) -> int | None:
        n = self.uvarint() - 1 if compact else self.int32()
        if n < 0:
            if nullable:
                return None
            raise MalformedFrame("null where an array is required")
        if n > len(self.buf) - self.pos:  # every element takes at least one byte
            raise MalformedFrame(f"array of {n} elements in {len(self.buf) - self.pos} bytes")
        return n

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())

    def remaining(self) -> int:
        return len(self.buf) - self.pos


class Writer:
    """Appends encoded primitives to a bytearray."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def int8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def uint32(self, v: int) -> None:
        self.buf += _U32.pack(v)

    def boolean(self, v: bool) -> None:
        self.buf.append(1 if v else 0)

    def uvarint(self, v: int) -> None:
        self.buf += encode_uvarint(v)

    def varint(self, v: int) -> None:
        self.buf += encode_varint(v)

    def string(self, v: str | None, compact: bool = False) -> None:
        if v is None:
            self.uvarint(0) if compact else self.int16(-1)
            return
        raw = v.encode("utf-8")
        self.uvarint(len(raw) + 1) if compact else self.int16(len(raw))
        self.buf += raw

    def bytes_(self, v: bytes | None, compact: bool = False) -> None:
        if v is None:
            self.uvarint(0) if compact else self.int32(-1)
            return
        self.uvarint(len(v) + 1) if compact else self.int32(len(v))
        self.buf += v

    def array_length(self, n: int | None, compact: bool = False) -> None:
        if n is None:
            self.uvarint(0) if compact else self.int32(-1)
        else:
            self.uvarint(n + 1) if compact else self.int32(n)

    def no_tagged_fields(self) -> None:
        self.buf.append(0)


def encode_uvarint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_varint(v: int) -> bytes:
    """Zig-zag varint (varlong for 64-bit values)."""
    return encode_uvarint((v << 1) ^ (v >> 63))
