"""Changefeed records as typed Spark rows (docs/spark.md "Source 3: logtide-changefeed", output schema).

One :class:`RowParser` per read turns each topic message (JSON, DEBEZIUM_JSON or
DYNAMODB_STREAMS_JSON, in any MODE; docs/changefeeds.md "Record shapes") into the rows of Delta
Lake's change data feed: one ``insert``, ``update_postimage`` or ``delete`` row per record, preceded
by an ``update_preimage`` row when the record is an update that carries the old image.  A row has
the primary-key columns, the non-key columns (the values of the row in that role), ``_old``,
``_changed_columns``, ``_operation`` (the record's own kind), ``_change_type``, ``_commit_version``
(the commit's txId), ``_commit_timestamp``, ``_virtual_timestamp``, ``_partition``, ``_offset`` and,
with ``raw``, ``_raw``.  The same rules for every FORMAT and MODE.  Barrier and schema-change records
give no row.  Nothing here imports pyspark; pyarrow only for the Arrow types.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any, Callable

from . import types as ST
from .changefeed_values import from_attribute, from_json
from .table_info import TableInfo

FORMATS = ("JSON", "DEBEZIUM_JSON", "DYNAMODB_STREAMS_JSON")
MODES = ("KEYS_ONLY", "UPDATES", "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES")
NEW_IMAGE_MODES = ("NEW_IMAGE", "NEW_AND_OLD_IMAGES")
OLD_IMAGE_MODES = ("OLD_IMAGE", "NEW_AND_OLD_IMAGES")
META_DDL = ("`_changed_columns` array<string>, `_operation` string, `_change_type` string, `_commit_version` bigint, "
            "`_commit_timestamp` timestamp, `_virtual_timestamp` struct<step:bigint,tx_id:bigint>, `_partition` int, "
            "`_offset` bigint")
META_NAMES = ("_old", "_changed_columns", "_operation", "_change_type", "_commit_version", "_commit_timestamp",
              "_virtual_timestamp", "_partition", "_offset")
# Delta's change data feed (docs/spark.md "Delta's change data feed")
INSERT, UPDATE_PREIMAGE, UPDATE_POSTIMAGE, DELETE = "insert", "update_preimage", "update_postimage", "delete"
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


@dataclass(frozen=True)
class FeedShape:
    """What it takes to type a topic's records: the table's columns, the feed's MODE and FORMAT."""

    table: TableInfo
    mode: str
    format: str

    @property
    def key_columns(self) -> tuple:
        return self.table.partition_key + self.table.clustering

    @property
    def value_columns(self) -> tuple:
        return self.table.regular


def output_ddl(shape: FeedShape, raw: bool) -> str:
    """The Spark DDL schema of the source's rows."""
    cols = [f"{ST.quote_ident(c.name)} {ST.spark_ddl(c.type)}" for c in shape.key_columns + shape.value_columns]
    old = ",".join(f"{ST.quote_ident(c.name)}:{ST.spark_ddl(c.type)}" for c in shape.value_columns)
    cols.append(f"`_old` struct<{old}>" if old else "`_old` struct<`_none`:boolean>")
    cols.append(META_DDL)
    if raw:
        cols.append("`_raw` string")
    return ", ".join(cols)


def output_names(shape: FeedShape, raw: bool) -> list[str]:
    names = [c.name for c in shape.key_columns + shape.value_columns] + list(META_NAMES)
    return names + (["_raw"] if raw else [])


def arrow_types(shape: FeedShape, raw: bool) -> list[Any]:
    """The Arrow type of each output column, in :func:`output_names` order."""
    import pyarrow as pa

    types = [ST.arrow_type(c.type) for c in shape.key_columns + shape.value_columns]
    old = [pa.field(c.name, ST.arrow_type(c.type)) for c in shape.value_columns] or [pa.field("_none", pa.bool_())]
    types += [pa.struct(old), pa.list_(pa.string()), pa.string(), pa.string(), pa.int64(),
              pa.timestamp("us", tz="UTC"), pa.struct([pa.field("step", pa.int64()), pa.field("tx_id", pa.int64())]),
              pa.int32(), pa.int64()]
    return types + ([pa.string()] if raw else [])


@dataclass(frozen=True)
class Record:
    """One data record, parsed whatever its FORMAT: ``new`` and ``old`` are the non-key values of its images
    (None when the record has no such image), ``deleted`` says the row is gone after it."""

    keys: list
    new: list | None
    old: list | None
    changed: list
    operation: str
    deleted: bool
    vts: dict | None


