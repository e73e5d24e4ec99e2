"""logtide against its peer for CDC with images on one machine: PostgreSQL 15 + wal2json, side by side.

    python bench/bench_peer.py [--writes 20000] [--rounds 3] [--only NAME[,NAME]] [--skip-server]

The peer a user would otherwise pick for CDC with before and after images on
one machine is PostgreSQL with ``REPLICA IDENTITY FULL`` and a wal2json
logical slot.  This script starts a private PostgreSQL 15 cluster
(``wal_level=logical``, ``fsync=on``, ``synchronous_commit=on``) listening
only on a Unix socket in a temporary directory, installs the Debian
packages ``postgresql-15`` and ``postgresql-15-wal2json`` when they are
missing (as root), and runs each workload on both systems in interleaved
rounds (logtide, PostgreSQL, logtide, ...), reporting medians and ratios.
Durability is the same on both: an fsync per commit (logtide's default
``synchronous=FULL``).  Where PostgreSQL cannot be installed or started it
says why and exits with status 0 without figures.

The table is ``(pk int, ck int, a int, b text, PRIMARY KEY (pk, ck))``; write
``i`` upserts key ``k = i % 700`` at ``pk = k % 50, ck = k``.

Workloads (each a fresh database per round):

- ``cdc-off``: one write per transaction, no CDC (logtide embedded session;
  PostgreSQL without a slot).
- ``cdc-writes``: the same with full CDC (``preimage: 'full'``,
  ``postimage: true``; PostgreSQL ``REPLICA IDENTITY FULL`` with a wal2json
  slot), writes only.
- ``cdc-read``: reading every change back (logtide: each stream by
  ``cdc$stream_id`` and a time window, as ScyllaDB's consumers read;
  PostgreSQL: ``pg_logical_slot_get_changes``), in changes per second.
- ``cdc-e2e``: writes plus reading back.
- ``batch-mixed`` / ``batch-one``: 100 statements per batch (logtide
  ``BEGIN BATCH``) or transaction (PostgreSQL), full CDC, end to end; over
  all 50 partitions or one.
- ``server-1``: ``logtide serve`` with cassandra-driver, one request at a
  time, full CDC, end to end; PostgreSQL with one connection (psycopg).
- ``server-64``: 64 requests in flight against PostgreSQL with 8 connections.

Also printed: the CDC cost ratio of each system (full CDC end to end against
CDC off).  Needs ``psycopg`` (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

PG_BIN = Path("/usr/lib/postgresql/15/bin")
CQL_TABLE = "CREATE TABLE ks.t (pk int, ck int, a int, b text, PRIMARY KEY (pk, ck))"
CQL_CDC = " WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}"
CQL_UPSERT = "INSERT INTO ks.t (pk, ck, a, b) VALUES (?, ?, ?, ?)"
PG_TABLE = "CREATE TABLE t (pk int, ck int, a int, b text, PRIMARY KEY (pk, ck))"
PG_UPSERT = ("INSERT INTO t (pk, ck, a, b) VALUES (%s, %s, %s, %s) "
             "ON CONFLICT (pk, ck) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b")
WORKLOADS = ("cdc-off", "cdc-writes", "cdc-read", "cdc-e2e", "batch-mixed", "batch-one", "server-1", "server-64")


def key(i: int, one_partition: bool = False) -> tuple[int, int, int, str]:
    """The i-th upsert: (pk, ck, a, b)."""
    k = i % 700
    return (0 if one_partition else k % 50), k, i, f"value-{i}"


# -- PostgreSQL ------------------------------------------------------------------

class Postgres:
    """A private PostgreSQL 15 cluster on a Unix socket in a temporary directory."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "pg"
        self.sock = root / "pgsock"
        self.user = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        self.counter = 0

    def _run(self, *args: str) -> None:
        cmd = list(args)
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> None:
        for d in (self.dir, self.sock):
            d.mkdir(parents=True)
            if os.geteuid() == 0:
                shutil.chown(d, "postgres", "postgres")
        if os.geteuid() == 0:
            shutil.chown(self.dir.parent, "postgres", "postgres")
        self._run(str(PG_BIN / "initdb"), "-D", str(self.dir), "-A", "trust", "-U", self.user, "--no-sync")
        opts = (f"-c listen_addresses='' -c unix_socket_directories={self.sock} -c wal_level=logical "
                "-c fsync=on -c synchronous_commit=on -c max_replication_slots=64 -c max_wal_senders=4 "
                "-c shared_buffers=256MB -c max_connections=100")
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.dir), "-o", opts, "-w", "-l", str(self.dir / "log"), "start")

    def stop(self) -> None:
        self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.dir), "-m", "fast", "-w", "stop")

    def connect(self, dbname: str):
        import psycopg
        return psycopg.connect(host=str(self.sock), user=self.user, dbname=dbname, autocommit=True)

    def fresh(self, cdc: bool) -> str:
        """A new database with the table (and a wal2json slot when ``cdc``); its name."""
        self.counter += 1
        name = f"b{self.counter}"
        with self.connect("postgres") as c:
            c.execute(f"CREATE DATABASE {name}")
        with self.connect(name) as c:
            c.execute(PG_TABLE)
            if cdc:
                c.execute("ALTER TABLE t REPLICA IDENTITY FULL")
                c.execute(f"SELECT pg_create_logical_replication_slot('s_{name}', 'wal2json')")
        return name

    def drop(self, name: str) -> None:
        with self.connect("postgres") as c:
            c.execute(f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 's_{name}'")
            c.execute(f"DROP DATABASE {name}")


def ensure_postgres() -> str | None:
    """None when PostgreSQL 15 with wal2json is usable, else why not."""
    missing = [p for p, f in (("postgresql-15", PG_BIN / "initdb"),
                              ("postgresql-15-wal2json", Path("/usr/lib/postgresql/15/lib/wal2json.so")))
               if not f.exists()]
    if missing:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            return f"PostgreSQL packages missing ({', '.join(missing)}) and cannot be installed (not root / no apt-get)"
        r = subprocess.run(["apt-get", "install", "-y", "-qq", *missing], capture_output=True, text=True)
        if r.returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True)
            r = subprocess.run(["apt-get", "install", "-y", "-qq", *missing], capture_output=True, text=True)
        if r.returncode != 0:
            return f"apt-get install {' '.join(missing)} failed: {r.stderr.strip().splitlines()[-1:]}"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed: pip install -e '.[bench]'"
    return None


