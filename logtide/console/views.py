"""What each console page shows, as JSON-able dicts, read from the served database and server.

The numbers come from the objects ``logtide status`` and ``/metrics`` read
(``logtide.observe``, ``server.metrics``, ``db.changefeeds``), so the three
always agree.  Counters are cumulative: the page turns two polls into rates
(requests, writes and CDC rows per second) and latency over the interval,
as Prometheus's ``rate()`` does.  ``visible`` (from ``access``) says which
tables the viewer may SELECT; what it may not see is left out, not greyed.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from logtide import observe
from logtide.cdc.log_schema import is_log_table, log_name
from logtide.cdc.streams import FIRST_GENERATION_START
from logtide.metrics import BUCKET_LABELS
from logtide.schema.cdc_options import CdcOptions
from logtide.schema.describe import describe_table
from logtide.schema.system_schema import is_system_keyspace
from logtide.version import package_version

Visible = Callable[[str, str], bool]  # (keyspace, table) -> may the viewer SELECT it


def overview(server: Any, started: float, kafka: Any = None) -> dict[str, Any]:
    """The Overview page: data directory, size, uptime, connections, request/write/CDC counters, generation."""
    db = server.db
    requests = server.metrics.requests
    kinds = {}
    buckets = [0] * len(BUCKET_LABELS)
    for kind, stats in list(requests.kinds.items()):
        counts = list(stats.buckets)
        kinds[kind] = {"count": sum(counts), "sum_seconds": stats.total}
        buckets = [a + b for a, b in zip(buckets, counts)]
    errors: dict[str, int] = {}
    for (kind, _error), (count, _since) in list(requests.errors.items()):
        errors[kind] = errors.get(kind, 0) + int(count)
    counters = getattr(db, "counters", None)
    gens = getattr(db, "generations", None)
    gen = gens.current if gens is not None else None
    return {
        "version": package_version(),
        "now_ms": int(time.time() * 1000),
        "data_dir": str(db.path.resolve()),
        "size_bytes": observe.data_dir_bytes(db.path),
        "uptime_seconds": round(time.time() - started, 1),
        "connections": len(server.connections),
        "in_flight": len(server.tasks),
        "kafka_connections": len(getattr(kafka, "_tasks", ())) if kafka is not None else None,
        "requests": kinds,
        "request_errors": errors,
        "latency_buckets": {"le": list(BUCKET_LABELS), "counts": buckets},
        "writes_total": counters.mutations if counters is not None else 0,
        "cdc_log_rows_total": counters.cdc_log_rows if counters is not None else 0,
        "generation": None if gen is None else {
            # the first generation covers every earlier write: it has no start time to show
            "time": None if gen.timestamp <= FIRST_GENERATION_START else
            datetime.fromtimestamp(gen.timestamp / 1e6, timezone.utc).isoformat(timespec="milliseconds"),
            "timestamp_us": gen.timestamp,
            "streams": len(gen.all_streams()), "ranges": len(gen.range_ends), "shards": gen.topology.shards,
            "count": len(gens.generations)},
    }


def user_tables(catalog: Any, visible: Visible) -> Iterable[tuple[str, Any]]:
    """(keyspace, table) of every user table the viewer may SELECT, without CDC log tables."""
    for ks_name in sorted(catalog.keyspaces):
        if is_system_keyspace(ks_name):
            continue
        for name, table in sorted(catalog.keyspaces[ks_name].tables.items()):
            if not is_log_table(table) and visible(ks_name, name):
                yield ks_name, table


def tables(db: Any, visible: Visible) -> dict[str, Any]:
    """The table list: each table, whether it has CDC, its changefeeds."""
    out = []
    for ks, t in user_tables(db.catalog, visible):
        cdc = CdcOptions.parse(t.cdc)
        out.append({"keyspace": ks, "table": t.name, "cdc": cdc.enabled,
                    "changefeeds": [f.name for f in getattr(t, "changefeeds", ()) or ()]})
    return {"tables": out}


def find_table(db: Any, keyspace: str, table: str) -> Any:
    ks = db.catalog.keyspaces.get(keyspace)
    t = ks.tables.get(table) if ks is not None else None
    if t is None or is_log_table(t) or is_system_keyspace(keyspace):
        raise LookupError(f"no table {keyspace}.{table}")
    return t


def table(db: Any, keyspace: str, name: str) -> dict[str, Any]:
    """The Table page: DESCRIBE text, CDC options, the log table's size and streams, its changefeeds."""
    t = find_table(db, keyspace, name)
    cdc = CdcOptions.parse(t.cdc)
    doc: dict[str, Any] = {"keyspace": keyspace, "table": name, "describe": describe_table(t, db.catalog),
                           "cdc": None, "changefeeds": []}
    if cdc.enabled:
        info = observe.CdcTable(keyspace, name, log_name(name), cdc)
        doc["cdc"] = {"options": {"enabled": True, "preimage": "full" if cdc.full_preimage else cdc.preimage,
                                  "postimage": cdc.postimage, "delta": "keys" if cdc.delta_keys_only else "full",
                                  "ttl": cdc.ttl}, "summary": info.describe_options,
                      "log_table": f"{keyspace}.{log_name(name)}", **log_size(db, keyspace, log_name(name))}
    reader = observe.topic_reader(db)
    if reader is not None:
        prefix = f"{keyspace}/{name}/"
        for info in observe.changefeeds(reader):
            if info.path.startswith(prefix):
                doc["changefeeds"].append(feed_summary(info))
    return doc


