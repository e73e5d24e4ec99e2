"""The CDC derivation: a pure function from a partition update and the rows it touches to log rows.

No I/O and no clock: the caller passes the state of the touched rows before
the write and a function that makes ``cdc$time`` values.  The rules, by spec
document:

* ``001`` (The CDC Log Table): one ``cdc$time`` per write timestamp, whose
  time is the timestamp; ``cdc$batch_seq_no`` numbers the rows of that
  group; ``cdc$ttl`` is the TTL of live cells; live cells with a TTL and
  dead cells go to separate rows.
* ``003`` (Basic operations): static-row and clustered-row changes are
  separate rows; operation 1 update, 2 insert (the row got a row marker),
  3 row delete, 4 partition delete, 5-8 range delete bounds (left
  inclusive/exclusive, right inclusive/exclusive) carrying the bound's
  clustering prefix.
* ``002`` (Advanced column types): ``cdc$deleted_X`` for null writes and
  collection tombstones, added elements in the value column, removed keys in
  ``cdc$deleted_elements_X``; a collection tombstone counts at its timestamp
  plus one, so an overwrite (tombstone at ``T - 1`` plus elements at ``T``)
  is one row; non-frozen UDT changes always carry a UDT value.
* ``000`` (Preimages and postimages): preimage rows (operation 0) before the
  deltas for inserted, updated and row-deleted rows that existed, with the
  changed columns (``true``) or all columns (``'full'``) and
  ``cdc$deleted_X`` set for null columns; postimage rows (operation 9) after
  the deltas for inserted and updated rows not deleted in the same write,
  equal to the full preimage with the delta applied.  A partition delete on
  a table without clustering columns deletes its only row and gets a
  preimage (current ScyllaDB).
* ScyllaDB: ``cdc$end_of_batch`` is true on the last row of each group.
* ScyllaDB (``cdc/log.hh``): a deletion the server makes itself (``PartitionUpdate.service``: the per-row
  TTL's expiry) is operation -3 (row) or -4 (partition), the negative of a user's.
* ScyllaDB (``cdc/split.cc``): the order of delta rows inside a group, and an
  INSERT's collection cells without a tombstone as an update of their own
  (``split_order``).

One idea a module around this one: ``split`` (an update into changes), ``row_state`` (what images show),
``log_values`` (collection values), ``log_rows`` (operations, rows, their encoding per stream) and
``upsert`` (a plain upsert's rows, derived and encoded in one pass).
"""

from __future__ import annotations

import struct
from dataclasses import replace
from typing import Iterable

from ..mutation.model import PartitionUpdate, RangeDeletion
from ..schema import types as T
from ..schema.cdc_options import CdcOptions
from ..schema.model import Column, Table
from . import log_schema as L
from . import split_order as SO
from .log_rows import (INSERT, OPERATION_BYTES, PARTITION_DELETE, POSTIMAGE, PREIMAGE, RANGE_LEFT_EXCLUSIVE,
                       RANGE_LEFT_INCLUSIVE, RANGE_RIGHT_EXCLUSIVE, RANGE_RIGHT_INCLUSIVE, ROW_DELETE, SERVICE_OPERATION_BYTES,
                       SERVICE_PARTITION_DELETE, SERVICE_ROW_DELETE, TRUE, UPDATE, LogRow)
from .log_values import frozen_elements, frozen_keys
from .row_state import PreState, RowState, applied
from .split import Change, RowDelta, split
from .split_order import should_split


class _Group:
    """Rows of one ``cdc$time`` group being built."""

    def __init__(self, ts: int) -> None:
        self.ts = ts
        self.rows: list[LogRow] = []

    def add(self, op: int, values: dict[str, bytes]) -> None:
        values[L.OPERATION] = OPERATION_BYTES[op] if op >= 0 else SERVICE_OPERATION_BYTES[op]
        self.rows.append(LogRow(self.ts, len(self.rows), values))


def _int_bytes(v: int) -> bytes:
    return struct.pack(">q", v)


