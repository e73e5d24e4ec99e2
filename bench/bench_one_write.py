"""The CPU of one write: ``bench_peer.py``'s single upserts through the embedded session, CDC off and full CDC.

    python bench/bench_one_write.py [--writes 2000] [--warm 1400] [--modes cdc-off,cdc] [--rounds 5]
    valgrind --tool=callgrind --dump-instr=no python bench/bench_one_write.py --once cdc --writes 2000

Each mode opens a fresh data directory with ``synchronous=OFF`` (so the fsync does not count),
writes ``--warm`` upserts (so that every key of ``k = i % 700`` exists and each measured write
reads and replaces a row, with its preimage), then ``--writes`` more, one per transaction, and
reports the process CPU (``time.process_time``) per measured write.  ``--rounds`` interleaves
the modes round by round and prints each round and the medians.

``--once MODE`` runs one mode once with no output: the process to put under
``valgrind --tool=callgrind``.  Instructions per write are the difference between two runs that
differ only in ``--writes`` (e.g. 4,000 and 2,000), divided by the difference in writes, so that
start-up, the schema and the warm writes cancel out.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time

import logtide
from bench_peer import CQL_CDC, CQL_TABLE, CQL_UPSERT, key

MODES = {"cdc-off": False, "cdc": True}


def run(mode: str, warm: int, writes: int) -> float:
    """CPU µs per write of ``writes`` single upserts after ``warm`` ones, ``synchronous=OFF``."""
    d = tempfile.mkdtemp()
    try:
        db = logtide.open(d, synchronous="OFF")
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute(CQL_TABLE + (CQL_CDC if MODES[mode] else ""))
        stmt = s.prepare(CQL_UPSERT)
        for i in range(warm):
            s.execute(stmt, key(i))
        c0 = time.process_time()
        for i in range(warm, warm + writes):
            s.execute(stmt, key(i))
        spent = time.process_time() - c0
        db.close()
        return spent / writes * 1e6
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--writes", type=int, default=2000)
    p.add_argument("--warm", type=int, default=1400)
    p.add_argument("--modes", default="cdc-off,cdc")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--once", choices=sorted(MODES))
    a = p.parse_args()
    if a.once:
        run(a.once, a.warm, a.writes)
        return
    modes = a.modes.split(",")
    got: dict[str, list[float]] = {m: [] for m in modes}
    for r in range(a.rounds):
        for m in modes:
            got[m].append(run(m, a.warm, a.writes))
        print(f"round {r + 1}: " + ", ".join(f"{m} {got[m][-1]:.1f}" for m in modes), flush=True)
    for m in modes:
        print(f"{m}: median CPU µs/write {statistics.median(got[m]):.1f} "
              f"(min {min(got[m]):.1f}, max {max(got[m]):.1f})")


if __name__ == "__main__":
    main()
