"""Storage and OS failures turned into logtide's own errors (``logtide.errors.StorageFailure``).

The embedded API raises only logtide errors: SQLite's and the operating
system's exceptions (a full disk, an I/O error, no file descriptors left, a
damaged file) are translated here, each with a short ``kind`` that the server
uses to log one line per kind of failure per interval instead of one per
statement.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from .errors import ReadFailure, StorageFailure, WriteFailure

# (substring of SQLite's message, kind, what it means for a user)
_SQLITE_KINDS = (
    ("database or disk is full", "disk full", "the disk is full"),
    ("disk i/o error", "I/O error", "an I/O error"),
    ("unable to open database file", "cannot open database file",
     "the database file cannot be opened (out of file descriptors, or the directory is not accessible)"),
    ("database disk image is malformed", "damaged database", "the database file is damaged"),
    ("file is not a database", "not a database", "the database file is not a logtide database"),
    ("attempt to write a readonly database", "read-only database", "the database is read-only"),
    ("readonly", "read-only database", "the database is read-only"),
    ("database is locked", "database locked", "the database is locked by another process"),
)

_OS_KINDS = {
    errno.ENOSPC: "disk full", errno.EDQUOT: "disk full", errno.EMFILE: "out of file descriptors",
    errno.ENFILE: "out of file descriptors", errno.EACCES: "permission denied", errno.EROFS: "read-only filesystem",
    errno.EIO: "I/O error",
}


def describe(exc: BaseException) -> tuple[str, str]:
    """(kind, explanation) of a SQLite or OS error."""
    if isinstance(exc, sqlite3.Error):
        text = str(exc)
        low = text.lower()
        for needle, kind, meaning in _SQLITE_KINDS:
            if needle in low:
                return kind, f"{meaning} ({text})"
        return "storage error", f"storage error ({text})"
    if isinstance(exc, OSError):
        kind = _OS_KINDS.get(exc.errno or 0, "OS error")
        where = f": {exc.filename}" if exc.filename else ""
        return kind, f"{exc.strerror or exc}{where}"
    return type(exc).__name__, str(exc)


def storage_failure(exc: BaseException, reading: bool) -> StorageFailure:
    """The logtide error for a storage failure during a read (``reading``) or a write/schema change."""
    kind, meaning = describe(exc)
    if reading:
        return ReadFailure(f"Read failed: {meaning}", kind)
    return WriteFailure(f"Write failed, nothing was applied: {meaning}", kind)


def open_failure(path: str | Path, exc: BaseException) -> StorageFailure:
    """The logtide error for a data directory that cannot be opened."""
    p = Path(path)
    if p.exists() and not p.is_dir() or isinstance(exc, OSError) and exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return StorageFailure(f"data directory {path} is not a directory", "not a directory")
    kind, meaning = describe(exc)
    if isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return StorageFailure(f"data directory {path} is not writable ({exc.strerror}: {exc.filename or path})", kind)
    if isinstance(exc, sqlite3.Error) and kind in ("read-only database", "cannot open database file"):
        return StorageFailure(f"data directory {path} is not writable or not readable ({exc})", kind)
    return StorageFailure(f"cannot open data directory {path}: {meaning}", kind)
