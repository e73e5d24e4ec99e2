"""Where the extra cost of CDC goes, stage by stage, in instructions (issue #27): deterministic, so it holds on a
loaded machine.

    python bench/bench_cdc_stages.py [--kinds plain,mixed,map] [--option full] [--writes 300] [--compiled]

For each workload kind of ``bench_cdc_cost.py`` (prepared ``UPDATE``s on the embedded session, ``synchronous=OFF``,
pure Python, or with ``--compiled`` the builds of ``logtide compile``, which must all be current), runs the statements
under ``valgrind --tool=callgrind`` and counts the instructions per statement
(``(I(800 + writes) - I(800)) / writes``, so start-up, imports and the first 800 statements, which create every
row, are left out) in these runs:

- ``off``: CDC off;
- ``cdc``: the CDC option (``--option``: ``delta``, ``preimage`` or ``full``, as ``bench_cdc_cost.py``);
- ``no-one-pass``: the CDC option with the one pass (``cdc.upsert.UpsertTemplate.append``) replaced by one that
  hands back its first result's records under fresh keys: everything else runs as before, so the difference
  to ``cdc`` is what the one pass costs (deriving and encoding the log rows, the images' merges);
- ``no-log-storage``: the CDC option with the log rows derived but not handed to storage (``apply_mutation``
  gets no log appends): the difference to ``cdc`` is what storing them costs (grouping, sealing, SQLite's
  inserts and the bigger commit);
- ``floor``: both stages taken out at once: what the CDC option would cost over ``off`` if deriving, encoding and
  storing the log rows cost nothing (the read before the write, the stream and ``cdc$time``, the hooks).

It prints each run's instructions per statement and the split of ``cdc - off``: the one pass, the log's
storage, and the rest (reading the rows before the write and their images, picking the stream and the
``cdc$time``, the changefeeds' hook), and ``floor`` over ``off`` (the least the option could cost while the row is
read before the write and nothing else changes).  ``--run KIND OPTION STUB WARM N`` is the child it starts under
callgrind.  Compiled counts are rougher than pure ones (docs/performance.md, "Where CDC's extra cost goes").
Needs ``valgrind`` (Debian: ``apt-get install valgrind``); a run of one kind takes some minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

WARM = 800
STUBS = ("none", "one-pass", "log-storage", "floor")


def _stub(name: str) -> None:
    """Replace the stage ``name`` in this process (see the module docstring)."""
    if name == "floor":
        _stub("one-pass")
        _stub("log-storage")
    elif name == "one-pass":
        from logtide.cdc import upsert
        from logtide.cdc.log_rows import LogAppend

        real = upsert.UpsertTemplate.append
        first: dict[tuple, LogAppend | None] = {}
        fresh = [1 << 100]

        def append(self, pu, ts, before, stream, token, timeuuid, now):
            kind = tuple(sorted(n for r in pu.rows.values() for n in (*r.cells, *r.complex)))
            got = first.get(kind)
            if got is None:
                got = first[kind] = real(self, pu, ts, before, stream, token, timeuuid, now)
            fresh[0] += 1
            key = fresh[0].to_bytes(20, "big")  # after every earlier key: a pure append, as the real keys are
            return LogAppend(self.log, stream, token, [(key + ck, data) for ck, data in got.rows])

        upsert.UpsertTemplate.append = append
    elif name == "log-storage":
        from logtide.engine import commit

        real_apply = commit.apply_mutation

        def apply_mutation(mutation, txn, now, logs=(), touched=None):
            return real_apply(mutation, txn, now, (), touched)

        commit.apply_mutation = apply_mutation


def child(kind: str, option: str, stub: str, warm: int, n: int) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_cdc_cost as cost

    _stub(stub)
    d = tempfile.mkdtemp()
    try:
        db, s, prepared = cost._open(d, option, "OFF")
        cost._run(s, prepared, kind, 0, warm + n)
        db.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def instructions(kind: str, option: str, stub: str, n: int, compiled: bool = False) -> int:
    """Instructions of the whole child process running ``WARM + n`` statements (pure Python unless ``compiled``)."""
    with tempfile.TemporaryDirectory() as d:
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        if compiled:
            env.pop("LOGTIDE_PURE_PYTHON", None)
        else:
            env["LOGTIDE_PURE_PYTHON"] = "1"
        p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/out", sys.executable,
                            os.path.abspath(__file__), "--run", kind, option, stub, str(WARM), str(n)],
                           capture_output=True, text=True, env=env)
        m = re.search(r"Collected : (\d+)", p.stderr)
        if p.returncode != 0 or m is None:
            raise SystemExit(f"callgrind run failed ({kind} {option} {stub}):\n{p.stderr[-2000:]}")
        return int(m.group(1))


def per_statement(kind: str, option: str, stub: str, n: int, compiled: bool = False) -> float:
    return (instructions(kind, option, stub, n, compiled) - instructions(kind, option, stub, 0, compiled)) / n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kinds", default="plain,mixed,map")
    p.add_argument("--option", default="full", choices=("delta", "preimage", "full"))
    p.add_argument("--writes", type=int, default=300)
    p.add_argument("--compiled", action="store_true",
                   help="use the modules 'logtide compile' built (default: LOGTIDE_PURE_PYTHON=1, pure Python)")
    p.add_argument("--run", nargs=5, metavar=("KIND", "OPTION", "STUB", "WARM", "N"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.run:
        kind, option, stub, warm, n = a.run
        child(kind, option, stub, int(warm), int(n))
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 1
    if a.compiled:
        from logtide import compiled, compile_cli

        if compiled.PURE_ENV in os.environ:
            print(f"--compiled: unset {compiled.PURE_ENV}", file=sys.stderr)
            return 1
        stale = [t.name for t in compile_cli.targets(compile_cli.package_root(), ()) if not t.is_built()]
        if stale:
            print(f"--compiled: not compiled or changed since ({len(stale)}): {', '.join(stale)}; run 'logtide compile'",
                  file=sys.stderr)
            return 1
    c = a.compiled
    print(f"instructions per statement, {'compiled' if c else 'pure Python'}, {a.writes} statements after {WARM}; "
          f"CDC option {a.option!r}")
    print(f"{'kind':6s} {'off':>9s} {'cdc':>9s} {'× off':>6s} {'one pass':>14s} {'log storage':>14s} {'the rest':>14s} "
          f"{'floor × off':>11s}")
    for kind in a.kinds.split(","):
        off = per_statement(kind, "off", "none", a.writes, c)
        cdc = per_statement(kind, a.option, "none", a.writes, c)
        one_pass = cdc - per_statement(kind, a.option, "one-pass", a.writes, c)
        storage = cdc - per_statement(kind, a.option, "log-storage", a.writes, c)
        floor = per_statement(kind, a.option, "floor", a.writes, c)
        extra = cdc - off
        rest = extra - one_pass - storage

        def share(x: float) -> str:
            return f"{x / 1000:6.0f}k {100 * x / extra:4.0f}%"

        print(f"{kind:6s} {off / 1000:8.0f}k {cdc / 1000:8.0f}k {cdc / off:6.2f} {share(one_pass):>14s} "
              f"{share(storage):>14s} {share(rest):>14s} {floor / off:11.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
