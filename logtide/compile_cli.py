"""``logtide compile``: build the write path's hot modules with Cython, in place, once per checkout.

An explicit step (issue #21): installing logtide compiles nothing.  ``logtide compile`` builds each
module of ``logtide.compiled.MODULES`` in Cython's pure-Python mode (the unchanged ``.py`` is the
source) and stores it next to that source as ``NAME.lt<hash><EXT_SUFFIX>``, the name
``logtide.compiled.CompiledFinder`` loads while the ``.py`` is unchanged (docs/performance.md,
"Compiling the hot modules").  A module whose current build is there already is not compiled
again, so a second virtualenv on the same checkout (same Python) reuses the builds; an edited
module is compiled afresh and its older builds removed.  Builds run in parallel, one process per
module, with a progress bar on a terminal; the compiler's own output goes to a log that a failure
names.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import sysconfig
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from . import compiled
from .errors import CommandFailure

EXTRA = "pip install 'logtide[compile]'"


def add_compile(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``logtide compile``."""
    p = subparsers.add_parser(
        "compile", parents=[parent],
        description="Compile the write path's hot modules with Cython (about 15%% less CPU per write; "
                    "docs/performance.md, 'Compiling the hot modules'). Needs the compile extra (" + EXTRA +
                    "), a C compiler and the Python headers. Each module is stored next to its source and "
                    "used while the source is unchanged; modules already compiled are not compiled again. "
                    "LOGTIDE_PURE_PYTHON=1 at run time still runs everything as Python.")
    p.add_argument("modules", nargs="*", metavar="MODULE",
                   help="compile only these (default: all of " + ", ".join(compiled.MODULES) + ")")
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="modules compiled at once (default: the number of CPUs, %(default)s)")
    p.add_argument("--remove", action="store_true",
                   help="remove every compiled module instead: logtide then runs as pure Python")
    p.set_defaults(run=run_compile)
    return p


@dataclass(frozen=True)
class Target:
    """One module to build: its name, its ``.py`` and the file its build is stored as."""

    name: str
    source: Path

    @property
    def build(self) -> Path:
        return self.source.with_name(compiled.compiled_filename(str(self.source)))

    def is_built(self) -> bool:
        return self.build.is_file()


def package_root() -> Path:
    """The directory holding the ``logtide`` package (a checkout for an editable install, else site-packages)."""
    return Path(compiled.__file__).resolve().parent.parent


def targets(root: Path, names: Sequence[str]) -> list[Target]:
    """The modules ``names`` (default: all of ``compiled.MODULES``) under ``root``; unknown names are refused."""
    unknown = [n for n in names if n not in compiled.MODULES]
    if unknown:
        raise CommandFailure(f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not among the modules "
                             f"logtide compiles ({', '.join(compiled.MODULES)})")
    return [Target(n, root.joinpath(*n.split(".")).with_suffix(".py")) for n in (names or compiled.MODULES)]


def check_writable(directories: Sequence[Path]) -> None:
    """CommandFailure naming the first directory the builds cannot be written to."""
    for directory in directories:
        try:
            with tempfile.NamedTemporaryFile(dir=directory, prefix=".logtide-compile-"):
                pass
        except OSError as e:
            raise CommandFailure(
                f"cannot write compiled modules into {directory} ({e.strerror}): they are stored next to their "
                "sources, so run 'logtide compile' as the user who installed logtide (as root for a system-wide "
                "install), or install logtide in a virtualenv you own; logtide runs as pure Python meanwhile"
            ) from None


def check_toolchain() -> None:
    """CommandFailure when Cython, setuptools, a C compiler or the Python headers are missing."""
    import importlib

    for module in ("Cython", "setuptools"):
        try:
            importlib.import_module(module)
        except ImportError:
            raise CommandFailure(f"{module} is not installed: {EXTRA} (in the environment logtide runs in), "
                                 "then run 'logtide compile' again") from None
    compiler = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        raise CommandFailure(f"no C compiler: {compiler!r} is not on PATH (install one, e.g. Debian's gcc, or "
                             "point $CC at one); logtide runs as pure Python meanwhile")
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.is_file():
        raise CommandFailure(f"no Python headers: {headers} is missing (install them, e.g. Debian's python3-dev); "
                             "logtide runs as pure Python meanwhile")


