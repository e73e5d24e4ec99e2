"""A CDC-enabled table with secondary indexes logs exactly what it logs without them (docs/views-and-indexes.md,
"Secondary indexes"): the index's entries are never logged, an index cannot have CDC itself, and a changefeed
cannot be added to an index."""

from __future__ import annotations

import pytest

import logtide
from logtide.clock import ManualClock
from logtide.errors import InvalidRequest

WRITES = [
    "INSERT INTO t (p, c, v, m) VALUES (1, 1, 10, {1: 'a'})",
    "UPDATE t SET v = 11, m[2] = 'b' WHERE p = 1 AND c = 1",
    "INSERT INTO t (p, c, v) VALUES (2, 1, 10) USING TTL 100",
    "DELETE m[1] FROM t WHERE p = 1 AND c = 1",
    "DELETE FROM t WHERE p = 1 AND c = 1",
    "BEGIN BATCH INSERT INTO t (p, c, v) VALUES (3, 1, 1); INSERT INTO t (p, c, v) VALUES (3, 2, 2); APPLY BATCH",
    "DELETE FROM t WHERE p = 3",
]


def log_of(path, indexes: list[str]) -> list[tuple]:
    with logtide.open(path, clock=ManualClock(), synchronous="OFF") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("USE ks")
        s.execute("CREATE TABLE t (p int, c int, v int, m map<int, text>, PRIMARY KEY (p, c)) "
                  "WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}")
        for q in indexes:
            s.execute(q)
        for q in WRITES:
            s.execute(q)
        rows = s.execute("SELECT * FROM t_scylla_cdc_log")
        names = [n for n in rows.column_names if n not in ("cdc$stream_id", "cdc$time")]
        return sorted((tuple(repr(getattr(r, n) if n.isidentifier() else r[rows.column_names.index(n)])
                             for n in names) for r in rows))


def test_the_log_of_an_indexed_table_equals_the_log_without_indexes(tmp_path):
    plain = log_of(tmp_path / "plain", [])
    indexed = log_of(tmp_path / "indexed", ["CREATE INDEX ON t (v)", "CREATE INDEX ON t (keys(m))",
                                            "CREATE INDEX loc ON t ((p), v)"])
    assert len(plain) > len(WRITES)
    assert indexed == plain


def test_an_index_is_never_cdc_enabled_nor_a_changefeed_source(session):
    session.execute("CREATE TABLE t (p int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    with pytest.raises(InvalidRequest) as e:
        session.execute("CREATE INDEX ON t (v) WITH cdc = {'enabled': true}")
    assert str(e.value) == "Cannot enable CDC for a materialized view"
    session.execute("CREATE INDEX ON t (v)")
    assert session.db.catalog.find_table("ks", "t_v_idx_scylla_cdc_log") is None
    for name in ("t_v_idx", "t_v_idx_index"):
        with pytest.raises(InvalidRequest) as e:
            session.execute(f"ALTER TABLE {name} ADD CHANGEFEED feed WITH (format = 'json', mode = 'updates')")
        assert str(e.value).startswith("Cannot add changefeed to secondary index ks.t_v_idx: an index is not a table")
