"""Opening a data directory: create it, recognize it, lock it, migrate it, check its commit sequence.

``docs/durability.md`` states the rules this module enforces:

* A new directory is made mode 0700 and its database 0600 (SQLite gives the
  ``-wal`` and ``-shm`` files the database's mode).  The database is built
  under a temporary name and renamed into place once complete, so
  ``logtide.db`` is either a whole logtide database or absent.
* ``logtide.db`` must be a SQLite file whose ``application_id`` is logtide's
  and whose ``format`` meta value is one this version reads; anything else
  (an empty file, another program's database, garbage) is refused.  A
  directory of logtide 0.1 (pickled records, no application id) is migrated
  in one transaction by a writer; one of format 1 or 2 (changefeed values
  without checksums) has them sealed in one transaction by a writer
  (``migrate_feeds``).  Both are refused read-only.  One of format 3 (before
  secondary indexes and materialized views) is marked format 4 by a writer,
  nothing else changed (``migrate_indexes``), and read as it is read-only.
* A writer holds an exclusive ``flock`` on ``logtide.db`` for as long as it is
  open: deleting any other file does not let a second writer in.
* Every commit advances a sequence number stored in the database and, after
  the commit returns, written to ``logtide.commits``.  A database whose
  sequence is behind that file lost acknowledged commits (its write-ahead log
  was deleted or truncated) and is refused.

One idea split for size with ``migrate.py`` and ``migrate_feeds.py``: opening a data directory, migrating an
older one on the way.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from pathlib import Path
from typing import Any

from ..errors import LostCommits, NoDatabase, NotADatabase, OldFormat, StorageLocked, DataDirectoryError
from .envelope import RecordDamaged
from .feed_records import FEED_SCHEMA
from .records import decode_meta, encode_meta

DB_FILE = "logtide.db"
COMMITS_FILE = "logtide.commits"
APPLICATION_ID = 0x4C544944  # "LTID"
# 1: single records; 2: CDC log rows may be stored in groups (record kind G, docs/durability.md);
# 3: changefeed records and state sealed with checksums (storage/feed_records.py);
# 4: secondary index entries (record kind I) and materialized views, which a logtide reading format 3 would
#    not maintain (migrate_indexes: nothing to convert)
FORMAT = 4
# the format whose changefeed records are sealed (migrate_feeds), which format 4 adds nothing to convert to
SEALED_FEEDS_FORMAT = 3
# the format logtide 0.1's records are migrated to (migrate_v0); its changefeed tables are sealed next (migrate_feeds)
UNSEALED_FEEDS_FORMAT = 2
FORMAT_KEY = "format"
# SQLite page size of a new database (fixed from its first write: an existing database keeps its own);
# 1024, 2048 and 8192 measured no better for batches or reading the log back (docs/performance.md)
PAGE_SIZE = 4096
DIR_MODE = 0o700
FILE_MODE = 0o600
_SQLITE_MAGIC = b"SQLite format 3\x00"

# one row on a page of its own: updating it adds one small page to a commit, not the meta page
SEQ_SCHEMA = "CREATE TABLE commit_seq (n INTEGER NOT NULL); INSERT INTO commit_seq (n) VALUES (0);"
SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID;
CREATE TABLE partitions (
    tid INTEGER NOT NULL, token INTEGER NOT NULL, pk BLOB NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (tid, token, pk)) WITHOUT ROWID;
CREATE TABLE rows (
    tid INTEGER NOT NULL, token INTEGER NOT NULL, pk BLOB NOT NULL, ck BLOB NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (tid, token, pk, ck)) WITHOUT ROWID;
""" + SEQ_SCHEMA
SCHEMA += FEED_SCHEMA
_TABLES = {"meta", "partitions", "rows"}


class CommitSequence:
    """The commit sequence number: in the database (table ``commit_seq``) and in ``logtide.commits``.

    The file is rewritten in place after every commit (no fsync: a process
    crash keeps it, see ``docs/durability.md`` for a machine crash) and
    fsynced when the store closes."""

    def __init__(self, path: Path, seq: int) -> None:
        self.seq = seq
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        content = b"%020d %d\n" % (seq, os.getpid())  # the writer's pid: informational
        os.pwrite(self._fd, content, 0)
        os.ftruncate(self._fd, len(content))
        os.fsync(self._fd)
        _fsync_dir(path.parent)

    def _write(self, seq: int) -> None:
        os.pwrite(self._fd, b"%020d" % seq, 0)

    def stage(self, conn: sqlite3.Connection) -> int:
        """Record the next sequence number inside the open write transaction; returns it."""
        seq = self.seq + 1
        conn.execute("UPDATE commit_seq SET n = ?", (seq,))
        return seq

    def committed(self, seq: int) -> None:
        """The transaction holding ``seq`` committed: record it outside the database.

        Best effort: the commit is durable already, so a failure here must not report it failed
        (the file then holds an older number, which detects less but never misreports a loss)."""
        self.seq = seq
        try:  # (not contextlib.suppress: this runs once per commit)
            self._write(seq)
        except OSError:
            pass

    def close(self) -> None:
        os.fsync(self._fd)
        os.close(self._fd)


