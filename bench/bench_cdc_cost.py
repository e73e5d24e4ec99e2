"""What each CDC option costs, per kind of write: CPU per statement and wall time per statement.

    python bench/bench_cdc_cost.py [--writes 4000] [--kinds plain,map,mixed,list,set,udt]
                                   [--options off,delta,preimage,full] [--rounds 3] [--cpu-only]
                                   [--profile KIND:OPTION]

Workload kinds (prepared ``UPDATE``s on the embedded session, key ``k = i % 700`` as ``bench_peer.py``, so
that after the first 700 statements every write changes an existing row):

- ``plain``: ``UPDATE t SET a = ?, b = ? WHERE pk = ? AND ck = ?``;
- ``map``: ``UPDATE t SET m = m + ? WHERE ...`` (one new entry);
- ``mixed``: the two alternating, issue #27's workload;
- ``list``: ``SET l = l + ?`` (one element appended);
- ``set``: ``SET s = s + ?`` (one element added);
- ``udt``: ``SET u.f = ?`` (one field of a non-frozen user type).

CDC options: ``off``; ``delta`` (``{'enabled': true}``); ``preimage`` (``'preimage': true``); ``full``
(``'preimage': 'full', 'postimage': true``).  The collections grow by one element per write of their row,
so a row's collection holds some ``writes / 700`` elements at the end: a preimage or postimage carries it
whole, as ScyllaDB's does.

Measures, per kind and option, the minimum over ``--rounds`` interleaved rounds:

- **cpu**: CPU µs per statement (``time.thread_time``) with ``synchronous=OFF`` (no fsync), the best of
  chunks of 250 statements after the first 700;
- **wall**: wall µs per statement with the default durability (``synchronous=FULL``, one fsync per
  commit), the same statements (``--cpu-only`` leaves it out).

and the ratio of each option to ``off`` for the same kind.  ``--profile KIND:OPTION`` instead prints
cProfile's top functions (cumulative and own time) for that kind and option, with ``synchronous=OFF``.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import tempfile
import time

import logtide

KINDS = ("plain", "map", "mixed", "list", "set", "udt")
OPTIONS = {"off": "", "delta": " WITH cdc = {'enabled': true}",
           "preimage": " WITH cdc = {'enabled': true, 'preimage': true}",
           "full": " WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}"}
KEYS = 700
TABLE = ("CREATE TABLE ks.t (pk int, ck int, a int, b text, m map<int, text>, l list<int>, s set<int>, "
         "u frozen_free, PRIMARY KEY (pk, ck))")
STATEMENTS = {"plain": "UPDATE ks.t SET a = ?, b = ? WHERE pk = ? AND ck = ?",
              "map": "UPDATE ks.t SET m = m + ? WHERE pk = ? AND ck = ?",
              "list": "UPDATE ks.t SET l = l + ? WHERE pk = ? AND ck = ?",
              "set": "UPDATE ks.t SET s = s + ? WHERE pk = ? AND ck = ?",
              "udt": "UPDATE ks.t SET u.f = ? WHERE pk = ? AND ck = ?"}


def _open(path: str, option: str, synchronous: str):
    db = logtide.open(path, synchronous=synchronous)
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TYPE ks.pair (f int, g text)")
    s.execute(TABLE.replace("frozen_free", "pair") + OPTIONS[option])
    return db, s, {name: s.prepare(cql) for name, cql in STATEMENTS.items()}


def _statement(kind: str, i: int, prepared: dict):
    """The prepared statement and values of write ``i`` of ``kind``."""
    pk, ck = (i % KEYS) // 10, i % 10
    if kind == "mixed":
        kind = "plain" if i % 2 == 0 else "map"
    if kind == "plain":
        return prepared["plain"], (i, f"value {i}", pk, ck)
    element = {"map": {i: f"v{i}"}, "list": [i], "set": {i}, "udt": i}[kind]
    return prepared[kind], (element, pk, ck)


def _run(s, prepared, kind: str, lo: int, hi: int) -> None:
    for i in range(lo, hi):
        stmt, values = _statement(kind, i, prepared)
        s.execute(stmt, values)


CHUNK = 250


def measure(kind: str, option: str, n: int, synchronous: str) -> float:
    """µs per statement after the first ``KEYS``, the best of chunks of ``CHUNK`` statements: CPU with
    synchronous=OFF, wall time otherwise."""
    d = tempfile.mkdtemp()
    clock = time.thread_time if synchronous == "OFF" else time.perf_counter
    try:
        db, s, prepared = _open(d, option, synchronous)
        _run(s, prepared, kind, 0, KEYS)
        best = float("inf")
        for lo in range(KEYS, KEYS + n, CHUNK):
            t0 = clock()
            _run(s, prepared, kind, lo, lo + CHUNK)
            best = min(best, (clock() - t0) / CHUNK)
        db.close()
        return best * 1e6
    finally:
        shutil.rmtree(d, ignore_errors=True)


def profile(kind: str, option: str, n: int) -> None:
    d = tempfile.mkdtemp()
    try:
        db, s, prepared = _open(d, option, "OFF")
        _run(s, prepared, kind, 0, KEYS)
        prof = cProfile.Profile(time.thread_time)  # CPU: holds on a loaded machine
        prof.enable()
        _run(s, prepared, kind, KEYS, KEYS + n)
        prof.disable()
        db.close()
        stats = pstats.Stats(prof)
        stats.sort_stats("cumulative").print_stats(45)
        stats.sort_stats("tottime").print_stats(30)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--writes", type=int, default=4000)
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--options", default=",".join(OPTIONS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--profile", help="KIND:OPTION: print a profile instead")
    p.add_argument("--cpu-only", action="store_true", help="skip the wall-time measure (synchronous=FULL)")
    a = p.parse_args(argv)
    if a.profile:
        kind, option = a.profile.split(":")
        profile(kind, option, a.writes)
        return 0
    kinds, options = a.kinds.split(","), a.options.split(",")
    best: dict[tuple[str, str, str], float] = {}
    for _ in range(a.rounds):
        for kind in kinds:
            for option in options:
                for sync in ("OFF",) if a.cpu_only else ("OFF", "FULL"):
                    v = measure(kind, option, a.writes, sync)
                    best[kind, option, sync] = min(best.get((kind, option, sync), v), v)
    print(f"{'kind':<7} {'option':<9} {'cpu µs':>8} {'× off':>6} {'wall µs':>8} {'× off':>6}")
    for kind in kinds:
        for option in options:
            cpu, wall = best[kind, option, "OFF"], best.get((kind, option, "FULL"), float("nan"))
            r_cpu = cpu / best[kind, "off", "OFF"] if "off" in options else float("nan")
            r_wall = wall / best.get((kind, "off", "FULL"), float("nan")) if "off" in options else float("nan")
            print(f"{kind:<7} {option:<9} {cpu:8.0f} {r_cpu:6.2f} {wall:8.0f} {r_wall:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
