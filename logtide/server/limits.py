"""How many connections a server accepts: the configured cap and what file descriptors allow.

Every connection holds a file descriptor.  Storage needs some too (the
database, its WAL and shared-memory files for the writer and for each worker
thread's reader, temporary files), so the server reserves ``fd_reserve`` of
them and accepts at most ``RLIMIT_NOFILE - open descriptors - fd_reserve``
connections, whatever ``max_connections`` says; past the cap a new connection
is closed at once (as Cassandra's ``native_transport_max_concurrent_connections``
does) and the refusal is logged once per interval.
"""

from __future__ import annotations

import os

try:
    import resource
except ImportError:  # not on every platform
    resource = None  # type: ignore[assignment]


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


def connection_limit(max_connections: int | None, fd_reserve: int) -> int:
    """The number of connections to accept at most; ValueError when descriptors leave room for none."""
    limit = descriptor_limit()
    by_fds = None if limit is None else limit - open_descriptors() - fd_reserve
    if by_fds is not None and by_fds < 1:
        raise ValueError(f"the open file limit (ulimit -n {limit}) leaves no room for connections: storage "
                         f"needs {fd_reserve} descriptors; raise the limit")
    candidates = [c for c in (max_connections, by_fds) if c is not None]
    return min(candidates) if candidates else 1 << 30