def pg_writes(pg: Postgres, db: str, n: int, batch: int = 1, one_partition: bool = False) -> float:
    with pg.connect(db) as c:
        start = time.perf_counter()
        if batch == 1:
            for i in range(n):
                c.execute(PG_UPSERT, key(i))
        else:
            cur = c.cursor()
            for lo in range(0, n, batch):
                with c.transaction():
                    cur.executemany(PG_UPSERT, [key(i, one_partition) for i in range(lo, min(n, lo + batch))])
        return time.perf_counter() - start


def pg_read(pg: Postgres, db: str) -> tuple[int, float]:
    with pg.connect(db) as c:
        start = time.perf_counter()
        rows = c.execute(f"SELECT data FROM pg_logical_slot_get_changes('s_{db}', NULL, NULL, "
                         "'format-version', '2', 'include-transaction', 'false')").fetchall()
        return len(rows), time.perf_counter() - start


def pg_server(pg: Postgres, db: str, n: int, in_flight: int, connections: int) -> float:
    conns = [pg.connect(db) for _ in range(connections)]
    locks = [threading.Lock() for _ in conns]

    def one(i: int) -> None:
        j = i % connections
        with locks[j]:
            conns[j].execute(PG_UPSERT, key(i))

    start = time.perf_counter()
    if in_flight == 1:
        for i in range(n):
            one(i)
    else:
        with ThreadPoolExecutor(max_workers=min(in_flight, connections)) as ex:
            list(ex.map(one, range(n)))
    elapsed = time.perf_counter() - start
    for c in conns:
        c.close()
    return elapsed


