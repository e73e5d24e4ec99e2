"""The record browser: a changefeed's records and a CDC log's rows, a page at a time.

Feeds (Redpanda Console's topic browser): records of one partition or all,
from an offset, from a time (``reader.offset_for_time``) or the last page
(``end``), optionally only those whose key contains a text.  A page ends
with a cursor (the next offset of each partition); offsets are never
reused, so paging holds under concurrent writes: a record written meanwhile
comes on a later page, never shifts one already shown.

CDC logs (ScyllaDB's ``<table>_scylla_cdc_log``): rows of every stream of
every generation, read per stream through CQL (``"cdc$stream_id" = ?``, a
partition read), merged by ``cdc$time``; one write's rows (same stream and
time) form one entry, its preimage, deltas and postimage grouped, each
``cdc$operation`` named.  The cursor is the last entry's ``(cdc$time,
stream)``; a write made later has a later time, so it also lands on a later
page.
"""

from __future__ import annotations

import base64
import heapq
import json
import uuid
from datetime import datetime, timezone
from typing import Any

MAX_PAGE = 200
OPERATIONS = {0: "preimage", 1: "update", 2: "insert", 3: "row delete", 4: "partition delete",
              5: "range delete start (inclusive)", 6: "range delete start (exclusive)",
              7: "range delete end (inclusive)", 8: "range delete end (exclusive)", 9: "postimage"}


class BadRequest(ValueError):
    """A browser parameter the page should not have sent (its message says which)."""


def page_size(text: str | None) -> int:
    try:
        n = int(text or 50)
    except ValueError:
        raise BadRequest(f"limit must be a whole number, not {text!r}") from None
    if not 1 <= n <= MAX_PAGE:
        raise BadRequest(f"limit must be between 1 and {MAX_PAGE}, not {n}")
    return n


def _json_or_text(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return {"base64": base64.b64encode(data).decode()}


def _key_text(key: bytes | None, value: Any) -> str:
    """The text a key filter looks in: the Debezium key message, else the JSON record's ``key``."""
    if key is not None:
        return key.decode("utf-8", "replace")
    if isinstance(value, dict):
        for name in ("key", "Keys"):
            if name in value:
                return json.dumps(value[name], separators=(",", ":"))
        dynamodb = value.get("dynamodb")
        if isinstance(dynamodb, dict) and "Keys" in dynamodb:
            return json.dumps(dynamodb["Keys"], separators=(",", ":"))
    return ""


def _cursor(text: str | None) -> dict[int, int] | None:
    if not text:
        return None
    try:
        doc = json.loads(base64.urlsafe_b64decode(text.encode()).decode())
        return {int(k): int(v) for k, v in doc.items()}
    except (ValueError, TypeError, AttributeError):
        raise BadRequest("the page cursor is not one this console made") from None


def _encode_cursor(positions: dict[int, int]) -> str:
    return base64.urlsafe_b64encode(json.dumps({str(k): v for k, v in positions.items()}).encode()).decode()


def feed_page(reader: Any, path: str, partition: str | None, start: str, value: str | None, key_filter: str,
              limit: int, cursor: str | None) -> dict[str, Any]:
    """One page of a changefeed's records (``start``: ``offset``, ``time`` (ms or ISO) or ``end``)."""
    parts = {p.partition: p for p in reader.partitions(path)}
    if partition in (None, "", "all"):
        chosen = sorted(parts)
    else:
        try:
            chosen = [int(partition)]  # type: ignore[arg-type]
        except ValueError:
            raise BadRequest(f"partition must be a number or all, not {partition!r}") from None
        if chosen[0] not in parts:
            raise BadRequest(f"{path} has no partition {chosen[0]} (it has {len(parts)})")
    positions = _cursor(cursor)
    if positions is None:
        positions = {p: _start_offset(reader, path, parts[p], start, value, limit) for p in chosen}
    records: list[dict[str, Any]] = []
    nxt = dict(positions)
    for p in chosen:
        offset = positions.get(p, parts[p].start_offset)
        scanned = kept = 0
        while kept < limit and scanned < 20 * limit:  # a key filter reads on, at most 20 pages' worth
            batch = reader.read(path, p, offset, max_records=limit - kept if not key_filter else limit)
            if not batch:
                break
            for r in batch:
                scanned += 1
                offset = r.offset + 1
                value_doc = _json_or_text(r.value)
                if key_filter and key_filter not in _key_text(r.key, value_doc):
                    continue
                kept += 1
                records.append({"partition": r.partition, "offset": r.offset, "write_time_ms": r.write_time_ms,
                                "key": _json_or_text(r.key), "value": value_doc})
                if kept == limit:
                    break
        nxt[p] = max(offset, parts[p].start_offset)  # retention may have moved the start past it
    records.sort(key=lambda r: (r["write_time_ms"], r["partition"], r["offset"]))
    if len(records) > limit:  # several partitions: keep the earliest; the rest come on the next page
        records = records[:limit]
        nxt = dict(positions)
        for r in records:
            nxt[r["partition"]] = max(nxt.get(r["partition"], 0), r["offset"] + 1)
    return {"records": records, "next": _encode_cursor(nxt),
            "partitions": [{"partition": p.partition, "start_offset": p.start_offset, "end_offset": p.end_offset}
                           for p in parts.values()]}


def _start_offset(reader: Any, path: str, part: Any, start: str, value: str | None, limit: int) -> int:
    if start == "end":
        return max(part.start_offset, part.end_offset - limit)
    if start == "offset":
        try:
            offset = int(value or 0)
        except ValueError:
            raise BadRequest(f"offset must be a whole number, not {value!r}") from None
        return max(offset, part.start_offset)
    if start == "time":
        return reader.offset_for_time(path, part.partition, time_ms(value))
    raise BadRequest(f"start must be offset, time or end, not {start!r}")


def time_ms(text: str | None) -> int:
    """Milliseconds since the epoch from a number or an ISO 8601 time (UTC unless it says otherwise)."""
    if not text:
        raise BadRequest("a start time is needed (milliseconds since 1970, or 2026-01-31T12:00:00)")
    try:
        return int(text)
    except ValueError:
        pass
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"{text!r} is not a time (give milliseconds since 1970, or 2026-01-31T12:00:00)") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return int(t.timestamp() * 1000)


