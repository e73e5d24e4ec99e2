"""logtide: change data capture for wide-column tables.

``db = logtide.open(path)`` opens a data directory; ``db.session()`` executes CQL.
"""

from __future__ import annotations

from . import compiled

compiled.install()  # before the first compiled module is imported (docs/performance.md)

from .session import Database, PreparedStatement, Session, open  # noqa: E402

__all__ = ["open", "Database", "Session", "PreparedStatement"]
__version__ = "0.1.0"
