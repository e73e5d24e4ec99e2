"""The CDC log rows of a mutation, from the preimages of the rows it touches: derive them, route them to streams.

Pure: the capture stage (``engine/capture.py``) reads the touched rows' preimages inside the write
transaction of the base mutation, under the database's write lock, and hands them here with the time;
so a preimage always equals the row as it was immediately before the write (unlike ScyllaDB, whose
preimage read may race with concurrent writes; spec ``000``).  Postimages are derived from the
preimage and the mutation (spec ``000``: "equal to the full preimage with the delta applied"), never
read after the write.
"""

from __future__ import annotations

import functools
import random
import struct
from typing import Callable, Mapping

from ..errors import InvalidRequest
from ..mutation.images import RowKey, StoredRow, live
from ..mutation.model import Mutation, PartitionUpdate
from ..query.read import live_values
from ..schema.catalog import Catalog
from ..schema.model import Table
from ..storage.keys import cdc_token
from . import log_schema as L
from .log import derive, touched_rows
from .log_rows import LogAppend, LogRow, log_update
from .row_state import PreState
from ..schema.cdc_options import CdcOptions
from .streams import FUTURE_LIMIT_MICROS, Generation, Generations
from .upsert import UpsertTemplate, upsert_timestamp

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


def preimage_rows(pu: PartitionUpdate, catalog: Catalog, targets: LogTargets | None = None) -> bool:
    """Whether the CDC log of ``pu``'s table needs the preimages of the rows ``pu`` touches
    (``cdc.log.touched_rows``): the table's changes are logged with a preimage or a postimage."""
    base = pu.table
    if base.cdc is None:
        return False
    target = log_target(catalog, base) if targets is None else targets.of(catalog, base)
    return target is not None and (target[0].preimage or target[0].postimage)


def log_appends(mutation: Mutation, preimages: Mapping[RowKey, StoredRow | None], catalog: Catalog,
                generations: Generations, timeuuid: Callable[[int], bytes], now: int, now_micros: int,
                targets: LogTargets | None = None) -> list[LogAppend]:
    """The log partition updates for every CDC-enabled table that ``mutation`` writes.

    ``preimages`` holds the stored state before the write of each row ``cdc.log.touched_rows`` names, for
    the tables :func:`preimage_rows` says need them (the capture stage's ``TouchedRows.before``); ``now``
    (seconds) decides what of them is live, ``now_micros`` (the server's clock) which write timestamps are
    too far in the future; ``targets`` keeps the tables' log targets between calls.
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
        images = opts.preimage or opts.postimage
        tid = base.store_id
        ts = upsert_timestamp(pu)
        if ts is not None and ts <= now_micros + FUTURE_LIMIT_MICROS:  # a plain upsert: one pass (cdc/upsert.py)
            template = UpsertTemplate(base, opts, log) if targets is None else targets.template(base, opts, log)
            if template.plain:
                before = {}
                if images:
                    pk = pu.pk
                    plan = template.before_plan(pu)
                    for ck in pu.rows:
                        s = preimages[(tid, pk, ck, False)]
                        before[ck] = None if s is None else live_values(base, s[0], s[1], now, plan)
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
        if images:
            static, cks = touched_rows(pu)
            pk, key = pu.pk, pu.key
            if static:
                pre.static = live(base, preimages[(tid, pk, b"", True)], key, b"", True, now)
            for ck in cks:
                pre.rows[ck] = live(base, preimages[(tid, pk, ck, False)], key, ck, False, now)
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
