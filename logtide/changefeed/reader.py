"""The changefeed topic reader (``logtide.changefeed.api.TopicReader``): every read and commit goes here.

Two implementations share one body: :class:`DatabaseTopicReader` over an
open Database (``db.changefeeds``; waits wake on commit through a condition
variable; commits go through the database's group commit), and
:class:`DirectoryTopicReader` over a data directory that a running server may
own (read-only snapshots; waits poll; consumer changes are short SQLite
write transactions of their own, which SQLite serializes with the server's).
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..errors import InvalidRequest
from ..schema.catalog import Catalog
from ..storage.sqlite import CATALOG_KEY, DB_FILE, Store, Txn, write_transaction
from . import storage as S
from .api import ConsumerInfo, TopicDescription, TopicPartition, TopicRecord, UnknownConsumer, UnknownTopic
from ..schema.changefeeds import DISABLED, ENABLED, INITIAL_SCAN, Changefeed, split_path, topic_path

Database = Any  # an engine.database.Engine: the reader sits below the engine and is given it



_new = object.__new__
_set = object.__setattr__


def _record(partition: int, offset: int, write_time_ms: int, key: bytes | None, value: bytes) -> TopicRecord:
    """A TopicRecord built without the frozen dataclass's per-field ``__init__`` (a third of a read's time)."""
    r = _new(TopicRecord)
    _set(r, "__dict__", {"partition": partition, "offset": offset, "write_time_ms": write_time_ms, "key": key,
                         "value": value})
    return r


@contextlib.contextmanager
def _naming(table: Any, feed: Changefeed) -> Iterator[None]:
    """Damage met inside is reported by the changefeed's path (``ks/t/name``)."""
    try:
        yield
    except S.DamagedFeed as e:
        raise e.at(topic_path(table.keyspace, table.name, feed.name)) from None


class _Reader:
    """The reads, consumers and commits of YDB's topic model over one store.

    Every record, committed offset and scan state read here is verified (``changefeed.storage``); damage
    raises ``DamagedFeed``, a ``CorruptRecord`` naming the changefeed by path, partition and offset."""

    # -- what a subclass provides ----------------------------------------------------------
    def _catalog(self) -> Catalog: ...

    def _snapshot(self) -> Any: ...  # a context manager giving a read Txn

    def _write(self, fn: Callable[[Txn], Any]) -> Any: ...

    def _state(self, txn: Txn, feed: Changefeed) -> str:
        if feed.disabled:
            return DISABLED
        st = S.scan_state(txn, feed.feed_id)  # DamagedFeed: _describe names the changefeed
        return INITIAL_SCAN if st is not None and not st.get("done") else ENABLED

    def wait(self, path: str, positions: Mapping[int, int], timeout: float) -> bool: ...

    # -- lookups ----------------------------------------------------------------------------
    def _find(self, path: str) -> tuple[Any, Changefeed]:
        parts = split_path(path)
        if parts is not None:
            t = self._catalog().find_table(parts[0], parts[1])
            if t is not None:
                for f in t.changefeeds:
                    if f.name == parts[2]:
                        return t, f
        raise UnknownTopic(f"Topic '{path}' does not exist: no changefeed at that path (ks/table/changefeed)")

    def _describe(self, txn: Txn, table: Any, feed: Changefeed) -> TopicDescription:
        o = feed.options
        with _naming(table, feed):
            state = self._state(txn, feed)
        return TopicDescription(topic_path(table.keyspace, table.name, feed.name), table.keyspace, table.name,
                                feed.name, o.partitions, o.mode, o.format, state, o.retention_seconds,
                                feed.feed_id, feed.created_ms)

    def topics(self) -> Sequence[TopicDescription]:
        cat = self._catalog()
        with self._snapshot() as txn:
            out = [self._describe(txn, t, f) for ks in cat.keyspaces.values() for t in ks.tables.values()
                   for f in t.changefeeds]
        return sorted(out, key=lambda d: d.path)

    def describe(self, path: str) -> TopicDescription:
        t, f = self._find(path)
        with self._snapshot() as txn:
            return self._describe(txn, t, f)

    def feed(self, path: str) -> tuple[Any, Changefeed]:
        """The table and changefeed at ``path``; raises UnknownTopic."""
        return self._find(path)

    def scan_progress(self, path: str) -> tuple[int, int] | None:
        """(partitions scanned, partitions total) of the initial scan, or None without one."""
        t, f = self._find(path)
        with self._snapshot() as txn, _naming(t, f):
            st = S.scan_state(txn, f.feed_id)
        return None if st is None else (int(st.get("scanned", 0)), int(st.get("total", 0)))

    # -- reading ----------------------------------------------------------------------------
    def partitions(self, path: str) -> Sequence[TopicPartition]:
        t, f = self._find(path)
        with self._snapshot() as txn, _naming(t, f):
            return [TopicPartition(p, S.start_offset(txn, f.feed_id, p), S.end_offset(txn, f.feed_id, p))
                    for p in range(f.options.partitions)]

    def _check_partition(self, f: Changefeed, partition: int, path: str) -> None:
        if not 0 <= partition < f.options.partitions:
            raise UnknownTopic(f"Topic '{path}' has no partition {partition} (it has {f.options.partitions})")

    def read(self, path: str, partition: int, offset: int, max_records: int = 1000,
             max_bytes: int = 1 << 20) -> Sequence[TopicRecord]:
        return [_record(partition, o, wt, k, v) for o, wt, k, v in
                self.read_rows(path, partition, offset, max_records, max_bytes)]

    def read_rows(self, path: str, partition: int, offset: int, max_records: int = 1000,
                  max_bytes: int = 1 << 20) -> Sequence[tuple[int, int, bytes | None, bytes]]:
        t, f = self._find(path)
        self._check_partition(f, partition, path)
        with self._snapshot() as txn:
            try:
                return S.read(txn, f.feed_id, partition, max(0, offset), max_records, max_bytes)
            except S.DamagedFeed as e:
                raise e.at(topic_path(t.keyspace, t.name, f.name)) from None

    def offset_for_time(self, path: str, partition: int, time_ms: int) -> int:
        t, f = self._find(path)
        self._check_partition(f, partition, path)
        with self._snapshot() as txn, _naming(t, f):
            return S.offset_for_time(txn, f.feed_id, partition, time_ms)

    def _ready(self, t: Any, f: Changefeed, positions: Mapping[int, int]) -> bool:
        with self._snapshot() as txn, _naming(t, f):
            return any(S.end_offset(txn, f.feed_id, p) > o for p, o in positions.items())

    # -- consumers --------------------------------------------------------------------------
    def consumers(self, path: str) -> Sequence[ConsumerInfo]:
        t, f = self._find(path)
        with self._snapshot() as txn, _naming(t, f):
            return [ConsumerInfo(n, imp, rf, S.committed(txn, f.feed_id, n)) for n, imp, rf in
                    S.consumers(txn, f.feed_id)]

    def add_consumer(self, path: str, name: str, important: bool = False, read_from_ms: int = 0) -> None:
        t, f = self._find(path)
        if not name or "/" in name:
            raise InvalidRequest(f"Invalid consumer name '{name}' (a consumer name is not empty and has no '/')")

        def work(txn: Txn) -> None:
            if S.has_consumer(txn, f.feed_id, name):
                raise InvalidRequest(f"Consumer '{name}' already exists in topic '{path}'")
            S.add_consumer(txn, f.feed_id, name, important, read_from_ms)
            if read_from_ms:  # start at the first record written at or after read_from
                S.commit(txn, f.feed_id, name, {p: S.offset_for_time(txn, f.feed_id, p, read_from_ms)
                                                for p in range(f.options.partitions)})
        with _naming(t, f):
            self._write(work)

    def _consumer_feed(self, txn: Txn, path: str, f: Changefeed, name: str) -> None:
        if not S.has_consumer(txn, f.feed_id, name):
            raise UnknownConsumer(f"Consumer '{name}' does not exist in topic '{path}'")

    def drop_consumer(self, path: str, name: str) -> None:
        t, f = self._find(path)

        def work(txn: Txn) -> None:
            self._consumer_feed(txn, path, f, name)
            S.drop_consumer(txn, f.feed_id, name)
        with _naming(t, f):
            self._write(work)

    def committed(self, path: str, name: str) -> Mapping[int, int]:
        t, f = self._find(path)
        with self._snapshot() as txn, _naming(t, f):
            self._consumer_feed(txn, path, f, name)
            return S.committed(txn, f.feed_id, name)

    def commit(self, path: str, name: str, offsets: Mapping[int, int]) -> None:
        t, f = self._find(path)
        for p in offsets:
            self._check_partition(f, p, path)

        def work(txn: Txn) -> None:
            self._consumer_feed(txn, path, f, name)
            S.commit(txn, f.feed_id, name, offsets)
        with _naming(t, f):
            self._write(work)