# -- logtide -------------------------------------------------------------------------

def lt_open(path: str, cdc: bool):
    import logtide
    db = logtide.open(path)
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute(CQL_TABLE + (CQL_CDC if cdc else ""))
    return db, s


def lt_writes(s, n: int, batch: int = 1, one_partition: bool = False) -> float:
    stmt = s.prepare(CQL_UPSERT)
    start = time.perf_counter()
    if batch == 1:
        for i in range(n):
            s.execute(stmt, key(i))
    else:
        for lo in range(0, n, batch):
            s.execute_batch("LOGGED", [(stmt, key(i, one_partition)) for i in range(lo, min(n, lo + batch))])
    return time.perf_counter() - start


def lt_read(db, s) -> tuple[int, float]:
    """Every change, stream by stream, in time windows as ScyllaDB's consumers read."""
    q = s.prepare('SELECT * FROM ks.t_scylla_cdc_log WHERE "cdc$stream_id" = ? AND "cdc$time" > ? '
                  'AND "cdc$time" <= maxTimeuuid(?)')
    lo = uuid.UUID("00000000-0000-1000-8080-808080808080")
    hi = int(time.time() * 1000) + 10_000
    count = 0
    start = time.perf_counter()
    for sid in db.generations.current.all_streams():
        count += len(s.execute(q, [sid, lo, hi]))
    return count, time.perf_counter() - start