def read_commits_file(p: Path) -> int | None:
    """The sequence number in ``logtide.commits`` (None when the file is missing or unreadable)."""
    try:
        return int((p / COMMITS_FILE).read_bytes().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def db_commit_seq(conn: sqlite3.Connection) -> int:
    """The commit sequence number the database holds (0 before the first commit)."""
    r = conn.execute("SELECT n FROM commit_seq").fetchall()
    if len(r) != 1 or not isinstance(r[0][0], int):
        raise DataDirectoryError("the database's commit sequence number is damaged; "
                                 "run 'logtide check' on the data directory")
    return r[0][0]


def lost_commits(p: Path, db_seq: int, acked: int | None) -> str | None:
    """Why the database in ``p`` lost acknowledged commits (None when it did not), ``acked`` being the number
    :func:`read_commits_file` gave.  Next to a running writer it must be read BEFORE ``db_seq``: the writer
    records a commit in the file after making it, so a commit landing between the two reads would look lost."""
    if acked is None or acked <= db_seq:
        return None
    return (f"data directory {p} lost acknowledged commits: the database holds commits up to "
            f"#{db_seq} but #{acked} was acknowledged ({acked - db_seq} missing); its write-ahead log "
            f"({DB_FILE}-wal) was deleted or truncated, or {DB_FILE} was replaced by an older copy")


def _tighten(path: Path) -> None:
    """Mode 0600 for a database file we own (the WAL and SHM files follow the database's mode)."""
    for f in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(OSError):
            if f.stat().st_mode & 0o077:
                os.chmod(f, FILE_MODE)


def _fsync_dir(p: Path) -> None:
    fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _create(p: Path) -> None:
    """Build a new, empty logtide database under a temporary name and rename it into place."""
    tmp = p / (DB_FILE + ".new")
    for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm"), Path(f"{tmp}-journal")):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
    os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR, FILE_MODE))
    marker = encode_meta(FORMAT_KEY, str(FORMAT).encode()).hex()
    conn = sqlite3.connect(tmp, isolation_level=None)
    try:
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")  # before anything is written: fixed from then on
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.executescript(f"BEGIN IMMEDIATE; {SCHEMA} PRAGMA application_id={APPLICATION_ID}; "
                           f"INSERT INTO meta (key, value) VALUES ('{FORMAT_KEY}', X'{marker}'); COMMIT;")
    finally:
        conn.close()  # the last connection checkpoints and removes the WAL
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, p / DB_FILE)
    _fsync_dir(p)


def _format_of(conn: sqlite3.Connection, db: Path) -> int:
    """The storage format of an open database: FORMAT, 0 (logtide 0.1), or NotADatabase."""
    try:
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        raise NotADatabase(f"{db} is not a logtide database (SQLite: {e})") from None
    if app == APPLICATION_ID:
        r = conn.execute("SELECT value FROM meta WHERE key = ?", (FORMAT_KEY,)).fetchone()
        try:
            fmt = int(decode_meta(FORMAT_KEY, r[0])) if r is not None else -1
        except (RecordDamaged, ValueError):
            fmt = -1
        if fmt < 0:
            raise NotADatabase(f"{db} is a logtide database whose format marker is damaged; "
                               "run 'logtide check' on the data directory")
        if fmt > FORMAT:
            raise DataDirectoryError(f"{db} has storage format {fmt}, written by a newer logtide "
                                     f"(this one reads format {FORMAT})")
        return fmt
    if app == 0 and _TABLES <= tables:
        r = conn.execute("SELECT 1 FROM meta WHERE key = ?", (FORMAT_KEY,)).fetchone()
        if r is None:
            return 0
    raise NotADatabase(f"{db} is not a logtide database"
                       + (" (SQLite application id %#x)" % app if app else ""))


