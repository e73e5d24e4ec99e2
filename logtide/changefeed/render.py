"""Changefeed records as YDB writes them (spec ``004``, "Record structure"; ``docs/changefeeds.md``, "Record shapes").

Pure functions: a :class:`RowChange` (one changed row of one statement) in,
the record's compact JSON, its Kafka key and its topic partition out, for
every MODE and FORMAT.  Members inside an object come in a fixed order, the
one of the spec's examples: JSON ``key``, ``update``/``erase``,
``newImage``, ``oldImage``, ``ts``; Debezium ``op``, ``before``, ``after``,
``source``; DynamoDB ``awsRegion``, ``dynamodb`` (its members sorted, as
YDB's writer sorts them), ``eventID``, ``eventName``, ``eventSource``,
``eventVersion``.  Key columns come in primary-key order, the other
columns in name order (Cassandra's column order).
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, NamedTuple

from ..query.read import column_bytes
from .json_format import JsonRecords
from ..schema.changefeed_options import ChangefeedOptions
from .values import dumps, json_bytes, json_of, to_attribute_value

_HASH_SPACE_MAX = (1 << 128) - 1

DEBEZIUM_SOURCE = (("connector", "ydb"), ("version", "1.0.0"))
DYNAMODB_EVENT_SOURCE = "ydb:document-table"
DYNAMODB_EVENT_VERSION = "1.0"


class RowChange(NamedTuple):
    """One changed row of one statement, as the capture stage derives it (an immutable value; a NamedTuple
    because one is made per changed row on the write path, where a frozen dataclass costs several times more).

    ``key`` holds the primary-key values (partition key then clustering, in
    order); ``old``/``new`` hold every non-key column (None for null), or are
    None when the row did not exist before / does not exist after; ``updated``
    holds the columns the statement wrote with their new values (UPDATES mode;
    a deleted column maps to None).  ``snapshot`` marks an initial-scan record.
    """

    kind: str  # 'update' | 'erase'
    key: tuple
    old: Mapping[str, object] | None
    new: Mapping[str, object] | None
    updated: Mapping[str, object]
    snapshot: bool = False


class Rendered(NamedTuple):
    """A record ready for its topic: Kafka key (Debezium only), compact JSON value, partition (immutable)."""

    key: bytes | None
    value: bytes
    partition: int


def render(table: Any, opts: ChangefeedOptions, change: RowChange, step: int, tx_id: int,
           write_time_ms: int, seq_no: int) -> Rendered:
    """The record of ``change`` in ``opts.mode`` and ``opts.format``.

    ``step``/``tx_id`` are the virtual timestamp, ``write_time_ms`` the
    commit time (Debezium ``ts_ms``, DynamoDB ApproximateCreationDateTime),
    ``seq_no`` the record's sequence number (DynamoDB SequenceNumber and
    eventID).
    """
    if opts.format == "JSON":
        return render_json(JsonRecords(table, opts), change, step, tx_id)
    key_json = json_key(table, change.key)
    partition = hash_partition(key_json, opts.partitions)
    if opts.format == "DEBEZIUM_JSON":
        key_obj = _debezium_key(table, change.key)
        value = _debezium_record(table, opts, change, key_obj, step, tx_id, write_time_ms)
        return Rendered(json_bytes({"payload": key_obj}), value, partition)
    if opts.format == "DYNAMODB_STREAMS_JSON":
        return Rendered(None, _dynamodb_record(table, opts, change, write_time_ms, seq_no), partition)
    raise ValueError(f"unknown changefeed format {opts.format}")


def render_json(records: JsonRecords, change: RowChange, step: int, tx_id: int) -> Rendered:
    """A JSON-format record with a changefeed's compiled :class:`JsonRecords` (what :func:`render` does per call)."""
    key_json = records.key_json(change.key)
    return Rendered(None, records.record(change, key_json, step, tx_id).encode(),
                    hash_partition(key_json, records.opts.partitions))


def render_barrier(step: int) -> bytes:
    """A barrier record ``{"resolved":[step,0]}`` (spec ``004``, "Virtual timestamps"; txId is always 0)."""
    return b'{"resolved":[%d,0]}' % step


def partition_of(key: tuple, table: Any, partitions: int) -> int:
    """The topic partition of a primary key, as YDB chooses it for its JSON formats.

    MD5 of the compact JSON key array (as the JSON record's ``key``), read as
    a 128-bit number, over the hash space split into ``partitions`` equal
    slices (YDB's HexBytesToDecimal / ShardFromDecimal).
    """
    return hash_partition(json_key(table, key), partitions)


def hash_partition(key_json: str, partitions: int) -> int:
    """The partition of a compact JSON key array (YDB's ShardFromDecimal of its MD5)."""
    if partitions == 1:
        return 0
    value = int(hashlib.md5(key_json.encode()).hexdigest(), 16)
    shard = value // (_HASH_SPACE_MAX // partitions)
    return min(shard, partitions - 1)