class RowParser:
    """Parses one topic's messages into output rows (tuples in :func:`output_names` order)."""

    def __init__(self, shape: FeedShape, raw: bool) -> None:
        self.shape = shape
        self.raw = raw
        self.keys = [c.name for c in shape.key_columns]
        self.values = [c.name for c in shape.value_columns]
        self.static = {c.name for c in shape.value_columns if c.kind == "static"}
        self.clustering = [c.name for c in shape.table.clustering]
        self.new_images = shape.mode in NEW_IMAGE_MODES
        self.old_images = shape.mode in OLD_IMAGE_MODES
        dynamo = shape.format == "DYNAMODB_STREAMS_JSON"
        make = from_attribute if dynamo else from_json
        self.key_convs = [make(c.type) for c in shape.key_columns]
        self.value_convs: list[tuple[str, Callable[[Any], Any]]] = [(c.name, make(c.type))
                                                                     for c in shape.value_columns]
        self._parse = {"JSON": self._json, "DEBEZIUM_JSON": self._debezium,
                       "DYNAMODB_STREAMS_JSON": self._dynamodb}[shape.format]

    # -- shared pieces -------------------------------------------------------------------------
    def _image(self, image: dict | None) -> list | None:
        """The non-key values of an image (absent members are null), None without an image."""
        if image is None:
            return None
        return [conv(image.get(name)) for name, conv in self.value_convs]

    def _all_changed(self, key: list) -> list[str]:
        """Every non-key column of the row: the static columns for a static row (null clustering key)."""
        if self.clustering and self.static and all(k is None for k in key[len(key) - len(self.clustering):]):
            return [n for n in self.values if n in self.static]
        return [n for n in self.values if n not in self.static or not self.clustering]

    def parse(self, partition: int, offset: int, write_time_ms: int, key: bytes | None, value: bytes) -> list[tuple]:
        """The rows of one message (Delta's change data feed): none for a barrier or schema-change record, an
        ``update_preimage`` row and an ``update_postimage`` row for an update carrying its old image, else one
        ``insert``, ``update_postimage`` or ``delete`` row."""
        rec = self._parse(json.loads(value), key)
        if rec is None:
            return []
        commit_ts = _EPOCH + datetime.timedelta(milliseconds=write_time_ms)
        version = rec.vts["tx_id"] if rec.vts is not None else write_time_ms
        old = None if rec.old is None else (dict(zip(self.values, rec.old)) if self.values else {"_none": None})
        tail = (rec.vts, partition, offset) + ((value.decode("utf-8"),) if self.raw else ())

        def row(values: list | None, change_type: str) -> tuple:
            vals = values if values is not None else [None] * len(self.values)
            return (*rec.keys, *vals, old, rec.changed, rec.operation, change_type, version, commit_ts, *tail)

        if rec.deleted:  # Delta's delete row holds the deleted values: the old image, when there is one
            return [row(rec.old, DELETE)]
        if not self.old_images:  # whether the row existed before is unknown: a CQL write is an upsert
            return [row(rec.new, UPDATE_POSTIMAGE)]
        if rec.old is None:  # an old-image mode without an old image: the row did not exist
            return [row(rec.new, INSERT)]
        return [row(rec.old, UPDATE_PREIMAGE), row(rec.new, UPDATE_POSTIMAGE)]

    # -- JSON ----------------------------------------------------------------------------------
    def _json(self, rec: dict, _key: bytes | None) -> Record | None:
        if "key" not in rec:  # {"resolved": ...} barriers and {"tableChanges": ...} schema changes
            return None
        keys = [c(v) for c, v in zip(self.key_convs, rec["key"])]
        new_image, old_image = rec.get("newImage"), rec.get("oldImage")
        old = self._image(old_image)
        vts = _vts(rec.get("ts"))
        if "erase" in rec:
            return Record(keys, None, old, [], "erase", True, vts)
        if self.shape.mode == "UPDATES":
            upd = rec.get("update") or {}
            new = [conv(upd.get(n)) for n, conv in self.value_convs]
            return Record(keys, new, old, [n for n in self.values if n in upd], "update", False, vts)
        if self.new_images:
            new = self._image(new_image)
            if new is None:  # the statement left no row (docs/changefeeds.md "Replaying a feed")
                return Record(keys, None, old, [], "update", True, vts)
            return Record(keys, new, old, [n for n in self.values if n in new_image], "update", False, vts)
        return Record(keys, None, old, [], "update", False, vts)

    # -- DEBEZIUM_JSON ---------------------------------------------------------------------------
    def _debezium(self, rec: dict, key: bytes | None) -> Record | None:
        payload = rec.get("payload")
        if not isinstance(payload, dict) or "op" not in payload:
            return None
        after, before = payload.get("after"), payload.get("before")
        key_obj = after or before
        if key_obj is None:
            key_obj = json.loads(key)["payload"] if key else {}
        keys = [c(key_obj.get(n)) for c, n in zip(self.key_convs, self.keys)]
        op = str(payload["op"])
        # a `u` without `after` in a new-image mode: the statement left no row (as a JSON update without newImage)
        deleted = op == "d" or (self.new_images and after is None)
        new = None if deleted else self._image(after)
        changed = [n for n in self.values if n in after] if new is not None else []
        src = payload.get("source") or {}
        vts = {"step": src["step"], "tx_id": src["txId"]} if "step" in src and "txId" in src else None
        return Record(keys, new, self._image(before), changed, op, deleted, vts)

    # -- DYNAMODB_STREAMS_JSON -------------------------------------------------------------------
    def _dynamodb(self, rec: dict, _key: bytes | None) -> Record | None:
        d = rec.get("dynamodb")
        if not isinstance(d, dict):
            return None
        ks = d.get("Keys") or {}
        keys = [c(ks.get(n)) for c, n in zip(self.key_convs, self.keys)]
        event = str(rec.get("eventName", ""))
        new_image = d.get("NewImage")
        deleted = event == "REMOVE" or (self.new_images and new_image is None)
        new = None if deleted else self._image(new_image)
        changed = self._all_changed(keys) if new is not None else []
        return Record(keys, new, self._image(d.get("OldImage")), changed, event, deleted, None)


def _vts(ts: Any) -> dict | None:
    return None if ts is None else {"step": int(ts[0]), "tx_id": int(ts[1])}


def record_step(value: bytes) -> tuple[bool, int | None]:
    """(is a barrier, its step or the record's ``ts`` step; None without one) of a JSON-format record."""
    rec = json.loads(value)
    if "resolved" in rec:
        return True, int(rec["resolved"][0])
    ts = rec.get("ts")
    return False, None if ts is None else int(ts[0])
