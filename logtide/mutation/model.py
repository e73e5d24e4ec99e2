"""Mutations: what a statement or batch writes, partition by partition.

A :class:`Mutation` is the unit that the CDC derivation (``logtide.cdc``)
reads and that storage commits atomically.  It keeps every written cell and
tombstone as written, including the ``T - 1`` collection tombstones of
overwrites, so that the CDC log can describe the write exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..schema.model import Table
from .cells import Deletion, RowData


@dataclass
class RangeDeletion:
    """A range tombstone as the statement wrote it.

    ``start``/``end`` are clustering prefixes (serialized values) with their
    inclusiveness; an empty prefix with ``None`` inclusiveness means unbounded.
    ``lo``/``hi`` is the same range in comparable-key space, ``[lo, hi)``.
    """

    start: tuple[bytes, ...]
    start_inclusive: bool | None
    end: tuple[bytes, ...]
    end_inclusive: bool | None
    lo: bytes | None
    hi: bytes | None
    deletion: Deletion


@dataclass
class PartitionUpdate:
    """All writes of one mutation to one partition of one table."""

    table: Table
    key: tuple[bytes, ...]
    pk: bytes
    token: int
    deletion: Deletion | None = None
    range_deletions: list[RangeDeletion] = field(default_factory=list)
    static: RowData | None = None
    rows: dict[bytes, RowData] = field(default_factory=dict)
    service: bool = False  # a deletion the server makes itself (row TTL expiry): CDC operations -3 and -4

    def is_empty(self) -> bool:
        return (self.deletion is None and not self.range_deletions
                and (self.static is None or self.static.is_empty())
                and all(r.is_empty() for r in self.rows.values()))


@dataclass
class Mutation:
    """The writes of one statement or batch, by (table store id, partition key)."""

    partitions: dict[tuple[int, bytes], PartitionUpdate] = field(default_factory=dict)

    def partition(self, table: Table, key: tuple[bytes, ...], pk: bytes, token: int) -> PartitionUpdate:
        """The update for a partition, created on first use."""
        k = (table.store_id, pk)
        pu = self.partitions.get(k)
        if pu is None:
            pu = PartitionUpdate(table, key, pk, token)
            self.partitions[k] = pu
        return pu

    def __iter__(self):
        return iter(self.partitions.values())
