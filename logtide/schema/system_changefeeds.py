"""``system_logtide.changefeeds``: every changefeed with its options, state, partitions, scan progress, retention.

A logtide system table (YDB shows the same through ``DESCRIBE`` of a
changefeed: ``ChangefeedDescription`` with state and ``InitialScanProgress``),
readable by cqlsh and every driver.
"""

from __future__ import annotations

from typing import Any, Callable

from .changefeeds import DISABLED, ENABLED, topic_path

# (feed) -> (state, partitions scanned, partitions total) from storage; None: the catalog only
States = Callable[[Any], tuple[str, int | None, int | None]]


def changefeed_rows(catalog: Any, states: States | None) -> list[dict[str, Any]]:
    """The rows in primary-key order."""
    rows = []
    for ks_name in sorted(catalog.keyspaces):
        ks = catalog.keyspaces[ks_name]
        for t_name in sorted(ks.tables):
            t = ks.tables[t_name]
            for f in sorted(t.changefeeds, key=lambda f: f.name):
                o = f.options
                if states is not None:
                    state, done, total = states(f)
                else:
                    state, done, total = (DISABLED if f.disabled else ENABLED), None, None
                rows.append({
                    "keyspace_name": ks_name, "table_name": t_name, "changefeed_name": f.name,
                    "topic": topic_path(ks_name, t_name, f.name), "feed_id": f.feed_id, "mode": o.mode,
                    "format": o.format, "state": state, "partitions": o.partitions,
                    "virtual_timestamps": o.virtual_timestamps, "barriers_interval_ms": o.barriers_interval_ms,
                    "retention_seconds": o.retention_seconds, "initial_scan": o.initial_scan,
                    "scan_partitions_done": done, "scan_partitions_total": total, "aws_region": o.aws_region,
                    "schema_changes": o.schema_changes, "settings": o.settings_ddl(),
                })
    return rows


def database_rows(db: Any) -> list[dict[str, Any]]:
    """The rows of an open Database, with state and scan progress from its storage."""
    feeds = db.feeds

    def states(f: Any) -> tuple[str, int | None, int | None]:
        pos = feeds.scans.get(f.feed_id)
        return feeds.state(f), (pos.scanned if pos else None), (pos.total if pos else None)
    return changefeed_rows(db.catalog, states)