def log_size(db: Any, keyspace: str, log_table: str) -> dict[str, Any]:
    """Stored bytes of a CDC log table, how many streams hold rows, and the current generation's streams."""
    log = db.catalog.keyspaces[keyspace].tables.get(log_table)
    if log is None:
        return {"log_bytes": 0, "streams_with_rows": 0}
    with db.store.snapshot() as txn:
        rows = txn.sql("SELECT count(DISTINCT pk), coalesce(sum(length(pk) + length(ck) + length(data)), 0) "
                       "FROM rows WHERE tid = ?", (log.store_id,))
    streams, size = rows[0]
    gens = getattr(db, "generations", None)
    return {"log_bytes": int(size), "streams_with_rows": int(streams),
            "generation_streams": len(gens.current.all_streams()) if gens is not None else 0}


def feed_summary(info: observe.ChangefeedInfo) -> dict[str, Any]:
    """One changefeed as ``logtide status`` lists it."""
    return {"path": info.path, "state": info.state, "mode": info.mode, "format": info.format,
            "partitions": info.partitions, "records_written": info.records_written,
            "initial_scan_progress": info.initial_scan_progress,
            "consumers": [{"name": c.name, "lag": c.lag} for c in info.consumers]}


def changefeeds(db: Any, visible: Visible) -> dict[str, Any]:
    """Every changefeed the viewer may read (SELECT on its table, as the Kafka endpoint checks)."""
    reader = observe.topic_reader(db)
    if reader is None:
        return {"changefeeds": []}
    return {"changefeeds": [feed_summary(i) for i in observe.changefeeds(reader) if _feed_visible(i.path, visible)]}


def _feed_visible(path: str, visible: Visible) -> bool:
    ks, t, _ = path.split("/", 2)
    return visible(ks, t)


def changefeed(db: Any, path: str, groups: dict[str, Any]) -> dict[str, Any]:
    """The Changefeed page: options, state, scan progress, partitions, barriers, consumers' offsets and lag."""
    reader = db.changefeeds
    topic = reader.describe(path)
    table_, feed = reader.feed(topic.path)
    opts = feed.options
    parts = reader.partitions(topic.path)
    progress = observe.scan_fraction(reader, topic.path) if topic.state == "INITIAL_SCAN" else None
    scanned = getattr(reader, "scan_progress", None)
    consumers = []
    for c in reader.consumers(topic.path):
        per = []
        for p in parts:
            committed = c.committed.get(p.partition)
            base = p.start_offset if committed is None else max(committed, p.start_offset)
            per.append({"partition": p.partition, "committed": committed, "lag": max(p.end_offset - base, 0)})
        consumers.append({"name": c.name, "important": c.important, "read_from_ms": c.read_from_ms,
                          "partitions": per, "lag": sum(x["lag"] for x in per),
                          "group": groups.get(c.name)})
    return {
        "path": topic.path, "kafka_name": topic.kafka_name, "keyspace": topic.keyspace, "table": topic.table,
        "name": topic.name, "mode": topic.mode, "format": topic.format, "state": topic.state,
        "created_ms": topic.created_ms,
        "options": {"virtual_timestamps": opts.virtual_timestamps, "barriers_interval_ms": opts.barriers_interval_ms,
                    "retention_seconds": opts.retention_seconds, "initial_scan": opts.initial_scan,
                    "partitions": opts.partitions, "aws_region": opts.aws_region or None,
                    "schema_changes": opts.schema_changes},
        "initial_scan": None if topic.state != "INITIAL_SCAN" else {
            "progress": progress, "partitions": scanned(topic.path) if scanned is not None else None},
        "barriers": {"interval_ms": opts.barriers_interval_ms, "on": opts.barriers_interval_ms is not None},
        "retention_seconds": topic.retention_seconds,
        "partitions": [{"partition": p.partition, "start_offset": p.start_offset, "end_offset": p.end_offset,
                        "records": p.end_offset - p.start_offset} for p in parts],
        "consumers": consumers,
        "now_ms": int(time.time() * 1000),
    }


def consumers(db: Any, visible: Visible, groups: dict[str, Any]) -> dict[str, Any]:
    """The Consumers page: every changefeed consumer (a Kafka group's offsets ARE one) and every group."""
    reader = observe.topic_reader(db)
    rows = []
    seen_groups: set[str] = set()
    if reader is not None:
        for topic in reader.topics():
            if not visible(topic.keyspace, topic.table):
                continue
            parts = reader.partitions(topic.path)
            ends = {p.partition: (p.start_offset, p.end_offset) for p in parts}
            for c in reader.consumers(topic.path):
                offsets = []
                for partition, (start, end) in sorted(ends.items()):
                    committed = c.committed.get(partition)
                    base = start if committed is None else max(committed, start)
                    offsets.append({"partition": partition, "committed": committed, "end_offset": end,
                                    "lag": max(end - base, 0)})
                group = groups.get(c.name)
                seen_groups.add(c.name)
                rows.append({"consumer": c.name, "changefeed": topic.path, "kafka_topic": topic.kafka_name,
                             "important": c.important, "offsets": offsets, "lag": sum(o["lag"] for o in offsets),
                             "group": group})
    extra = [g for name, g in sorted(groups.items()) if name not in seen_groups and g.get("visible")]
    return {"consumers": rows, "groups_without_offsets": extra}
