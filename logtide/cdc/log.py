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
* ScyllaDB (``cdc/split.cc``): the order of delta rows inside a group, and an
  INSERT's collection cells without a tombstone as an update of their own
  (``split_order``).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, NamedTuple

from ..mutation.cells import Cell, RowData
from ..mutation.model import PartitionUpdate, RangeDeletion
from ..query.read import LiveRow, element_order_key
from ..schema import types as T
from ..schema.model import Column, Table
from ..storage.records import encode_uniform_rows
from . import log_schema as L
from . import split_order as SO
from .split_order import should_split
from ..schema.cdc_options import CdcOptions

PREIMAGE, UPDATE, INSERT, ROW_DELETE, PARTITION_DELETE = 0, 1, 2, 3, 4
RANGE_LEFT_INCLUSIVE, RANGE_LEFT_EXCLUSIVE, RANGE_RIGHT_INCLUSIVE, RANGE_RIGHT_EXCLUSIVE = 5, 6, 7, 8
POSTIMAGE = 9

TRUE = b"\x01"
OPERATION_BYTES = tuple(struct.pack(">b", op) for op in range(10))  # cdc$operation values, serialized


# ---------------------------------------------------------------------------
# row state (what images show)
# ---------------------------------------------------------------------------


@dataclass
class RowState:
    """The CQL-visible content of one row: atomic values and element maps of complex columns."""

    marker: bool = False
    values: dict[str, bytes] = field(default_factory=dict)
    elements: dict[str, dict[bytes, bytes]] = field(default_factory=dict)
    # frozen log values of element maps, kept while a column is unchanged (a postimage reuses the
    # preimage's encoding of every collection the write did not touch)
    frozen: dict[str, bytes] = field(default_factory=dict)

    @classmethod
    def of(cls, row: LiveRow | None) -> "RowState | None":
        if row is None:
            return None
        return cls(row.marker_live, {n: c.value for n, c in row.cells.items()},
                   {n: {k: c.value for k, c in elems} for n, elems in row.complex.items()})

    def exists(self) -> bool:
        return self.marker or bool(self.values) or any(self.elements.values())

    def copy(self) -> "RowState":
        """A copy sharing the element maps; ``_apply`` copies a map before changing it."""
        return RowState(self.marker, dict(self.values), dict(self.elements), dict(self.frozen))

    def changing(self, name: str) -> dict[bytes, bytes]:
        """The element map of ``name``, private to this state and ready to change."""
        self.frozen.pop(name, None)
        elems = dict(self.elements.get(name) or {})
        self.elements[name] = elems
        return elems


@dataclass
class PreState:
    """The touched rows before the write: the static row and clustered rows by clustering key."""

    static: LiveRow | None = None
    rows: dict[bytes, LiveRow | None] = field(default_factory=dict)


# ---------------------------------------------------------------------------
# splitting a partition update into (timestamp, ttl) changes
# ---------------------------------------------------------------------------


@dataclass
class RowDelta:
    """What one change does to one row."""

    clustering: tuple[bytes, ...]
    marker: bool = False
    deleted: bool = False
    cells: dict[str, Cell] = field(default_factory=dict)
    collection_deleted: set[str] = field(default_factory=set)
    added: dict[str, list[tuple[bytes, bytes]]] = field(default_factory=dict)
    removed: dict[str, list[bytes]] = field(default_factory=dict)

    def columns(self) -> set[str]:
        return set(self.cells) | self.collection_deleted | set(self.added) | set(self.removed)

    def has_cells(self) -> bool:
        return self.marker or bool(self.columns())


@dataclass
class Change:
    """All atoms of a partition update that share a timestamp and a TTL (split per spec 001)."""

    partition_deleted: bool = False
    ranges: list[RangeDeletion] = field(default_factory=list)
    static: RowDelta | None = None
    rows: dict[bytes, RowDelta] = field(default_factory=dict)


def _ttl_of(cell: Cell) -> int:
    return cell.ttl if cell.value is not None else 0


