"""Durable storage in SQLite (WAL mode): atomic commits, snapshot reads, one writer per directory.

Layout of ``<data_dir>/logtide.db``::

    meta(key TEXT PRIMARY KEY, value BLOB)
    partitions(tid, token, pk, data)     -- PRIMARY KEY (tid, token, pk)
    rows(tid, token, pk, ck, data)       -- PRIMARY KEY (tid, token, pk, ck)

``tid`` is a table's ``store_id``; ``token`` its Murmur3 token (SQLite's
signed 64-bit integers sort like Cassandra tokens); ``ck`` the comparable
clustering key.  Both tables are ``WITHOUT ROWID`` B-trees, so reading one
partition or one clustering range is an index range scan, never a table scan.

A write transaction (``BEGIN IMMEDIATE`` ... ``COMMIT``) holds a whole
statement or batch, and will hold its CDC log rows and changefeed records
too; with ``synchronous=FULL`` a commit that returned survives a crash of the
process or the machine.  Readers in other processes (Spark workers, ``logtide replay``, a read-only
shell) open the directory read-only and see consistent snapshots while the
writer works.  A second writer is refused through an exclusive ``flock`` on
``logtide.db`` itself (SQLite's own locks are POSIX record locks, which
``flock`` does not touch).  How a directory is recognized, created, migrated
and checked at open is in ``opening.py``; the guarantees in
``docs/durability.md``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from ..errors import CorruptRecord, ReadOnlyDatabase
from .envelope import RecordDamaged, key_checksum
from .write_cache import WriteCache
from .records import GROUP, UNIFORM_ROW, decode_meta, encode_group, encode_meta, group_rows, group_rows_sealed

if TYPE_CHECKING:
    from .opening import CommitSequence

DB_FILE = "logtide.db"
# meta keys: the schema catalog (JSON) and the node's host id (16 bytes)
CATALOG_KEY = "catalog"
HOST_ID_KEY = "host_id"
# meta key: the ids of the tables whose partitions may hold groups (writes there keep entries from overlapping)
GROUP_TABLES_KEY = "group_tables"
_UPSERT = "INSERT OR REPLACE INTO rows (tid, token, pk, ck, data) VALUES (?, ?, ?, ?, ?)"
_ENTRY_AT_OR_AFTER = "SELECT ck, data FROM rows WHERE tid = ? AND token = ? AND pk = ? AND ck >= ? ORDER BY ck LIMIT 1"
_LAST_ENTRY = "SELECT ck FROM rows WHERE tid = ? AND token = ? AND pk = ? ORDER BY ck DESC LIMIT 1"
# pages of WAL after which a commit checkpoints (SQLite's own default): a small WAL that is reused
# from its start costs single commits far less than one that grows for tens of megabytes
WAL_CHECKPOINT_PAGES = 1000


def bind_bytes_as_they_are() -> None:
    """Give Python's ``sqlite3`` module an adapter for ``bytes`` that returns the value itself, unless the process
    registered one of its own.  Without it, every ``bytes`` parameter goes through the module's adaptation
    protocol, which looks for an ``__adapt__`` and a ``__conform__`` and builds and discards an AttributeError
    with a formatted message for each (about 0.4 µs a parameter; a write binds a dozen or more).  The adapter is
    the ``bytes`` type itself, which hands an exact ``bytes`` back unchanged: what is bound is the same either
    way.  The registry is the module's, shared by the whole process (docs/performance.md, "Compiling the hot
    modules")."""
    if (bytes, sqlite3.PrepareProtocol) not in sqlite3.adapters:
        sqlite3.register_adapter(bytes, bytes)


