"""Changefeed records as typed Spark rows (docs/spark.md "Source 3: logtide-changefeed", output schema).

One :class:`RowParser` per read turns each topic message (JSON, DEBEZIUM_JSON or
DYNAMODB_STREAMS_JSON, in any MODE; docs/changefeeds.md "Record shapes") into one row of the
contract's schema: the primary-key columns, the non-key columns holding the new values, ``_old``,
``_changed_columns``, ``_change_type``, ``_commit_timestamp``, ``_virtual_timestamp``,
``_partition``, ``_offset`` and, with ``raw``, ``_raw``.  Barrier and schema-change records give
no row.  Nothing here imports pyspark; pyarrow only for the Arrow types.
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
META_DDL = ("`_changed_columns` array<string>, `_change_type` string, `_commit_timestamp` timestamp, "
            "`_virtual_timestamp` struct<step:bigint,tx_id:bigint>, `_partition` int, `_offset` bigint")
DEBEZIUM_OPS = {"c": "insert", "r": "insert", "u": "update", "d": "delete"}
DYNAMODB_EVENTS = {"INSERT": "insert", "MODIFY": "update", "REMOVE": "delete"}
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
    """The Spark DDL schema of the source's rows (the contract's 9 groups of columns)."""
    cols = [f"{ST.quote_ident(c.name)} {ST.spark_ddl(c.type)}" for c in shape.key_columns + shape.value_columns]
    old = ",".join(f"{ST.quote_ident(c.name)}:{ST.spark_ddl(c.type)}" for c in shape.value_columns)
    cols.append(f"`_old` struct<{old}>" if old else "`_old` struct<`_none`:boolean>")
    cols.append(META_DDL)
    if raw:
        cols.append("`_raw` string")
    return ", ".join(cols)


def output_names(shape: FeedShape, raw: bool) -> list[str]:
    names = [c.name for c in shape.key_columns + shape.value_columns]
    names += ["_old", "_changed_columns", "_change_type", "_commit_timestamp", "_virtual_timestamp",
              "_partition", "_offset"]
    return names + (["_raw"] if raw else [])


def arrow_types(shape: FeedShape, raw: bool) -> list[Any]:
    """The Arrow type of each output column, in :func:`output_names` order."""
    import pyarrow as pa

    types = [ST.arrow_type(c.type) for c in shape.key_columns + shape.value_columns]
    old = [pa.field(c.name, ST.arrow_type(c.type)) for c in shape.value_columns] or [pa.field("_none", pa.bool_())]
    types += [pa.struct(old), pa.list_(pa.string()), pa.string(), pa.timestamp("us", tz="UTC"),
              pa.struct([pa.field("step", pa.int64()), pa.field("tx_id", pa.int64())]), pa.int32(), pa.int64()]
    return types + ([pa.string()] if raw else [])


class RowParser:
    """Parses one topic's messages into output rows (tuples in :func:`output_names` order)."""

    def __init__(self, shape: FeedShape, raw: bool) -> None:
        self.shape = shape
        self.raw = raw
        self.keys = [c.name for c in shape.key_columns]
        self.values = [c.name for c in shape.value_columns]
        self.static = {c.name for c in shape.value_columns if c.kind == "static"}
        self.clustering = [c.name for c in shape.table.clustering]
        dynamo = shape.format == "DYNAMODB_STREAMS_JSON"
        make = from_attribute if dynamo else from_json
        self.key_convs = [make(c.type) for c in shape.key_columns]
        self.value_convs: list[tuple[str, Callable[[Any], Any]]] = [(c.name, make(c.type))
                                                                     for c in shape.value_columns]
        self._parse = {"JSON": self._json, "DEBEZIUM_JSON": self._debezium,
                       "DYNAMODB_STREAMS_JSON": self._dynamodb}[shape.format]

    # -- shared pieces -------------------------------------------------------------------------
    def _image(self, image: dict | None) -> tuple[list, bool]:
        """The non-key values of an image (absent members are null), and whether there was one."""
        if image is None:
            return [None] * len(self.values), False
        return [conv(image.get(name)) for name, conv in self.value_convs], True

    def _all_changed(self, key: list) -> list[str]:
        """Every non-key column of the row: the static columns for a static row (null clustering key)."""
        if self.clustering and self.static and all(k is None for k in key[len(key) - len(self.clustering):]):
            return [n for n in self.values if n in self.static]
        return [n for n in self.values if n not in self.static or not self.clustering]

    def parse(self, partition: int, offset: int, write_time_ms: int, key: bytes | None, value: bytes) -> tuple | None:
        """The row of one message, or None for a barrier or schema-change record."""
        rec = json.loads(value)
        body = self._parse(rec, key)
        if body is None:
            return None
        keys, new, old, changed, change_type, vts = body
        row = (*keys, *new, old, changed, change_type,
               _EPOCH + datetime.timedelta(milliseconds=write_time_ms), vts, partition, offset)
        if self.raw:
            row += (value.decode("utf-8"),)
        return row

    def _old_struct(self, image: dict | None, conv_image: Callable[[dict | None], tuple[list, bool]]) -> Any:
        vals, present = conv_image(image)
        if not present:
            return None
        return dict(zip(self.values, vals)) if self.values else {"_none": None}

    # -- JSON ----------------------------------------------------------------------------------
    def _json(self, rec: dict, _key: bytes | None) -> tuple | None:
        if "key" not in rec:  # {"resolved": ...} barriers and {"tableChanges": ...} schema changes
            return None
        keys = [c(v) for c, v in zip(self.key_convs, rec["key"])]
        mode = self.shape.mode
        new_image, old_image = rec.get("newImage"), rec.get("oldImage")
        old = self._old_struct(old_image, self._image)
        if "erase" in rec:
            return keys, [None] * len(self.values), old, [], "delete", _vts(rec.get("ts"))
        if mode == "UPDATES":
            upd = rec.get("update") or {}
            new = [conv(upd.get(n)) for n, conv in self.value_convs]
            changed = [n for n in self.values if n in upd]
            return keys, new, old, changed, "upsert", _vts(rec.get("ts"))
        if mode in NEW_IMAGE_MODES:
            new, present = self._image(new_image)
            changed = [n for n in self.values if n in new_image] if present else []
            if mode == "NEW_IMAGE":
                kind = "upsert" if present else "delete"
            else:
                kind = "delete" if not present else ("update" if old_image is not None else "insert")
            return keys, new, old, changed, kind, _vts(rec.get("ts"))
        kind = "upsert" if mode == "KEYS_ONLY" else ("update" if old_image is not None else "insert")
        return keys, [None] * len(self.values), old, [], kind, _vts(rec.get("ts"))

    # -- DEBEZIUM_JSON ---------------------------------------------------------------------------
    def _debezium(self, rec: dict, key: bytes | None) -> tuple | None:
        payload = rec.get("payload")
        if not isinstance(payload, dict) or "op" not in payload:
            return None
        after, before = payload.get("after"), payload.get("before")
        key_obj = after or before
        if key_obj is None:
            key_obj = json.loads(key)["payload"] if key else {}
        keys = [c(key_obj.get(n)) for c, n in zip(self.key_convs, self.keys)]
        kind = DEBEZIUM_OPS.get(payload["op"], "update")
        if kind != "delete" and self.shape.mode in NEW_IMAGE_MODES and after is None:
            kind = "delete"  # the statement left no row (as a JSON update without newImage)
        new, present = self._image(after) if kind != "delete" else self._image(None)
        changed = [n for n in self.values if n in after] if present else []
        src = payload.get("source") or {}
        vts = {"step": src["step"], "tx_id": src["txId"]} if "step" in src and "txId" in src else None
        return keys, new, self._old_struct(before, self._image), changed, kind, vts

    # -- DYNAMODB_STREAMS_JSON -------------------------------------------------------------------
    def _dynamodb(self, rec: dict, _key: bytes | None) -> tuple | None:
        d = rec.get("dynamodb")
        if not isinstance(d, dict):
            return None
        ks = d.get("Keys") or {}
        keys = [c(ks.get(n)) for c, n in zip(self.key_convs, self.keys)]
        kind = DYNAMODB_EVENTS.get(rec.get("eventName", ""), "update")
        new_image = d.get("NewImage")
        if kind != "delete" and self.shape.mode in NEW_IMAGE_MODES and new_image is None:
            kind = "delete"
        if kind == "delete" or new_image is None:
            new, changed = [None] * len(self.values), []
        else:
            new, _ = self._image(new_image)
            changed = self._all_changed(keys)
        return keys, new, self._old_struct(d.get("OldImage"), self._image), changed, kind, None


def _vts(ts: Any) -> dict | None:
    return None if ts is None else {"step": int(ts[0]), "tx_id": int(ts[1])}


def record_step(value: bytes) -> tuple[bool, int | None]:
    """(is a barrier, its step or the record's ``ts`` step; None without one) of a JSON-format record."""
    rec = json.loads(value)
    if "resolved" in rec:
        return True, int(rec["resolved"][0])
    ts = rec.get("ts")
    return False, None if ts is None else int(ts[0])
