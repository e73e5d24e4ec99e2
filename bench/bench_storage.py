"""SQLite (WAL) against LMDB for logtide's storage access pattern, side by side in one run.

    python bench/bench_storage.py [--ops 20000]   (needs `pip install lmdb` for the LMDB side)

Each operation is what one single-row write costs the store: in one durable
transaction, read the partition record, read the row record, write the row
record back (and the partition record for a new partition).  Then a read
pass scans each partition's rows by key range.  Both stores sync every
commit to disk (SQLite synchronous=FULL in WAL mode; LMDB sync=True).
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import struct
import tempfile
import time


def key(tid: int, token: int, pk: bytes, ck: bytes = b"") -> bytes:
    return struct.pack(">iQ", tid, (token + (1 << 63)) & ((1 << 64) - 1)) + struct.pack(">H", len(pk)) + pk + ck


def run_sqlite(path: str, plan: list[tuple[int, int]], value: bytes) -> tuple[float, float]:
    conn = sqlite3.connect(os.path.join(path, "x.db"), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE partitions (tid INTEGER, token INTEGER, pk BLOB, data BLOB, PRIMARY KEY (tid, token, pk)) WITHOUT ROWID")
    conn.execute("CREATE TABLE rows (tid INTEGER, token INTEGER, pk BLOB, ck BLOB, data BLOB, PRIMARY KEY (tid, token, pk, ck)) WITHOUT ROWID")
    start = time.perf_counter()
    for p, c in plan:
        pk = struct.pack(">i", p)
        ck = struct.pack(">i", c)
        conn.execute("BEGIN IMMEDIATE")
        part = conn.execute("SELECT data FROM partitions WHERE tid=1 AND token=? AND pk=?", (p, pk)).fetchone()
        conn.execute("SELECT data FROM rows WHERE tid=1 AND token=? AND pk=? AND ck=?", (p, pk, ck)).fetchone()
        conn.execute("INSERT OR REPLACE INTO rows VALUES (1, ?, ?, ?, ?)", (p, pk, ck, value))
        if part is None:
            conn.execute("INSERT INTO partitions VALUES (1, ?, ?, ?)", (p, pk, value))
        conn.execute("COMMIT")
    writes = time.perf_counter() - start
    start = time.perf_counter()
    for p in sorted({p for p, _ in plan}):
        conn.execute("SELECT ck, data FROM rows WHERE tid=1 AND token=? AND pk=? ORDER BY ck", (p, struct.pack(">i", p))).fetchall()
    reads = time.perf_counter() - start
    conn.close()
    return writes, reads


def run_lmdb(path: str, plan: list[tuple[int, int]], value: bytes) -> tuple[float, float]:
    import lmdb
    env = lmdb.open(path, map_size=1 << 30, max_dbs=2, sync=True)
    parts = env.open_db(b"partitions")
    rows = env.open_db(b"rows")
    start = time.perf_counter()
    for p, c in plan:
        pk = struct.pack(">i", p)
        with env.begin(write=True) as txn:
            pkey = key(1, p, pk)
            part = txn.get(pkey, db=parts)
            rkey = key(1, p, pk, struct.pack(">i", c))
            txn.get(rkey, db=rows)
            txn.put(rkey, value, db=rows)
            if part is None:
                txn.put(pkey, value, db=parts)
    writes = time.perf_counter() - start
    start = time.perf_counter()
    with env.begin() as txn:
        cur = txn.cursor(db=rows)
        for p in sorted({p for p, _ in plan}):
            prefix = key(1, p, struct.pack(">i", p))
            if cur.set_range(prefix):
                for k, _ in cur:
                    if not k.startswith(prefix):
                        break
    reads = time.perf_counter() - start
    env.close()
    return writes, reads


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=20000)
    args = ap.parse_args()
    rng = random.Random(1)
    plan = [(rng.randrange(1000), rng.randrange(10)) for _ in range(args.ops)]
    value = os.urandom(120)
    results = {}
    for name, fn in (("sqlite wal", run_sqlite), ("lmdb", run_lmdb), ("sqlite wal (again)", run_sqlite)):
        with tempfile.TemporaryDirectory() as d:
            try:
                results[name] = fn(d, plan, value)
            except ImportError:
                print(f"{name}: not installed")
    for name, (w, r) in results.items():
        print(f"  {name:20s} {args.ops / w:8.0f} durable write txns/s   partition scans: {r * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
