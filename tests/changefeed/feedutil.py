"""Helpers for changefeed tests: create feeds, read a whole topic as parsed JSON."""

from __future__ import annotations

import json

KS = "CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"


def add_feed(session, table: str, name: str, mode: str = "NEW_AND_OLD_IMAGES", fmt: str = "JSON", extra: str = "") -> str:
    """ALTER TABLE ... ADD CHANGEFEED; returns the topic path."""
    more = f", {extra}" if extra else ""
    session.execute(f"ALTER TABLE {table} ADD CHANGEFEED {name} WITH (MODE = '{mode}', FORMAT = '{fmt}'{more})")
    ks, _, t = table.rpartition(".")
    return f"{ks or session.keyspace}/{t}/{name}"


def records(reader, path: str, partition: int | None = None) -> list:
    """Every stored record of a topic (all partitions, partition by partition) as TopicRecords."""
    parts = reader.partitions(path)
    out = []
    for p in parts:
        if partition is not None and p.partition != partition:
            continue
        off = p.start_offset
        while True:
            recs = reader.read(path, p.partition, off)
            if not recs:
                break
            out.extend(recs)
            off = recs[-1].offset + 1
    return out


def values(reader, path: str) -> list[dict]:
    """Every record's value parsed, in partition then offset order."""
    return [json.loads(r.value) for r in records(reader, path)]
