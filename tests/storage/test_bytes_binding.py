"""``bytes`` parameters are bound to SQLite through an identity adapter that logtide registers when it opens a
store, unless the process has one of its own (storage/sqlite.py ``bind_bytes_as_they_are``; docs/performance.md,
"Where CDC's extra cost goes")."""

from __future__ import annotations

import sqlite3

import logtide
from logtide.storage.sqlite import bind_bytes_as_they_are

KEY = (bytes, sqlite3.PrepareProtocol)


def test_opening_a_store_binds_bytes_through_an_adapter_that_returns_them_unchanged(tmp_path):
    db = logtide.open(tmp_path / "d")
    try:
        adapter = sqlite3.adapters[KEY]
        value = b"\x00\x01 stored as given"
        assert adapter(value) is value
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (k blob PRIMARY KEY, v blob)")
        s.execute("INSERT INTO ks.t (k, v) VALUES (0x00ff, 0x)")
        assert [tuple(r) for r in s.execute("SELECT k, v FROM ks.t")] == [(b"\x00\xff", b"")]
    finally:
        db.close()


def test_an_adapter_the_process_registered_for_bytes_is_kept():
    previous = sqlite3.adapters.get(KEY)
    def own(b: bytes) -> bytes:
        return b
    sqlite3.register_adapter(bytes, own)
    try:
        bind_bytes_as_they_are()
        assert sqlite3.adapters[KEY] is own
    finally:
        if previous is None:
            del sqlite3.adapters[KEY]
        else:
            sqlite3.adapters[KEY] = previous
