"""Where a write's cost goes: CPU per statement and WAL pages per commit, for bench_peer.py's workloads.

    python bench/bench_write_path.py [--writes 6000] [--modes cdc-off,cdc,batch-mixed,batch-one,view] [--timing]
    python bench/bench_write_path.py --modes cdc-off,index,cdc,cdc-index   # one secondary index's write cost

The workload is ``bench_peer.py``'s (upserts of ``(pk, ck, a, b)``, key ``k = i % 700``), on the
embedded session.  Mode ``view`` is ``cdc-off`` with one materialized view keyed by ``a`` (which every upsert
changes: each write removes a view row and writes another), the cost of one view against CDC off; modes
``index`` and ``cdc-index`` add one secondary index on ``a`` (each upsert then replaces one index entry) to
``cdc-off`` and ``cdc``.  Two measures that hold up on a shared, loaded machine, where wall-clock rates
swing with other jobs:

- CPU per statement (``time.thread_time``, ``synchronous=OFF`` so the fsync does not count), the
  best of chunks of 500 statements after every key exists, and the CPU of reading every change
  back by stream and time window, per statement;
- WAL pages per commit (``synchronous=FULL``, the default): the frames SQLite reports in the WAL
  after a checkpoint, divided by the number of commits.  Each commit
  writes every page it dirtied to the WAL before its fsync, so this is what a commit costs in I/O.

``--timing`` adds where a commit's wall time goes with ``synchronous=FULL``, once every key exists,
in ``--rounds`` interleaved rounds: per commit the wall and process CPU time, and the part of both
spent in SQLite's ``COMMIT`` (writing the WAL frames, the fsync, and an automatic checkpoint when
one runs), the slowest ``COMMIT``, the totals, and reading the log back; each mode runs as it is,
with automatic checkpoints off (``wal_autocheckpoint=0``: the difference is what checkpoints cost
the commits) and with an experiment logtide does not do, "reserve": the benchmark keeps zeros
written and synced past the WAL's last frame between commits, so that commits overwrite blocks
instead of growing the file (its own writes are timed with the commits).

``--tables`` prints instead the WAL frames per commit by the table (or index) and kind of page each
frame holds (SQLite's ``dbstat``), with ``synchronous=FULL`` after every key exists.

``--page-sizes 1024,2048,4096,8192`` compares new databases of those SQLite page sizes instead
(``logtide.storage.opening.PAGE_SIZE``): the CPU and read-back measures, WAL pages and KB per
commit, and the wall time per commit and in ``COMMIT`` with ``synchronous=FULL``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import logtide
from bench_peer import CQL_CDC, CQL_TABLE, CQL_UPSERT, key, lt_read

MODES = {"cdc-off": (False, 1, False), "cdc": (True, 1, False),
         "batch-mixed": (True, 100, False), "batch-one": (True, 100, True), "view": (False, 1, False),
         "index": (False, 1, False), "cdc-index": (True, 1, False)}
INDEXED = {"index", "cdc-index"}  # modes whose table has one secondary index, on ``a`` (docs/views-and-indexes.md)
CQL_VIEW = ("CREATE MATERIALIZED VIEW ks.v AS SELECT * FROM ks.t WHERE a IS NOT NULL AND pk IS NOT NULL "
            "AND ck IS NOT NULL PRIMARY KEY (a, pk, ck)")
CHUNK = 500


def _open(path: str, mode: str, synchronous: str):
    db = logtide.open(path, synchronous=synchronous)
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute(CQL_TABLE + (CQL_CDC if MODES[mode][0] else ""))
    if mode == "view":
        s.execute(CQL_VIEW)
    if mode in INDEXED:
        s.execute("CREATE INDEX ON ks.t (a)")
    return db, s, s.prepare(CQL_UPSERT)


def _write(s, stmt, lo: int, hi: int, batch: int, one: bool) -> None:
    if batch == 1:
        for i in range(lo, hi):
            s.execute(stmt, key(i))
    else:
        for b in range(lo, hi, batch):
            s.execute_batch("LOGGED", [(stmt, key(i, one)) for i in range(b, min(hi, b + batch))])


def cpu(mode: str, n: int) -> tuple[float, float]:
    """(best CPU µs per statement written, CPU µs per statement of reading the log back)."""
    cdc, batch, one = MODES[mode]
    d = tempfile.mkdtemp()
    try:
        db, s, stmt = _open(d, mode, "OFF")
        best = float("inf")
        for lo in range(0, n, CHUNK):
            c0 = time.thread_time()
            _write(s, stmt, lo, lo + CHUNK, batch, one)
            if lo >= 1000:  # every key exists: each write reads and replaces a row
                best = min(best, (time.thread_time() - c0) / CHUNK)
        read = float("inf")
        if cdc:
            for _ in range(3):
                c0 = time.thread_time()
                lt_read(db, s)
                read = min(read, (time.thread_time() - c0) / n)
        db.close()
        return best * 1e6, (read * 1e6 if cdc else 0.0)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _wal_of(mode: str, n: int, measure):
    """``measure(conn, directory)`` once ``n`` statements wrote their frames to an emptied WAL, after 1,000 that
    made every key exist, with synchronous=FULL."""
    cdc, batch, one = MODES[mode]
    d = tempfile.mkdtemp()
    try:
        db, s, stmt = _open(d, mode, "FULL")
        _write(s, stmt, 0, 1000, batch, one)
        conn = db.store._writer
        conn.execute("PRAGMA wal_autocheckpoint=0")  # all n statements' frames stay in the WAL
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        _write(s, stmt, 1000, 1000 + n, batch, one)
        out = measure(conn, d)
        db.close()
        return out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def wal_pages(mode: str, n: int) -> float:
    """WAL pages written per commit with synchronous=FULL, after every key exists (the frames SQLite
    reports in the WAL)."""
    frames = _wal_of(mode, n, lambda conn, d: conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
    return frames / (n // MODES[mode][1])


def wal_tables(mode: str, n: int) -> dict[str, float]:
    """WAL frames per commit by what their page holds (SQLite's ``dbstat``: table or index name and leaf,
    internal or overflow page; page 1 is SQLite's header), as ``wal_pages`` counts them."""
    return _wal_of(mode, n, _frames_by_page)


def _frames_by_page(conn, d: str) -> dict[str, float]:
    kinds = {pageno: f"{name} {ptype}" for name, pageno, ptype in conn.execute("SELECT name, pageno, pagetype FROM dbstat")}
    kinds[1] = "page 1"
    with open(os.path.join(d, "logtide.db-wal"), "rb") as f:
        wal = f.read()
    page = int.from_bytes(wal[8:12], "big")
    counts: dict[str, int] = {}
    commits = 0
    for off in range(32, len(wal) - 23, 24 + page):
        what = kinds.get(int.from_bytes(wal[off:off + 4], "big"), "freed or other")
        counts[what] = counts.get(what, 0) + 1
        commits += wal[off + 4:off + 8] != b"\0\0\0\0"  # a commit's last frame holds the database's size
    return {k: v / commits for k, v in sorted(counts.items(), key=lambda kv: -kv[1])}


class _WalReserve:
    """An experiment (not in logtide): zeros written and synced past the WAL's last frame between
    commits, so that commits overwrite blocks the file has instead of growing it, as PostgreSQL keeps
    its WAL segments preallocated.  1 MB first, then as much again as the WAL holds, at most 8 MB."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.end = 0

    def after_commit(self) -> None:
        size = os.stat(self.path).st_size
        if size == self.end:
            return
        target = size + min(max(size, 1 << 20), 8 << 20)
        fd = os.open(self.path, os.O_WRONLY)
        try:
            off = size
            while off < target:
                off += os.pwrite(fd, _ZEROS[:target - off], off)
            os.fdatasync(fd)
            self.end = os.fstat(fd).st_size
        finally:
            os.close(fd)


_ZEROS = memoryview(bytes(1 << 20))


class _TimedConn:
    """The writer's connection, timing each ``COMMIT`` (wall and process CPU)."""

    def __init__(self, conn) -> None:
        self._conn = conn
        self.commits: list[tuple[float, float]] = []

    def execute(self, sql: str, *args):
        if sql != "COMMIT":
            return self._conn.execute(sql, *args)
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            return self._conn.execute(sql, *args)
        finally:
            self.commits.append((time.perf_counter() - w0, time.process_time() - c0))

    def __getattr__(self, name: str):
        return getattr(self._conn, name)


def timing(mode: str, n: int, checkpoints: bool = True, reserve: bool = False) -> dict[str, float]:
    """Milliseconds, synchronous=FULL, every key existing: per commit (medians) the wall and process CPU
    time, the wall and CPU time in ``COMMIT``; the slowest ``COMMIT``; all ``n`` statements' wall time and
    its part in ``COMMIT``; reading the whole log back (wall, CPU).  ``checkpoints=False`` turns the
    automatic checkpoint off (``wal_autocheckpoint=0``): the difference is what checkpoints cost commits;
    ``reserve=True`` keeps zeros past the WAL's last frame (``_WalReserve``, its own writes timed with
    the commits)."""
    cdc, batch, one = MODES[mode]
    d = tempfile.mkdtemp()
    try:
        db, s, stmt = _open(d, mode, "FULL")
        if not checkpoints:
            db.store._writer.execute("PRAGMA wal_autocheckpoint=0")
        wal = _WalReserve(os.path.join(d, "logtide.db-wal")) if reserve else None
        for lo in range(0, 1000, batch):
            _write(s, stmt, lo, lo + batch, batch, one)
            if wal is not None:
                wal.after_commit()
        timed = db.store._writer = _TimedConn(db.store._writer)
        walls, cpus = [], []
        for lo in range(1000, 1000 + n, batch):
            w0, c0 = time.perf_counter(), time.process_time()
            _write(s, stmt, lo, lo + batch, batch, one)
            if wal is not None:
                wal.after_commit()
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        commits = timed.commits[-len(walls):]
        out = {"wall": statistics.median(walls), "cpu": statistics.median(cpus),
               "commit": statistics.median(c[0] for c in commits),
               "commit_cpu": statistics.median(c[1] for c in commits),
               "commit_max": max(c[0] for c in commits), "total": sum(walls),
               "total_commit": sum(c[0] for c in commits), "read": 0.0, "read_cpu": 0.0}
        if cdc:
            w0, c0 = time.perf_counter(), time.process_time()
            lt_read(db, s)
            out["read"], out["read_cpu"] = time.perf_counter() - w0, time.process_time() - c0
        db.store._writer = timed._conn
        db.close()
        return {k: v * 1e3 for k, v in out.items()}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def print_timing(modes: list[str], n: int, rounds: int) -> None:
    """``timing`` of each mode as it is, without automatic checkpoints and with the WAL reserve
    experiment, in interleaved rounds; medians."""
    variants = {"as is": (True, False), "no ckpt": (False, False), "reserve": (True, True)}
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(rounds):
        for mode in modes:
            for name, (checkpoints, reserve) in variants.items():
                runs.setdefault((mode, name), []).append(timing(mode, n, checkpoints, reserve))
    print(f"\nsynchronous=FULL, {n} statements after 1,000, medians of {rounds} rounds; ms")
    print(f"{'mode':12s} {'variant':>10s} {'commit wall':>11s} {'CPU':>6s} {'COMMIT wall':>11s} {'CPU':>5s} "
          f"{'slowest':>7s} {'all: wall':>9s} {'in COMMIT':>9s} {'read: wall':>10s} {'CPU':>5s}")
    for (mode, name), ts in runs.items():
        t = {k: statistics.median(x[k] for x in ts) for k in ts[0]}
        print(f"{mode:12s} {name:>10s} {t['wall']:11.2f} {t['cpu']:6.2f} {t['commit']:11.2f} "
              f"{t['commit_cpu']:5.2f} {t['commit_max']:7.1f} {t['total']:9.0f} {t['total_commit']:9.0f} "
              f"{t['read']:10.0f} {t['read_cpu']:5.0f}")


def compare_page_sizes(modes: list[str], sizes: list[int], n: int, rounds: int) -> None:
    """The measures above for new databases of each SQLite page size, in interleaved rounds; medians."""
    from logtide.storage import opening

    default = opening.PAGE_SIZE
    runs: dict[tuple[str, int], list[tuple[float, ...]]] = {}
    try:
        for _ in range(rounds):
            for size in sizes:
                opening.PAGE_SIZE = size
                for mode in modes:
                    w, r = cpu(mode, n)
                    pages = wal_pages(mode, min(n, 2000))
                    t = timing(mode, min(n, 2000))
                    runs.setdefault((mode, size), []).append((w, r, pages, pages * (size + 24) / 1024,
                                                             t["wall"], t["commit"]))
    finally:
        opening.PAGE_SIZE = default
    print(f"{'mode':12s} {'page':>5s} {'CPU us/stmt':>11s} {'read-back us/stmt':>17s} {'WAL pages':>9s} {'KB/commit':>9s} "
          f"{'FULL ms/commit':>14s} {'in COMMIT':>9s}")
    for (mode, size), xs in runs.items():
        m = [statistics.median(x[i] for x in xs) for i in range(6)]
        print(f"{mode:12s} {size:5d} {m[0]:11.0f} {m[1]:17.0f} {m[2]:9.1f} {m[3]:9.0f} {m[4]:14.2f} {m[5]:9.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=6000)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--timing", action="store_true", help="also where a commit's wall time goes (see above)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of --timing and --page-sizes")
    ap.add_argument("--tables", action="store_true", help="WAL frames per commit by table and page kind instead")
    ap.add_argument("--page-sizes", help="compare new databases of these SQLite page sizes instead, e.g. 1024,4096")
    args = ap.parse_args()
    if args.page_sizes:
        compare_page_sizes(args.modes.split(","), [int(x) for x in args.page_sizes.split(",")], args.writes,
                           args.rounds)
        return
    if args.tables:
        for mode in args.modes.split(","):
            by = wal_tables(mode, min(args.writes, 2000))
            print(f"{mode:12s} {sum(by.values()):5.2f} frames/commit: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in by.items()))
        return
    print(f"{'mode':12s} {'CPU us/stmt':>12s} {'read-back us/stmt':>18s} {'WAL pages/commit':>17s}")
    for mode in args.modes.split(","):
        w, r = cpu(mode, args.writes)
        pages = wal_pages(mode, min(args.writes, 2000))
        print(f"{mode:12s} {w:12.0f} {r:18.0f} {pages:17.1f}")
    if args.timing:
        print_timing(args.modes.split(","), args.writes, args.rounds)


if __name__ == "__main__":
    main()
