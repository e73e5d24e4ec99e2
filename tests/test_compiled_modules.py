"""Compiled hot modules run only while they match their source (logtide/compiled.py,
docs/performance.md "Compiling the hot modules")."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from logtide import compiled

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


_BUILD = textwrap.dedent("""
    import os, sys
    from setuptools import setup, Extension
    from Cython.Build import cythonize
    sys.path.insert(0, sys.argv[1])
    setup(script_args=["build_ext", "--build-lib", "out", "--build-temp", "tmp"],
          ext_modules=cythonize([Extension(n, [n.replace(".", "/") + ".py"]) for n in sys.argv[2:]],
                                language_level=3, quiet=True))
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


@pytest.fixture(scope="module")
def compiled_package(tmp_path_factory):
    """``pkg.a`` and ``pkg.b`` compiled and stored under the names setup.py gives compiled modules."""
    pytest.importorskip("Cython")
    if shutil.which(os.environ.get("CC", "gcc")) is None:
        pytest.skip("no C compiler")
    root = tmp_path_factory.mktemp("compiled")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    for stem in ("a", "b"):
        (root / "pkg" / f"{stem}.py").write_text(f'def where():\n    return "compiled" if __file__.endswith(".so") else "python"\n')
    subprocess.run([sys.executable, "-c", _BUILD, ROOT, "pkg.a", "pkg.b"], cwd=root, check=True, capture_output=True)
    for stem in ("a", "b"):
        built = next((root / "out" / "pkg").glob(f"{stem}.*.so"))
        built.rename(root / "pkg" / compiled.compiled_filename(str(root / "pkg" / f"{stem}.py")))
    shutil.rmtree(root / "out")
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
