"""Compiled hot modules run only while they match their source (logtide/compiled.py), and ``logtide compile``
builds them in place once (logtide/compile_cli.py; docs/performance.md "Compiling the hot modules").

The default suite compiles three tiny modules (a few seconds of gcc each), never the whole list: a
two-module package for the finder's cases, and the smallest hot module of a copy of logtide for the
command itself.  Without Cython or a C compiler these tests skip, saying which is missing."""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from logtide import compiled

from .without import logtide_without

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_each_compiled_module_that_matches_its_source_is_the_one_imported():
    for name in compiled.MODULES:
        module = importlib.import_module(name)
        source = os.path.join(ROOT, *name.split(".")) + ".py"
        current = os.path.join(os.path.dirname(source), compiled.compiled_filename(source))
        if compiled.pure_python() or current not in compiled.compiled_builds(source):
            assert module.__file__ == source, name
        else:
            assert module.__file__ == current, name


# one module built as ``logtide compile`` builds it (logtide/compile_cli.py), into the name the finder loads
_BUILD = textwrap.dedent("""
    import sys
    from logtide import compiled
    from logtide.compile_cli import build_module
    name, source, work = sys.argv[1:]
    build_module(name, source, source[:-3].rpartition("/")[0] + "/" + compiled.compiled_filename(source), work)
""")

_IMPORT = textwrap.dedent("""
    import sys, warnings
    sys.path.insert(0, sys.argv[1])
    sys.path.insert(0, sys.argv[2])
    from logtide import compiled
    compiled.install(("pkg.a", "pkg.b"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import pkg.a, pkg.b
    print(pkg.a.where(), pkg.b.where())
    for w in caught:
        print("WARNING", w.category.__name__, w.message)
""")


def needs_a_toolchain() -> None:
    """Skip, saying why, where ``logtide compile`` cannot build (the test extra installs Cython)."""
    pytest.importorskip("Cython", reason="Cython is not installed (pip install 'logtide[compile]')")
    if shutil.which(os.environ.get("CC", "gcc")) is None:
        pytest.skip("no C compiler")


@pytest.fixture(scope="module")
def compiled_package(tmp_path_factory):
    """``pkg.a`` and ``pkg.b`` compiled and stored under the names ``logtide compile`` gives compiled modules."""
    needs_a_toolchain()
    root = tmp_path_factory.mktemp("compiled")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    for stem in ("a", "b"):
        (root / "pkg" / f"{stem}.py").write_text(f'def where():\n    return "compiled" if __file__.endswith(".so") else "python"\n')
        subprocess.run([sys.executable, "-c", _BUILD, f"pkg.{stem}", str(root / "pkg" / f"{stem}.py"),
                        str(root / "work" / stem)], cwd=root, check=True, capture_output=True)
    shutil.rmtree(root / "work")
    return root


def _run(root, **env) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _IMPORT, ROOT, str(root)], check=True, capture_output=True, text=True,
                          env={**os.environ, compiled.PURE_ENV: "", **env})
    return done.stdout.splitlines()


def test_compiled_modules_run_while_their_sources_are_unchanged(compiled_package):
    assert _run(compiled_package) == ["compiled compiled"]


def test_an_edited_source_runs_as_python_with_one_warning(compiled_package):
    for stem in ("a", "b"):
        with open(compiled_package / "pkg" / f"{stem}.py", "a") as f:
            f.write("# edited\n")
    out = _run(compiled_package)
    assert out[0] == "python python"
    assert len(out) == 2 and out[1].startswith("WARNING RuntimeWarning logtide: ")
    assert "a.py changed since it was compiled" in out[1]


def test_pure_python_switch_ignores_compiled_modules(compiled_package, tmp_path):
    fresh = tmp_path / "copy"
    shutil.copytree(compiled_package, fresh)
    for stem in ("a", "b"):  # sources matching their builds again
        source = fresh / "pkg" / f"{stem}.py"
        source.write_text(source.read_text().replace("# edited\n", ""))
    assert _run(fresh) == ["compiled compiled"]
    assert _run(fresh, **{compiled.PURE_ENV: "1"}) == ["python python"]


