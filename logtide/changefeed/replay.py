"""Replaying a JSON changefeed, and the checks a feed must pass (spec ``004``, "Record structure").

Pure functions over parsed JSON records (``json.loads`` of each record value),
for consumers and for tests:

* :func:`replay` rebuilds a table from a ``NEW_IMAGE`` or ``NEW_AND_OLD_IMAGES``
  feed (or, less strictly, an ``UPDATES`` feed), key by key;
* :func:`image_chain_breaks` finds records whose ``oldImage`` is not the
  previous ``newImage`` of their key;
* :func:`barrier_breaks` finds records written after a barrier in their
  partition with a smaller virtual timestamp;
* :func:`order_breaks` finds records whose virtual timestamp is smaller than
  an earlier one's in the same partition.

Rows are keyed by the compact JSON of the record's ``key`` array, so keys
holding collections work too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

Row = dict[str, object]


def key_text(record: Mapping[str, object]) -> str:
    """The compact JSON of a record's ``key`` array: the identity of its row."""
    return json.dumps(record["key"], separators=(",", ":"), ensure_ascii=False)


def is_barrier(record: Mapping[str, object]) -> bool:
    """A barrier record ``{"resolved":[step,0]}``."""
    return "resolved" in record


def is_row_change(record: Mapping[str, object]) -> bool:
    """A record about one row (not a barrier, not a schema change ``{"tableChanges":[...]}``)."""
    return "key" in record


def replay(records: Iterable[Mapping[str, object]], mode: str = "NEW_AND_OLD_IMAGES") -> dict[str, Row]:
    """The table a feed describes: key text -> non-key columns, after every record in order.

    In image modes an update record sets the row to its ``newImage`` and an
    erase removes it; an update record without ``newImage`` (a CQL statement
    that wrote only nulls or tombstones, leaving no row) removes it too.  In ``UPDATES`` mode an update merges its written
    columns into the row (so a row that vanished because every column became
    null still shows, with nulls).  Barriers and schema changes are skipped.
    """
    if mode not in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES", "UPDATES"):
        raise ValueError(f"a {mode} feed does not carry the row values")
    state: dict[str, Row] = {}
    for rec in records:
        if not is_row_change(rec):
            continue
        key = key_text(rec)
        if "erase" in rec:
            state.pop(key, None)
        elif mode == "UPDATES":
            state[key] = {**state.get(key, {}), **rec["update"]}  # type: ignore[dict-item]
        elif rec.get("newImage") is None:
            state.pop(key, None)
        else:
            state[key] = dict(rec["newImage"])  # type: ignore[call-overload]
    return state


@dataclass(frozen=True)
class Break:
    """One record that breaks a feed property: its index in the sequence checked, and why."""

    index: int
    reason: str


def image_chain_breaks(records: Sequence[Mapping[str, object]]) -> list[Break]:
    """Records of a ``NEW_AND_OLD_IMAGES`` feed whose ``oldImage`` is not the previous ``newImage`` of their key.

    ``records`` must hold every record of each key in order (one partition
    in offset order, or a whole topic partition by partition: a key's records
    are all in one partition).  A key's first record has no ``oldImage``
    unless the row existed before the feed began (then nothing can be
    checked); after an erase the next record must have no ``oldImage``.
    """
    last: dict[str, Row | None] = {}
    relaxed: set[str] = set()  # keys whose next oldImage may hold columns added since their last newImage
    breaks = []
    for i, rec in enumerate(records):
        if "tableChanges" in rec:  # a schema change: earlier images take the new columns (added ones null)
            last = {k: _under_schema(img, rec) for k, img in last.items()}
            relaxed = set(last)
            continue
        if not is_row_change(rec):
            continue
        key = key_text(rec)
        old = rec.get("oldImage")
        if key in last and old != last[key] and not (key in relaxed and _same_but_new_nulls(old, last[key])):
            breaks.append(Break(i, f"oldImage {old!r} is not the previous newImage {last[key]!r} of key {key}"))
        last[key] = None if "erase" in rec else rec.get("newImage")  # type: ignore[assignment]
        relaxed.discard(key)
    return breaks


def _under_schema(image: Row | None, change: Mapping[str, object]) -> Row | None:
    """An image without the columns a schema-change record no longer lists."""
    if image is None:
        return None
    columns = change["tableChanges"][0]["table"]["columns"]  # type: ignore[index]
    return {c: v for c, v in image.items() if c in columns}


def _same_but_new_nulls(old: Mapping[str, object] | None, previous: Row | None) -> bool:
    """Whether ``old`` is ``previous`` plus null columns (added by ALTER TABLE since ``previous`` was written)."""
    if old is None or previous is None:
        return False
    return all(old.get(c, ...) == v for c, v in previous.items()) and \
        all(v is None for c, v in old.items() if c not in previous)


def barrier_breaks(partition_records: Sequence[Mapping[str, object]]) -> list[Break]:
    """Records of one partition (offset order) that follow a barrier but carry a smaller virtual timestamp.

    A barrier ``[step, 0]`` promises that every record with a smaller virtual
    timestamp is already in the partition; records need ``"ts"``
    (VIRTUAL_TIMESTAMPS = TRUE).  Barrier steps must not go down either.
    """
    resolved: tuple[int, int] | None = None
    breaks = []
    for i, rec in enumerate(partition_records):
        if is_barrier(rec):
            step = tuple(rec["resolved"])  # type: ignore[arg-type]
            if resolved is not None and step < resolved:
                breaks.append(Break(i, f"barrier {list(step)} after barrier {list(resolved)}"))
            resolved = step if resolved is None else max(resolved, step)  # type: ignore[assignment]
            continue
        ts = rec.get("ts")
        if ts is None:
            breaks.append(Break(i, "record without a virtual timestamp"))
        elif resolved is not None and tuple(ts) < resolved:  # type: ignore[arg-type]
            breaks.append(Break(i, f"ts {ts} after barrier {list(resolved)}"))
    return breaks


def order_breaks(partition_records: Sequence[Mapping[str, object]]) -> list[Break]:
    """Records of one partition (offset order) whose virtual timestamp is smaller than an earlier record's.

    Records enter a partition in commit order and virtual timestamps follow
    commit order, so ``ts`` never goes down within a partition.
    """
    last: list | None = None
    breaks = []
    for i, rec in enumerate(partition_records):
        ts = rec.get("ts")
        if is_barrier(rec) or ts is None:
            continue
        if last is not None and ts < last:  # type: ignore[operator]
            breaks.append(Break(i, f"ts {ts} after ts {last}"))
        last = ts  # type: ignore[assignment]
    return breaks
