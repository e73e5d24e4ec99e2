"""How many partitions a table holds in a token range, and their mean size: the numbers of ScyllaDB's
``system.size_estimates`` (``db/size_estimates_virtual_reader.cc``), made from the stored records.

ScyllaDB estimates from its sstables' metadata (key counts and a partition-size histogram), without reading the
data.  logtide's store is one SQLite B-tree per kind of record (``rows``, ``partitions``), ordered by table, token
and partition key, with no counts in it; so a range's partitions are walked in key order, one index seek per
partition (never reading a partition's rows), and:

* a range of at most ``SAMPLE`` partitions is counted exactly;
* in a larger one, the walk stops at the ``SAMPLE``-th partition and the count is extrapolated from the share of
  the range's tokens walked: Murmur3 tokens are spread evenly, so the error is about ``1 / sqrt(SAMPLE)`` of the
  range's count (4.4 % for 512; less summed over the ranges of a table);
* the mean partition size is the bytes of the walked partitions' records (keys and encoded cells, as stored, with
  their checksums; not SQLite's page overhead), read up to ``SIZE_RECORDS`` records: a partition that the cut
  falls in counts as a whole partition, so wide partitions (more than ``SIZE_RECORDS`` rows among the walked ones)
  make the mean a lower bound.

Partitions are counted as stored: a deleted partition counts until its tombstone is purged, as in ScyllaDB and
Cassandra, and expired cells until they are.  The cost of one range is at most ``2 * SAMPLE`` index seeks and
``SIZE_RECORDS`` records read, whatever the table's size.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from .keys import MIN_TOKEN

MAX_TOKEN = 2**63 - 1
SAMPLE = 512  # partitions counted per token range before the count is extrapolated
SIZE_RECORDS = 20_000  # records read per token range to measure the mean partition size

_FIRST = "SELECT token, pk FROM {kind} WHERE tid = ? AND token >= ? AND token <= ? ORDER BY token, pk LIMIT 1"
_NEXT = ("SELECT token, pk FROM {kind} WHERE tid = ? AND (token, pk) > (?, ?) AND token <= ? "
         "ORDER BY token, pk LIMIT 1")
_ROWS_UP_TO = "FROM rows WHERE tid = ? AND token >= ? AND (token, pk) <= (?, ?) ORDER BY token, pk, ck"
_ROW_BYTES = ("SELECT count(*), coalesce(sum(n), 0) FROM (SELECT length(pk) + length(ck) + length(data) AS n "
              f"{_ROWS_UP_TO} LIMIT ?)")
_ROW_AT = f"SELECT token, pk {_ROWS_UP_TO} LIMIT 1 OFFSET ?"
_PARTITION_BYTES = ("SELECT coalesce(sum(length(pk) + length(data)), 0) FROM partitions WHERE tid = ? "
                    "AND token >= ? AND (token, pk) <= (?, ?)")


@dataclass(frozen=True)
class RangeEstimate:
    """A table's partitions in one token range: how many (``partitions_count``) and their mean size in bytes."""

    partitions_count: int
    mean_partition_size: int


def estimate_range(txn: Any, tid: int, start: int, end: int) -> RangeEstimate:
    """The partitions of table ``tid`` whose tokens are in ``(start, end]`` (a range that wraps past the ring's end
    when ``start >= end``; ``(t, t]`` is the whole ring), read in the snapshot ``txn``."""
    if start < end:
        spans = [(start + 1, end)]
    else:  # wraps: (start, max] then [min, end]
        spans = ([(start + 1, MAX_TOKEN)] if start < MAX_TOKEN else []) + [(MIN_TOKEN, end)]
    count = total_bytes = sized = 0
    for lo, hi in spans:
        c, b, s = _estimate_span(txn, tid, lo, hi)
        count, total_bytes, sized = count + c, total_bytes + b, sized + s
    return RangeEstimate(count, total_bytes // sized if sized else 0)


def _estimate_span(txn: Any, tid: int, lo: int, hi: int) -> tuple[int, int, int]:
    """(estimated partitions, bytes measured, partitions those bytes cover) in tokens ``[lo, hi]``."""
    walked = _walk(txn, tid, lo, hi)
    if not walked:
        return 0, 0, 0
    count = len(walked)
    if count == SAMPLE:  # more may follow: extrapolate from the share of the span's tokens walked
        last = walked[-1][0]
        width, covered = hi - lo + 1, last - lo + 1
        count = max(count, round((SAMPLE - 1) * width / covered))
    last_token, last_pk = walked[-1]
    records, total = txn.sql(_ROW_BYTES, (tid, lo, last_token, last_pk, SIZE_RECORDS))[0]
    sized = len(walked)
    if records == SIZE_RECORDS:  # cut inside the walked partitions: the ones the records reached
        cut_token, cut_pk = txn.sql(_ROW_AT, (tid, lo, last_token, last_pk, SIZE_RECORDS - 1))[0]
        sized = bisect_right(walked, (cut_token, bytes(cut_pk)))
        last_token, last_pk = cut_token, cut_pk
    total += txn.sql(_PARTITION_BYTES, (tid, lo, last_token, last_pk))[0][0]
    return count, total, sized


def _walk(txn: Any, tid: int, lo: int, hi: int) -> list[tuple[int, bytes]]:
    """The first ``SAMPLE`` partitions (token, key) with tokens in ``[lo, hi]``, in key order: those with rows and
    those with only partition-level records (a static row, a partition tombstone), each once."""
    heads = {kind: _first(txn, kind, tid, lo, hi) for kind in ("rows", "partitions")}
    out: list[tuple[int, bytes]] = []
    while len(out) < SAMPLE:
        live = [h for h in heads.values() if h is not None]
        if not live:
            break
        key = min(live)
        out.append(key)
        for kind, head in heads.items():
            if head == key:
                heads[kind] = _next(txn, kind, tid, key, hi)
    return out


def _first(txn: Any, kind: str, tid: int, lo: int, hi: int) -> tuple[int, bytes] | None:
    found = txn.sql(_FIRST.format(kind=kind), (tid, lo, hi))
    return (found[0][0], bytes(found[0][1])) if found else None


def _next(txn: Any, kind: str, tid: int, after: tuple[int, bytes], hi: int) -> tuple[int, bytes] | None:
    found = txn.sql(_NEXT.format(kind=kind), (tid, after[0], after[1], hi))
    return (found[0][0], bytes(found[0][1])) if found else None
