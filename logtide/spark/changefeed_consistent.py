"""The barrier-consistent cut of a changefeed topic (docs/spark.md "Barrier-consistent micro-batches").

A barrier ``{"resolved":[B,0]}`` in a partition promises that no record with a virtual timestamp
below ``(B, 0)`` follows it there (spec ``004``).  The global barrier ``G`` is the minimum over the
partitions of each one's latest barrier, so no partition can still receive a record below ``G``.
Virtual timestamps grow with offsets inside a partition, so the records below ``G`` are a prefix
of each partition: the cut is, per partition, one past the last record that is below ``G`` (a data
record with step < G, or a barrier with B < G).  A transaction has one virtual timestamp in every
partition it writes, so it lies wholly below the cut or wholly above it.

The driver finds the cut by reading each partition backwards from its end, in windows that double
(64, 128, ... records): first to its latest barrier, then on to its last record below ``G``.  It
reads about the records written since the global barrier (at most a barrier interval's worth plus
what arrived since), never the whole batch; only the ``ts``/``resolved`` members are looked at.
"""

from __future__ import annotations

from typing import Mapping

from .changefeed_rows import record_step
from .changefeed_topic import TopicAccess

FIRST_WINDOW = 64


class MissingTimestamp(ValueError):
    """A record without ``ts``: the changefeed has no VIRTUAL_TIMESTAMPS."""


class _Tail:
    """The records of one partition read so far, backwards from ``end``: (offset, is barrier, step)."""

    def __init__(self, access: TopicAccess, partition: int, start: int, end: int) -> None:
        self.access, self.partition, self.start, self.end = access, partition, start, end
        self.lo = end  # records [lo, end) are in self.records (newest first)
        self.records: list[tuple[int, bool, int]] = []

    def more(self) -> bool:
        """Read the next window backwards; False at the start."""
        if self.lo <= self.start:
            return False
        size = max(FIRST_WINDOW, self.end - self.lo)
        lo = max(self.start, self.lo - size)
        window = []
        for off, _ms, _key, value in self.access.read(self.partition, lo, self.lo):
            barrier, step = record_step(value)
            if step is None:
                raise MissingTimestamp(f"option consistent: record {off} of partition {self.partition} has no "
                                       f"virtual timestamp (the changefeed needs VIRTUAL_TIMESTAMPS = TRUE)")
            window.append((off, barrier, step))
        self.records.extend(reversed(window))
        self.lo = lo
        return True

    def latest_barrier(self) -> int | None:
        i = 0
        while True:
            for off, barrier, step in self.records[i:]:
                if barrier:
                    return step
            i = len(self.records)
            if not self.more():
                return None

    def cut_below(self, g: int) -> int:
        """One past the last record below ``g`` (``start`` if none)."""
        i = 0
        while True:
            for off, _barrier, step in self.records[i:]:
                if step < g:
                    return off + 1
            i = len(self.records)
            if not self.more():
                return self.start


def consistent_cut(access: TopicAccess, start: Mapping[int, int], end: Mapping[int, int]) -> dict[int, int] | None:
    """Per partition the offset that ends the batch at the global barrier within ``[start, end)``.

    None when some partition has no barrier in its range (nothing new can be cut yet).
    """
    tails = {p: _Tail(access, p, start[p], max(start[p], end[p])) for p in sorted(start)}
    barriers = {}
    for p, tail in tails.items():
        b = tail.latest_barrier()
        if b is None:
            return None
        barriers[p] = b
    g = min(barriers.values())
    return {p: max(start[p], tail.cut_below(g)) for p, tail in tails.items()}


def capped_cut(access: TopicAccess, start: Mapping[int, int], cut: Mapping[int, int],
               max_records: int) -> dict[int, int]:
    """A cut at an earlier global barrier when ``cut`` (the latest one) holds more than ``max_records`` messages.

    Reads each partition forwards from its start (``max_records`` messages, doubling while no barrier
    common to every partition moves the batch on) and picks the latest barrier seen in every partition
    whose cut holds at most ``max_records`` messages in all; when even the first one holds more, that
    first one: a batch always moves on by at least one global barrier, and never splits a transaction.
    """
    if sum(cut[p] - start[p] for p in start) <= max_records:
        return dict(cut)
    window = max_records
    while True:
        best = _best_barrier_cut(access, start, cut, window, max_records)
        if best is not None:
            return best
        if all(start[p] + window >= cut[p] for p in start):
            return dict(cut)
        window *= 2


def _best_barrier_cut(access: TopicAccess, start: Mapping[int, int], cut: Mapping[int, int], window: int,
                      max_records: int) -> dict[int, int] | None:
    seen: dict[int, list[tuple[int, bool, int]]] = {}
    for p in sorted(start):
        seen[p] = []
        for off, _ms, _key, value in access.read(p, start[p], min(cut[p], start[p] + window)):
            barrier, step = record_step(value)
            if step is None:
                raise MissingTimestamp(f"option consistent: record {off} of partition {p} has no virtual timestamp")
            seen[p].append((off, barrier, step))
    common = set.intersection(*({s for _o, b, s in recs if b} for recs in seen.values())) if seen else set()
    best = None
    for g in sorted(common):
        c = {p: next((o + 1 for o, _b, s in reversed(recs) if s < g), start[p]) for p, recs in seen.items()}
        if c == dict(start):  # a barrier below every new record: no progress
            continue
        if best is None or sum(c[p] - start[p] for p in start) <= max_records:
            best = c
        else:
            break
    return best
