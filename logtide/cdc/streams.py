"""CDC streams and generations, built the way ScyllaDB builds vnode-based generations.

A single-node topology has ``vnodes`` tokens and ``shards`` shards.  A
generation has one token range ``(previous_end, end]`` per vnode and, per
range, one stream per shard; the stream of shard ``j`` is named after the
first token of the range that shard ``j`` owns.  A stream id is 16 bytes:
bytes 0-7 the token (big-endian int64), bytes 8-15 a big-endian uint64 whose
bits 0-3 are the version (1), bits 4-25 the vnode index and bits 26-63 random.

A write goes to the generation in force at its timestamp, then to the first
range whose end is >= the token of its partition key (wrapping around), then
to the stream of the shard owning that token:
``shard_of(t) = (((t + 2**63) << ignore_msb) * shards) >> 64`` in unsigned
64-bit arithmetic.
"""

from __future__ import annotations

import bisect
import json
import random
import struct
from dataclasses import dataclass

M64 = (1 << 64) - 1
VERSION = 1
FUTURE_LIMIT_MICROS = 5_000_000
# The first generation's start (microseconds): the first millisecond after the epoch, so that it covers
# every past write and is still found by scylla-cdc-java's ``SELECT min(time) ... WHERE time > 0``.
FIRST_GENERATION_START = 1000  # writes more than 5 s ahead of now have no stream yet


@dataclass(frozen=True)
class Topology:
    """The node's token layout: number of vnodes, shards, and the shard function's ignore_msb bits."""

    vnodes: int = 16
    shards: int = 2
    ignore_msb: int = 12

    def __post_init__(self) -> None:
        if not 1 <= self.vnodes <= (1 << 22):
            raise ValueError(f"vnodes must be between 1 and {1 << 22}, got {self.vnodes}")
        if not 1 <= self.shards <= 256:
            raise ValueError(f"shards must be between 1 and 256, got {self.shards}")
        if not 0 <= self.ignore_msb <= 63:
            raise ValueError(f"ignore_msb must be between 0 and 63, got {self.ignore_msb}")


def shard_of(token: int, shards: int, ignore_msb: int = 12) -> int:
    """The shard that owns a token (ScyllaDB's ``dht::shard_of`` for the Murmur3 partitioner)."""
    u = (token + (1 << 63)) & M64
    u = (u << ignore_msb) & M64
    return (u * shards) >> 64


