"""The bytes a write path stores stay the same: base rows, partitions and CDC log rows of a mixed workload.

The engine's write path (binding, mutation building, merging, CDC capture and log-row encoding) may
change for speed, never the bytes it stores (``docs/durability.md``, "Record format";
``docs/performance.md``, "The write path").  A fixed host id (so fixed CDC streams), a manual clock
seeded ``cdc$time`` random bits and a fixed list-key clock sequence make every stored record deterministic; the digest of all of
them was taken from the code before the write path was reworked (commit 0bdc56a), then once more when
the CDC delta's collection columns were put in name order (before, they came in the order of a set of
column names, so the MessagePack map order of 33 log records, not their content, varied with
``PYTHONHASHSEED``).  The workload runs in child processes with two different hash seeds: the bytes
must not depend on them.  Since storage format 2 a stream's log rows of one commit are stored as one group
entry (kind ``G``) holding those same ``U`` records: the digest is taken over the rows the groups hold, and
the test also checks that groups were written.
"""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
import uuid

import logtide
from logtide.cdc.capture import CdcTimeuuids
from logtide.cdc.streams import Generations
from logtide.clock import ManualClock
from logtide.mutation.context import ListKeys
from logtide.storage.sqlite import HOST_ID_KEY
from logtide.storage.records import group_rows, is_group
from logtide.storage.sqlite import Store

# sha256 of every (tid, token, pk, ck, data) of ``rows`` (groups expanded to their rows) and (tid, token, pk,
# data) of ``partitions``
STORED_DIGEST = "8430c60223f9bf3ff4281b536f4651992265f34ce23822801fdc3aaeca39d86d"
STORED_ROWS = 3379

CDC_OPTIONS = {
    "cdc_off": "",
    "cdc_full": " WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}",
    "cdc_pre": " WITH cdc = {'enabled': true, 'preimage': true}",
    "cdc_post": " WITH cdc = {'enabled': true, 'postimage': true, 'ttl': 600}",
    "cdc_keys": " WITH cdc = {'enabled': true, 'delta': 'keys'}",
}


def _database(path, **options) -> logtide.Database:
    """A database whose host id (so its CDC streams), clock and cdc$time bits are fixed (``options`` go to
    ``logtide.open``; ``tests/storage/test_log_groups.py`` uses it too)."""
    logtide.open(path, synchronous="OFF").close()
    store = Store.open(path, synchronous="OFF")
    with store.write() as txn:
        txn.put_meta(HOST_ID_KEY, uuid.UUID(int=0x1234).bytes)
        txn.sql("DELETE FROM meta WHERE key = ?", (Generations.META_KEY,))
    store.close()
    db = logtide.open(path, clock=ManualClock(), synchronous="OFF", **options)
    db.cdc_timeuuids = CdcTimeuuids(random.Random(7))
    db.list_keys = ListKeys(db.clock.now_micros, clock_seq=0x155)
    return db


def _workload(db: logtide.Database) -> None:
    s = db.session()
    clock = db.clock
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    for name, cdc in CDC_OPTIONS.items():
        s.execute(f"CREATE TABLE ks.{name} (pk int, ck int, a int, b text, s int static, l list<int>, "
                  f"m map<text, int>, PRIMARY KEY (pk, ck))" + cdc)
        s.execute(f"CREATE TABLE ks.{name}_pk (k int PRIMARY KEY, v text, f frozen<set<int>>)" + cdc)
    for name in CDC_OPTIONS:
        ins = s.prepare(f"INSERT INTO ks.{name} (pk, ck, a, b) VALUES (?, ?, ?, ?)")
        ins_pk = s.prepare(f"INSERT INTO ks.{name}_pk (k, v, f) VALUES (?, ?, ?)")
        for i in range(120):
            clock.advance(micros=37)
            k = i % 23
            s.execute(ins, (k % 5, k, i, f"v{i}" if i % 7 else None))
            s.execute(ins_pk, (k, f"w{i}", {i, k}))
            if i % 11 == 0:
                s.execute(f"UPDATE ks.{name} USING TTL 100 SET a = {i}, l = l + [{i}], m['x{i}'] = {i} "
                          f"WHERE pk = {k % 5} AND ck = {k}")
            if i % 13 == 0:
                s.execute(f"UPDATE ks.{name} SET s = {i} WHERE pk = {k % 5}")
            if i % 17 == 0:
                s.execute(f"DELETE b FROM ks.{name} WHERE pk = {k % 5} AND ck = {k}")
            if i % 19 == 0:
                s.execute(f"DELETE FROM ks.{name} WHERE pk = {k % 5} AND ck = {(k + 1) % 23}")
            if i % 29 == 0:
                s.execute(f"DELETE FROM ks.{name} WHERE pk = {k % 5} AND ck > 15")
            if i % 10 == 0:
                s.execute_batch("LOGGED", [(ins, (j % 5, j, i + j, "b")) for j in range(i % 23, i % 23 + 8)])
            if i % 31 == 0:
                s.execute(f"INSERT INTO ks.{name} (pk, ck, a) VALUES ({k % 5}, {k}, {i}) USING TIMESTAMP 5")
            if i % 37 == 0:
                s.execute(f"DELETE FROM ks.{name}_pk WHERE k = {k}")
        clock.advance(seconds=1)


def _digest(path) -> tuple[str, int, int]:
    """The digest and count of the logical records, and the number of group entries."""
    store = Store.open(path, readonly=True)
    h = hashlib.sha256()
    n = groups = 0
    with store.snapshot() as txn:
        for rec in txn.scan("partitions"):
            h.update(repr(rec).encode())
            n += 1
        for tid, token, pk, ck, data in txn.scan("rows"):
            # logical rows: a group entry (storage format 2) counts as the (ck, U record) rows it holds, whose
            # bytes are those each would be stored as alone, so the digest of 0bdc56a still holds
            groups += is_group(data)
            for row in group_rows(data, tid, pk, ck) if is_group(data) else [(ck, data)]:
                h.update(repr((tid, token, pk) + tuple(row)).encode())
                n += 1
    store.close()
    return h.hexdigest(), n, groups


def test_a_mixed_workload_stores_the_same_bytes_as_before_whatever_the_hash_seed(tmp_path):
    for seed in ("0", "4242"):
        path = tmp_path / f"seed{seed}"
        path.mkdir()
        subprocess.run([sys.executable, __file__, str(path)], check=True, env=dict(os.environ, PYTHONHASHSEED=seed))
        digest, rows, groups = _digest(path)
        assert (digest, rows) == (STORED_DIGEST, STORED_ROWS), f"PYTHONHASHSEED={seed}"
        assert groups > 100, "the log rows were stored in groups"


if __name__ == "__main__":  # the child process: write the workload into the directory given
    database = _database(sys.argv[1])
    _workload(database)
    database.close()
