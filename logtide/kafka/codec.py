"""The Kafka protocol's primitive types (Kafka protocol guide, "Protocol Primitive Types"; KIP-482 compact forms).

``Reader`` decodes from a bytes buffer and raises ``MalformedFrame`` on any
overrun or impossible length; ``Writer`` appends to a bytearray.  Compact
forms (unsigned varint lengths + 1) and tagged fields serve flexible versions.

A Reader never trusts a length: a string or bytes must fit in what remains
of the frame, an array of N elements must have at least N times the least
size of one element left, and every array element decoded is counted against
the reader's ``elements`` budget (``TooManyElements`` past it), so that a
small frame cannot make the broker build a huge request.
"""

from __future__ import annotations

import struct
import uuid

_I8, _I16, _U16, _I32, _I64, _U32, _F64 = (struct.Struct(f">{c}") for c in "bhHiqId")

UNLIMITED = 1 << 62
ZERO_UUID = uuid.UUID(int=0)


class MalformedFrame(ValueError):
    """A request that does not decode as the schema of its API key and version."""


class TooManyElements(MalformedFrame):
    """A request holding more array elements than the broker decodes in one request."""


class Reader:
    """Sequential decoder over ``buf[pos:end]``; ``elements`` is how many array elements it may still decode."""

    __slots__ = ("buf", "pos", "end", "elements")

    def __init__(self, buf: bytes, pos: int = 0, elements: int = UNLIMITED) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf)
        self.elements = elements

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > self.end:
            raise MalformedFrame(f"frame ends early: needs {n} bytes at {self.pos}, has {self.end - self.pos}")
        out = self.buf[self.pos:end]
        self.pos = end
        return out

    def _fixed(self, st: struct.Struct) -> int:
        end = self.pos + st.size
        if end > self.end:
            raise MalformedFrame(f"frame ends early at {self.pos}")
        (v,) = st.unpack_from(self.buf, self.pos)
        self.pos = end
        return v

    def int8(self) -> int:
        return self._fixed(_I8)

    def int16(self) -> int:
        return self._fixed(_I16)

    def uint16(self) -> int:
        return self._fixed(_U16)

    def int32(self) -> int:
        return self._fixed(_I32)

    def int64(self) -> int:
        return self._fixed(_I64)

    def uint32(self) -> int:
        return self._fixed(_U32)

    def float64(self) -> float:
        return self._fixed(_F64)

    def boolean(self) -> bool:
        return self.int8() != 0

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=bytes(self._take(16)))

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            if self.pos >= self.end:
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

    def array_length(self, nullable: bool = False, compact: bool = False, min_element: int = 1) -> int | None:
        """An array's element count, once its elements (``min_element`` bytes each at least) can fit in what
        remains and the reader's element budget allows them."""
        n = self.uvarint() - 1 if compact else self.int32()
        if n < 0:
            if nullable:
                return None
            raise MalformedFrame("null where an array is required")
        left = self.end - self.pos
        if n * min_element > left:
            raise MalformedFrame(f"array of {n} elements of at least {min_element} bytes in {left} bytes")
        if n > self.elements:
            raise TooManyElements(f"request has more array elements than the {self.elements} still allowed")
        self.elements -= n
        return n

    def skip_tagged_fields(self) -> None:
        n = self.uvarint()
        if n > self.end - self.pos:
            raise MalformedFrame(f"{n} tagged fields in {self.end - self.pos} bytes")
        for _ in range(n):
            self.uvarint()
            self._take(self.uvarint())

    def remaining(self) -> int:
        return self.end - self.pos


class Writer:
    """Appends encoded primitives to a bytearray."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def int8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def uint16(self, v: int) -> None:
        self.buf += _U16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def uint32(self, v: int) -> None:
        self.buf += _U32.pack(v)

    def float64(self, v: float) -> None:
        self.buf += _F64.pack(v)

    def boolean(self, v: bool) -> None:
        self.buf.append(1 if v else 0)

    def uuid(self, v: uuid.UUID | None) -> None:
        self.buf += (v or ZERO_UUID).bytes

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
