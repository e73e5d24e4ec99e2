"""Make the storage-format-3 data directory of ``test_index_format4.py`` with logtide's code of that format.

Run by hand, never by the suite, with the code of the last logtide that writes format 3 (commit c2c2682 made
the checked-in files)::

    git archive c2c2682 logtide | tar -x -C /tmp/lt-format3
    LOGTIDE_PURE_PYTHON=1 PYTHONPATH=/tmp/lt-format3 python tests/storage/format3/make_format3.py tests/storage/format3

It writes ``format3.sql`` (the database as SQL text: ``sqlite3``'s dump, which the test loads into a new
``logtide.db``) and ``format3.expected.txt`` (what that logtide reads from it: a table's rows, a CDC log, a
changefeed's records), after a workload with a plain table, a CDC-enabled one and a changefeed.
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path

import logtide
from logtide.clock import ManualClock


def workload(path: Path) -> None:
    with logtide.open(path, clock=ManualClock()) as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("USE ks")
        s.execute("CREATE TABLE people (id int PRIMARY KEY, city text, tags set<text>)")
        s.execute("CREATE TABLE orders (id int, line int, item text, PRIMARY KEY (id, line)) "
                  "WITH cdc = {'enabled': true, 'preimage': true}")
        s.execute("ALTER TABLE orders ADD CHANGEFEED feed WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON')")
        for i in range(12):
            s.execute(f"INSERT INTO people (id, city, tags) VALUES ({i}, 'city-{i % 3}', {{'t{i % 2}'}})")
            s.execute(f"INSERT INTO orders (id, line, item) VALUES ({i % 4}, {i}, 'item-{i}')")
        s.execute("UPDATE orders SET item = 'changed' WHERE id = 1 AND line = 5")
        s.execute("DELETE FROM people WHERE id = 7")


def expected(path: Path) -> str:
    """What a reader sees (the test prints the same after migrating)."""
    out = []
    with logtide.open(path, readonly=True, clock=ManualClock()) as db:  # the CDC log rows live 24 h from then
        s = db.session()
        for q in ("SELECT * FROM ks.people", "SELECT * FROM ks.orders",
                  'SELECT "cdc$operation", id, line, item FROM ks.orders_scylla_cdc_log'):
            out.append(q)
            out.extend("  " + repr(tuple(r)) for r in s.execute(q))
        for p in db.changefeeds.partitions("ks/orders/feed"):
            out.append(f"ks/orders/feed partition {p.partition}")
            out.extend(f"  {m.offset} {m.value.decode()}" for m in db.changefeeds.read("ks/orders/feed", p.partition,
                                                                                        p.start_offset, 1000))
    return "\n".join(out) + "\n"


def main(target: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "d"
        workload(data)
        conn = sqlite3.connect(data / "logtide.db")
        (target / "format3.sql").write_text("\n".join(conn.iterdump()) + "\n")
        conn.close()
        (target / "format3.expected.txt").write_text(expected(data))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
