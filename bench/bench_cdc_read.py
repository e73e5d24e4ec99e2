"""CPU time of reading the CDC log back embedded, every stream by time window, as consumers read it.

    python bench/bench_cdc_read.py [--writes 20000] [--repeat 5] [--data-dir DIR] [--profile]

Writes ``--writes`` full-CDC upserts (``bench_peer.py``'s table and keys, one write per commit)
into a fresh data directory, or reuses ``--data-dir`` when it already holds them, then reads every
stream's window (``SELECT * FROM ks.t_scylla_cdc_log WHERE "cdc$stream_id" = ? AND "cdc$time" > ?
AND "cdc$time" <= maxTimeuuid(?)``) and prints the best ``time.process_time`` of ``--repeat`` reads
in three forms: counting the rows (what ``bench_peer.py --only cdc-read`` measures), every row's
Python values (``rows``), and the server's Rows bytes (``wire_rows``).  ``--profile``: a cProfile
of one counting read instead.  To compare with other code, put its tree first on ``PYTHONPATH``
(``docs/performance.md``, "Reading the CDC log").
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_peer import lt_open, lt_writes  # noqa: E402

QUERY = ('SELECT * FROM ks.t_scylla_cdc_log WHERE "cdc$stream_id" = ? AND "cdc$time" > ? '
         'AND "cdc$time" <= maxTimeuuid(?)')


def read_all(db, s, form: str) -> int:
    """Every stream's window read once; the number of log rows."""
    q = s.prepare(QUERY)
    lo = uuid.UUID("00000000-0000-1000-8080-808080808080")
    hi = int(time.time() * 1000) + 10_000
    count = 0
    for sid in db.generations.current.all_streams():
        r = s.execute(q, [sid, lo, hi])
        count += len(r) if form == "count" else len(r.rows) if form == "values" else r.wire_rows()[0]
    return count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--data-dir", help="reuse (or fill, when missing) this data directory")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    import logtide
    tmp = None
    path = Path(args.data_dir) if args.data_dir else Path(tmp := tempfile.mkdtemp(prefix="cdcread-")) / "d"
    try:
        if not path.exists():
            db, s = lt_open(str(path), True)
            lt_writes(s, args.writes)
            db.close()
        db = logtide.open(path)
        s = db.session()
        print(f"logtide from {Path(logtide.__file__).parent}")
        if args.profile:
            import cProfile
            import pstats
            with cProfile.Profile() as prof:
                read_all(db, s, "count")
            pstats.Stats(prof).sort_stats("tottime").print_stats(15)
        else:
            for form in ("count", "values", "wire"):
                best = float("inf")
                for _ in range(args.repeat):
                    start = time.process_time()
                    n = read_all(db, s, form)
                    best = min(best, time.process_time() - start)
                print(f"{form:7} {n} log rows  best CPU {best:.3f} s  {n / best:,.0f} rows/s")
        db.close()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
