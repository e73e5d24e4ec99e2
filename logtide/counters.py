"""Counters the engine keeps of what it commits, read by the server's metrics (``logtide.metrics``).

They count since the database was opened.  Commits are serialized by the
write lock, which is held while these are updated; readers see plain ints.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class WriteCounters:
    """Mutations (statements or batches that wrote), CDC log rows and changefeed records written."""

    mutations: int = 0
    cdc_log_rows: int = 0
    # changefeed path -> records written; changefeed storage adds to it when it lands
    changefeed_records: dict[str, int] = field(default_factory=dict)

    def committed(self, log_rows: int) -> None:
        """One mutation handed to storage with ``log_rows`` CDC log rows."""
        self.mutations += 1
        self.cdc_log_rows += log_rows