def split(pu: PartitionUpdate) -> dict[int, dict[int, Change]]:
    """The update's atoms grouped by group timestamp, then by TTL (0: dead cells and non-expiring ones)."""
    groups: dict[int, dict[int, Change]] = {}

    def change(ts: int, ttl: int) -> Change:
        return groups.setdefault(ts, {}).setdefault(ttl, Change())

    def row_delta(ch: Change, ck: bytes | None, clustering: tuple[bytes, ...]) -> RowDelta:
        if ck is None:
            if ch.static is None:
                ch.static = RowDelta(())
            return ch.static
        d = ch.rows.get(ck)
        if d is None:
            d = ch.rows[ck] = RowDelta(clustering)
        return d

    if pu.deletion is not None:
        change(pu.deletion.timestamp, 0).partition_deleted = True
    for rd in pu.range_deletions:
        change(rd.deletion.timestamp, 0).ranges.append(rd)

    def add_row(row: RowData, ck: bytes | None) -> None:
        if row.deletion is not None:
            row_delta(change(row.deletion.timestamp, 0), ck, row.clustering).deleted = True
        if row.marker is not None:
            row_delta(change(row.marker.timestamp, row.marker.ttl), ck, row.clustering).marker = True
        for name, cell in row.cells.items():
            row_delta(change(cell.timestamp, _ttl_of(cell)), ck, row.clustering).cells[name] = cell
        for name, col in row.complex.items():
            if col.deletion is not None:
                # spec 002: a collection tombstone counts at its timestamp + 1
                row_delta(change(col.deletion.timestamp + 1, 0), ck, row.clustering).collection_deleted.add(name)
            for key, cell in col.cells.items():
                d = row_delta(change(cell.timestamp, _ttl_of(cell)), ck, row.clustering)
                if cell.value is None:
                    d.removed.setdefault(name, []).append(key)
                else:
                    d.added.setdefault(name, []).append((key, cell.value))

    if pu.static is not None:
        add_row(pu.static, None)
    for ck, row in pu.rows.items():
        add_row(row, ck)
    return groups


# ---------------------------------------------------------------------------
# serialization of log values
# ---------------------------------------------------------------------------


def _frame(items: Iterable[bytes]) -> bytes:
    items = list(items)
    out = bytearray(struct.pack(">i", len(items)))
    for b in items:
        out += struct.pack(">i", len(b)) + b
    return bytes(out)


def frozen_elements(ctype: Any, elements: dict[bytes, bytes] | list[tuple[bytes, bytes]]) -> bytes:
    """The frozen log value of a non-frozen collection/UDT's elements (lists as maps of timeuuid keys)."""
    pairs = list(elements.items()) if isinstance(elements, dict) else list(elements)
    if isinstance(ctype, T.UserType):
        by_index = {struct.unpack(">h", k)[0]: v for k, v in pairs}
        out = bytearray()
        for i in range(len(ctype.field_names)):
            v = by_index.get(i)
            out += b"\xff\xff\xff\xff" if v is None else struct.pack(">i", len(v)) + v
        return bytes(out)
    order = element_order_key(ctype)
    pairs.sort(key=lambda kv: order(kv[0]))
    if isinstance(ctype, T.SetType):
        return _frame(k for k, _ in pairs)
    flat = []
    for k, v in pairs:
        flat += [k, v]
    out = bytearray(struct.pack(">i", len(pairs)))
    for b in flat:
        out += struct.pack(">i", len(b)) + b
    return bytes(out)


def frozen_keys(ctype: Any, keys: Iterable[bytes]) -> bytes:
    """The ``cdc$deleted_elements_X`` value: a frozen set of element keys in their type's order."""
    order = element_order_key(ctype)
    return _frame(sorted(set(keys), key=order))


# ---------------------------------------------------------------------------
# the derivation
# ---------------------------------------------------------------------------


class LogRow(NamedTuple):
    """One log row: group timestamp, sequence number within the group, and column values (serialized).

    An immutable value (its ``values`` are filled while its group is built); a NamedTuple because the
    write path makes several per statement, where a dataclass costs about twice as much."""

    timestamp: int
    seq: int
    values: dict[str, bytes]


class _Group:
    """Rows of one ``cdc$time`` group being built."""

    def __init__(self, ts: int) -> None:
        self.ts = ts
        self.rows: list[LogRow] = []

    def add(self, op: int, values: dict[str, bytes]) -> None:
        values[L.OPERATION] = OPERATION_BYTES[op]
        self.rows.append(LogRow(self.ts, len(self.rows), values))


def _int_bytes(v: int) -> bytes:
    return struct.pack(">q", v)


