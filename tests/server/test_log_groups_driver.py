"""A CDC log stored in groups of log rows, read through the real server with cassandra-driver.

Concurrent writes (the server's committer runs several in one transaction, each in a savepoint; the bad
ones fail alone), batches over several partitions and ``USING TIMESTAMP`` in the past make and explode
groups (``docs/durability.md``, "Groups of log rows"); every acknowledged write's delta row is then in the
log exactly once, and every read by ``cdc$stream_id`` and ``cdc$time`` window, in both orders, with
``LIMIT`` and paged three rows at a time by the driver, returns what one unpaged read returns.
"""

from __future__ import annotations

import time

import logtide
from logtide.server import BackgroundServer, ServerConfig
from logtide.storage.check import check
from logtide.storage.records import is_group

from .conftest import KEYSPACE_DDL, cluster

LOG = "ks.t_scylla_cdc_log"


def _all(session, cql, params=(), fetch_size=None) -> list[tuple]:
    from cassandra.query import SimpleStatement

    return [tuple(r) for r in session.execute(SimpleStatement(cql, fetch_size=fetch_size), params)]


def test_a_log_of_groups_written_by_concurrent_writes_reads_the_same_paged_through_the_driver(tmp_path):
    db = logtide.open(tmp_path / "d", synchronous="OFF")
    srv = BackgroundServer(db, ServerConfig(port=0), close_db=True).start()
    try:
        with cluster(srv.port) as c:
            s = c.connect()
            s.execute(KEYSPACE_DDL.format("ks"))
            s.execute("CREATE TABLE ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) "
                      "WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}")
            futures = []
            for n in range(240):
                if n % 7 == 3:  # fails alone in its group of writes
                    cql = f"INSERT INTO ks.t (pk, ck, v) VALUES ({n % 5}, {n % 3}, 'not an int')"
                elif n % 7 == 5:
                    cql = (f"BEGIN UNLOGGED BATCH INSERT INTO ks.t (pk, ck, v) VALUES ({n % 5}, {n % 3}, {n}); "
                           f"INSERT INTO ks.t (pk, ck, v) VALUES ({n % 5 + 5}, 0, {n}); APPLY BATCH")
                elif n % 7 == 6:  # an older cdc$time: lands inside the stream's last groups
                    cql = (f"INSERT INTO ks.t (pk, ck, v) VALUES ({n % 5}, 7, {n}) "
                           f"USING TIMESTAMP {time.time_ns() // 1000 - 5000}")
                else:
                    cql = f"INSERT INTO ks.t (pk, ck, v) VALUES ({n % 5}, {n % 3}, {n})"
                futures.append((n, s.execute_async(cql)))
            acked = []
            for n, f in futures:
                try:
                    f.result()
                    acked.append(n)
                except Exception:  # noqa: BLE001 - the bad writes
                    assert n % 7 == 3, n
            assert len(acked) == 240 - len([n for n in range(240) if n % 7 == 3])
            full = _all(s, f"SELECT * FROM {LOG}")
            assert _all(s, f"SELECT * FROM {LOG}", fetch_size=3) == full
            deltas = sorted(r[-1] for r in _all(s, f'SELECT "cdc$operation", v FROM {LOG}') if r[0] in (1, 2))
            assert deltas == sorted(n for n in acked for _ in range(2 if n % 7 == 5 else 1))
            streams = sorted({r[0] for r in full})
            times = sorted({r[1] for r in full}, key=lambda u: u.time)
            for stream in streams:
                mine = [r for r in full if r[0] == stream]
                for order in ("ASC", "DESC"):
                    q = f'SELECT * FROM {LOG} WHERE "cdc$stream_id" = %s ORDER BY "cdc$time" {order}'
                    want = mine if order == "ASC" else mine[::-1]
                    assert _all(s, q, [stream], fetch_size=3) == want
                    lo, hi = times[len(times) // 4], times[3 * len(times) // 4]
                    q = (f'SELECT * FROM {LOG} WHERE "cdc$stream_id" = %s AND "cdc$time" >= %s AND "cdc$time" < %s '
                         f'ORDER BY "cdc$time" {order}')
                    window = _all(s, q, [stream, lo, hi])
                    assert window == [r for r in want if r in window]  # a part of the stream, in order
                    assert _all(s, q, [stream, lo, hi], fetch_size=3) == window
                    assert _all(s, q + " LIMIT 5", [stream, lo, hi], fetch_size=2) == window[:5]
        with db.store.snapshot() as txn:
            assert sum(1 for r in txn.scan("rows") if is_group(r[4])) > 20
    finally:
        srv.stop()
    assert check(tmp_path / "d").findings == []
