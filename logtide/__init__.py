"""logtide: change data capture for wide-column tables.

``db = logtide.open(path)`` opens a data directory; ``db.session()`` executes CQL.
"""

from __future__ import annotations

from .session import Database, PreparedStatement, Session, open, open_readonly

__all__ = ["open", "open_readonly", "Database", "Session", "PreparedStatement"]
__version__ = "0.1.0"
