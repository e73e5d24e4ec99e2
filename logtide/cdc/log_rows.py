"""CDC log rows (spec ``001``, ``003``): the ``cdc$operation`` values, a derived row (:class:`LogRow`), and the rows
of one stream encoded for storage under fresh keys (:func:`log_update`, :class:`LogAppend`).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass
from typing import Callable, NamedTuple

from ..schema import types as T
from ..schema.model import Table
from ..storage.records import encode_uniform_rows


PREIMAGE, UPDATE, INSERT, ROW_DELETE, PARTITION_DELETE = 0, 1, 2, 3, 4
RANGE_LEFT_INCLUSIVE, RANGE_LEFT_EXCLUSIVE, RANGE_RIGHT_INCLUSIVE, RANGE_RIGHT_EXCLUSIVE = 5, 6, 7, 8
POSTIMAGE = 9
# ScyllaDB's deletions the server itself makes (cdc/log.hh ``service_row_delete``, ``service_partition_delete``):
# the per-row TTL's expiry (``engine.row_expiry``), the negative of a user's row or partition delete
SERVICE_ROW_DELETE, SERVICE_PARTITION_DELETE = -3, -4

TRUE = b"\x01"
OPERATION_BYTES = tuple(struct.pack(">b", op) for op in range(10))  # cdc$operation values, serialized
SERVICE_OPERATION_BYTES = {op: struct.pack(">b", op) for op in (SERVICE_ROW_DELETE, SERVICE_PARTITION_DELETE)}


class LogRow(NamedTuple):
    """One log row: group timestamp, sequence number within the group, and column values (serialized).

    An immutable value (its ``values`` are filled while its group is built); a NamedTuple because the
    write path makes several per statement, where a dataclass costs about twice as much."""

    timestamp: int
    seq: int
    values: dict[str, bytes]


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
