"""From the before/after state of the rows a statement touched to changefeed row changes (spec ``004``).

Pure: no I/O, no clock.  The capture stage (``engine/capture.py``) hands each table with an active
changefeed its touched rows before and after the write (``mutation.images.PartitionImages``), and the
time that decides what of them is live: :func:`partition_changes` derives the changes of any update,
:func:`row_values` those of a plain row upsert or delete on the direct path (:class:`WritePlan`).  One record per changed row per statement: INSERT and UPDATE
give ``update`` records; a row DELETE an ``erase``; range and partition
deletes one ``erase`` per row that existed; a column DELETE an update that
sets the column to null.  A static-column change (YDB has no static columns)
gives a record keyed by the partition key with null clustering components,
whose images hold the static columns; clustered rows' images hold the regular
columns.
"""

from __future__ import annotations

from typing import Callable, Mapping, NamedTuple, Sequence

from ..mutation.cells import Deletion, RowData
from ..mutation.images import PartitionImages, live
from ..mutation.model import PartitionUpdate
from ..query.read import LiveRow, column_bytes, complex_plan
from ..query.read import live_values as read_live_values
from ..schema.changefeeds import Changefeed
from ..schema.model import Column, Table
from .json_format import JsonRecords
from .render import RowChange

Rows = Mapping[bytes, "LiveRow | None"]


class FeedChange(NamedTuple):
    """A row change with where its row lives (for the initial scan's marks) and its image before the write
    (an immutable value, made per changed row like :class:`~logtide.changefeed.render.RowChange`)."""

    change: RowChange
    token: int
    pk: bytes
    ck: bytes  # b'' for the static row
    static: bool
    before: Mapping[str, object] | None  # the full image before the write (the initial scan's source value)


def row_key(table: Table, key: tuple[bytes, ...], clustering: tuple[bytes, ...] | None) -> tuple:
    """The primary-key values: partition key then clustering (None for each clustering column of the static row)."""
    out = [c.type.deserialize(v) for c, v in zip(table.partition_key, key)]
    if clustering is None:
        return tuple(out) + (None,) * len(table.clustering_key)
    return tuple(out + [c.type.deserialize(v) for c, v in zip(table.clustering_key, clustering)])


ImageColumn = tuple[Column, str, bool, Callable[[bytes | None], object]]  # column, name, multi-cell, deserialize


