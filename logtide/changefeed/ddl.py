"""Changefeed and topic-consumer DDL in YDB's syntax (spec ``004``, "Creating and deleting a changefeed").

``ALTER TABLE t ADD CHANGEFEED name WITH (...)``, ``DROP CHANGEFEED name``,
``ALTER CHANGEFEED name DISABLE`` (terminal) and ``ALTER CHANGEFEED name SET
(...)`` (refused, as YDB refuses it); ``ALTER TOPIC "ks/t/name" ADD CONSUMER
c [WITH (important = true, read_from = ...)]`` and ``DROP CONSUMER c``.
The catalog change and the topic's storage change commit in one transaction.
"""

from __future__ import annotations

import datetime
import re
import uuid
from dataclasses import replace
from typing import Any

from ..cql import ast
from ..cql.ast import SettingValue
from ..errors import InvalidRequest
from ..result import ResultSet, SchemaChange
from ..schema.catalog import Catalog
from ..schema.model import Table
from ..storage.sqlite import CATALOG_KEY
from ..schema.changefeed_options import parse_settings
from ..schema.changefeeds import Changefeed, topic_path

Session = Any  # a logtide.session.Session: changefeed DDL sits below the engine and is given the session

MAX_CHANGEFEEDS = 32  # YDB's MaxTableCdcStreams default
_LEAF_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


def execute(session: "Session", stmt: Any) -> ResultSet:
    """Run one changefeed or topic DDL statement."""
    if isinstance(stmt, (ast.AlterTopicAddConsumer, ast.AlterTopicDropConsumer)):
        return _consumer(session, stmt)
    db = session.db
    with db.write_lock:
        _check_not_index(session, stmt.table)
        table = session._table(stmt.table)
        _check_table(table)
        path = topic_path(table.keyspace, table.name, stmt.name)
        existing = {f.name: f for f in table.changefeeds}
        cat = db.catalog
        created = None
        dropped: list[int] = []
        if isinstance(stmt, ast.AlterTableAddChangefeed):
            if not _LEAF_NAME.match(stmt.name):
                raise InvalidRequest(f"Invalid changefeed name '{stmt.name}': letters, digits, '_', '-' and '.' only")
            options = parse_settings(stmt.settings)
            if stmt.name in existing:
                raise InvalidRequest(f"changefeed '{stmt.name}' already exists on {table.keyspace}.{table.name} "
                                     f"(YDB: Check failed: path: '{path}', error: path exist, request accepts it)")
            if len(existing) >= MAX_CHANGEFEEDS:
                raise InvalidRequest(f"cdc streams count has reached maximum value in the table ({table.keyspace}."
                                     f"{table.name} already has {MAX_CHANGEFEEDS} changefeeds, the most a table "
                                     f"can have)")
            created = Changefeed(stmt.name, cat.next_store_id, options, created_ms=db.feeds.now_ms())
            feeds = table.changefeeds + (created,)
            next_id = cat.next_store_id + 1
        else:
            feed = existing.get(stmt.name)
            if feed is None:
                has = (f"whose changefeeds are {', '.join(sorted(existing))}" if existing
                       else "which has no changefeed")
                raise InvalidRequest(f"changefeed '{stmt.name}' does not exist on {table.keyspace}.{table.name}, "
                                     f"{has} (YDB: Check failed: path: '{path}', error: path hasn't been resolved, "
                                     f"nearest resolved path: '{table.keyspace}/{table.name}')")
            next_id = cat.next_store_id
            if isinstance(stmt, ast.AlterTableDropChangefeed):
                feeds = tuple(f for f in table.changefeeds if f.name != stmt.name)
                dropped = [feed.feed_id]
            elif not stmt.disable:
                name = stmt.settings[0][0] if stmt.settings else "SET"
                raise InvalidRequest(f"{name.upper()} alter is not supported (a changefeed's settings are fixed "
                                     f"when it is added: DROP CHANGEFEED {stmt.name} and ADD it again)")
            else:
                feeds = tuple(replace(f, disabled=True) if f.name == stmt.name else f for f in table.changefeeds)
        new_table = replace(table, changefeeds=feeds)
        ks = cat.keyspaces[table.keyspace]
        new_ks = replace(ks, tables={**ks.tables, table.name: new_table})
        new = Catalog({**cat.keyspaces, ks.name: new_ks}, uuid.uuid4(), next_id)
        with db.store.write() as txn:
            if created is not None:
                created = replace(created, snapshot=db.feeds.snapshot_vts(txn))
                new_table = replace(new_table, changefeeds=table.changefeeds + (created,))
                new_ks = replace(ks, tables={**ks.tables, table.name: new_table})
                new = Catalog({**cat.keyspaces, ks.name: new_ks}, new.version, next_id)
                db.feeds.created(txn, new_table, created)
            db.feeds.dropped(txn, dropped)
            txn.put_meta(CATALOG_KEY, new.to_json().encode())
        db.catalog = new
    db.feeds.ensure_worker()
    return ResultSet("schema_change", schema_change=SchemaChange("UPDATED", "TABLE", table.keyspace, table.name))


