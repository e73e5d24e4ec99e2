"""logtide's version, defined here once: ``pyproject.toml`` reads it (``[tool.setuptools.dynamic]``)."""

from __future__ import annotations

__version__ = "0.1.0"


def package_version() -> str:
    """The running logtide's version (PEP 440), as ``logtide --version`` and the package metadata give it."""
    return __version__