class Txn:
    """Reads and writes inside one SQLite transaction."""

    def __init__(self, conn: sqlite3.Connection, writable: bool, cache: WriteCache | None = None) -> None:
        self._conn = conn
        self.writable = writable
        # records read or written: a write reads the rows it touches more than once (preimage,
        # merge), so reads are served from here; the writer's cache keeps them across transactions
        self._cache = cache if cache is not None else WriteCache()
        self._partitions = self._cache.partitions
        self._rows = self._cache.rows
        # decoded records by their bytes, for callers that read them more than once (never modified)
        self.decoded = self._cache.decoded

    # -- meta -------------------------------------------------------------
    def get_meta(self, key: str) -> bytes | None:
        """A meta value (catalog, roles, CDC generations ...), verified; CorruptRecord if damaged."""
        r = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        if r is None:
            return None
        try:
            return decode_meta(key, r[0])
        except RecordDamaged as e:
            raise CorruptRecord(f"Damaged meta value {key!r} in the data directory: {e.reason}. "
                                "Run 'logtide check' on the data directory for a full report") from None

    def put_meta(self, key: str, value: bytes) -> None:
        self._conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, encode_meta(key, value)))

    # -- partitions -------------------------------------------------------
    def get_partition(self, tid: int, token: int, pk: bytes) -> bytes | None:
        key = (tid, token, pk)
        if key in self._partitions:
            return self._partitions[key]
        r = self._conn.execute(
            "SELECT data FROM partitions WHERE tid = ? AND token = ? AND pk = ?", (tid, token, pk)).fetchone()
        data = None if r is None else r[0]
        self._partitions[key] = data
        return data

    def put_partition(self, tid: int, token: int, pk: bytes, data: bytes | None) -> None:
        self._partitions[(tid, token, pk)] = data
        if data is None:
            self._conn.execute("DELETE FROM partitions WHERE tid = ? AND token = ? AND pk = ?", (tid, token, pk))
        else:
            self._conn.execute("INSERT OR REPLACE INTO partitions (tid, token, pk, data) VALUES (?, ?, ?, ?)",
                               (tid, token, pk, data))

    def partitions(self, tid: int, lo: int | None = None, lo_inclusive: bool = True,
                   hi: int | None = None, hi_inclusive: bool = True) -> Iterator[tuple[int, bytes, bytes]]:
        """Partitions of a table in token order, optionally within a token range: (token, pk, data)."""
        sql = "SELECT token, pk, data FROM partitions WHERE tid = ?"
        args: list = [tid]
        if lo is not None:
            sql += " AND token >= ?" if lo_inclusive else " AND token > ?"
            args.append(lo)
        if hi is not None:
            sql += " AND token <= ?" if hi_inclusive else " AND token < ?"
            args.append(hi)
        sql += " ORDER BY token, pk"
        return iter(self._conn.execute(sql, args).fetchall())

    # -- rows ---------------------------------------------------------------
    # A partition's clustering rows are entries of ``rows``: single records, or groups (kind ``G``,
    # storage format 2) of a stream's log rows appended by one commit, stored under their last row's
    # key.  Entries of a partition never overlap (every row of a group lies after the previous
    # entry's key and at or before its own), and every read below returns single ``(ck, record)``
    # rows whatever the entries (docs/durability.md, "Groups of log rows").
    def get_row(self, tid: int, token: int, pk: bytes, ck: bytes) -> bytes | None:
        key = (tid, token, pk, ck)
        if key in self._rows:
            return self._rows[key]
        r = self._conn.execute(_ENTRY_AT_OR_AFTER, key).fetchone()
        if r is None:
            data = None
        else:
            data = r[1]
            if len(data) > 1 and data[1] == GROUP:
                data = _row_in_group(tid, pk, r[0], data, ck)
            elif r[0] != ck:
                data = None
        self._rows[key] = data
        return data

    def put_row(self, tid: int, token: int, pk: bytes, ck: bytes, data: bytes | None) -> None:
        self._rows[(tid, token, pk, ck)] = data
        grouped = self._cache.grouped
        if grouped is None:
            grouped = self._load_grouped()
        if tid in grouped:
            self._clear_way(tid, token, pk, ck, data is None)
        if data is None:
            self._conn.execute("DELETE FROM rows WHERE tid = ? AND token = ? AND pk = ? AND ck = ?",
                               (tid, token, pk, ck))
        else:
            self._conn.execute(_UPSERT, (tid, token, pk, ck, data))

    def put_rows(self, rows: list[tuple[int, int, bytes, bytes, bytes]], cached: int | None = None) -> None:
        """Write rows (tid, token, pk, ck, data) of any tables and partitions in one call; only the first
        ``cached`` (default all) are kept in the write cache (new CDC log rows, never read back by the writer,
        would only push the base rows out of it: the others are only dropped from it, never stale).

        The rows after ``cached`` (new log rows) that append two or more ``U`` records to one partition, all
        after its last entry, are stored as one group entry (docs/durability.md, "Groups of log rows")."""
        cache = self._rows
        for tid, token, pk, ck, data in rows if cached is None else rows[:cached]:
            cache[(tid, token, pk, ck)] = data
        if cached is not None and cache:
            for tid, token, pk, ck, _ in rows[cached:]:
                cache.pop((tid, token, pk, ck), None)
        if not rows:
            return
        grouped = self._cache.grouped
        if grouped is None:
            grouped = self._load_grouped()
        if cached is None or cached >= len(rows):
            out = rows
            if grouped:
                self._clear_ways(rows, grouped)
        else:
            out = rows[:cached]
            if grouped and self._clear_ways(out, grouped):
                self._conn.executemany(_UPSERT, out)  # before the log rows' tails are looked up
                out = []
            self._append_log_rows(rows, cached, grouped, out)
        self._conn.executemany(_UPSERT, out)

    def _clear_ways(self, rows: list[tuple[int, int, bytes, bytes, bytes]], grouped: set[int]) -> bool:
        """:meth:`_clear_way` for each of ``rows`` in a table that may hold groups; whether there was one."""
        any_ = False
        for tid, token, pk, ck, _ in rows:
            if tid in grouped:
                self._clear_way(tid, token, pk, ck, False)
                any_ = True
        return any_

    def _append_log_rows(self, rows: list[tuple[int, int, bytes, bytes, bytes]], start: int, grouped: set[int],
                         out: list[tuple[int, int, bytes, bytes, bytes]]) -> None:
        """Add to ``out`` the entries that store ``rows[start:]``: per partition one group when it is a pure
        append of two or more ``U`` records, else single records (after exploding any group they land in)."""
        parts: dict[tuple[int, int, bytes], list[tuple[bytes, bytes]]] = {}
        for tid, token, pk, ck, data in rows[start:]:
            p = (tid, token, pk)
            got = parts.get(p)
            if got is None:
                parts[p] = [(ck, data)]
            else:
                got.append((ck, data))
        tails = self._cache.tails
        make_groups = self._cache.write_groups
        base_tids = None
        for p, prows in parts.items():
            tid, token, pk = p
            if len(prows) == 1 and tid not in grouped:
                ck, data = prows[0]
                out.append((tid, token, pk, ck, data))
                continue
            if tid not in grouped and out:  # rows of the same table not written yet: write them before looking
                if base_tids is None:
                    base_tids = {r[0] for r in out}
                if tid in base_tids:
                    self._conn.executemany(_UPSERT, out)
                    out.clear()
            tail = tails.get(p)  # known only in tables that may hold groups (every write there keeps it)
            if tail is None:
                r = self._conn.execute(_LAST_ENTRY, p).fetchone()
                tail = None if r is None else r[0]
            ordered = sorted(prows) if len(prows) > 1 else prows
            last = ordered[-1][0]
            pure = tail is None or ordered[0][0] > tail
            if pure:
                prev = None
                for ck, data in ordered:
                    if ck == prev:
                        pure = False  # two records under one key: the later one wins, as single writes
                        break
                    prev = ck
            if pure:
                if make_groups and len(ordered) > 1 and all([len(d) > 1 and d[1] == UNIFORM_ROW for _, d in ordered]):
                    out.append((tid, token, pk, last, encode_group(tid, pk, ordered)))
                    if tid not in grouped:
                        self._mark_grouped(tid)
                else:
                    out.extend([(tid, token, pk, ck, data) for ck, data in prows])
                if tid in grouped:
                    tails[p] = last
                continue
            for ck, data in prows:
                if tid in grouped:
                    self._clear_way(tid, token, pk, ck, False)
                out.append((tid, token, pk, ck, data))

    def _clear_way(self, tid: int, token: int, pk: bytes, ck: bytes, deleting: bool) -> None:
        """Before a write of ``ck`` (a deletion when ``deleting``) in a table that may hold groups: explode the
        group whose rows' range holds ``ck`` into single records, and keep the partition's known last entry."""
        p = (tid, token, pk)
        tails = self._cache.tails
        tail = tails.get(p)
        if tail is not None and ck > tail:  # after every entry: no group can hold it
            if not deleting:
                tails[p] = ck
            return
        r = self._conn.execute(_ENTRY_AT_OR_AFTER, (tid, token, pk, ck)).fetchone()
        if r is not None and len(r[1]) > 1 and r[1][1] == GROUP:
            try:
                inner = group_rows(r[1], tid, pk, r[0])
            except RecordDamaged as e:
                raise CorruptRecord(f"Damaged group of CDC log rows (table id {tid}, partition key 0x{pk.hex()}, "
                                    f"clustering key 0x{r[0].hex()}): {e.reason}. Run 'logtide check' on the data "
                                    "directory for a full report") from None
            if inner[0][0] <= ck:
                self._conn.execute("DELETE FROM rows WHERE tid = ? AND token = ? AND pk = ? AND ck = ?",
                                   (tid, token, pk, r[0]))
                self._conn.executemany(_UPSERT, [(tid, token, pk, c, d) for c, d in inner])
        if deleting and tail is not None and ck == tail:
            del tails[p]

    def _load_grouped(self) -> set[int]:
        """The ids of tables whose rows may hold groups (meta ``group_tables``), read once per writer."""
        grouped = group_table_ids(self.get_meta(GROUP_TABLES_KEY))
        self._cache.grouped = grouped
        return grouped

    def _mark_grouped(self, tid: int) -> None:
        """Record that table ``tid`` may hold groups, in this transaction (before its first group commits)."""
        grouped = self._cache.grouped
        assert grouped is not None
        grouped.add(tid)
        self.put_meta(GROUP_TABLES_KEY, b" ".join(b"%d" % t for t in sorted(grouped)))

    def rows(self, tid: int, token: int, pk: bytes, lo: bytes | None = None, hi: bytes | None = None,
             reverse: bool = False) -> list[tuple[bytes, bytes]]:
        """Rows of one partition with ``lo <= ck < hi`` in clustering order (or reversed): (ck, data).

        With ``hi``, the first entry at or after ``hi`` comes too (one statement): a group there may hold rows
        before ``hi``."""
        sql = "SELECT ck, data FROM rows WHERE tid = ? AND token = ? AND pk = ?"
        args: list = [tid, token, pk]
        if lo is not None:
            sql += " AND ck >= ?"
            args.append(lo)
        if hi is not None:
            sql += (" AND ck <= coalesce((SELECT ck FROM rows WHERE tid = ? AND token = ? AND pk = ? AND ck >= ? "
                    "ORDER BY ck LIMIT 1), ?)")
            args += (tid, token, pk, hi, hi)
        sql += " ORDER BY ck DESC" if reverse else " ORDER BY ck"
        out = self._conn.execute(sql, args).fetchall()
        for _, data in out:
            if len(data) > 1 and data[1] == GROUP:
                return _expand(out, tid, pk, lo, hi, reverse)
        if hi is not None and out:
            edge = 0 if reverse else -1
            if out[edge][0] >= hi:
                del out[edge]
        return out

    def rows_page(self, tid: int, token: int, pk: bytes, lo: bytes, hi: bytes | None,
                  limit: int, reverse: bool = False) -> list[tuple[bytes, bytes]]:
        """Up to ``limit`` rows of one partition with ``lo <= ck < hi`` in clustering order (``reverse``: the last
        ``limit`` of them, in reverse order): (ck, data).  For records never stored in groups (secondary index
        entries), read a page at a time from where the last page ended, in either direction."""
        sql = "SELECT ck, data FROM rows WHERE tid = ? AND token = ? AND pk = ? AND ck >= ?"
        args: tuple = (tid, token, pk, lo)
        if hi is not None:
            sql += " AND ck < ?"
            args += (hi,)
        sql += " ORDER BY ck DESC LIMIT ?" if reverse else " ORDER BY ck LIMIT ?"
        return self._conn.execute(sql, args + (limit,)).fetchall()

    def has_rows(self, tid: int, token: int, pk: bytes) -> bool:
        """Whether the partition has any stored clustering row."""
        return self._conn.execute("SELECT 1 FROM rows WHERE tid = ? AND token = ? AND pk = ? LIMIT 1",
                                  (tid, token, pk)).fetchone() is not None

    def scan(self, what: str) -> Iterator[tuple]:
        """Every stored record of ``what`` (``meta``: (key, data); ``partitions``: (tid, token, pk, data);
        ``rows``: (tid, token, pk, ck, data), a group as the one entry it is), unverified, in key order
        (``logtide check``)."""
        cols = {"meta": "key, value", "partitions": "tid, token, pk, data", "rows": "tid, token, pk, ck, data"}
        return self._conn.execute(f"SELECT {cols[what]} FROM {what}")
    def sql(self, text: str, args: tuple | list = ()) -> list[tuple]:
        """Run one statement on this transaction's connection (tables other stages own, e.g. changefeed topics)."""
        return self._conn.execute(text, args).fetchall()

    def sql_many(self, text: str, rows: list[tuple]) -> None:
        """Run one statement for each of ``rows``."""
        self._conn.executemany(text, rows)

    def drop_table_data(self, tid: int) -> None:
        """Remove every partition and row of a table (TRUNCATE, DROP)."""
        self._cache.clear()
        self._conn.execute("DELETE FROM rows WHERE tid = ?", (tid,))
        self._conn.execute("DELETE FROM partitions WHERE tid = ?", (tid,))