class TablePlan:
    """What deriving one table's changes needs, made once per table object (a schema change makes a new
    table): the key deserializers and the image columns, static and regular, in name order."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.clustered = bool(table.clustering_key)
        self._pk = tuple(c.type.deserialize for c in table.partition_key)
        self._ck = tuple(c.type.deserialize for c in table.clustering_key)
        self._static_key = (None,) * len(table.clustering_key)
        self.regular = self._columns(table.regular_columns)
        self.static = self._columns(table.static_columns)
        self.regular_names = frozenset(c.name for c in table.regular_columns)
        self.static_names = frozenset(c.name for c in table.static_columns)
        # the regular columns in name order (``JsonRecords.row_columns``), and what reading them for values needs
        self.named_regular = self._columns(table.regular_by_name)
        self.named_regular_names = tuple(c.name for c in table.regular_by_name)
        self.complex = complex_plan(table)

    @staticmethod
    def _columns(columns: Sequence[Column]) -> tuple[ImageColumn, ...]:
        return tuple((c, c.name, c.type.is_multicell, c.type.deserialize) for c in columns)

    def row_key(self, key: tuple[bytes, ...], clustering: tuple[bytes, ...] | None) -> tuple:
        """:func:`row_key` of this table."""
        out = tuple([d(v) for d, v in zip(self._pk, key)])
        if clustering is None:
            return out + self._static_key
        return out + tuple([d(v) for d, v in zip(self._ck, clustering)])


def serialized(columns: tuple[ImageColumn, ...], row: LiveRow) -> list[bytes | None]:
    """The serialized value of each column in ``row`` (None when null), as :func:`column_bytes` gives it."""
    if row.values is not None or row.complex:
        return [column_bytes(row, col) for col, _, _, _ in columns]
    cells = row.cells
    return [None if c is None else c.value for c in [cells.get(name) for _, name, _, _ in columns]]


def live_values(plan: TablePlan, row: RowData | None, outer: Deletion | None, now: int) -> list[bytes | None] | None:
    """The serialized value of each of ``plan.named_regular`` in the live view of a stored clustered row record
    (None when nothing of it is live), read for values only (``query.read.live_values``, the values of
    ``query.read.live_values_row`` without the row object)."""
    if row is None:
        return None
    live = read_live_values(plan.table, row, outer, now, plan.complex)
    if live is None:
        return None
    return list(map(live[0].get, plan.named_regular_names))


def images(columns: tuple[ImageColumn, ...], before: "LiveRow | None",
           after: "LiveRow | None") -> tuple[dict[str, object] | None, dict[str, object] | None]:
    """The images (:func:`~logtide.changefeed.render.image`) of a row before and after a write; a column
    whose stored value the write left as it was is deserialized once, for both."""
    old: dict[str, object] | None = None
    new: dict[str, object] | None = None
    if before is not None:
        bs = serialized(columns, before)
        old = {name: des(b) for (_, name, _, des), b in zip(columns, bs)}
    if after is not None:
        as_ = serialized(columns, after)
        if old is None:
            new = {name: des(a) for (_, name, _, des), a in zip(columns, as_)}
        else:
            new = {name: old[name] if a == b else des(a) for (_, name, _, des), a, b in zip(columns, as_, bs)}
    return old, new


def _written(row: RowData) -> list[str]:
    """The columns a row update writes, in name order."""
    return sorted(set(row.cells) | set(row.complex))


def derive(pu: PartitionUpdate, before: Callable[[bytes, bool], "LiveRow | None"], existing: list[LiveRow],
           after: Callable[[bytes, bool], "LiveRow | None"], table: Table | None = None,
           plan: TablePlan | None = None, updates: bool = True) -> list[FeedChange]:
    """The changes of one partition update.

    ``before(ck, static)``/``after(ck, static)`` give a touched row before and
    after the write; ``existing`` lists the clustered rows that existed, before
    the write, in the ranges and partition the update deletes.  ``table`` is the table as of the commit
    (default ``pu.table``): its columns shape the images; ``plan`` is its :class:`TablePlan` when the caller
    keeps one.  ``updates=False`` leaves each change's ``updated`` empty (only UPDATES mode renders it).
    """
    table = table if table is not None else pu.table
    if plan is None or plan.table is not table:
        plan = TablePlan(table)
    clustered = plan.clustered
    out: list[FeedChange] = []

    def emit(ck: bytes, static: bool, clustering: tuple[bytes, ...] | None, written: "RowData | list | None",
             deleted: bool) -> None:
        a = after(ck, static)
        old, new = images(plan.static if static else plan.regular, before(ck, static), a)
        erase = deleted and a is None
        updated: dict[str, object] = {}
        if updates and not erase:
            if written is None:
                updated = {name: (new or {}).get(name) for _, name, _, _ in (plan.static if static else plan.regular)}
            else:
                names = new or old or (plan.static_names if static else plan.regular_names)
                updated = {n: (new or {}).get(n) for n in (written if isinstance(written, list) else _written(written))
                           if n in names}
        change = RowChange("erase" if erase else "update", plan.row_key(pu.key, clustering), old,
                           None if erase else new, updated)
        out.append(FeedChange(change, pu.token, pu.pk, ck, static, old))

    # the static row first, as a partition's static row comes first
    static_written = pu.static is not None and not pu.static.is_empty()
    if clustered and (static_written or (pu.deletion is not None and before(b"", True) is not None)):
        emit(b"", True, None, pu.static if static_written else None, pu.deletion is not None and not static_written)
    done: set[bytes] = set()
    if pu.deletion is not None and not clustered:  # a row DELETE of a table without clustering columns
        upd = pu.rows.get(b"")
        emit(b"", False, (), upd if upd is not None else [], True)
        done.add(b"")
    range_rows = {lr.ck: lr for lr in existing}
    for ck in (sorted(set(pu.rows) | set(range_rows)) if range_rows or len(pu.rows) > 1 else pu.rows):
        if ck in done:
            continue
        upd = pu.rows.get(ck)
        if upd is None:  # only covered by a range or partition deletion, and it existed
            emit(ck, False, range_rows[ck].clustering, [], True)
            continue
        deleted = upd.deletion is not None or ck in range_rows
        emit(ck, False, upd.clustering if clustered else (), upd, deleted)
    return out


def partition_changes(images: PartitionImages, table: Table, plan: TablePlan, updates: bool,
                      now: int) -> list[FeedChange]:
    """:func:`derive` of one partition update from its touched rows before and after the write, as a reader
    at time ``now`` sees them (``table`` as of the commit, ``plan`` its :class:`TablePlan`)."""
    pu = images.update
    rows = images.rows
    tid, pk, key = table.store_id, pu.pk, pu.key
    seen: dict[tuple[bytes, bool], LiveRow | None] = {}

    def before(ck: bytes, static: bool) -> LiveRow | None:
        hit = seen.get((ck, static), seen)
        if hit is not seen:
            return hit  # type: ignore[return-value]
        tr = rows.get((tid, pk, ck, static))
        lr = seen[(ck, static)] = None if tr is None else live(table, tr.preimage, key, ck, static, now)
        return lr

    def after(ck: bytes, static: bool) -> LiveRow | None:
        tr = rows.get((tid, pk, ck, static))
        return None if tr is None else live(table, tr.postimage, key, ck, static, now)

    existing = [lr for lr in [before(ck, False) for ck in images.removed] if lr is not None]
    return derive(pu, before, existing, after, table, plan, updates)


def row_values(images: PartitionImages, plan: TablePlan, now: int,
               old_image: bool) -> list[tuple[bool, tuple[bytes, ...], list | None, list | None]]:
    """(erase, primary key, values before, values after) of each clustered row an update without partition,
    range or static changes writes, in clustering order: what :func:`derive` makes of it, as serialized
    values of the regular columns in name order (``JsonRecords.row_columns``), from the rows' stored records
    before and after the write; the values before only for a changefeed that shows them (``old_image``:
    None otherwise)."""
    pu = images.update
    rows = images.rows
    out = []
    tid = plan.table.store_id
    key = pu.key
    clustered = plan.clustered
    for ck in sorted(pu.rows) if len(pu.rows) > 1 else pu.rows:
        upd = pu.rows[ck]
        _, old, new = rows[(tid, pu.pk, ck, False)]
        b = None if old is None or not old_image else live_values(plan, old[0], old[1], now)
        a = None if new is None else live_values(plan, new[0], new[1], now)
        erase = upd.deletion is not None and a is None
        out.append((erase, key + upd.clustering if clustered else key, b, None if erase else a))
    return out


class WritePlan(NamedTuple):
    """What the write path does for one table object's active changefeeds (spec ``004``, "Guarantees"), made
    once per table (a schema change, or a changefeed added, dropped or disabled, makes a new table object)."""

    table: Table
    plan: TablePlan
    updates: bool  # one of the active changefeeds renders ``updated`` (UPDATES mode)
    fast: bool  # all of them are JSON ones that do not: their row upserts and deletes take the direct path
    feeds: tuple[Changefeed, ...]  # the active changefeeds
    json_feeds: tuple[tuple[Changefeed, JsonRecords, int], ...]  # with their renderers and partition counts (fast)
    old_image: bool  # one of them shows the image before the write (OLD_IMAGE, NEW_AND_OLD_IMAGES)

    @classmethod
    def of(cls, table: Table, json_records: Callable[[Table, Changefeed], JsonRecords]) -> "WritePlan":
        """The plan of ``table`` (which has an active changefeed)."""
        active = tuple(f for f in table.changefeeds if not f.disabled)
        updates = any(f.options.mode == "UPDATES" for f in active)
        fast = not updates and all(f.options.format == "JSON" for f in active)
        jf = tuple((f, json_records(table, f), f.options.partitions) for f in active) if fast else ()
        old = any(f.options.mode in ("OLD_IMAGE", "NEW_AND_OLD_IMAGES") for f in active)
        return cls(table, TablePlan(table), updates, fast, active, jf, old)

    def direct(self, pu: PartitionUpdate) -> bool:
        """Whether ``pu``'s changes take the direct path (:func:`row_values`): plain row upserts and deletes
        (no partition, range or static change) of a table whose changefeeds allow it; the caller also checks
        that none of them is in its initial scan."""
        return self.fast and pu.deletion is None and not pu.range_deletions and pu.static is None

