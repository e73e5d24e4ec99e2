"""A plain upsert's CDC log rows, derived and encoded in one pass (docs/performance.md, "The cost of each CDC
option, by kind of write"; its history in docs/performance-history.md, "One pass for a plain upsert's log rows").

The commonest CDC write, clustered rows upserted with cells of one timestamp and no TTL, elements added to
or removed from their collections and UDTs (:func:`upsert_timestamp`, spec ``000``, ``001`` and ``002``), goes
from the written cells and the rows' live values before the write (each collection as its image in the log,
``UpsertTemplate.before_plan``) straight to the stored bytes of its log rows.  Each row's record (``storage/records.py``, kind ``U``: ``[clustering, [timestamp, ttl, ldt],
{column: value}]`` in MessagePack, sealed by ``storage/envelope.py``) is joined from parts: the column
names, ``cdc$deleted_X`` and ``cdc$operation`` entries encoded once per table (:class:`UpsertTemplate`),
the ``cdc$time`` value and the liveness once per write, each value once per write.  No dict and no
``LogRow`` is made per log row.  The bytes are exactly those of ``log_update`` of the derivation's rows
(``tests/cdc/test_log_fast_path.py`` compares them on random writes under every CDC option).  Every other
update takes ``cdc.log.Derivation`` and ``cdc.log_rows.log_update``.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any, Callable

import msgspec

from ..mutation.model import PartitionUpdate
from ..schema import types as T
from ..query.read import complex_plan, liveness_plan
from ..schema.model import Column, Table
from ..storage.envelope import CHECKSUM, key_checksum, record_head
from ..storage.records import UNIFORM_ROW
from . import log_schema as L
from .log_values import appended_elements, frozen_elements, frozen_keys, image_elements, merged_elements
from .log_rows import INSERT, OPERATION_BYTES, POSTIMAGE, PREIMAGE, TRUE, UPDATE, LogAppend
from ..schema.cdc_options import CdcOptions

_ENCODE = msgspec.msgpack.Encoder().encode  # the encoder records.py uses: parts made with it are its bytes
_crc32 = zlib.crc32
_CRC = CHECKSUM
_BIN8 = tuple(bytes((0xC4, n)) for n in range(256))
_MAP_HEADS = tuple(bytes((0x80 | n,)) for n in range(16))
_BIN_LONG = (b"\xc5", b"\xc6")  # bin 16, bin 32
_MAP_LONG = (b"\xde", b"\xdf")  # map 16, map 32
SEQS = 1024  # cdc$batch_seq_no values made at import (a 100-statement batch in one partition has 300 log rows)
_SEQS = tuple((_ENCODE(struct.pack(">i", s)), T.INT.comparable(struct.pack(">i", s))) for s in range(SEQS))


def upsert_timestamp(pu: PartitionUpdate) -> int | None:
    """The one timestamp of a plain upsert: clustered rows with cells of one timestamp and no TTL (a row
    marker of that timestamp and no TTL allowed), no deletion or static row; a non-frozen collection or UDT
    only added to or removed from (no collection tombstone, no TTL), and then in no row with a row marker
    (ScyllaDB splits an INSERT's collection cells into an update of their own, ``split_order``).  None for
    any other update."""
    if pu.deletion is not None or pu.range_deletions or pu.static is not None or not pu.rows:
        return None
    ts: int | None = None
    markers = collections = False
    for row in pu.rows.values():
        if row.deletion is not None:
            return None
        m = row.marker
        if m is not None:
            if m.ttl != 0 or (ts is not None and m.timestamp != ts):
                return None
            ts = m.timestamp
            markers = True
        elif not row.cells and not row.complex:
            return None
        for cell in row.cells.values():
            if (ts is not None and cell.timestamp != ts) or (cell.ttl != 0 and cell.value is not None):
                return None
            ts = cell.timestamp
        for col in row.complex.values():
            if col.deletion is not None or not col.cells:
                return None
            collections = True
            for cell in col.cells.values():
                if (ts is not None and cell.timestamp != ts) or (cell.ttl != 0 and cell.value is not None):
                    return None
                ts = cell.timestamp
    if markers and collections:
        return None
    return ts


def _long_head(n: int, markers: tuple[bytes, bytes]) -> bytes:
    """The MessagePack header of a ``bin`` of ``n`` bytes past 255 (``_BIN_LONG``), or of a map of ``n``
    entries past 15 (``_MAP_LONG``): the smallest form, as msgspec writes it.  (The short forms are
    ``_BIN8[n]`` and ``_MAP_HEADS[n]``, looked up inline.)"""
    if n < 0x10000:
        return markers[0] + n.to_bytes(2, "big")
    return markers[1] + n.to_bytes(4, "big")


def _seq(seq: int) -> tuple[bytes, bytes]:
    """``cdc$batch_seq_no`` as encoded in a record's clustering, and as its comparable key."""
    if seq < SEQS:
        return _SEQS[seq]
    raw = struct.pack(">i", seq)
    return _ENCODE(raw), T.INT.comparable(raw)


class UpsertTemplate:
    """The parts of a base table's plain-upsert log rows that do not depend on the write, encoded once per
    table, CDC options and log table (kept by ``cdc.capture.LogTargets``)."""

    def __init__(self, base: Table, opts: CdcOptions, log: Table) -> None:
        self.base = base
        self.opts = opts
        self.log = log
        self.pk_names = tuple(_ENCODE(c.name) for c in base.partition_key)
        self.ck_names = tuple(_ENCODE(c.name) for c in base.clustering_key)
        deleted_true = _ENCODE(TRUE)
        # name -> (encoded name, the encoded entry cdc$deleted_<name>: true)
        self.columns = {c.name: (_ENCODE(c.name), _ENCODE(L.DELETED + c.name) + deleted_true)
                        for c in base.regular_columns}
        self.regular = tuple((c.name, *self.columns[c.name]) for c in base.regular_columns)
        op = _ENCODE(L.OPERATION)
        self.ops = tuple(op + _ENCODE(b) for b in OPERATION_BYTES)
        self.end_of_batch = _ENCODE(L.END_OF_BATCH) + deleted_true
        self.head = record_head(UNIFORM_ROW) + b"\x93\x92"  # the record's kind; [clustering, ...], [cdc$time, ...]
        self.time_comparable = log.clustering_key[0].type.comparable
        # the columns a write this pass serves may set: the atomic regular ones (a change of a non-frozen
        # collection or UDT is a complex cell, which ``upsert_timestamp`` already sends the general way)
        self.atomic = frozenset(c.name for c in base.regular_columns if not c.type.is_multicell)
        # each non-frozen collection or UDT as its image in the log, by which ``query.read.live_values`` reads the
        # values before a write; and the plan of a preimage that holds only the written columns
        self.image_plan = complex_plan(base, lists_by_key=True)
        self.liveness_plan = liveness_plan(self.image_plan)
        self.written_only = opts.preimage and not opts.full_preimage and not opts.postimage
        # a non-frozen collection or UDT: (its type, the type its image decodes by, the encoded name of its
        # cdc$deleted_elements_ column, its elements' order key)
        self.complex = {c.name: (c.type, self.image_plan[c.name][0].type, _ENCODE(L.DELETED_ELEMENTS + c.name),
                                 self.image_plan[c.name][1])
                        for c in base.regular_columns if c.type.is_multicell}
        # a table this pass serves: none with a column named like a log column (whose entry would then stand
        # twice in a row's map)
        self.plain = not any(c.name.startswith("cdc$") for c in base.columns)

    def before_plan(self, pu: PartitionUpdate) -> dict[str, tuple[Column | None, Any]]:
        """The plan by which ``query.read.live_values`` reads the rows of ``pu`` before the write: every
        collection's and UDT's image (``image_plan``) when a full preimage or a postimage holds them all; with
        a preimage of the changed columns only (ScyllaDB's ``'preimage': true``, spec ``000``), the images of
        the collections ``pu`` changes, and of the others only whether they hold a live element (whether the
        row was live: it has a preimage row)."""
        if not self.written_only or not self.image_plan:
            return self.image_plan
        changed = [name for row in pu.rows.values() for name in row.complex]
        if not changed:
            return self.liveness_plan
        plan = dict(self.liveness_plan)
        for name in changed:
            plan[name] = self.image_plan[name]
        return plan

    def _collections(self, changed: dict[str, Any], was: dict[str, bytes | None] | None, entries: list[bytes],
                     written_entries: dict[str, bytes | None], keys_only: bool, postimage: bool) -> None:
        """A row's changes to its collections and UDTs (``changed``: name -> ``ComplexColumn`` of added and removed
        element cells): the delta's entries, in name order, as ``Derivation._delta_values`` makes them (the
        added elements as a frozen value, always one for a UDT; the removed keys as ``cdc$deleted_elements_``),
        appended to ``entries``; with a postimage, each one's image after the write (``was``: the images before
        it) in ``written_entries`` (None when it is left empty)."""
        columns = self.columns
        for name in sorted(changed) if len(changed) > 1 else changed:
            ctype, image_type, deleted_elements, order = self.complex[name]
            added = [(k, c.value) for k, c in changed[name].cells.items() if c.value is not None]
            removed = [k for k, c in changed[name].cells.items() if c.value is None]
            if not keys_only:
                if added or isinstance(ctype, T.UserType):
                    v = frozen_elements(ctype, added)
                    n = len(v)
                    entries.append(columns[name][0] + (_BIN8[n] if n < 256 else _long_head(n, _BIN_LONG)) + v)
                if removed:
                    v = frozen_keys(ctype, removed)
                    n = len(v)
                    entries.append(deleted_elements + (_BIN8[n] if n < 256 else _long_head(n, _BIN_LONG)) + v)
            if postimage:
                image = None if was is None else was.get(name)
                v = None
                if image is None:
                    elements, ordered = dict(added), False
                else:
                    last = getattr(image, "last", None)  # a map's, set's or list's query.read.ElementImage
                    if last is not None and added and not removed:
                        v = appended_elements(ctype, image, last, added, order)
                    if v is None:  # the image is in order: the new keys put in place, not every key sorted again
                        elements, ordered = merged_elements(ctype, image_elements(image_type, image), added, removed)
                if v is not None or elements:
                    if v is None:
                        v = frozen_elements(ctype, elements, ordered)
                    n = len(v)
                    written_entries[name] = columns[name][0] + (_BIN8[n] if n < 256 else _long_head(n, _BIN_LONG)) + v
                else:
                    written_entries[name] = None

    def append(self, pu: PartitionUpdate, ts: int, before: dict[bytes, Any], stream: bytes, token: int,
               timeuuid: Callable[[int], bytes], now: int) -> LogAppend | None:
        """The encoded log rows of the plain upsert ``pu`` at ``ts`` (:func:`upsert_timestamp`) for one
        stream: preimages, one delta per row (an insert when it has a row marker), postimages, each kind in
        clustering order, the last with ``cdc$end_of_batch``.  ``before`` maps each clustering key to the row's
        live values (atomic ones, and each collection or UDT as its image: ``query.read.live_values`` with
        ``UpsertTemplate.before_plan``) and live marker before the write (None when nothing of it was live; needed only
        with images).  None when a cell names a column that is not a regular one (the caller derives such a
        write the general way).

        Written as one loop per kind of row with the encoding inline (a ``bin`` header is ``_BIN8[n]``
        below 256 bytes): compiled, each helper call would cost more than the work it does."""
        opts = self.opts
        columns = self.columns
        regular = self.regular
        rows = pu.rows
        cks = sorted(rows) if len(rows) > 1 else list(rows)
        atomic = self.atomic
        complex_ = self.complex
        for ck in cks:
            row = rows[ck]
            for name in row.cells:
                if name not in atomic:
                    return None
            for name in row.complex:
                if name not in complex_:
                    return None
        postimage = opts.postimage
        images = opts.preimage or postimage
        made: list[list[bytes]] = []  # the entries of each log row's map, in row order
        # the key columns' entries, and each value's entry made once: as it was before the write (preimage,
        # postimage) and as written (delta, postimage)
        pk_entries = []
        for name, v in zip(self.pk_names, pu.key):
            n = len(v)
            pk_entries.append(name + (_BIN8[n] if n < 256 else _long_head(n, _BIN_LONG)) + v)
        keys: dict[bytes, list[bytes]] = {}
        old: dict[bytes, dict[str, bytes]] = {}
        for ck in cks:
            entries = list(pk_entries)
            for name, v in zip(self.ck_names, rows[ck].clustering):
                n = len(v)
                entries.append(name + (_BIN8[n] if n < 256 else _long_head(n, _BIN_LONG)) + v)
            keys[ck] = entries
            if images:
                vals: dict[str, bytes] = {}
                was = before.get(ck)
                if was is not None:
                    for name, v in was[0].items():
                        c = columns.get(name)
                        if c is not None and v is not None:
                            n = len(v)
                            vals[name] = c[0] + (_BIN8[n] if n < 256 else _long_head(n, _BIN_LONG)) + v
                old[ck] = vals
        if opts.preimage:
            full = opts.full_preimage
            op = self.ops[PREIMAGE]
            for ck in cks:
                if before.get(ck) is None:  # no live row: no preimage
                    continue
                vals = old[ck]
                written = rows[ck].cells
                changed = rows[ck].complex
                entries = list(keys[ck])
                for name, _, deleted in regular:
                    if full or name in written or name in changed:
                        e = vals.get(name)
                        entries.append(deleted if e is None else e)
                entries.append(op)
                made.append(entries)
        new: dict[bytes, dict[str, bytes | None]] = {}
        keys_only = opts.delta_keys_only
        for ck in cks:
            row = rows[ck]
            entries = list(keys[ck])
            if not keys_only or postimage:
                written_entries: dict[str, bytes | None] = {}
                for name, cell in row.cells.items():
                    v = cell.value
                    if v is None:
                        written_entries[name] = None
                        if not keys_only:
                            entries.append(columns[name][1])
                    else:
                        n = len(v)
                        e = columns[name][0] + (_BIN8[n] if n < 256 else _long_head(n, _BIN_LONG)) + v
                        written_entries[name] = e
                        if not keys_only:
                            entries.append(e)
                if row.complex:
                    was = before.get(ck)
                    self._collections(row.complex, None if was is None else was[0], entries, written_entries,
                                      keys_only, postimage)
                new[ck] = written_entries
            entries.append(self.ops[INSERT if row.marker is not None else UPDATE])
            made.append(entries)
        if postimage:
            op = self.ops[POSTIMAGE]
            for ck in cks:
                vals = old[ck]
                written_entries = new[ck]
                entries = list(keys[ck])
                for name, _, _ in regular:
                    e = written_entries[name] if name in written_entries else vals.get(name)
                    if e is not None:
                        entries.append(e)
                entries.append(op)
                made.append(entries)
        made[-1].append(self.end_of_batch)
        ttl = opts.ttl
        keyed = getattr(timeuuid, "keyed", None)  # cdc.capture.CdcTimeuuids: the value with its key, made at once
        if keyed is not None:
            tu, time_key = keyed(ts)
        else:
            tu = timeuuid(ts)
            time_key = self.time_comparable(tu)
        n = len(tu)
        head = self.head + (_BIN8[n] if n < 256 else _long_head(n, _BIN_LONG)) + tu
        live = _ENCODE((ts, ttl, now + ttl if ttl else 0x7FFFFFFF))
        # envelope.seal's checksum (table, stream, log row key, record): the common part once
        key_crc = _crc32(time_key, key_checksum(self.log.store_id, stream))
        out: list[tuple[bytes, bytes]] = []
        seq = 0
        for entries in made:
            n = len(entries)
            seq_enc, seq_key = _SEQS[seq] if seq < SEQS else _seq(seq)
            data = b"".join([head, seq_enc, live, _MAP_HEADS[n] if n < 16 else _long_head(n, _MAP_LONG), *entries])
            out.append((time_key + seq_key, data + _CRC(_crc32(data, _crc32(seq_key, key_crc)))))
            seq += 1
        return LogAppend(self.log, stream, token, out)
