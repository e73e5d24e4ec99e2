"""The write path's hot modules, compiled with Cython, used only while they match their source.

Installing logtide compiles nothing; ``logtide compile`` (``logtide/compile_cli.py``, the
``compile`` extra) builds ``MODULES``; see docs/performance.md, "Compiling the hot modules".  A
compiled module is stored next to its source under a name no import finds by itself,
``NAME.lt<hash>.<EXT_SUFFIX>``, where ``<hash>`` is the SHA-256 prefix of the ``.py`` it was
compiled from.  ``CompiledFinder`` loads it only while the ``.py`` still has that hash: after an
edit the ``.py`` runs, with one warning per process, until the next ``logtide compile``.
``LOGTIDE_PURE_PYTHON=1`` at run time runs every module from its ``.py``.

Standard library only, and cheap to import: ``import logtide`` runs it before anything else.
"""

from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
import warnings
from importlib.abc import MetaPathFinder
from importlib.machinery import ExtensionFileLoader, ModuleSpec
from importlib.util import spec_from_file_location
from typing import Sequence

MODULES = (
    "logtide.session", "logtide.engine.commit", "logtide.engine.database", "logtide.engine.plan",
    "logtide.engine.select", "logtide.engine.touched",
    "logtide.cdc.capture", "logtide.cdc.log", "logtide.cdc.streams", "logtide.cdc.upsert",
    "logtide.cdc.log_rows", "logtide.cdc.log_values", "logtide.cdc.row_state", "logtide.cdc.split",
    "logtide.mutation.apply", "logtide.mutation.builder", "logtide.mutation.cells", "logtide.mutation.model",
    "logtide.mutation.context", "logtide.mutation.targets", "logtide.mutation.writer", "logtide.mutation.insert",
    "logtide.mutation.assignments", "logtide.mutation.collections", "logtide.mutation.arithmetic",
    "logtide.mutation.deletion", "logtide.mutation.images", "logtide.engine.capture",
    "logtide.query.bind", "logtide.query.evaluate", "logtide.query.read",
    "logtide.schema.model", "logtide.schema.types", "logtide.schema.types_codec", "logtide.schema.types_literal",
    "logtide.schema.types_order",
    "logtide.storage.envelope", "logtide.storage.keys", "logtide.storage.records", "logtide.storage.sqlite",
)
PURE_ENV = "LOGTIDE_PURE_PYTHON"
EXT_SUFFIX: str = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
MARK = ".lt"  # NAME.lt<hash><EXT_SUFFIX>


def pure_python() -> bool:
    """Whether ``LOGTIDE_PURE_PYTHON`` asks for the ``.py`` files only."""
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def source_hash(path: str) -> str:
    """The first 16 hex digits of the SHA-256 of a source file's bytes."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def compiled_filename(source: str) -> str:
    """The file name a compiled module of ``source`` (a ``.py`` path) has, in the source's directory."""
    stem = os.path.basename(source)[:-len(".py")]
    return f"{stem}{MARK}{source_hash(source)}{EXT_SUFFIX}"


def compiled_builds(source: str) -> list[str]:
    """Every compiled module of ``source`` in its directory, for any version of it."""
    directory, name = os.path.split(source)
    prefix = name[:-len(".py")] + MARK
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    return sorted(os.path.join(directory, n) for n in names if n.startswith(prefix) and n.endswith(EXT_SUFFIX))


class CompiledFinder(MetaPathFinder):
    """Finds the compiled module of each of ``modules`` whose ``.py`` has not changed since it was
    compiled; for every other module, and a changed one, it finds nothing and the ``.py`` runs."""

    def __init__(self, modules: Sequence[str]) -> None:
        self.modules = frozenset(modules)
        self.warned = False

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: object = None) -> ModuleSpec | None:
        if fullname not in self.modules or path is None:
            return None
        stem = fullname.rpartition(".")[2]
        for directory in path:
            source = os.path.join(directory, stem + ".py")
            if os.path.isfile(source):
                break
        else:
            return None
        builds = compiled_builds(source)
        if not builds:
            return None
        wanted = os.path.join(os.path.dirname(source), compiled_filename(source))
        if wanted in builds:
            return spec_from_file_location(fullname, wanted, loader=ExtensionFileLoader(fullname, wanted))
        if not self.warned:
            self.warned = True
            warnings.warn(f"logtide: {source} changed since it was compiled, so it runs as Python; "
                          "'logtide compile' compiles it again", RuntimeWarning, stacklevel=2)
        return None


def install(modules: Sequence[str] = MODULES) -> None:
    """Put a ``CompiledFinder`` of ``modules`` first on ``sys.meta_path`` (once), unless ``LOGTIDE_PURE_PYTHON`` is set."""
    if pure_python() or any(isinstance(f, CompiledFinder) and f.modules == frozenset(modules) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, CompiledFinder(modules))
