"""kill -9 during writes to an indexed table: after restart every acknowledged write is there and the index's
entries agree with the table's rows (the entries are written in the base write's own transaction)."""

from __future__ import annotations

import random
import textwrap

import logtide

from ..sigkill import run_and_kill
from .test_secondary_index_maintenance import expected_entries, stored_entries

WRITER = textwrap.dedent("""
    import sys
    import logtide
    db = logtide.open(sys.argv[1], synchronous="FULL")
    s = db.session()
    start = int(sys.argv[2])
    if start == 0:
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (p int, c int, v int, m map<int, int>, PRIMARY KEY (p, c))")
        s.execute("CREATE INDEX ON ks.t (v)")
        s.execute("CREATE INDEX ON ks.t (keys(m))")
    print("ready", flush=True)
    for i in range(start, start + 100000):
        if i % 3 == 2:
            s.execute("DELETE FROM ks.t WHERE p = ? AND c = ?", (i % 7, i % 5))
        else:
            s.execute("UPDATE ks.t SET v = ?, m[?] = ? WHERE p = ? AND c = ?", (i, i % 4, i, i % 7, i % 5))
        print(i, flush=True)
""")


def test_index_entries_agree_with_the_table_after_kill_9(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    data = tmp_path / "data"
    rng = random.Random(7)
    start = 0
    for _ in range(3):
        acked = run_and_kill(script, data, start, rng)
        start = max(start, acked + 1) + 1
        with logtide.open(data) as db:
            table = db.catalog.table("ks", "t")
            for ix in table.indexes:
                assert stored_entries(db, ix) == expected_entries(db, table, ix), ix.name
            if acked >= 0:  # the last acknowledged write is there
                s = db.session()
                p, c = acked % 7, acked % 5
                row = s.execute("SELECT v FROM ks.t WHERE p = %d AND c = %d" % (p, c)).one()
                if acked % 3 == 2:
                    assert row is None
                else:
                    assert row is not None and row.v == acked
                    assert [(r.p, r.c) for r in s.execute(f"SELECT p, c FROM ks.t WHERE v = {acked}")] == [(p, c)]
