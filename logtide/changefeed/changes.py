"""From the before/after state of the rows a statement touched to changefeed row changes (spec ``004``).

Pure: no I/O.  One record per changed row per statement: INSERT and UPDATE
give ``update`` records; a row DELETE an ``erase``; range and partition
deletes one ``erase`` per row that existed; a column DELETE an update that
sets the column to null.  A static-column change (YDB has no static columns)
gives a record keyed by the partition key with null clustering components,
whose images hold the static columns; clustered rows' images hold the regular
columns.
"""

from __future__ import annotations

from typing import Callable, Mapping, NamedTuple, Sequence

from ..mutation.model import PartitionUpdate
from ..query.read import LiveRow, column_bytes
from ..schema.model import Column, Table
from .render import RowChange, image

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


def _names(columns: Sequence[Column]) -> set[str]:
    return {c.name for c in columns}


def row_key(table: Table, key: tuple[bytes, ...], clustering: tuple[bytes, ...] | None) -> tuple:
    """The primary-key values: partition key then clustering (None for each clustering column of the static row)."""
    out = [c.type.deserialize(v) for c, v in zip(table.partition_key, key)]
    if clustering is None:
        return tuple(out) + (None,) * len(table.clustering_key)
    return tuple(out + [c.type.deserialize(v) for c, v in zip(table.clustering_key, clustering)])


def images(columns: Sequence[Column], before: "LiveRow | None",
           after: "LiveRow | None") -> tuple[dict[str, object] | None, dict[str, object] | None]:
    """The images (:func:`~logtide.changefeed.render.image`) of a row before and after a write; a column
    whose stored value the write left as it was is deserialized once, for both."""
    if before is None or after is None:
        return (None if before is None else image(None, before, columns),
                None if after is None else image(None, after, columns))
    old: dict[str, object] = {}
    new: dict[str, object] = {}
    for col in columns:
        b = column_bytes(before, col)
        a = column_bytes(after, col)
        old[col.name] = vb = None if b is None else col.type.deserialize(b)
        new[col.name] = vb if a is b or a == b else (None if a is None else col.type.deserialize(a))
    return old, new


def derive(pu: PartitionUpdate, before: Callable[[bytes, bool], "LiveRow | None"], existing: list[LiveRow],
           after: Callable[[bytes, bool], "LiveRow | None"], table: Table | None = None) -> list[FeedChange]:
    """The changes of one partition update.

    ``before(ck, static)``/``after(ck, static)`` give a touched row before and
    after the write; ``existing`` lists the clustered rows that existed, before
    the write, in the ranges and partition the update deletes.  ``table`` is the table as of the commit
    (default ``pu.table``): its columns shape the images.
    """
    table = table if table is not None else pu.table
    clustered = bool(table.clustering_key)
    out: list[FeedChange] = []

    def emit(ck: bytes, static: bool, clustering: tuple[bytes, ...] | None, written: list[str] | None,
             deleted: bool) -> None:
        cols = table.static_columns if static else table.regular_columns
        a = after(ck, static)
        old, new = images(cols, before(ck, static), a)
        erase = deleted and a is None
        if erase:
            updated: dict[str, object] = {}
        elif written is None:
            updated = {c.name: (new or {}).get(c.name) for c in cols}
        else:
            updated = {n: (new or {}).get(n) for n in written if n in (new or old or _names(cols))}
        change = RowChange("erase" if erase else "update", row_key(table, pu.key, clustering), old,
                           None if erase else new, updated)
        out.append(FeedChange(change, pu.token, pu.pk, ck, static, old))

    # the static row first, as a partition's static row comes first
    static_written = pu.static is not None and not pu.static.is_empty()
    if clustered and (static_written or (pu.deletion is not None and before(b"", True) is not None)):
        written = sorted(set(pu.static.cells) | set(pu.static.complex)) if static_written else None
        emit(b"", True, None, written, pu.deletion is not None and not static_written)
    done: set[bytes] = set()
    if pu.deletion is not None and not clustered:  # a row DELETE of a table without clustering columns
        upd = pu.rows.get(b"")
        written = sorted(set(upd.cells) | set(upd.complex)) if upd is not None else []
        emit(b"", False, (), written, True)
        done.add(b"")
    range_rows = {lr.ck: lr for lr in existing}
    for ck in sorted(set(pu.rows) | set(range_rows)):
        if ck in done:
            continue
        upd = pu.rows.get(ck)
        if upd is None:  # only covered by a range or partition deletion, and it existed
            emit(ck, False, range_rows[ck].clustering, [], True)
            continue
        written = sorted(set(upd.cells) | set(upd.complex))
        deleted = upd.deletion is not None or ck in range_rows
        emit(ck, False, upd.clustering if clustered else (), written, deleted)
    return out