class Serve:
    """``logtide serve`` on a free loopback port in a fresh data directory."""

    def __init__(self, data_dir: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "logtide", "serve", "--data-dir", data_dir, "--port", "0",
                                      "--kafka-port", "0"],
                                     stderr=subprocess.PIPE, text=True)
        self.port = 0
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            m = re.search(r"listening on \S+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if not self.port:
            raise RuntimeError("logtide serve did not start")
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def lt_server(root: str, n: int, in_flight: int) -> float:
    from cassandra.cluster import Cluster
    server = Serve(root)
    try:
        cluster = Cluster(["127.0.0.1"], port=server.port, protocol_version=4)
        s = cluster.connect()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute(CQL_TABLE + CQL_CDC)
        stmt = s.prepare(CQL_UPSERT)
        start = time.perf_counter()
        if in_flight == 1:
            for i in range(n):
                s.execute(stmt, key(i))
        else:
            sem = threading.Semaphore(in_flight)
            done = threading.Event()
            left = [n]
            lock = threading.Lock()
            errors: list[BaseException] = []

            def finish(_: object = None) -> None:
                sem.release()
                with lock:
                    left[0] -= 1
                    if left[0] == 0:
                        done.set()

            def fail(e: BaseException) -> None:
                errors.append(e)
                finish()

            for i in range(n):
                sem.acquire()
                f = s.execute_async(stmt, key(i))
                f.add_callbacks(finish, fail)
            done.wait()
            if errors:
                raise errors[0]
        # reading back through the server, as a consumer would
        q = s.prepare('SELECT * FROM ks.t_scylla_cdc_log WHERE "cdc$stream_id" IN ? AND "cdc$time" > ? '
                      'AND "cdc$time" <= maxTimeuuid(?)')
        streams = [r.streams for r in s.execute("SELECT streams FROM system_distributed.cdc_streams_descriptions_v2")]
        lo = uuid.UUID("00000000-0000-1000-8080-808080808080")
        hi = int(time.time() * 1000) + 10_000
        for group in streams:
            s.execute(q, [list(group), lo, hi])
        elapsed = time.perf_counter() - start
        cluster.shutdown()
        return elapsed
    finally:
        server.stop()


# -- the run -------------------------------------------------------------------------

def measure(name: str, root: Path, pg: Postgres, n: int) -> tuple[float, float, str]:
    """(logtide figure, PostgreSQL figure, unit) of one round of one workload; figures: higher is better."""
    d = tempfile.mkdtemp(dir=root)
    try:
        if name == "server-1" or name == "server-64":
            inf = 1 if name == "server-1" else 64
            lt = n / lt_server(d, n, inf)
            db = pg.fresh(True)
            t = pg_server(pg, db, n, inf, 1 if inf == 1 else 8)
            t += pg_read(pg, db)[1]
            pg.drop(db)
            return lt, n / t, "writes/s end to end"
        cdc = name != "cdc-off"
        ldb, s = lt_open(d, cdc)
        pdb = pg.fresh(cdc)
        try:
            batch = 100 if name.startswith("batch") else 1
            one = name == "batch-one"
            lw = lt_writes(s, n, batch, one)
            pw = pg_writes(pg, pdb, n, batch, one)
            if name in ("cdc-off", "cdc-writes"):
                return n / lw, n / pw, "writes/s"
            lc, lr = lt_read(ldb, s)
            pc, pr = pg_read(pg, pdb)
            if name == "cdc-read":
                return lc / lr, pc / pr, "changes/s"
            return n / (lw + lr), n / (pw + pr), "writes/s end to end"
        finally:
            ldb.close()
            pg.drop(pdb)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", help="comma-separated workloads: " + ", ".join(WORKLOADS))
    ap.add_argument("--skip-server", action="store_true", help="leave out the server-1 and server-64 workloads")
    args = ap.parse_args(argv)
    names = [w for w in WORKLOADS if not (args.skip_server and w.startswith("server"))]
    if args.only:
        names = [w.strip() for w in args.only.split(",")]
        unknown = [w for w in names if w not in WORKLOADS]
        if unknown:
            ap.error(f"unknown workload(s): {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    why = ensure_postgres()
    if why:
        print(f"bench_peer: skipped: {why}")
        return 0
    root = Path(tempfile.mkdtemp(prefix="bench-peer-"))
    os.chmod(root, 0o755)
    pg = Postgres(root)
    try:
        pg.start()
    except subprocess.CalledProcessError as e:
        print(f"bench_peer: skipped: PostgreSQL did not start: {e.stderr.decode(errors='replace').strip()}")
        shutil.rmtree(root, ignore_errors=True)
        return 0
    results: dict[str, tuple[list[float], list[float], str]] = {w: ([], [], "") for w in names}
    try:
        for r in range(args.rounds):
            for w in names:
                lt, p, unit = measure(w, root, pg, args.writes)
                results[w][0].append(lt)
                results[w][1].append(p)
                results[w] = (results[w][0], results[w][1], unit)
                print(f"  round {r + 1} {w:12s} logtide {lt:9.0f}  postgres {p:9.0f}  {unit}", file=sys.stderr)
    finally:
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"{args.writes} upserts per workload, {args.rounds} interleaved rounds, medians; fsync per commit on both")
    print(f"{'workload':14s} {'logtide':>10s} {'postgres':>10s} {'ratio':>6s}  unit")
    med: dict[str, tuple[float, float]] = {}
    for w in names:
        lts, pgs, unit = results[w]
        med[w] = (statistics.median(lts), statistics.median(pgs))
        print(f"{w:14s} {med[w][0]:10.0f} {med[w][1]:10.0f} {med[w][0] / med[w][1]:6.2f}  {unit}")
    if "cdc-off" in med and "cdc-e2e" in med:
        print(f"CDC cost ratio (CDC off / full CDC end to end): logtide {med['cdc-off'][0] / med['cdc-e2e'][0]:.2f}, "
              f"postgres {med['cdc-off'][1] / med['cdc-e2e'][1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