def json_key(table: Any, key: tuple) -> str:
    """The compact JSON ``key`` array of a primary key."""
    return dumps([json_of(c.type, v) for c, v in zip(table.primary_key, key)])


def image(table: Any, row: Any, columns: Any = None) -> dict[str, object] | None:
    """The non-key column values of a ``LiveRow`` (None when there is no row).

    ``columns`` (Column objects or column names) defaults to the table's
    regular columns for a clustering row and its static columns for a static
    row.  Null columns map to None; collections and UDTs are assembled from
    their element cells.
    """
    if row is None:
        return None
    if columns is None:
        columns = table.static_columns if row.static else table.regular_columns
    out: dict[str, object] = {}
    for col in columns:
        if isinstance(col, str):
            col = table.column(col)
        data = column_bytes(row, col)
        out[col.name] = None if data is None else col.type.deserialize(data)
    return out


# ---------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------


def _non_key_columns(table: Any, values: Mapping[str, object]) -> list[tuple[Any, object]]:
    """(column, value) of the non-key columns present in ``values``, in name order (Cassandra's column order)."""
    return [(c, values[c.name]) for c in table.value_columns if c.name in values]


def _json_columns(table: Any, values: Mapping[str, object]) -> dict[str, object]:
    return {c.name: json_of(c.type, values[c.name]) for c in table.value_columns if c.name in values}


# ---------------------------------------------------------------------------
# DEBEZIUM_JSON
# ---------------------------------------------------------------------------


def _debezium_key(table: Any, key: tuple) -> dict[str, object]:
    return {c.name: json_of(c.type, v) for c, v in zip(table.primary_key, key)}


def debezium_op(mode: str, change: RowChange) -> str:
    """``r`` for an initial-scan record, ``d`` for an erase, ``c`` for a new row in NEW_AND_OLD_IMAGES, else ``u``."""
    if change.snapshot:
        return "r"
    if change.kind == "erase":
        return "d"
    if mode == "NEW_AND_OLD_IMAGES" and change.old is None:
        return "c"
    return "u"


def _debezium_record(table: Any, opts: ChangefeedOptions, change: RowChange, key_obj: dict,
                     step: int, tx_id: int, write_time_ms: int) -> bytes:
    payload: dict[str, object] = {"op": debezium_op(opts.mode, change)}
    if opts.mode in ("OLD_IMAGE", "NEW_AND_OLD_IMAGES") and change.old is not None:
        payload["before"] = {**key_obj, **_json_columns(table, change.old)}
    if opts.mode in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES") and change.new is not None:
        payload["after"] = {**key_obj, **_json_columns(table, change.new)}
    payload["source"] = {
        **dict(DEBEZIUM_SOURCE),
        "ts_ms": write_time_ms,
        "step": step,
        "txId": tx_id,
        "snapshot": change.snapshot,
    }
    return json_bytes({"payload": payload})


# ---------------------------------------------------------------------------
# DYNAMODB_STREAMS_JSON
# ---------------------------------------------------------------------------


def dynamodb_event_name(mode: str, change: RowChange) -> str:
    """``REMOVE`` for an erase, ``INSERT`` for a new row in NEW_AND_OLD_IMAGES, else ``MODIFY``."""
    if change.kind == "erase":
        return "REMOVE"
    if mode == "NEW_AND_OLD_IMAGES" and change.old is None:
        return "INSERT"
    return "MODIFY"


def _attributes(columns: list[tuple[Any, object]]) -> dict[str, object]:
    """AttributeValues of (column, value); null columns are left out, as YDB leaves them out."""
    out = {}
    for col, value in columns:
        av = to_attribute_value(col.type, value)
        if av is not None:
            out[col.name] = av
    return out


def _dynamodb_record(table: Any, opts: ChangefeedOptions, change: RowChange, write_time_ms: int,
                     seq_no: int) -> bytes:
    keys = _attributes(list(zip(table.primary_key, change.key)))
    record: dict[str, object] = {"ApproximateCreationDateTime": write_time_ms, "Keys": keys}
    if opts.mode in ("NEW_IMAGE", "NEW_AND_OLD_IMAGES") and change.new is not None:
        record["NewImage"] = {**keys, **_attributes(_non_key_columns(table, change.new))}
    if opts.mode in ("OLD_IMAGE", "NEW_AND_OLD_IMAGES") and change.old is not None:
        record["OldImage"] = {**keys, **_attributes(_non_key_columns(table, change.old))}
    record["SequenceNumber"] = "%021d" % seq_no
    record["StreamViewType"] = opts.mode
    return json_bytes({
        "awsRegion": opts.aws_region,
        "dynamodb": record,
        "eventID": f"{table.store_id}-{seq_no}",
        "eventName": dynamodb_event_name(opts.mode, change),
        "eventSource": DYNAMODB_EVENT_SOURCE,
        "eventVersion": DYNAMODB_EVENT_VERSION,
    })
