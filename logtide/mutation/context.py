"""What building a mutation needs besides the statement: its timestamp and clock (``WriteContext``), the
read-before-write (``RowReader``), list element keys (``ListKeys``) and a statement's ``USING`` attributes.

Cassandra's rules: ``USING TIMESTAMP`` and ``TTL`` (at most 20 years, ``Attributes.MAX_TTL``); lists are maps
keyed by timeuuids, appends taking increasing keys from the clock and prepends decreasing keys below every
earlier prepend.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from ..cql import ast
from ..errors import InvalidRequest
from ..query.restrictions import Evaluator
from ..schema import types as T
from ..schema.model import Column, Table
from .cells import NO_TTL, Cell
from .targets import KeyShape, KeyShapes, key_shape


MAX_TTL = 20 * 365 * 24 * 60 * 60  # Cassandra's Attributes.MAX_TTL
GREGORIAN_OFFSET = 0x01B21DD213814000  # 100 ns intervals from 1582-10-15 to 1970-01-01
PREPEND_EPOCH = 1262304000000 * 10_000  # 2010-01-01 in 100 ns units since 1970, as Cassandra's Lists


class ListKeys:
    """Timeuuid keys for list elements, as Cassandra/ScyllaDB generate them.

    Appends get increasing times from the clock; prepends get decreasing
    times mirrored around 2010-01-01 so that each prepend lands before all
    earlier ones.  The clock sequence is random per database, the node is
    ``000000000001``.
    """

    def __init__(self, clock_micros: Callable[[], int], clock_seq: int | None = None) -> None:
        import random
        self._clock = clock_micros
        self._seq = random.getrandbits(14) if clock_seq is None else clock_seq
        self._last_append = 0
        self._last_prepend = 1 << 62
        self._lock = threading.Lock()

    def _uuid(self, t100: int) -> bytes:
        t = t100 + GREGORIAN_OFFSET
        u = uuid.UUID(fields=(t & 0xFFFFFFFF, (t >> 32) & 0xFFFF, ((t >> 48) & 0x0FFF) | 0x1000,
                              ((self._seq >> 8) & 0x3F) | 0x80, self._seq & 0xFF, 1))
        return u.bytes

    def append(self, n: int) -> list[bytes]:
        with self._lock:
            base = max(self._clock() * 10, self._last_append + 1)
            self._last_append = base + n - 1
        return [self._uuid(base + i) for i in range(n)]

    def prepend(self, n: int) -> list[bytes]:
        with self._lock:
            base = min(2 * PREPEND_EPOCH - self._clock() * 10, self._last_prepend - n)
            self._last_prepend = base
        return [self._uuid(base + i) for i in range(n)]


class RowReader:
    """Reads the current state of a row before a write (lists by index/value, counters, conditions, images)."""

    def row(self, table: Table, pk: bytes, token: int, ck: bytes, static: bool) -> Any:
        """The live row (``query.read.LiveRow``), or the static row, as it is before the write; None if absent."""
        raise NotImplementedError

    def live_complex(self, table: Table, pk: bytes, token: int, ck: bytes, column: Column) -> list[tuple[bytes, Cell]]:
        raise NotImplementedError

    def live_cell(self, table: Table, pk: bytes, token: int, ck: bytes, column: Column) -> Cell | None:
        raise NotImplementedError


@dataclass
class WriteContext:
    """What building a mutation needs besides the statement."""

    timestamp: int
    now: int
    ev: Evaluator
    reader: RowReader
    list_keys: ListKeys
    shapes: KeyShapes | None = None  # the engine's WHERE shapes of write statements (``targets.KeyShapes``)

    def key_shape(self, stmt: Any, table: Table) -> KeyShape | None:
        """The :class:`~.targets.KeyShape` of a write's WHERE clause (None: ``query.restrictions.analyse`` it)."""
        return key_shape(table, stmt.where) if self.shapes is None else self.shapes.of(stmt, table)


@dataclass(frozen=True)
class Attributes:
    """A statement's resolved ``USING`` attributes."""

    timestamp: int
    ttl: int

    def cell(self, value: bytes | None, now: int) -> Cell:
        if value is None:
            return Cell(self.timestamp, None, NO_TTL, now)
        if self.ttl:
            return Cell(self.timestamp, value, self.ttl, now + self.ttl)
        return Cell(self.timestamp, value)


MIN_TIMESTAMP = -(2 ** 63) + 1


def resolve_attributes(using: ast.Using, table: Table, ctx: WriteContext, allow_ttl: bool = True) -> Attributes:
    """Timestamp and TTL of a statement (``USING``, else the batch timestamp and the table's default TTL)."""
    ts = ctx.timestamp
    if using.timestamp is not None:
        v = ctx.ev.value(using.timestamp, T.BIGINT, "[timestamp]")
        if v is None:
            raise InvalidRequest("Invalid null value of timestamp")
        if v is not T.UNSET:
            ts = int(v)
    if ts < MIN_TIMESTAMP:  # -2**63 marks "not deleted" (ScyllaDB's api::min_timestamp is one above it)
        raise InvalidRequest(f"Out of bound timestamp, must be in [{MIN_TIMESTAMP}, {2 ** 63 - 1}]")
    ttl = table.default_ttl
    if using.ttl is not None:
        if not allow_ttl:
            raise InvalidRequest("Unsupported TTL for DELETE statements")
        v = ctx.ev.value(using.ttl, T.INT, "[ttl]")
        if v is None:
            raise InvalidRequest("Invalid null value of TTL")
        if v is not T.UNSET:
            ttl = int(v)
            if ttl < 0:
                raise InvalidRequest(f"A TTL must be greater or equal to 0, but was {ttl}")
            if ttl > MAX_TTL:
                raise InvalidRequest(f"ttl is too large. requested ({ttl}) maximum ({MAX_TTL})")
    return Attributes(ts, ttl)