def group_table_ids(value: bytes | None) -> set[int]:
    """The table ids meta ``group_tables`` lists (decimal ids separated by spaces; anything else in it is no
    id): the tables whose partitions may hold groups, which the writer keeps from overlapping."""
    return {int(t) for t in value.split() if t.isdigit()} if value else set()


def _row_in_group(tid: int, pk: bytes, key: bytes, data: bytes, ck: bytes) -> bytes | None:
    """The record of row ``ck`` in the group stored under ``key`` (None: not in it); the group's bytes as
    they are when it does not verify (whoever decodes them as a row reports the damage)."""
    try:
        inner = group_rows(data, tid, pk, key)
    except RecordDamaged:
        return data
    for c, d in inner:
        if c == ck:
            return d
    return None


def _expand(entries: list[tuple[bytes, bytes]], tid: int, pk: bytes, lo: bytes | None, hi: bytes | None,
            reverse: bool) -> list[tuple[bytes, bytes]]:
    """:meth:`Txn.rows` of entries holding a group: each group's rows within ``[lo, hi)``, in the entries'
    order; a group that does not verify as it is (whoever decodes it as a row reports the damage)."""
    out: list[tuple[bytes, bytes]] = []
    add = out.append
    key_crc = key_checksum(tid, pk)
    for key, data in entries:
        if len(data) > 1 and data[1] == GROUP:
            inner = group_rows_sealed(data, key_crc, key)
            if inner is None:
                add((key, data))
                continue
            if reverse:
                inner.reverse()
            if (lo is None or inner[-1 if reverse else 0][0] >= lo) and (hi is None or key < hi):
                out += inner  # the whole group is in the range (its last row is its key)
            else:
                out += [(ck, d) for ck, d in inner if (lo is None or ck >= lo) and (hi is None or ck < hi)]
        elif hi is None or key < hi:
            add((key, data))
    return out


