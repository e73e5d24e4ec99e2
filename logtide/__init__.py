"""logtide: change data capture for wide-column tables.

``db = logtide.open(path)`` opens a data directory; ``db.session()`` executes CQL.

The engine is imported on first use of one of these names (PEP 562), so that a command
that needs none of it (``logtide --version``, ``logtide --help``) starts at once.
"""

from __future__ import annotations

from typing import Any

from . import compiled

compiled.install()  # before the first compiled module is imported (docs/performance.md)

from .version import __version__  # noqa: E402

__all__ = ["open", "Database", "Session", "PreparedStatement"]


def __getattr__(name: str) -> Any:
    """``logtide.open``, ``Database``, ``Session``, ``PreparedStatement``: from ``logtide.session``."""
    if name in __all__:
        from . import session

        return getattr(session, name)
    raise AttributeError(f"module 'logtide' has no attribute {name!r}")
