"""logtide's build: the pure-Python package, and the write path's hot modules compiled with Cython
where that is possible (docs/performance.md, "Compiling the hot modules").

Everything else is in pyproject.toml.  ``LOGTIDE_PURE_PYTHON=1`` builds the pure package; so does a
machine without a C compiler or Python headers (each compiled module is optional: one that fails
to build is left out, with setuptools' warning, and its ``.py`` runs).  Each compiled module is
written next to its source as ``NAME.lt<hash><EXT_SUFFIX>`` (``logtide/compiled.py``), a name no
import finds by itself, so that an edited ``.py`` is never shadowed by an older build.
"""

from __future__ import annotations

import importlib.util
import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def _compiled():
    """logtide/compiled.py, loaded by path: logtide's own imports need its dependencies."""
    spec = importlib.util.spec_from_file_location("_logtide_compiled", os.path.join(HERE, "logtide", "compiled.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


COMPILED = _compiled()


def _source(name: str) -> str:
    return os.path.join(*name.split(".")) + ".py"


class BuildCompiled(build_ext):
    """Cythonizes at build time (not when setup.py is read), names each module after its source's
    hash, and removes the builds of older versions of the sources from the source tree."""

    def finalize_options(self) -> None:
        exts = self.distribution.ext_modules
        if exts and not getattr(self.distribution, "cythonized", False):
            from Cython.Build import cythonize

            # Pure-Python mode with the type hints left as hints: the compiled code does what the .py does.
            exts[:] = cythonize(exts, language_level=3, quiet=True, nthreads=os.cpu_count() or 1,
                                build_dir=os.path.join("build", "cython"),
                                compiler_directives={"annotation_typing": False})
            for ext in exts:
                ext.optional = True  # one that fails to build is left out; cythonize does not carry it over
            self.distribution.cythonized = True
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def build_extensions(self) -> None:
        if self.compiler.compiler_type == "unix":  # no debug info: it doubles gcc's time, the code is the same
            for ext in self.extensions:
                ext.extra_compile_args = [*ext.extra_compile_args, "-g0"]
        super().build_extensions()

    def run(self) -> None:
        super().run()
        if self.inplace:
            for ext in self.extensions:
                source = os.path.join(HERE, _source(ext.name))
                current = os.path.join(os.path.dirname(source), COMPILED.compiled_filename(source))
                for old in COMPILED.compiled_builds(source):
                    if old != current:
                        os.remove(old)

    def get_ext_filename(self, fullname: str) -> str:
        """A compiled module's path in a build directory, ``logtide/pkg/NAME.lt<hash><EXT_SUFFIX>``
        (setuptools asks by full name when it copies builds into an editable source tree)."""
        if fullname not in COMPILED.MODULES:
            return super().get_ext_filename(fullname)
        source = _source(fullname)
        return os.path.join(os.path.dirname(source), COMPILED.compiled_filename(os.path.join(HERE, source)))

    def get_ext_fullpath(self, ext_name: str) -> str:
        """Where the build writes a module (distutils asks ``get_ext_filename`` by last name only)."""
        if ext_name not in COMPILED.MODULES:
            return super().get_ext_fullpath(ext_name)
        return os.path.join(self.build_lib, self.get_ext_filename(ext_name))


def _extensions() -> list[Extension]:
    if COMPILED.pure_python() or importlib.util.find_spec("Cython") is None:
        return []
    return [Extension(name, [_source(name)]) for name in COMPILED.MODULES]


setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildCompiled})