def build_module(name: str, source: str, build: str, work: str) -> None:
    """Compile the module ``name`` from ``source`` (a ``.py``) into the file ``build``, working in ``work``.

    Cython's pure-Python mode with type hints left as hints (``annotation_typing`` off: the compiled
    code does what the ``.py`` does); gcc without debug information (it doubles the compile time and
    changes no code).  The build is written under a temporary name and renamed into place."""
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    extension = Extension(name, [source], extra_compile_args=["-g0"] if os.name == "posix" else [])
    extensions = cythonize([extension], language_level=3, quiet=True, build_dir=os.path.join(work, "c"),
                           compiler_directives={"annotation_typing": False})
    command = build_ext(Distribution({"name": "logtide-compiled", "ext_modules": extensions}))
    command.build_lib = os.path.join(work, "lib")
    command.build_temp = os.path.join(work, "obj")
    command.ensure_finalized()
    command.run()
    built = command.get_ext_fullpath(name)
    partial = build + ".partial"
    shutil.copyfile(built, partial)
    os.replace(partial, build)


def _build_logged(target: Target, work: Path) -> str | None:
    """Build ``target`` in a worker process, the compiler's output in ``work/NAME.log``; None, or why it failed."""
    log = work / f"{target.name}.log"
    with open(log, "w") as f:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            build_module(target.name, str(target.source), str(target.build), str(work / target.name))
        except BaseException as e:  # noqa: BLE001 - the reason goes back to the parent, one line
            lines = [line for line in log.read_text(errors="replace").splitlines() if "error" in line.lower()]
            return (lines[0].strip() if lines else f"{type(e).__name__}: {e}")[:300]
    for old in compiled.compiled_builds(str(target.source)):
        if old != str(target.build):
            os.remove(old)
    return None


def remove_builds(todo: Sequence[Target]) -> int:
    """Remove every build (of any version) of ``todo``'s modules; how many files went."""
    removed = 0
    for target in todo:
        for old in compiled.compiled_builds(str(target.source)):
            os.remove(old)
            removed += 1
    return removed


def run_compile(ns: argparse.Namespace) -> int:
    from .progress import progress

    root = package_root()
    todo = targets(root, ns.modules)
    check_writable(sorted({t.source.parent for t in todo}))
    if ns.remove:
        n = remove_builds(todo)
        print(f"removed {n} compiled module{'' if n == 1 else 's'} from {root / 'logtide'}: "
              "logtide runs as pure Python")
        return 0
    if ns.jobs < 1:
        raise CommandFailure(f"--jobs must be at least 1, not {ns.jobs}")
    missing = [t for t in todo if not t.is_built()]
    if missing:
        check_toolchain()
    failures: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="logtide-compile-") as tmp, \
            progress("compiling with Cython", total=len(missing), unit="modules") as bar, \
            ProcessPoolExecutor(max_workers=min(ns.jobs, max(len(missing), 1))) as pool:
        futures = {pool.submit(_build_logged, t, Path(tmp)): t for t in missing}
        for future in as_completed(futures):
            why = future.result()
            if why is not None:
                failures[futures[future].name] = why
            bar.advance(1)
    built = len(missing) - len(failures)
    print(f"compiled {built} module{'' if built == 1 else 's'} into {root / 'logtide'} "
          f"({len(todo) - len(missing)} already compiled)")
    if compiled.pure_python():
        print(f"note: {compiled.PURE_ENV} is set in this environment: while it is, every module runs as Python",
              file=sys.stderr)
    if failures:
        name, why = sorted(failures.items())[0]
        raise CommandFailure(f"{len(failures)} of {len(missing)} modules did not compile (they run as Python): "
                             f"{name}: {why}")
    return 0
