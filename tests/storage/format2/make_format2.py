"""Make the storage-format-2 data directory of ``test_feed_format3.py`` with logtide's code of that format.

Run by hand, never by the suite, with the code of a logtide that writes format 2 (commit 4b3b0b7 made the
checked-in files)::

    git archive 4b3b0b7 logtide | tar -x -C /tmp/lt-format2
    LOGTIDE_PURE_PYTHON=1 PYTHONPATH=/tmp/lt-format2 python tests/storage/format2/make_format2.py tests/storage/format2

It writes ``format2.sql`` (the database as SQL text: ``sqlite3``'s dump, which the test loads into a new
``logtide.db``) and ``format2.expected.txt`` (every changefeed's partitions, records, consumers with their
committed offsets, scan progress and scan marks, as that logtide reads them), after a workload that leaves
every changefeed table holding something: records of the JSON, DEBEZIUM_JSON (Kafka keys) and
DYNAMODB_STREAMS_JSON formats in two partitions, barriers, a schema-change record, records retention
deleted (offset floors), consumers (one important, one starting at a time) with committed offsets, and an
initial scan stopped half way with rows a write exported ahead of it (scan marks).
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
from pathlib import Path

import logtide
from logtide.changefeed.reader import DirectoryTopicReader
from logtide.clock import ManualClock


def workload(path: Path) -> None:
    clock = ManualClock()
    db = logtide.open(path, clock=clock)
    db.feeds.pause()  # initial scans only when stepped
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("USE ks")
    s.execute("CREATE TABLE orders (id int, line int, item text, qty int, price double, tags set<text>, "
              "PRIMARY KEY (id, line))")
    s.execute("ALTER TABLE orders ADD CHANGEFEED img WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON', "
              "VIRTUAL_TIMESTAMPS = TRUE, BARRIERS_INTERVAL = Interval('PT1S'), SCHEMA_CHANGES = TRUE, "
              "TOPIC_MIN_ACTIVE_PARTITIONS = 2)")
    s.execute("ALTER TABLE orders ADD CHANGEFEED dbz WITH (MODE = 'NEW_IMAGE', FORMAT = 'DEBEZIUM_JSON', "
              "TOPIC_MIN_ACTIVE_PARTITIONS = 2)")
    s.execute("ALTER TABLE orders ADD CHANGEFEED ddb WITH (MODE = 'NEW_AND_OLD_IMAGES', "
              "FORMAT = 'DYNAMODB_STREAMS_JSON', AWS_REGION = 'eu-1')")
    s.execute("ALTER TABLE orders ADD CHANGEFEED short WITH (MODE = 'UPDATES', FORMAT = 'JSON', "
              "RETENTION_PERIOD = Interval('PT1H'), TOPIC_MIN_ACTIVE_PARTITIONS = 2)")
    s.execute("ALTER TOPIC \"ks/orders/img\" ADD CONSUMER billing WITH (important = true)")
    for i in range(8):
        clock.advance(seconds=0.25)
        s.execute(f"INSERT INTO orders (id, line, item, qty, price, tags) VALUES ({i % 3}, {i}, 'item-{i}', {i}, "
                  f"{i}.5, {{'t{i}', 'all'}})")
    s.execute("UPDATE orders SET qty = 99 WHERE id = 1 AND line = 4")
    s.execute("DELETE FROM orders WHERE id = 2 AND line = 5")
    clock.advance(seconds=2)
    db.feeds.tick()  # barriers in every partition of img
    s.execute("ALTER TABLE orders ADD note text")  # a schema-change record in img
    s.execute("UPDATE orders SET note = 'ünïcode ✓' WHERE id = 0 AND line = 3")
    clock.advance(seconds=7200)
    db.feeds.tick()  # short's records expire: its partitions keep their end offsets as floors
    s.execute("INSERT INTO orders (id, line, item, qty) VALUES (7, 70, 'after retention', 1)")
    s.execute("ALTER TOPIC \"ks/orders/dbz\" ADD CONSUMER audit WITH (read_from = 1600000001)")
    r = db.changefeeds
    r.commit("ks/orders/img", "billing", {0: 3, 1: 2})
    r.add_consumer("ks/orders/short", "tail")
    r.commit("ks/orders/short", "tail", {1: 1})
    s.execute("CREATE TABLE stock (k int PRIMARY KEY, n int)")
    for k in range(6):
        s.execute(f"INSERT INTO stock (k, n) VALUES ({k}, {k})")
    s.execute("ALTER TABLE stock ADD CHANGEFEED snap WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', INITIAL_SCAN = TRUE)")
    db.feeds.scan_step(partitions=2)
    t = db.catalog.table("ks", "stock")
    with db.store.snapshot() as txn:
        order = [t.partition_key[0].type.deserialize(pk) for _, pk, _ in txn.partitions(t.store_id)]
    s.execute(f"UPDATE stock SET n = 100 WHERE k = {order[4]}")  # not scanned yet: exported ahead, marked
    db.close()


def expected(path: Path) -> str:
    """Everything a reader sees of the changefeeds, as text (the test prints the same after migrating)."""
    lines = []
    with DirectoryTopicReader(path) as r:
        for d in r.topics():
            lines.append(f"changefeed {d.path} {d.mode} {d.format} {d.state} partitions {d.partitions}")
            lines.append(f"  scan progress {r.scan_progress(d.path)}")
            for p in r.partitions(d.path):
                lines.append(f"  partition {p.partition} offsets [{p.start_offset}, {p.end_offset})")
                offset = p.start_offset
                while True:
                    recs = r.read(d.path, p.partition, offset)
                    if not recs:
                        break
                    for rec in recs:
                        lines.append(f"    {rec.offset} {rec.write_time_ms} key={rec.key!r} {rec.value.decode()}")
                    offset = recs[-1].offset + 1
            for c in r.consumers(d.path):
                lines.append(f"  consumer {c.name} important={c.important} read_from_ms={c.read_from_ms} "
                             f"committed={dict(sorted(c.committed.items()))}")
    conn = sqlite3.connect(path / "logtide.db")
    for fid, token, pk, ck in conn.execute("SELECT feed_id, token, pk, ck FROM feed_scan_marks ORDER BY 1, 2, 3, 4"):
        lines.append(f"scan mark feed_id {fid} token {token} pk {pk.hex()} ck {ck.hex()}")
    conn.close()
    return "\n".join(lines) + "\n"


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "d"
        workload(data)
        conn = sqlite3.connect(data / "logtide.db")
        fmt = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0]
        assert fmt[2:-4] == b"2", fmt  # a format-2 directory
        dump = "\n".join(conn.iterdump()) + "\n"
        conn.close()
        (out / "format2.sql").write_text(dump)
        (out / "format2.expected.txt").write_text(expected(data))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