_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26


def is_damage(e: sqlite3.DatabaseError) -> bool:
    """Whether SQLite reported a damaged database file (SQLITE_CORRUPT, SQLITE_NOTADB)."""
    return (getattr(e, "sqlite_errorcode", 0) & 0xFF) in (_SQLITE_CORRUPT, _SQLITE_NOTADB)


def _damage_error(path: Path, e: sqlite3.DatabaseError) -> Exception:
    """SQLite's report of a damaged file as CorruptRecord (a read failure naming the file); other errors as they are."""
    if not is_damage(e):
        return e
    return CorruptRecord(f"The database file {path / DB_FILE} is damaged (SQLite: {e}). "
                         "Run 'logtide check' on the data directory for a full report")


@contextlib.contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[Txn]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` on ``conn``, rolled back on any exception."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield Txn(conn, True)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


class _WriteTransaction:
    """:meth:`Store.write`'s context: ``BEGIN IMMEDIATE`` on entry; on exit the commit sequence staged and
    ``COMMIT``, or ``ROLLBACK`` (and the writer's cache forgotten) when the body raised.  A class rather
    than a generator context manager: it runs once per commit, and costs less so."""

    __slots__ = ("_store",)

    def __init__(self, store: "Store") -> None:
        self._store = store

    def __enter__(self) -> Txn:
        store = self._store
        cache = store._cache
        cache.trim()
        try:
            store._writer.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as e:
            raise _damage_error(store.path, e) from None
        return Txn(store._writer, True, cache)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        store = self._store
        conn = store._writer
        commits = store._commits
        seq = None
        try:
            if exc_type is not None:
                store._cache.clear()
                conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.DatabaseError) and is_damage(exc):
                    raise _damage_error(store.path, exc) from None
                return False
            try:
                seq = commits.stage(conn) if commits is not None else None
            except BaseException:
                store._cache.clear()
                conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except BaseException:
                store._cache.clear()
                raise
        except sqlite3.DatabaseError as e:
            raise _damage_error(store.path, e) from None
        if seq is not None:
            commits.committed(seq)
        return False


class Store:
    """A data directory: one SQLite database in WAL mode, plus the writer lock and the commit sequence."""

    def __init__(self, path: Path, conn: sqlite3.Connection, readonly: bool, lock_fd: int | None,
                 synchronous: str, commits: "CommitSequence | None") -> None:
        self.path = path
        self.readonly = readonly
        self._writer = conn
        self._lock_fd = lock_fd
        self._synchronous = synchronous
        self._commits = commits
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._closed = False
        self._cache = WriteCache()  # the writer's records across transactions (write_cache.py)

    @classmethod
    def open(cls, path: str | os.PathLike, readonly: bool = False, synchronous: str = "FULL",
             create: bool = True, verify_commits: bool = True) -> "Store":
        """Open a data directory: creating it (when ``create`` and not ``readonly``), refusing a second
        writer, a file that is not a logtide database and, with ``verify_commits``, a database that lost
        acknowledged commits (``docs/durability.md``).  A directory of the old record format is migrated
        by a writer and refused read-only."""
        from .opening import open_store

        return open_store(cls, Path(path), readonly, synchronous, create, verify_commits)

    @staticmethod
    def connect(p: Path, readonly: bool, synchronous: str) -> sqlite3.Connection:
        """A connection to the database of directory ``p`` with logtide's settings."""
        bind_bytes_as_they_are()
        db = p / DB_FILE
        if readonly:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None,
                                   check_same_thread=False)
        else:
            conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        conn.execute("PRAGMA cache_size=-65536")
        # checkpoint every WAL_CHECKPOINT_PAGES (~4 MB): SQLite then starts the WAL again from its
        # start, so commits overwrite blocks already written (an fdatasync of data only) instead of
        # growing the file (a file-system journal commit each); docs/performance-history.md, "The WAL's size"
        conn.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        conn.execute("PRAGMA busy_timeout=10000")
        return conn

    @property
    def write_groups(self) -> bool:
        """Whether a commit's new log rows of one stream are stored as one group entry (the default; off:
        single records only, as in storage format 1; reads and the non-overlap rule are the same either way)."""
        return self._cache.write_groups

    @write_groups.setter
    def write_groups(self, on: bool) -> None:
        self._cache.write_groups = on

    @property
    def synchronous(self) -> str:
        """The SQLite ``synchronous`` setting commits use (FULL: fsynced before acknowledged)."""
        return self._synchronous

    def _reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self.connect(self.path, readonly=True, synchronous=self._synchronous)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def write(self) -> "_WriteTransaction":
        """One atomic write transaction; commits on success, rolls back on any exception.

        Each commit also advances the commit sequence (in the database and, once
        committed, in the side file).  The caller serializes writers (one at a time per process)."""
        if self.readonly:
            raise ReadOnlyDatabase(f"data directory {self.path} is open read-only: nothing can be written")
        return _WriteTransaction(self)

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[Txn]:
        """A nested atomic unit inside the current write transaction, rolled back on any exception."""
        conn = self._writer
        conn.execute("SAVEPOINT stmt")
        try:
            yield Txn(conn, True, self._cache)
        except BaseException:
            self._cache.clear()
            conn.execute("ROLLBACK TO stmt")
            conn.execute("RELEASE stmt")
            raise
        conn.execute("RELEASE stmt")

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Txn]:
        """A consistent read-only snapshot (a deferred read transaction on this thread's reader)."""
        conn = self._reader()
        if conn.in_transaction:  # nested use on the same thread shares the snapshot
            yield Txn(conn, False)
            return
        try:
            conn.execute("BEGIN")
            try:
                yield Txn(conn, False)
            finally:
                conn.execute("COMMIT")
        except sqlite3.DatabaseError as e:
            raise _damage_error(self.path, e) from None

    def close(self) -> None:
        """Close connections, record the commit sequence and release the writer lock."""
        if self._closed:
            return
        self._closed = True
        with self._readers_lock:
            for c in self._readers:
                with contextlib.suppress(Exception):
                    c.close()
            self._readers.clear()
        with contextlib.suppress(Exception):
            self._writer.close()
        if self._commits is not None:
            with contextlib.suppress(Exception):
                self._commits.close()
        if self._lock_fd is not None:
            with contextlib.suppress(Exception):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
                os.close(self._lock_fd)
            self._lock_fd = None