class DatabaseTopicReader(_Reader):
    """The topic reader of an open Database (``db.changefeeds``)."""

    def __init__(self, db: "Database") -> None:
        self.db = db

    def _catalog(self) -> Catalog:
        return self.db.catalog

    def _snapshot(self) -> Any:
        return self.db.store.snapshot()

    def _write(self, fn: Callable[[Txn], Any]) -> Any:
        return self.db.committer.run(fn)

    def wait(self, path: str, positions: Mapping[int, int], timeout: float) -> bool:
        t, f = self._find(path)
        feeds = self.db.feeds
        deadline = time.monotonic() + timeout
        while True:
            with feeds.changed:
                version = feeds._version
            if self._ready(t, f, positions):
                return True
            left = deadline - time.monotonic()
            if left <= 0 or self.db._closed:
                return False
            with feeds.changed:
                if feeds._version == version:
                    feeds.changed.wait(left)


class DirectoryTopicReader(_Reader):
    """A topic reader on a data directory, usable while a server owns it (``logtide topic ...``)."""

    def __init__(self, path: str | Path, poll_seconds: float = 0.05) -> None:
        self.path = Path(path)
        self.store = Store.open(self.path, readonly=True)
        self.poll_seconds = poll_seconds
        self._catalog_doc: bytes | None = None
        self._catalog_obj = Catalog.empty()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "DirectoryTopicReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _catalog(self) -> Catalog:
        with self.store.snapshot() as txn:
            doc = txn.get_meta(CATALOG_KEY)
        if doc != self._catalog_doc:
            self._catalog_obj = Catalog.from_json(doc.decode()) if doc else Catalog.empty()
            self._catalog_doc = doc
        return self._catalog_obj

    def _snapshot(self) -> Any:
        return self.store.snapshot()

    @contextlib.contextmanager
    def _writer(self) -> Iterator[Txn]:
        conn = sqlite3.connect(self.path / DB_FILE, isolation_level=None, timeout=30)
        try:
            conn.execute("PRAGMA busy_timeout=30000")
            with write_transaction(conn) as txn:
                yield txn
        finally:
            conn.close()

    def _write(self, fn: Callable[[Txn], Any]) -> Any:
        with self._writer() as txn:
            return fn(txn)

    def wait(self, path: str, positions: Mapping[int, int], timeout: float) -> bool:
        t, f = self._find(path)
        deadline = time.monotonic() + timeout
        while True:
            if self._ready(t, f, positions):
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(self.poll_seconds, left))