# -- the CDC log ---------------------------------------------------------------------------


def _value(v: Any) -> Any:
    if isinstance(v, (bytes, bytearray)):
        return "0x" + bytes(v).hex()
    if isinstance(v, (set, frozenset, list, tuple)):
        return [_value(x) for x in v]
    if isinstance(v, dict) or hasattr(v, "items"):
        return [[_value(k), _value(x)] for k, x in v.items()]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _uuid_time_ms(u: uuid.UUID) -> int:
    return (u.time - 0x01B21DD213814000) // 10_000


def log_page(db: Any, keyspace: str, table: Any, log_table: Any, start: str, value: str | None, key_filter: str,
             limit: int, cursor: str | None) -> dict[str, Any]:
    """One page of a CDC log's writes (entries of grouped rows), ``start`` ``time`` or ``end``."""
    session = db.session()
    streams = sorted({s for g in db.generations.generations for s in g.all_streams()})
    key_names = [c.name for c in table.primary_key]
    columns = [c.name for c in log_table.columns if c.name.startswith("cdc$")]
    data_columns = [c.name for c in log_table.columns if not c.name.startswith("cdc$")]
    quoted = f'"{keyspace}"."{log_table.name}"'
    after: tuple[uuid.UUID, bytes] | None = None
    if cursor:
        try:
            t, _, s = cursor.partition(":")
            after = (uuid.UUID(t), bytes.fromhex(s))
        except ValueError:
            raise BadRequest("the page cursor is not one this console made") from None
    since_ms = None
    if after is None and start == "time":
        since_ms = time_ms(value)
    elif after is None and start != "end":
        raise BadRequest(f"start must be time or end for a CDC log, not {start!r}")
    per_stream: list[list[dict[str, Any]]] = []
    for stream in streams:
        if after is not None:
            q = f'SELECT * FROM {quoted} WHERE "cdc$stream_id" = %s AND "cdc$time" >= %s LIMIT %d'
            rows = session.execute(q.replace("%s", "?").replace("%d", str(limit * 16)), [stream, after[0]])
        elif since_ms is not None:
            q = f'SELECT * FROM {quoted} WHERE "cdc$stream_id" = ? AND "cdc$time" >= minTimeuuid(?) LIMIT {limit * 16}'
            rows = session.execute(q, [stream, datetime.fromtimestamp(since_ms / 1000, timezone.utc)])
        else:
            q = f'SELECT * FROM {quoted} WHERE "cdc$stream_id" = ? ORDER BY "cdc$time" DESC LIMIT {limit * 16}'
            rows = list(session.execute(q, [stream]))[::-1]
        per_stream.append(_entries(stream, rows, key_names, columns, data_columns, after, key_filter))
    merged = list(heapq.merge(*per_stream, key=lambda e: (e["_time"], e["stream_id"])))
    entries = merged[-limit:] if (after is None and since_ms is None) else merged[:limit]
    nxt = f"{entries[-1]['cdc$time']}:{entries[-1]['stream_id']}" if entries else cursor
    for e in entries:
        del e["_time"]
    return {"log_table": f"{keyspace}.{log_table.name}", "entries": entries, "next": nxt or None,
            "key_columns": key_names}


def _entries(stream: bytes, rows: Any, key_names: list[str], columns: list[str], data_columns: list[str],
             after: tuple[uuid.UUID, bytes] | None, key_filter: str) -> list[dict[str, Any]]:
    """A stream's rows as entries, one per write (same ``cdc$time``), in time order."""
    out: list[dict[str, Any]] = []
    for row in rows:
        doc = row._asdict() if hasattr(row, "_asdict") else dict(row)
        t = doc["cdc$time"]
        if after is not None and (t.time, t.bytes, stream) <= (after[0].time, after[0].bytes, after[1]):
            continue
        if not out or out[-1]["cdc$time"] != str(t):
            out.append({"_time": (t.time, t.bytes), "cdc$time": str(t), "stream_id": stream.hex(),
                        "time_ms": _uuid_time_ms(t), "key": [_value(doc.get(k)) for k in key_names],
                        "preimage": [], "changes": [], "postimage": []})
        op = doc.get("cdc$operation")
        item = {"operation": OPERATIONS.get(op, str(op)), "cdc$operation": op,
                "cdc$batch_seq_no": doc.get("cdc$batch_seq_no"),
                "values": {c: _value(doc.get(c)) for c in data_columns if doc.get(c) is not None},
                "meta": {c: _value(doc.get(c)) for c in columns
                         if c not in ("cdc$stream_id", "cdc$time", "cdc$operation", "cdc$batch_seq_no")
                         and doc.get(c) is not None}}
        slot = "preimage" if op == 0 else "postimage" if op == 9 else "changes"
        out[-1][slot].append(item)
    if key_filter:
        out = [e for e in out if key_filter in json.dumps(e["key"], default=str)]
    return out