def _check_file(db: Path) -> None:
    try:
        with db.open("rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except IsADirectoryError:
        raise NotADatabase(f"{db} is not a logtide database (it is a directory)") from None
    except PermissionError as e:
        raise DataDirectoryError(f"cannot read {db}: {e.strerror}") from None
    if not head:
        raise NotADatabase(f"{db} is not a logtide database (the file is empty)")
    if head != _SQLITE_MAGIC:
        raise NotADatabase(f"{db} is not a logtide database (it is not a SQLite file)")


def _directory(p: Path, create: bool) -> None:
    if p.exists() and not p.is_dir():
        raise DataDirectoryError(f"data directory {p} is not a directory")
    if not p.exists():
        if not create:
            raise NoDatabase(f"{p} holds no logtide database (the directory does not exist)")
        p.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    if not (p / DB_FILE).exists() and not create:
        raise NoDatabase(f"{p} holds no logtide database (no {DB_FILE} in it)")


def _lock(p: Path, create: bool) -> int:
    """Create the database if missing (serialized by a lock on the directory) and lock it for writing."""
    dfd = os.open(p, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(dfd, fcntl.LOCK_EX)
        db = p / DB_FILE
        if not db.exists():
            if not create:
                raise NoDatabase(f"{p} holds no logtide database (no {DB_FILE} in it)")
            _create(p)
        try:
            fd = os.open(db, os.O_RDWR)
        except IsADirectoryError:
            raise NotADatabase(f"{db} is not a logtide database (it is a directory)") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = read_writer_pid(p)
            raise StorageLocked(f"data directory {p} is in use by another logtide process"
                                + (f" (pid {holder})" if holder else "")
                                + "; only one writer may open it") from None
        return fd
    finally:
        os.close(dfd)


def read_writer_pid(p: Path) -> str:
    """The pid a writer recorded in ``logtide.commits`` (informational), or ''."""
    with contextlib.suppress(OSError, IndexError):
        parts = (p / COMMITS_FILE).read_bytes().split()
        return parts[1].decode() if len(parts) > 1 else ""
    return ""


def open_store(cls: Any, p: Path, readonly: bool, synchronous: str, create: bool, verify_commits: bool) -> Any:
    """``Store.open``: see the module docstring."""
    _directory(p, create and not readonly)
    db = p / DB_FILE
    if readonly:
        _check_file(db)
        conn = cls.connect(p, readonly=True, synchronous=synchronous)
        try:
            fmt = _format_of(conn, db)
            if fmt == 0:
                raise OldFormat(f"data directory {p} holds records in the format of logtide 0.1; open it once "
                                f"for writing, or run 'logtide migrate --data-dir {p}', to migrate it")
            if fmt < SEALED_FEEDS_FORMAT:
                raise OldFormat(f"data directory {p} has storage format {fmt}, whose changefeed records carry no "
                                f"checksums; open it once for writing, or run 'logtide migrate --data-dir {p}', "
                                f"to migrate it to format {FORMAT}")
            if verify_commits:
                acked = read_commits_file(p)  # read before the snapshot: a writer records after committing
                if acked is not None:
                    why = lost_commits(p, db_commit_seq(conn), acked)
                    if why:
                        raise LostCommits(why + _LOST_ADVICE.format(p=p))
        except BaseException:
            conn.close()
            raise
        return cls(p, conn, True, None, synchronous, None)
    lock_fd = _lock(p, create)
    try:
        _check_file(db)
        probe = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)
        try:
            fmt = _format_of(probe, db)
        finally:
            probe.close()
        _tighten(db)  # only a logtide database: another program's file is left as it is
        conn = cls.connect(p, readonly=False, synchronous=synchronous)
        try:
            if fmt == 0:
                from .migrate import migrate_v0

                migrate_v0(conn, p)
            seq = db_commit_seq(conn)
            if verify_commits:
                why = lost_commits(p, seq, read_commits_file(p))  # no writer runs: the directory is locked
                if why:
                    raise LostCommits(why + _LOST_ADVICE.format(p=p))
            if fmt < SEALED_FEEDS_FORMAT:  # once the directory is known sound: a refused one is left as it is
                from .migrate_feeds import migrate_feeds

                migrate_feeds(conn, p)
            if fmt < FORMAT:
                migrate_indexes(conn)
            conn.executescript(FEED_SCHEMA)  # tables of later releases (idempotent)
            commits = CommitSequence(p / COMMITS_FILE, seq)
        except BaseException:
            conn.close()
            raise
    except BaseException:
        with contextlib.suppress(Exception):
            os.close(lock_fd)
        raise
    return cls(p, conn, False, lock_fd, synchronous, commits)


def migrate_indexes(conn: sqlite3.Connection) -> None:
    """Format 3 to 4: the format marker only, in one transaction (format 4 adds secondary index entries and
    materialized views, which a format-3 directory has none of; a logtide reading format 3 refuses the
    directory from then on, with its "written by a newer logtide" message, rather than leave them unmaintained
    and report them as damage)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                     (FORMAT_KEY, encode_meta(FORMAT_KEY, str(FORMAT).encode())))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


_LOST_ADVICE = (". Restore the directory from a backup, or accept the loss and keep what remains with "
                "'logtide check --accept-lost-commits --data-dir {p}'")
