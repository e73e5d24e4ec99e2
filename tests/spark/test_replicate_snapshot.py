"""The replication job's snapshot copies rows whose history is not in the CDC log exactly: every cell,
collection element, UDT field and list element with its write time and original TTL, list keys and
row markers (docs/spark.md, "What the snapshot copies")."""

from __future__ import annotations

import uuid

import logtide
from logtide.cdc.replay import compare_tables
from logtide.spark.replicate import replicate

from .conftest import KEYSPACE_DDL, cluster, serve

SCHEMA = [
    KEYSPACE_DDL.format("src"),
    "CREATE TYPE src.addr (street text, n int, zip text)",
    "CREATE TABLE src.t (pk int, ck int, v text, s set<int>, tu set<timeuuid>, m map<text, int>, l list<text>,"
    " u addr, f frozen<list<int>>, st int static, PRIMARY KEY (pk, ck))",
]
TTL = 90_000  # long enough that nothing expires while the test runs
T1, T2 = uuid.UUID("00000000-0000-1000-8000-000000000001"), uuid.UUID("ffffffff-0000-1000-8000-000000000001")

BEFORE_CDC = [  # written before the table had a CDC log: only the snapshot can copy these
    f"INSERT INTO src.t (pk, ck, v, f) VALUES (0, 0, 'a', [1, 2]) USING TIMESTAMP 100 AND TTL {TTL}",
    "UPDATE src.t USING TIMESTAMP 101 SET v = 'no marker' WHERE pk = 0 AND ck = 1",
    "UPDATE src.t USING TIMESTAMP 102 SET s = s + {3, 1} WHERE pk = 0 AND ck = 0",
    f"UPDATE src.t USING TIMESTAMP 103 AND TTL {TTL + 7} SET s = s + {{2}} WHERE pk = 0 AND ck = 0",
    f"UPDATE src.t USING TIMESTAMP 104 SET tu = tu + {{{T2}}} WHERE pk = 0 AND ck = 0",
    f"UPDATE src.t USING TIMESTAMP 105 AND TTL {TTL} SET tu = tu + {{{T1}}} WHERE pk = 0 AND ck = 0",
    f"UPDATE src.t USING TIMESTAMP 106 AND TTL {TTL} SET m['x'] = 1 WHERE pk = 0 AND ck = 0",
    "UPDATE src.t USING TIMESTAMP 107 SET m['a'] = 2, u.n = 5 WHERE pk = 0 AND ck = 0",
    f"UPDATE src.t USING TIMESTAMP 108 AND TTL {TTL + 1} SET u.zip = 'z' WHERE pk = 0 AND ck = 0",
    "UPDATE src.t USING TIMESTAMP 109 SET l = l + ['p', 'q'] WHERE pk = 0 AND ck = 0",
    f"UPDATE src.t USING TIMESTAMP 110 AND TTL {TTL} SET l = ['o'] + l WHERE pk = 0 AND ck = 0",
    "UPDATE src.t USING TIMESTAMP 111 SET st = 9 WHERE pk = 0",
    "UPDATE src.t USING TIMESTAMP 112 SET st = 8 WHERE pk = 1",
    f"INSERT INTO src.t (pk, ck) VALUES (2, 5) USING TIMESTAMP 113 AND TTL {TTL}",
    "UPDATE src.t USING TIMESTAMP 114 SET l = l + ['only'] WHERE pk = 3 AND ck = 3",
]
AFTER_CDC = [  # in the log: replayed over the snapshot's copies
    "UPDATE src.t USING TIMESTAMP 200 SET l = l + ['r'], s = s - {1} WHERE pk = 0 AND ck = 0",
    f"UPDATE src.t USING TIMESTAMP 201 AND TTL {TTL} SET u.street = 'main' WHERE pk = 0 AND ck = 0",
    "INSERT INTO src.t (pk, ck, v) VALUES (4, 4, 'logged') USING TIMESTAMP 202",
]
EXTRA = ("pk, ck, logtide_marker_writetime(), logtide_marker_ttl(), logtide_list_keys(l), logtide_element_writetimes(l), "
         "logtide_original_ttl(l), logtide_element_writetimes(tu), logtide_element_writetimes(m), "
         "logtide_element_writetimes(u)")


def test_snapshot_copies_rows_older_than_the_log_exactly_and_a_second_run_changes_nothing(spark, tmp_path):
    data = tmp_path / "d"
    srv = serve(data)
    c = cluster(srv.port)
    s = c.connect()
    try:
        for q in SCHEMA + BEFORE_CDC:
            s.execute(q)
        s.execute("ALTER TABLE src.t WITH cdc = {'enabled': true}")
        for q in AFTER_CDC:
            s.execute(q)
        for run in ("first", "second"):
            query = replicate(spark, f"cql://127.0.0.1:{srv.port}/src.t", f"cql://127.0.0.1:{srv.port}/dst.t",
                              tmp_path / f"ckpt-{run}", until_caught_up=True, confidence_window="0s", splits=2)
            query.awaitTermination(300)
            db = logtide.open(data, readonly=True)
            try:
                diffs = compare_tables(db, db.catalog.table("src", "t"), db, db.catalog.table("dst", "t"))
            finally:
                db.close()
            assert [str(d) for d in diffs] == [], run
            src = sorted(tuple(r) for r in s.execute(f"SELECT {EXTRA} FROM src.t"))
            dst = sorted(tuple(r) for r in s.execute(f"SELECT {EXTRA} FROM dst.t"))
            assert src == dst, run
            assert len(src) == 6 and (0, 0, 100, TTL) == src[0][:4]
    finally:
        c.shutdown()
        srv.stop()