def first_token_of_shard(lo_exclusive: int, hi_inclusive: int, shard: int, topo: Topology) -> int | None:
    """The smallest token in ``(lo, hi]`` that ``shard`` owns, or None.

    The shard function depends on the low ``64 - ignore_msb`` bits of the
    unbiased token; within each block of ``2**(64 - ignore_msb)`` tokens the
    shards own consecutive slices in order.
    """
    bits = 64 - topo.ignore_msb
    block = 1 << bits
    start = (lo_exclusive + 1 + (1 << 63)) & M64  # unbiased, inclusive
    end = (hi_inclusive + (1 << 63)) & M64
    # x-threshold where shard j starts: ceil(j * 2**64 / shards), in the shifted space
    xs = -(-(shard << 64) // topo.shards)
    low = -(-xs // (1 << topo.ignore_msb))  # first low-bits value whose shifted value reaches xs
    base = start - (start % block)
    candidates = []
    if shard_of(start - (1 << 63), topo.shards, topo.ignore_msb) == shard:
        candidates.append(start)
    for b in (base, base + block):
        u = b + low
        if u >= start and u <= M64:
            candidates.append(u)
    for u in sorted(candidates):
        t = u - (1 << 63)
        if u <= end and shard_of(t, topo.shards, topo.ignore_msb) == shard:
            return t
    return None


def make_stream_id(token: int, vnode_index: int, rng: random.Random) -> bytes:
    """A 16-byte stream id: the token, then version, vnode index and random bits (ScyllaDB's layout)."""
    low = VERSION | ((vnode_index & ((1 << 22) - 1)) << 4) | (rng.getrandbits(38) << 26)
    return struct.pack(">qQ", token, low)


@dataclass(frozen=True)
class Generation:
    """A CDC generation: its start timestamp (microseconds), range ends and streams per range."""

    timestamp: int
    range_ends: tuple[int, ...]
    streams: tuple[tuple[bytes, ...], ...]
    topology: Topology
    expired: int | None = None

    def stream_for(self, token: int) -> bytes:
        """The stream of a partition token: its vnode range, then its shard."""
        i = bisect.bisect_left(self.range_ends, token)
        if i == len(self.range_ends):
            i = 0
        streams = self.streams[i]
        return streams[shard_of(token, self.topology.shards, self.topology.ignore_msb) % len(streams)]

    def all_streams(self) -> list[bytes]:
        return [s for group in self.streams for s in group]

    def to_doc(self) -> dict:
        return {"timestamp": self.timestamp, "range_ends": list(self.range_ends),
                "streams": [[s.hex() for s in g] for g in self.streams],
                "topology": [self.topology.vnodes, self.topology.shards, self.topology.ignore_msb],
                "expired": self.expired}

    @classmethod
    def from_doc(cls, d: dict) -> "Generation":
        return cls(int(d["timestamp"]), tuple(int(x) for x in d["range_ends"]),
                   tuple(tuple(bytes.fromhex(s) for s in g) for g in d["streams"]),
                   Topology(*d["topology"]), d.get("expired"))


def node_tokens(vnodes: int, rng: random.Random) -> list[int]:
    """Random distinct vnode tokens, sorted (a new node picks its tokens at random)."""
    tokens: set[int] = set()
    while len(tokens) < vnodes:
        tokens.add(rng.randint(-(1 << 63) + 1, (1 << 63) - 1))
    return sorted(tokens)


def build_generation(topo: Topology, tokens: list[int], timestamp: int, rng: random.Random) -> Generation:
    """One range per vnode ``(previous end, end]`` (the first wraps around), one stream per shard."""
    ends = sorted(tokens)
    streams = []
    for i, end in enumerate(ends):
        prev = ends[i - 1] if i > 0 else ends[-1]
        group = []
        for shard in range(topo.shards):
            if i == 0:
                # wrapping range: (prev, max] then [min, end]
                t = first_token_of_shard(prev, (1 << 63) - 1, shard, topo) if prev < (1 << 63) - 1 else None
                if t is None:
                    t = first_token_of_shard(-(1 << 63), end, shard, topo)
            else:
                t = first_token_of_shard(prev, end, shard, topo)
            group.append(make_stream_id(end if t is None else t, i, rng))
        streams.append(tuple(group))
    return Generation(timestamp, tuple(ends), tuple(streams), topo)


class Generations:
    """The node's generations in time order, persisted as JSON in the store's meta table."""

    META_KEY = "cdc_generations"

    def __init__(self, generations: list[Generation]) -> None:
        self.generations = sorted(generations, key=lambda g: g.timestamp)

    @property
    def current(self) -> Generation:
        return self.generations[-1]

    def for_timestamp(self, ts: int) -> Generation:
        """The generation in force at write timestamp ``ts`` (the first covers all earlier time)."""
        if ts >= self.generations[-1].timestamp:  # the common case: a write now, in the current generation
            return self.generations[-1]
        stamps = [g.timestamp for g in self.generations]
        i = bisect.bisect_right(stamps, ts) - 1
        return self.generations[max(i, 0)]

    def to_json(self) -> str:
        return json.dumps([g.to_doc() for g in self.generations])

    @classmethod
    def from_json(cls, text: str) -> "Generations":
        gens = [Generation.from_doc(d) for d in json.loads(text)]
        if gens and gens[0].timestamp < FIRST_GENERATION_START:  # stored by an older logtide, at 0
            g = gens[0]
            gens[0] = Generation(FIRST_GENERATION_START, g.range_ends, g.streams, g.topology, g.expired)
        return cls(gens)
