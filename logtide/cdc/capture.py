"""Capturing a mutation: read the touched rows, derive log rows, route them to streams.

Runs inside the write transaction of the base mutation, under the database's
write lock, so the preimage read and the write are atomic: a preimage always
equals the row as it was immediately before the write (unlike ScyllaDB,
whose preimage read may race with concurrent writes; spec ``000``).
"""

from __future__ import annotations

import functools
import random
import struct
from typing import Callable

from ..errors import InvalidRequest
from ..mutation.cells import Liveness
from ..mutation.model import Mutation
from ..query.read import LiveRow
from ..schema.catalog import Catalog
from ..schema.model import Table
from ..storage.keys import cdc_token
from . import log_schema as L
from .log import LogAppend, LogRow, PreState, derive, log_update, touched_rows, upsert_timestamp
from ..schema.cdc_options import CdcOptions
from .streams import FUTURE_LIMIT_MICROS, Generation, Generations
from .upsert import UpsertTemplate

GREGORIAN_OFFSET = 0x01B21DD213814000
_TWO_U64 = struct.Struct(">QQ").pack
_COMPARABLE = struct.Struct(">BQQ").pack


class CdcTimeuuids:
    """``cdc$time`` values: the write timestamp in the time fields, random bits in the rest (spec 001)."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()

    def __call__(self, micros: int) -> bytes:
        t = micros * 10 + GREGORIAN_OFFSET
        msb = ((t & 0xFFFFFFFF) << 32) | (((t >> 32) & 0xFFFF) << 16) | 0x1000 | ((t >> 48) & 0x0FFF)
        return struct.pack(">QQ", msb, self._rng.getrandbits(64))

    def keyed(self, micros: int) -> tuple[bytes, bytes]:
        """The next value and its comparable key (``TIMEUUID.comparable`` of it: the 60-bit time, then the
        random half with each byte's top bit flipped), both made from the fields."""
        t = micros * 10 + GREGORIAN_OFFSET
        msb = ((t & 0xFFFFFFFF) << 32) | (((t >> 32) & 0xFFFF) << 16) | 0x1000 | ((t >> 48) & 0x0FFF)
        lsb = self._rng.getrandbits(64)
        return _TWO_U64(msb, lsb), _COMPARABLE(1, t & 0x0FFFFFFFFFFFFFFF, lsb ^ 0x8080808080808080)


@functools.lru_cache(maxsize=256)
def _options(items: tuple[tuple[str, str], ...]) -> CdcOptions:
    return CdcOptions.parse(dict(items))


def log_target(catalog: Catalog, base: Table) -> tuple[CdcOptions, Table] | None:
    """The CDC options and log table of a base table whose changes are logged (None if they are not)."""
    if base.cdc is None or base.cdc_base is not None:
        return None
    opts = _options(tuple(sorted(base.cdc.items())))
    if not opts.enabled:
        return None
    log = catalog.find_table(base.keyspace, L.log_name(base.name))
    return None if log is None else (opts, log)


class LogTargets:
    """:func:`log_target` of each table, looked up once per catalog (a schema change makes a new catalog), and
    the table's :class:`UpsertTemplate`, made once."""

    def __init__(self) -> None:
        self._catalog: Catalog | None = None
        self._targets: dict[int, tuple[Table, tuple[CdcOptions, Table] | None]] = {}
        self._templates: dict[int, UpsertTemplate] = {}
        self._generation: Generation | None = None
        self._streams: dict[int, tuple[bytes, int]] = {}

    def of(self, catalog: Catalog, base: Table) -> tuple[CdcOptions, Table] | None:
        if catalog is not self._catalog:
            self._catalog = catalog
            self._targets = {}
            self._templates = {}
        hit = self._targets.get(id(base))
        if hit is None or hit[0] is not base:
            hit = self._targets[id(base)] = (base, log_target(catalog, base))
        return hit[1]

    def template(self, base: Table, opts: CdcOptions, log: Table) -> UpsertTemplate:
        """The plain-upsert template of ``base`` (a table :meth:`of` gave ``opts`` and ``log`` for)."""
        t = self._templates.get(id(base))
        if t is None or t.base is not base or t.log is not log or t.opts is not opts:
            t = self._templates[id(base)] = UpsertTemplate(base, opts, log)
        return t

    def stream(self, generation: Generation, token: int) -> tuple[bytes, int]:
        """The stream of a partition token in ``generation`` (``Generation.stream_for``) and the stream's own
        token, kept per token while the generation is the same one (at most 65,536 tokens)."""
        if generation is not self._generation or len(self._streams) >= 0x10000:
            self._generation = generation
            self._streams = {}
        hit = self._streams.get(token)
        if hit is None:
            stream = generation.stream_for(token)
            hit = self._streams[token] = (stream, cdc_token(stream))
        return hit


def _values_of(row: LiveRow | None) -> tuple[dict[str, bytes | None], Liveness | None] | None:
    """A live row's atomic values and live marker, as ``TxnRowReader.values`` gives them."""
    if row is None:
        return None
    return {n: c.value for n, c in row.cells.items()}, row.marker if row.marker_live else None


def capture(mutation: Mutation, catalog: Catalog, generations: Generations, read_row: Callable,
            timeuuid: Callable[[int], bytes], now: int, now_micros: int,
            targets: LogTargets | None = None, read_values: Callable | None = None) -> list[LogAppend]:
    """The log partition updates for every CDC-enabled table that ``mutation`` writes.

    ``read_row(table, pk, token, ck, static)`` returns the live row before the write; ``targets`` keeps the
    tables' log targets between calls; ``read_values(table, pk, token, ck)``, when given, returns a clustered
    row's live values and live marker before the write without a row object (``TxnRowReader.values``), what
    the one pass for plain upserts reads (``cdc/upsert.py``).
    """
    out: list[LogAppend] = []
    for pu in list(mutation):
        base = pu.table
        if base.cdc is None:
            continue
        target = log_target(catalog, base) if targets is None else targets.of(catalog, base)
        if target is None:
            continue
        opts, log = target
        ts = upsert_timestamp(pu)
        if ts is not None and ts <= now_micros + FUTURE_LIMIT_MICROS:  # a plain upsert: one pass (cdc/upsert.py)
            template = UpsertTemplate(base, opts, log) if targets is None else targets.template(base, opts, log)
            if template.plain:
                before = {}
                if opts.preimage or opts.postimage:
                    for ck in pu.rows:
                        if read_values is not None:
                            before[ck] = read_values(base, pu.pk, pu.token, ck)
                        else:
                            before[ck] = _values_of(read_row(base, pu.pk, pu.token, ck, False))
                generation = generations.for_timestamp(ts)
                if targets is None:
                    stream = generation.stream_for(pu.token)
                    stream_token = cdc_token(stream)
                else:
                    stream, stream_token = targets.stream(generation, pu.token)
                append = template.append(pu, ts, before, stream, stream_token, timeuuid, now)
                if append is not None:
                    out.append(append)
                    continue
        pre = PreState()
        if opts.preimage or opts.postimage:
            static, cks = touched_rows(pu)
            if static:
                pre.static = read_row(base, pu.pk, pu.token, b"", True)
            for ck in cks:
                pre.rows[ck] = read_row(base, pu.pk, pu.token, ck, False)
        rows = derive(base, opts, pu, pre)
        if not rows:
            continue
        ts = rows[0].timestamp
        if ts == rows[-1].timestamp and ts <= now_micros + FUTURE_LIMIT_MICROS:  # one group (rows come in time
            stream = generations.for_timestamp(ts).stream_for(pu.token)  # order): one stream
            out.append(log_update(log, stream, rows, timeuuid, opts.ttl, now, cdc_token(stream)))
            continue
        by_stream: dict[bytes, list[LogRow]] = {}
        streams: dict[int, bytes] = {}
        for r in rows:
            stream = streams.get(r.timestamp)
            if stream is None:
                if r.timestamp > now_micros + FUTURE_LIMIT_MICROS:
                    raise InvalidRequest(
                        f"cdc: attempted to get a stream \"from the future\" ({r.timestamp}; current server time: "
                        f"{now_micros}). With CDC enabled, write timestamps may be at most "
                        f"{FUTURE_LIMIT_MICROS // 1_000_000} seconds ahead of the server's clock.")
                stream = streams[r.timestamp] = generations.for_timestamp(r.timestamp).stream_for(pu.token)
            by_stream.setdefault(stream, []).append(r)
        for stream, srows in by_stream.items():
            out.append(log_update(log, stream, srows, timeuuid, opts.ttl, now, cdc_token(stream)))
    return out
