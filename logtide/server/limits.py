"""How many connections a server accepts: the configured cap, what file descriptors allow, and how the
ports share it.

Every connection holds a file descriptor.  Storage needs some too (the
database, its WAL and shared-memory files for the writer and for each thread
that reads: the CQL workers, the Kafka endpoint's reader and long-poll
threads; temporary files), so the server reserves them and accepts at most
``RLIMIT_NOFILE - open descriptors - reserve`` connections, whatever
``max_connections`` says.  The CQL port and the Kafka endpoint draw on ONE
cap (``ConnectionSlots``), each guaranteed a share of it so that a flood on
one port cannot lock the other out.  Past the cap a new connection is closed
at once (as Cassandra's ``native_transport_max_concurrent_connections`` and
Kafka's ``max.connections`` do) and the refusal is logged once per interval.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

try:
    import resource
except ImportError:  # not on every platform
    resource = None  # type: ignore[assignment]

# a thread's SQLite reader in WAL mode holds the database and its WAL open (the shared memory is one
# mapping per process); measured: 2.05 descriptors per reading thread
READER_DESCRIPTORS = 2


def default_fd_reserve(workers: int) -> int:
    """Descriptors kept for storage: a few per SQLite connection (database, WAL, shm) and a margin."""
    return 64 + 4 * (workers + 2)


def open_descriptors() -> int:
    """How many file descriptors this process has open now (0 when the platform cannot say)."""
    for path in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(path))
        except OSError:
            continue
    return 0


def descriptor_limit() -> int | None:
    """The soft RLIMIT_NOFILE, or None when unlimited or unknown."""
    if resource is None:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


@dataclass(frozen=True)
class DescriptorPlan:
    """What the open file limit leaves: the connection cap and the Kafka long-poll threads that fit."""

    connections: int
    wait_threads: int


def plan_descriptors(max_connections: int | None, fd_reserve: int, reader_threads: int = 0,
                     wait_threads: int = 0) -> DescriptorPlan:
    """Share the descriptors left after ``fd_reserve`` and the readers of ``reader_threads`` between
    connections and at most ``wait_threads`` long-poll threads (each may open a reader; they get at most
    half of what is left).  ValueError when the limit leaves room for no connection."""
    limit = descriptor_limit()
    if limit is None:
        return DescriptorPlan(max_connections if max_connections is not None else 1 << 30, wait_threads)
    needed = fd_reserve + READER_DESCRIPTORS * reader_threads
    budget = limit - open_descriptors() - needed
    waits = min(wait_threads, max(budget, 0) // (2 * READER_DESCRIPTORS))
    by_fds = budget - READER_DESCRIPTORS * waits
    if by_fds < 1 or (wait_threads and waits < 1):
        raise ValueError(f"the open file limit (ulimit -n {limit}) leaves no room for connections: storage "
                         f"needs {needed} descriptors; raise the limit")
    return DescriptorPlan(min(c for c in (max_connections, by_fds) if c is not None), waits)


def connection_limit(max_connections: int | None, fd_reserve: int) -> int:
    """The number of connections to accept at most; ValueError when descriptors leave room for none."""
    return plan_descriptors(max_connections, fd_reserve).connections


class ConnectionSlots:
    """One cap on the connections open at once, shared by the ports registered (``"CQL"``, ``"Kafka"``).

    With more than one port, each is guaranteed ``cap // (2 * ports)`` places (a quarter each for two):
    a port may take a place only while the places left exceed what the other ports' guarantees still
    need, so a flood of connections on one port leaves the other its share.  The rest goes to whichever
    port asks first.  Used on one event loop (no locking).
    """

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"a connection cap must be at least 1, not {cap}")
        self.cap = cap
        self._held: dict[str, int] = {}

    def register(self, port: str) -> None:
        self._held.setdefault(port, 0)

    @property
    def guaranteed(self) -> int:
        """The places each port is guaranteed."""
        return self.cap // (2 * len(self._held)) if len(self._held) > 1 else 0

    def take(self, port: str) -> bool:
        """Take a place for a new connection on ``port``; False when the cap (or another port's share) is reached."""
        self.register(port)
        share = self.guaranteed
        free = self.cap - sum(self._held.values())
        owed = sum(max(0, share - n) for p, n in self._held.items() if p != port)
        if free - owed <= 0:
            return False
        self._held[port] += 1
        return True

    def release(self, port: str) -> None:
        self._held[port] -= 1

    def held(self, port: str | None = None) -> int:
        """Connections open on ``port`` (every port: None)."""
        return sum(self._held.values()) if port is None else self._held.get(port, 0)
