"""Instructions a changefeed adds to a write, counted by callgrind (deterministic where CPU time is not).

    python bench/bench_changefeed_instructions.py [--writes 1000]

Runs ``bench_changefeed.py``'s single-row workload under ``valgrind --tool=callgrind`` on a table
without a changefeed and on one with a NEW_AND_OLD_IMAGES JSON changefeed (``--sync OFF``, the
background worker stopped, 500 warm-up writes), each twice: with 200 writes and with 200 +
``--writes``.  The difference of the two counts, divided by ``--writes``, is the instructions per
write without start-up and set-up (``docs/performance-history.md``, "The changefeed's write cost after the
WAL change").  Skips with a message when valgrind is not installed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BASE_WRITES = 200


def child(feed: bool, writes: int) -> None:
    """The measured process: set up, warm up, then ``writes`` writes of a fixed plan."""
    sys.path.insert(0, HERE)
    import bench_changefeed as bench
    db, s, stmts = bench.setup(tempfile.mkdtemp(prefix="bench_cfi_"), feed, "OFF")
    db.feeds.close()  # no background worker: only the writes are counted
    bench.run_writes(s, stmts, 500, seed=9)
    bench.run_writes(s, stmts, writes, seed=1)  # the first BASE_WRITES writes are the same in both runs
    db.close()


def instructions(feed: bool, writes: int) -> int:
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}/cg.out", sys.executable,
                            __file__, "--child", "feed" if feed else "none", str(writes)],
                           capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", r.stderr).group(1))


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2] == "feed", int(sys.argv[3]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=1000)
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("skipped: valgrind is not installed")
        return
    per = {}
    for feed in (False, True):
        per[feed] = (instructions(feed, BASE_WRITES + args.writes) - instructions(feed, BASE_WRITES)) / args.writes
    print(f"instructions per write: no changefeed {per[False]:,.0f}; one NEW_AND_OLD_IMAGES JSON changefeed "
          f"{per[True]:,.0f}; added {per[True] - per[False]:,.0f}; cost {per[True] / per[False]:.3f}x")


if __name__ == "__main__":
    main()
