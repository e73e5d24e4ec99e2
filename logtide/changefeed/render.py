"""Changefeed records as YDB writes them (spec ``004``, "Changefeed record structure").

Pure functions: a :class:`RowChange` in, the record's bytes and partition out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True)
class RowChange:
    """One changed row of one statement, as the capture stage derives it.

    ``key`` holds the primary-key values (partition key then clustering, in
    order); ``old``/``new`` hold every non-key column (None for null), or are
    None when the row did not exist before / does not exist after; ``updated``
    holds the columns the statement wrote with their new values (UPDATES mode;
    a deleted column maps to None).  ``snapshot`` marks an initial-scan record.
    """

    kind: str  # 'update' | 'erase'
    key: tuple
    old: Mapping[str, object] | None
    new: Mapping[str, object] | None
    updated: Mapping[str, object]
    snapshot: bool = False


@dataclass(frozen=True)
class Rendered:
    """A record ready for its topic: Kafka key (Debezium only), compact JSON value, partition."""

    key: bytes | None
    value: bytes
    partition: int


def render(table, opts, change: RowChange, step: int, tx_id: int, write_time_ms: int, seq_no: int) -> Rendered:
    """The record of ``change`` in ``opts.mode`` and ``opts.format``."""
    raise NotImplementedError


def render_barrier(step: int) -> bytes:
    """A barrier record ``{"resolved":[step,0]}``."""
    return b'{"resolved":[%d,0]}' % step


def partition_of(key: tuple, table, partitions: int) -> int:
    """The topic partition of a key: MD5 of the compact JSON key array over the 128-bit hash space."""
    raise NotImplementedError


def image(table, row, columns=None) -> dict[str, object] | None:
    """The non-key column values of a ``LiveRow`` (None if no row)."""
    raise NotImplementedError
