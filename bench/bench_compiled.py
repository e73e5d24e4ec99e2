"""Does compiling the write path's hot modules pay?  Pure Python against Cython, side by side.

    python bench/bench_compiled.py [--writes 3000] [--rounds 10] [--modes batch-mixed,cdc] [--callgrind]

Copies the package to a temporary directory and compiles ``logtide.compiled.MODULES`` there
(under their ordinary names) with Cython 3 in pure-Python mode: the unchanged ``.py`` files, with
``annotation_typing`` off so that type hints stay hints (with it on, Cython enforces them, and the
write path fails at once where a tuple is handed to a parameter annotated ``list``); ``logtide
compile`` builds the same (``logtide/compile_cli.py``).  The
source tree is not touched; the pure runs set ``LOGTIDE_PURE_PYTHON=1`` in it.  Then it runs
``bench_write_path.py``'s workloads (``batch-mixed``: 100-statement full-CDC batches over 50
partitions; ``cdc``: single full-CDC upserts) in fresh processes, alternating the pure tree and the
compiled one round by round.  Per run: the median process CPU (``time.process_time``,
``synchronous=OFF`` so that no fsync counts) per statement of 500-statement chunks once every key
exists.  Printed: the median over rounds for each tree and the ratio compiled / pure.

``--callgrind`` adds the deterministic measure: instructions per statement under
``valgrind --tool=callgrind``, (I(1000 + writes) - I(1000)) / writes, so that start-up and imports
cancel out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

from logtide import compiled

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
MODULES = tuple(os.path.join(*name.split(".")) + ".py" for name in compiled.MODULES)
WARM = 1000  # statements written before measuring: every key (k = i % 700) exists
CHUNK = 500

# Extension names are given explicitly: logtide/cdc has no __init__.py, and cythonize would
# otherwise name logtide/cdc/capture.py a top-level "capture".
_SETUP = """
import sys
from setuptools import setup, Extension
from Cython.Build import cythonize
exts = [Extension(f[:-3].replace("/", "."), [f]) for f in sys.argv[2:]]
setup(name="logtide-compiled", script_args=["build_ext", "--inplace", "--build-temp", sys.argv[1]],
      ext_modules=cythonize(exts, language_level=3, quiet=True,
                            compiler_directives={"annotation_typing": False}))
"""


def build(dest: str) -> float:
    """Copy the package to ``dest`` and compile MODULES there; the wall seconds the build took."""
    shutil.copytree(os.path.join(ROOT, "logtide"), os.path.join(dest, "logtide"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _SETUP, os.path.join(dest, "build"), *MODULES],
                          cwd=dest, capture_output=True, text=True, env=dict(os.environ, CFLAGS="-g0"))
    if done.returncode:  # the compiler's warnings are noise; its errors are not
        raise SystemExit(f"the Cython build failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def compiled_count(tree: str) -> int:
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    return sum(os.path.exists(os.path.join(tree, m[:-3] + suffix)) for m in MODULES)


def _env(tree: str) -> dict[str, str]:
    """The pure tree is the source tree with its own compiled modules switched off."""
    pure = "1" if tree == ROOT else ""
    return dict(os.environ, PYTHONPATH=os.pathsep.join([tree, BENCH]), **{compiled.PURE_ENV: pure})


def child(mode: str, n: int, measure: bool) -> None:
    """In a fresh process: write WARM statements, then n more, timing 500-statement chunks."""
    from bench_write_path import MODES, _open, _write

    import logtide.cdc.log
    _, batch, one = MODES[mode]
    d = tempfile.mkdtemp()
    try:
        db, s, stmt = _open(d, mode, "OFF")
        _write(s, stmt, 0, WARM, batch, one)
        if not measure:
            _write(s, stmt, WARM, WARM + n, batch, one)
            db.close()
            return
        per = []
        for lo in range(WARM, WARM + n, CHUNK):
            c0 = time.process_time()
            _write(s, stmt, lo, lo + CHUNK, batch, one)
            per.append((time.process_time() - c0) / CHUNK * 1e6)
        db.close()
        print(json.dumps({"us": statistics.median(per),
                          "compiled": not logtide.cdc.log.__file__.endswith(".py")}))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def cpu_run(tree: str, mode: str, n: int) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--writes", str(n)], env=_env(tree),
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def instructions(tree: str, mode: str, n: int) -> float:
    """Instructions per statement under callgrind: (I(WARM + n) - I(WARM)) / n."""
    totals = []
    with tempfile.TemporaryDirectory() as d:
        for writes in (0, n):
            out = os.path.join(d, f"cg.{writes}")
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
                            "--child", mode, "--writes", str(writes), "--no-measure"],
                           env=_env(tree), check=True, capture_output=True)
            with open(out) as f:
                totals.append(next(int(line.split()[1]) for line in f if line.startswith(("summary:", "totals:"))))
    return (totals[1] - totals[0]) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--modes", default="batch-mixed,cdc")
    ap.add_argument("--callgrind", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--no-measure", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.writes, not args.no_measure)
        return
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        seconds = build(tmp)
        print(f"built {compiled_count(tmp)} compiled modules in {seconds:.0f} s (wall)")
        trees = {"pure": ROOT, "compiled": tmp}
        for mode in modes:
            runs: dict[str, list[float]] = {"pure": [], "compiled": []}
            for _ in range(args.rounds):
                for name, tree in trees.items():
                    r = cpu_run(tree, mode, args.writes)
                    if r["compiled"] != (name == "compiled"):
                        raise SystemExit(f"{name} tree ran the wrong modules")
                    runs[name].append(r["us"])
            pure, comp = statistics.median(runs["pure"]), statistics.median(runs["compiled"])
            print(f"{mode}: CPU µs/statement, median of {args.rounds} rounds: pure {pure:.1f}, compiled {comp:.1f}, "
                  f"compiled/pure {comp / pure:.3f}")
            if args.callgrind:
                ip, ic = (instructions(trees[k], mode, args.writes) for k in ("pure", "compiled"))
                print(f"{mode}: instructions/statement: pure {ip / 1e3:.1f}k, compiled {ic / 1e3:.1f}k, "
                      f"compiled/pure {ic / ip:.3f}")


if __name__ == "__main__":
    main()