def _check_not_index(session: "Session", name: Any) -> None:
    """A changefeed on a secondary index (or on the ``<index>_index`` view ScyllaDB backs it with) is refused:
    an index's changes are its table's (docs/views-and-indexes.md, "Secondary indexes")."""
    from ..schema.indexes import index_named
    ks = session.db.catalog.keyspaces.get(name.keyspace or session.keyspace or "")
    found = index_named(ks, name.name) if ks is not None and name.name not in ks.tables else None
    if found is not None:
        table, index = found
        raise InvalidRequest(f"Cannot add changefeed to secondary index {ks.name}.{index.name}: an index is not a "
                             f"table; add the changefeed to its table {ks.name}.{table.name}, whose changes it "
                             f"follows")


def _check_table(table: Table) -> None:
    from ..schema.system_schema import is_system_keyspace
    if is_system_keyspace(table.keyspace):
        raise InvalidRequest(f"Cannot add changefeed to system table {table.keyspace}.{table.name}")
    if table.cdc_base is not None:
        raise InvalidRequest(f"Cannot add changefeed to CDC log table {table.keyspace}.{table.name}")
    if table.view is not None:
        raise InvalidRequest(f"Cannot add changefeed to materialized view {table.keyspace}.{table.name}: a view "
                             f"is derived from its base table {table.keyspace}.{table.view.base_table}, add the "
                             "changefeed there")


def _consumer(session: "Session", stmt: Any) -> ResultSet:
    reader = session.db.changefeeds
    desc = reader.describe(stmt.path)
    if isinstance(stmt, ast.AlterTopicDropConsumer):
        reader.drop_consumer(desc.path, stmt.consumer)
        return ResultSet("void")
    important = False
    read_from_ms = 0
    for name, value in stmt.settings:
        key = name.lower()
        if key == "important":
            if value.kind != "bool":
                raise InvalidRequest(f"Literal of Bool type is expected for {name} (got {value.text}; "
                                     f"write {name} = TRUE or FALSE)")
            important = bool(value.value)
        elif key == "read_from":
            read_from_ms = read_from(name, value)
        elif key == "supported_codecs":
            continue  # records are stored uncompressed (RAW); any codec list is accepted
        else:
            raise InvalidRequest(f"Unknown consumer setting: {name} (valid settings: important, read_from, "
                                 f"supported_codecs)")
    reader.add_consumer(desc.path, stmt.consumer, important, read_from_ms)
    return ResultSet("void")


_TIME_LITERAL = re.compile(r"^\s*(Timestamp|Datetime)\s*\(\s*'([^']*)'\s*\)\s*$", re.IGNORECASE)


def read_from(name: str, value: SettingValue) -> int:
    """A consumer's ``read_from`` in milliseconds: a unix time in seconds, ``Timestamp('...')`` or ``Datetime('...')``."""
    if value.kind == "int":
        return int(value.value) * 1000  # type: ignore[arg-type]
    m = _TIME_LITERAL.match(str(value.value)) if value.kind == "other" else None
    if m is not None:
        try:
            t = datetime.datetime.fromisoformat(m.group(2).replace("Z", "+00:00"))
        except ValueError:
            raise InvalidRequest(f"Invalid {m.group(1)} literal for {name}: {m.group(2)}") from None
        if t.tzinfo is None:
            t = t.replace(tzinfo=datetime.timezone.utc)
        return int(t.timestamp() * 1000)
    raise InvalidRequest(f"Literal of Timestamp, Datetime or integer type is expected for {name} (got {value.text}; "
                         f"write {name} = Timestamp('2024-01-01T00:00:00Z') or seconds since the epoch)")