SMALLEST = "logtide.mutation.model"  # the shortest module of compiled.MODULES: a few seconds of gcc


def logtide_compile(copy, *args: str) -> subprocess.CompletedProcess:
    """``logtide compile ARGS`` run from a copy of the package (``copy/logtide``), which it then compiles."""
    return subprocess.run([sys.executable, "-m", "logtide", "compile", *args], cwd=copy, capture_output=True,
                          text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(copy)})


def test_logtide_compile_builds_next_to_the_source_once_and_remove_undoes_it(tmp_path):
    needs_a_toolchain()
    copy = tmp_path / "checkout"
    shutil.copytree(os.path.join(ROOT, "logtide"), copy / "logtide",
                    ignore=shutil.ignore_patterns("__pycache__", f"*{compiled.EXT_SUFFIX}"))
    source = copy / "logtide" / "mutation" / "model.py"
    build = source.with_name(compiled.compiled_filename(str(source)))
    done = logtide_compile(copy, SMALLEST)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout == f"compiled 1 module into {copy / 'logtide'} (0 already compiled)\n"
    assert compiled.compiled_builds(str(source)) == [str(build)]
    where = subprocess.run([sys.executable, "-c", f"import {SMALLEST} as m; print(m.__file__)"], cwd=copy,
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(copy),
                                                                compiled.PURE_ENV: ""})
    assert where.stdout.strip() == str(build), where.stderr
    built_at = build.stat().st_mtime_ns
    again = logtide_compile(copy, SMALLEST)  # a second virtualenv on the checkout: nothing to do
    assert again.stdout == f"compiled 0 modules into {copy / 'logtide'} (1 already compiled)\n"
    assert build.stat().st_mtime_ns == built_at
    removed = logtide_compile(copy, "--remove")
    assert removed.returncode == 0 and not build.exists()
    assert removed.stdout == f"removed 1 compiled module from {copy / 'logtide'}: logtide runs as pure Python\n"


def test_logtide_compile_says_what_is_missing_and_where_it_cannot_write(tmp_path):
    copy = tmp_path / "checkout"
    shutil.copytree(os.path.join(ROOT, "logtide"), copy / "logtide",
                    ignore=shutil.ignore_patterns("__pycache__", f"*{compiled.EXT_SUFFIX}"))
    done = subprocess.run([sys.executable, "-m", "logtide", "compile", SMALLEST], cwd=copy, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(copy), "CC": "no-such-cc"})
    assert done.returncode == 2 and done.stderr == ("logtide compile: error: no C compiler: 'no-such-cc' is not on "
                                                    "PATH (install one, e.g. Debian's gcc, or point $CC at one); "
                                                    "logtide runs as pure Python meanwhile\n")
    hidden = subprocess.run([sys.executable, "-c", logtide_without("Cython"), "compile", SMALLEST], cwd=copy,
                            capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(copy)})
    assert hidden.returncode == 2 and hidden.stderr == (
        "logtide compile: error: Cython is not installed: pip install 'logtide[compile]' (in the environment logtide "
        "runs in), then run 'logtide compile' again\n")
    with unwritable(copy / "logtide" / "mutation"):
        done = logtide_compile(copy, SMALLEST)
    assert done.returncode == 2 and done.stderr.startswith(
        f"logtide compile: error: cannot write compiled modules into {copy / 'logtide' / 'mutation'} (")
    assert "run 'logtide compile' as the user who installed logtide" in done.stderr


@contextlib.contextmanager
def unwritable(directory):
    """``directory`` made read-only for everyone: a read-only bind mount of itself as root, else mode 0555."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "--bind", str(directory), str(directory)], capture_output=True).returncode == 0
    if not mounted or subprocess.run(["mount", "-o", "remount,bind,ro", str(directory)],
                                     capture_output=True).returncode != 0:
        if mounted:
            subprocess.run(["umount", str(directory)], capture_output=True)
        pytest.skip("root without mount: cannot make a directory unwritable")
    try:
        yield
    finally:
        subprocess.run(["umount", str(directory)], capture_output=True)
