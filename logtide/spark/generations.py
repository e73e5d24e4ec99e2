"""CDC generations and streams read the way ScyllaDB's consumers read them (scylla-cdc-java's master).

``system_distributed.cdc_generation_timestamps`` lists the generations' start times;
``system_distributed.cdc_streams_descriptions_v2`` lists each generation's streams, one row per vnode
token range.  A generation is in force from its start until the next one starts (the first one
covers all earlier time).  The streams of one vnode range form one *vnode group*: one Spark input
partition, as one task of ScyllaDB's connectors.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass

from .client import Client

GREGORIAN_OFFSET = 0x01B21DD213814000
# a generation's start is published in milliseconds; writes of the previous generation may carry
# timestamps up to one millisecond past it, so windows near a switch read both generations
SWITCH_SLACK_MICROS = 1000
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def to_micros(t: datetime.datetime) -> int:
    """A ``timestamp`` value (naive UTC or aware) as microseconds since the epoch."""
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    d = t - _EPOCH
    return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds


def from_micros(m: int) -> datetime.datetime:
    return _EPOCH + datetime.timedelta(microseconds=m)


def time_bound(micros: int) -> uuid.UUID:
    """A timeuuid between every ``cdc$time`` of ``micros`` and of ``micros + 1`` (cdc$time = micros * 10)."""
    t = micros * 10 + 5 + GREGORIAN_OFFSET
    return uuid.UUID(fields=(t & 0xFFFFFFFF, (t >> 32) & 0xFFFF, 0x1000 | ((t >> 48) & 0x0FFF), 0x80, 0, 0))


def cdc_time_micros(u: uuid.UUID) -> int:
    """The write timestamp (microseconds) of a ``cdc$time`` timeuuid."""
    return (u.time - GREGORIAN_OFFSET) // 10


@dataclass(frozen=True)
class CdcGeneration:
    """A generation: start (microseconds, from the published millisecond timestamp) and its vnode groups."""

    start: int
    groups: tuple[tuple[bytes, ...], ...]


def load_generations(client: Client) -> list[CdcGeneration]:
    """Every generation in time order, with its streams grouped by vnode range."""
    times = sorted({to_micros(r[0]) for r in client.rows(
        "SELECT time FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps'")})
    out = []
    for start in times:
        rows = list(client.rows("SELECT range_end, streams FROM system_distributed.cdc_streams_descriptions_v2 "
                                "WHERE time = ?", (from_micros(start),)))
        groups = tuple(tuple(sorted(bytes(s) for s in streams)) for _, streams in sorted(rows))
        if groups:
            out.append(CdcGeneration(start, groups))
    return out


def spans(gens: list[CdcGeneration], lo: int, hi: int) -> list[tuple[CdcGeneration, int, int]]:
    """The generations whose time overlaps ``(lo, hi]``, each with the part ``(lo', hi']`` to read in it."""
    out = []
    for i, g in enumerate(gens):
        g_lo = -(1 << 62) if i == 0 else g.start - 1
        g_hi = (1 << 62) if i + 1 == len(gens) else gens[i + 1].start + SWITCH_SLACK_MICROS
        a, b = max(lo, g_lo), min(hi, g_hi)
        if a < b:
            out.append((g, a, b))
    return out