class Derivation:
    """Derives the log rows of one partition update (see the module docstring for the rules)."""

    def __init__(self, base: Table, opts: CdcOptions, pu: PartitionUpdate, pre: PreState) -> None:
        self.base = base
        self.opts = opts
        self.pu = pu
        self.pre = pre
        self.static_cols = base.static_columns
        self.regular_cols = base.regular_columns
        self.state_static = None if pre.static is None else RowState.of(pre.static)
        self.state_rows: dict[bytes, RowState | None] = {ck: None if r is None else RowState.of(r)
                                                         for ck, r in pre.rows.items()}
        self._clusterings: dict[bytes, tuple[bytes, ...]] | None = None
        self._deleted_in_batch: set[bytes | None] | None = None
        self._partition_values: dict[str, bytes] | None = None

    @property
    def deleted_in_batch(self) -> set[bytes | None]:
        """Rows that a row, range or partition delete of this write removes (none with postimages off)."""
        if self._deleted_in_batch is None:
            self._deleted_in_batch = self._deleted_rows() if self.opts.postimage else set()
        return self._deleted_in_batch

    def _deleted_rows(self) -> set[bytes | None]:
        """Rows that a row, range or partition delete of this write removes (no postimage for them)."""
        pu = self.pu
        out: set[bytes | None] = set()
        if pu.deletion is not None:
            out.add(None)
            out.update(pu.rows)
        for ck, row in pu.rows.items():
            if row.deletion is not None:
                out.add(ck)
            for rd in pu.range_deletions:
                if (rd.lo is None or ck >= rd.lo) and (rd.hi is None or ck < rd.hi):
                    out.add(ck)
        return out

    # -- values ----------------------------------------------------------------
    def key_values(self, clustering: tuple[bytes, ...] | None) -> dict[str, bytes]:
        """A new dict of the key columns' values (the partition key's, made once, then the clustering's)."""
        pk = self._partition_values
        if pk is None:
            pk = self._partition_values = {c.name: v for c, v in zip(self.base.partition_key, self.pu.key)}
        values = dict(pk)
        if clustering:
            for c, v in zip(self.base.clustering_key, clustering):
                values[c.name] = v
        return values

    def _delta_values(self, delta: RowDelta) -> dict[str, bytes]:
        values: dict[str, bytes] = {}
        if self.opts.delta_keys_only:
            return values
        for name, cell in delta.cells.items():
            if cell.value is None:
                values[L.DELETED + name] = TRUE
            else:
                values[name] = cell.value
        for name in sorted(delta.columns() - delta.cells.keys()):  # in name order: the same bytes in every process
            col = self.base.column(name)
            if col is None:
                continue
            if name in delta.collection_deleted:
                values[L.DELETED + name] = TRUE
            added = delta.added.get(name)
            if added or isinstance(col.type, T.UserType):
                values[name] = frozen_elements(col.type, added or [])
            removed = delta.removed.get(name)
            if removed:
                values[L.DELETED_ELEMENTS + name] = frozen_keys(col.type, removed)
        return values

    def image_values(self, state: RowState, columns: list[Column], preimage: bool) -> dict[str, bytes]:
        """The values of ``columns`` in an image of ``state``; a preimage marks a null column ``cdc$deleted_X``."""
        values: dict[str, bytes] = {}
        multicell = self.base.multicell_names
        for col in columns:
            if col.name in multicell:
                elems = state.elements.get(col.name)
                if not elems:
                    v = None
                else:
                    v = state.frozen.get(col.name)
                    if v is None:
                        v = state.frozen[col.name] = frozen_elements(col.type, elems)
            else:
                v = state.values.get(col.name)
            if v is not None:
                values[col.name] = v
            elif preimage:
                values[L.DELETED + col.name] = TRUE
        return values

    # -- state -----------------------------------------------------------------
    def _apply_change(self, ch: Change) -> None:
        self._apply_deletions(ch, rows=False)
        if ch.static is not None:
            self.state_static = applied(self.state_static, ch.static)
        for ck, d in ch.rows.items():
            self.state_rows[ck] = applied(self.state_rows.get(ck), d)

    def _shadow(self, changes: Iterable[Change]) -> None:
        """Apply a timestamp's row, range and partition deletions once more after its cells: a tombstone
        shadows the cells of its own timestamp (ties go to the tombstone), so a row written and deleted in
        one batch at one timestamp is gone, and a later group's preimage must not show it."""
        for ch in changes:
            self._apply_deletions(ch, rows=True)

    def _apply_deletions(self, ch: Change, rows: bool) -> None:
        """Clear the state of what ``ch``'s partition and range deletions (and, with ``rows``, its row
        deletions) remove."""
        if ch.partition_deleted:
            self.state_static = None
            for ck in self.state_rows:
                self.state_rows[ck] = None
        for rd in ch.ranges:
            for ck in self.state_rows:
                if (rd.lo is None or ck >= rd.lo) and (rd.hi is None or ck < rd.hi):
                    self.state_rows[ck] = None
        if rows:
            for ck, d in ch.rows.items():
                if d.deleted:
                    self.state_rows[ck] = None

    # -- rows ------------------------------------------------------------------
    def _range_rows(self, rd: RangeDeletion) -> list[tuple[int, dict[str, bytes]]]:
        out = []
        if rd.start_inclusive is not None:
            op = RANGE_LEFT_INCLUSIVE if rd.start_inclusive else RANGE_LEFT_EXCLUSIVE
            out.append((op, self.key_values(rd.start)))
        if rd.end_inclusive is not None:
            op = RANGE_RIGHT_INCLUSIVE if rd.end_inclusive else RANGE_RIGHT_EXCLUSIVE
            out.append((op, self.key_values(rd.end)))
        return out

    def _touched(self, subgroups: dict[int, Change]) -> tuple[set[str] | None, dict[bytes, set[str] | None]]:
        """Static columns and clustered rows (with columns; None = all) that this timestamp's changes touch."""
        static: set[str] | None = None
        rows: dict[bytes, set[str] | None] = {}
        no_clustering = not self.base.clustering_key
        for ch in subgroups.values():
            if ch.partition_deleted and no_clustering:
                rows[b""] = None
            if ch.static is not None and ch.static.columns():
                static = (static or set()) | ch.static.columns()
            for ck, d in ch.rows.items():
                if d.deleted:
                    rows[ck] = None
                elif ck not in rows or rows[ck] is not None:
                    rows[ck] = (rows.get(ck) or set()) | d.columns()
        return static, rows

    def _preimages(self, g: _Group, static: set[str] | None, rows: dict[bytes, set[str] | None]) -> None:
        full = self.opts.full_preimage
        if static is not None and self.state_static is not None and self.state_static.exists():
            cols = self.static_cols if full else [c for c in self.static_cols if c.name in static]
            vals = self.key_values(None)
            vals.update(self.image_values(self.state_static, cols, True))
            g.add(PREIMAGE, vals)
        for ck in sorted(rows):
            st = self.state_rows.get(ck)
            if st is None or not st.exists():
                continue
            touched = rows[ck]
            cols = self.regular_cols if full or touched is None else [c for c in self.regular_cols if c.name in touched]
            vals = self.key_values(self._clustering(ck))
            vals.update(self.image_values(st, cols, True))
            g.add(PREIMAGE, vals)

    def _postimages(self, g: _Group, static: set[str] | None, rows: dict[bytes, set[str] | None]) -> None:
        if static is not None and None not in self.deleted_in_batch:
            vals = self.key_values(None)
            vals.update(self.image_values(self.state_static or RowState(), self.static_cols, False))
            g.add(POSTIMAGE, vals)
        for ck in sorted(rows):
            if ck in self.deleted_in_batch or rows[ck] is None:
                continue
            vals = self.key_values(self._clustering(ck))
            vals.update(self.image_values(self.state_rows.get(ck) or RowState(), self.regular_cols, False))
            g.add(POSTIMAGE, vals)

    @property
    def clusterings(self) -> dict[bytes, tuple[bytes, ...]]:
        """The clustering values of the rows that existed before the write, by clustering key."""
        if self._clusterings is None:
            self._clusterings = {ck: r.clustering for ck, r in self.pre.rows.items() if r is not None}
        return self._clusterings

    def _clustering(self, ck: bytes) -> tuple[bytes, ...]:
        row = self.pu.rows.get(ck)
        if row is not None:
            return row.clustering
        return self.clusterings.get(ck, ())

    def rows(self) -> list[LogRow]:
        """Every log row of the update, group by group in timestamp order, deltas in ScyllaDB's order
        (``split_order``), through the general split into changes.  (A plain upsert's rows are made and
        encoded in one pass by ``cdc/upsert.py``, the same bytes.)"""
        out: list[LogRow] = []
        images = self.opts.preimage or self.opts.postimage
        split_mode = should_split(self.pu)
        static: set[str] | None = None
        touched: dict[bytes, set[str] | None] = {}
        for ts, subgroups in sorted(split(self.pu).items()):
            g = _Group(ts)
            if images:
                static, touched = self._touched(subgroups)
            if self.opts.preimage:
                self._preimages(g, static, touched)
            deltas: list[tuple[tuple, int, dict[str, bytes]]] = []
            for ttl, ch in sorted(subgroups.items()):
                deltas.extend(self._deltas(ch, ttl, split_mode))
                if images:
                    self._apply_change(ch)
            if images:
                self._shadow(subgroups.values())
            for _, op, vals in sorted(deltas, key=lambda d: d[0]):
                g.add(op, vals)
            if self.opts.postimage:
                self._postimages(g, static, touched)
            if g.rows:
                g.rows[-1].values[L.END_OF_BATCH] = TRUE
            out.extend(g.rows)
        return out

    def _deltas(self, ch: Change, ttl: int, split_mode: bool) -> list[tuple[tuple, int, dict[str, bytes]]]:
        """The delta rows of one (timestamp, TTL) change, each with its ScyllaDB sort key (kind, row, TTL, seq)."""
        out: list[tuple[tuple, int, dict[str, bytes]]] = []
        ttl_value = {L.TTL: _int_bytes(ttl)} if ttl else {}

        def add(kind: int, ck: bytes, op: int, vals: dict[str, bytes]) -> None:
            out.append(((kind, ck, ttl, len(out)), op, vals))

        def upsert(kind: int, ck: bytes, op: int, d: RowDelta, clustering: tuple[bytes, ...] | None) -> None:
            vals = self.key_values(clustering)
            vals.update(self._delta_values(d))
            vals.update(ttl_value)
            add(kind, ck, op, vals)

        service = self.pu.service  # the server's own deletion (row TTL expiry): ScyllaDB's negative operations
        if ch.partition_deleted:
            add(SO.PARTITION_DELETION, b"", SERVICE_PARTITION_DELETE if service else PARTITION_DELETE,
                self.key_values(None))
        for rd in ch.ranges:
            for op, vals in self._range_rows(rd):
                add(SO.RANGE_DELETIONS, b"", op, vals)
        if ch.static is not None and ch.static.has_cells():
            upsert(SO.STATIC, b"", UPDATE, ch.static, None)
        for ck in sorted(ch.rows):
            d = ch.rows[ck]
            if d.deleted:
                add(SO.ROW_DELETIONS if split_mode else SO.ROWS, ck, SERVICE_ROW_DELETE if service else ROW_DELETE,
                    self.key_values(d.clustering))
            if not d.has_cells():
                continue
            if not d.marker:
                upsert(SO.UPDATES if split_mode else SO.ROWS, ck, UPDATE, d, d.clustering)
                continue
            # an INSERT cannot carry collection cells without their collection's tombstone
            alone = {n for n in (*d.added, *d.removed) if n not in d.collection_deleted} if split_mode else set()
            insert = replace(d, added={n: v for n, v in d.added.items() if n not in alone},
                             removed={n: v for n, v in d.removed.items() if n not in alone})
            upsert(SO.INSERTS if split_mode else SO.ROWS, ck, INSERT, insert, d.clustering)
            if alone:
                cells = RowDelta(d.clustering, added={n: v for n, v in d.added.items() if n in alone},
                                 removed={n: v for n, v in d.removed.items() if n in alone})
                upsert(SO.UPDATES, ck, UPDATE, cells, d.clustering)
        return out


def derive(base: Table, opts: CdcOptions, pu: PartitionUpdate, pre: PreState) -> list[LogRow]:
    """The log rows for one partition update of a CDC-enabled base table."""
    return Derivation(base, opts, pu, pre).rows()


def touched_rows(pu: PartitionUpdate) -> tuple[bool, list[bytes]]:
    """Whether the static row is touched, and the clustering keys of touched rows (for the preimage read)."""
    cks = list(pu.rows)
    if pu.deletion is not None and b"" not in pu.rows:
        cks.append(b"")
    return pu.static is not None, cks