def upsert_timestamp(pu: PartitionUpdate) -> int | None:
    """The one timestamp of a plain upsert: clustered rows with atomic cells of one timestamp and no TTL
    (a row marker of that timestamp and no TTL allowed), no deletion, static row or collection; None for
    any other update."""
    if pu.deletion is not None or pu.range_deletions or pu.static is not None or not pu.rows:
        return None
    ts: int | None = None
    for row in pu.rows.values():
        if row.deletion is not None or row.complex:
            return None
        m = row.marker
        if m is not None:
            if m.ttl != 0 or (ts is not None and m.timestamp != ts):
                return None
            ts = m.timestamp
        elif not row.cells:
            return None
        for cell in row.cells.values():
            if (ts is not None and cell.timestamp != ts) or (cell.ttl != 0 and cell.value is not None):
                return None
            ts = cell.timestamp
    return ts


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
    def _key_values(self, clustering: tuple[bytes, ...] | None) -> dict[str, bytes]:
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

    def _image_values(self, state: RowState, columns: list[Column], preimage: bool) -> dict[str, bytes]:
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
    @staticmethod
    def _apply(state: RowState | None, delta: RowDelta) -> RowState | None:
        if delta.deleted:
            state = None
        if not delta.has_cells():
            return state
        st = state.copy() if state is not None else RowState()
        st.marker = st.marker or delta.marker
        for name, cell in delta.cells.items():
            if cell.value is None:
                st.values.pop(name, None)
            else:
                st.values[name] = cell.value
        for name in delta.collection_deleted:
            st.elements.pop(name, None)
            st.frozen.pop(name, None)
        for name, added in delta.added.items():
            st.changing(name).update(added)
        for name, removed in delta.removed.items():
            if st.elements.get(name):
                elems = st.changing(name)
                for k in removed:
                    elems.pop(k, None)
        return st

    def _apply_change(self, ch: Change) -> None:
        self._apply_deletions(ch, rows=False)
        if ch.static is not None:
            self.state_static = self._apply(self.state_static, ch.static)
        for ck, d in ch.rows.items():
            self.state_rows[ck] = self._apply(self.state_rows.get(ck), d)

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
            out.append((op, self._key_values(rd.start)))
        if rd.end_inclusive is not None:
            op = RANGE_RIGHT_INCLUSIVE if rd.end_inclusive else RANGE_RIGHT_EXCLUSIVE
            out.append((op, self._key_values(rd.end)))
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
            vals = self._key_values(None)
            vals.update(self._image_values(self.state_static, cols, True))
            g.add(PREIMAGE, vals)
        for ck in sorted(rows):
            st = self.state_rows.get(ck)
            if st is None or not st.exists():
                continue
            touched = rows[ck]
            cols = self.regular_cols if full or touched is None else [c for c in self.regular_cols if c.name in touched]
            vals = self._key_values(self._clustering(ck))
            vals.update(self._image_values(st, cols, True))
            g.add(PREIMAGE, vals)

    def _postimages(self, g: _Group, static: set[str] | None, rows: dict[bytes, set[str] | None]) -> None:
        if static is not None and None not in self.deleted_in_batch:
            vals = self._key_values(None)
            vals.update(self._image_values(self.state_static or RowState(), self.static_cols, False))
            g.add(POSTIMAGE, vals)
        for ck in sorted(rows):
            if ck in self.deleted_in_batch or rows[ck] is None:
                continue
            vals = self._key_values(self._clustering(ck))
            vals.update(self._image_values(self.state_rows.get(ck) or RowState(), self.regular_cols, False))
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
        (``split_order``)."""
        simple = self._upsert_rows()
        return simple if simple is not None else self.general_rows()

    def _upsert_rows(self) -> list[LogRow] | None:
        """The rows of the commonest update, derived directly: clustered rows upserted with atomic cells of
        one timestamp and no TTL (no deletion, static row or collection).  Such an update is one group
        of one change that ScyllaDB does not split, so the rows are: preimages, then one delta per row
        (an insert when it has a row marker), then postimages, each kind in clustering order; exactly
        what :meth:`general_rows` gives (``tests/cdc/test_log_fast_path.py``), without its
        intermediate changes and deltas.  None for any other update."""
        pu = self.pu
        ts = upsert_timestamp(pu)
        if ts is None:
            return None
        opts = self.opts
        regular = self.regular_cols
        cks = sorted(pu.rows) if len(pu.rows) > 1 else list(pu.rows)
        keys = {ck: self._key_values(pu.rows[ck].clustering) for ck in cks}  # copied for each row of a ck
        plain = not self.base.multicell_names  # no collection column: an image is the atomic values alone
        out: list[LogRow] = []
        if opts.preimage:
            full = opts.full_preimage
            for ck in cks:
                st = self.state_rows.get(ck)
                if st is None or not st.exists():
                    continue
                cols = regular if full else [c for c in regular if c.name in pu.rows[ck].cells]
                vals = dict(keys[ck])
                if plain:  # _image_values of atomic columns, inline
                    sv = st.values
                    for col in cols:
                        v = sv.get(col.name)
                        if v is not None:
                            vals[col.name] = v
                        else:
                            vals[L.DELETED + col.name] = TRUE
                else:
                    vals.update(self._image_values(st, cols, True))
                vals[L.OPERATION] = OPERATION_BYTES[PREIMAGE]
                out.append(LogRow(ts, len(out), vals))
        keys_only = opts.delta_keys_only
        for ck in cks:
            row = pu.rows[ck]
            vals = dict(keys[ck]) if opts.postimage else keys[ck]
            if not keys_only:
                for name, cell in row.cells.items():
                    if cell.value is None:
                        vals[L.DELETED + name] = TRUE
                    else:
                        vals[name] = cell.value
            vals[L.OPERATION] = OPERATION_BYTES[INSERT if row.marker is not None else UPDATE]
            out.append(LogRow(ts, len(out), vals))
        if opts.postimage and plain:
            for ck in cks:
                before = self.state_rows.get(ck)
                merged = dict(before.values) if before is not None else {}
                for name, cell in pu.rows[ck].cells.items():
                    if cell.value is None:
                        merged.pop(name, None)
                    else:
                        merged[name] = cell.value
                vals = keys[ck]
                for col in regular:
                    v = merged.get(col.name)
                    if v is not None:
                        vals[col.name] = v
                vals[L.OPERATION] = OPERATION_BYTES[POSTIMAGE]
                out.append(LogRow(ts, len(out), vals))
        elif opts.postimage:
            for ck in cks:
                row = pu.rows[ck]
                before = self.state_rows.get(ck)
                st = before.copy() if before is not None else RowState()
                st.marker = st.marker or row.marker is not None
                for name, cell in row.cells.items():
                    if cell.value is None:
                        st.values.pop(name, None)
                    else:
                        st.values[name] = cell.value
                self.state_rows[ck] = st
                vals = keys[ck]
                vals.update(self._image_values(st, regular, False))
                vals[L.OPERATION] = OPERATION_BYTES[POSTIMAGE]
                out.append(LogRow(ts, len(out), vals))
        out[-1].values[L.END_OF_BATCH] = TRUE
        return out

    def general_rows(self) -> list[LogRow]:
        """Every log row of any update, through the general split into changes (see :meth:`rows`)."""
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
            vals = self._key_values(clustering)
            vals.update(self._delta_values(d))
            vals.update(ttl_value)
            add(kind, ck, op, vals)

        if ch.partition_deleted:
            add(SO.PARTITION_DELETION, b"", PARTITION_DELETE, self._key_values(None))
        for rd in ch.ranges:
            for op, vals in self._range_rows(rd):
                add(SO.RANGE_DELETIONS, b"", op, vals)
        if ch.static is not None and ch.static.has_cells():
            upsert(SO.STATIC, b"", UPDATE, ch.static, None)
        for ck in sorted(ch.rows):
            d = ch.rows[ck]
            if d.deleted:
                add(SO.ROW_DELETIONS if split_mode else SO.ROWS, ck, ROW_DELETE, self._key_values(d.clustering))
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


@dataclass
class LogAppend:
    """Log rows ready to append to one stream (log partition): encoded records under fresh keys."""

    table: Table
    stream_id: bytes
    token: int
    rows: list[tuple[bytes, bytes]]  # (comparable clustering key, encoded row record)


def log_update(log: Table, stream_id: bytes, rows: list[LogRow], timeuuid: Callable[[int], bytes], ttl: int,
               now: int, token: int) -> LogAppend:
    """The log rows of one stream, encoded: every cell and the row marker carry the CDC ``ttl``."""
    time_col = log.clustering_key[0]
    times: dict[int, tuple[bytes, bytes]] = {}
    ldt = now + ttl if ttl else 0x7FFFFFFF
    records = []
    for r in rows:
        t = times.get(r.timestamp)
        if t is None:
            tu = timeuuid(r.timestamp)
            t = times[r.timestamp] = (tu, time_col.type.comparable(tu), (r.timestamp, ttl, ldt))
        seq, seq_key = _seq_keys(r.seq)
        records.append((t[1] + seq_key, ((t[0], seq), t[2], r.values)))
    return LogAppend(log, stream_id, token, encode_uniform_rows(log.store_id, stream_id, records))


@functools.lru_cache(maxsize=4096)
def _seq_keys(seq: int) -> tuple[bytes, bytes]:
    """``cdc$batch_seq_no`` (an ``int``, ``log_schema``) serialized and as its comparable key, made once."""
    raw = struct.pack(">i", seq)
    return raw, T.INT.comparable(raw)
