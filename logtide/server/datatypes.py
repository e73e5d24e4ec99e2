"""CQL types and values on the wire: ``[option]`` type descriptions and ``[value]`` encoding.

Types are written as the spec's option ids (section 6 of the v4/v5 specs).
Types newer than the connection's protocol version travel as custom types
named by their Cassandra marshal class, as Cassandra does (``duration`` before
v5; ``date``, ``time``, ``smallint``, ``tinyint`` in v3).  Values use the
types' own protocol-v4 codecs, which are also those of v3 and v5.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from logtide.errors import InvalidRequest
from logtide.query.casts import marshal_class
from logtide.result import ColumnSpec
from logtide.schema import types as T

from .wire import UNSET as WIRE_UNSET
from .wire import BodyWriter

NATIVE_IDS = {
    "ascii": 0x0001, "bigint": 0x0002, "blob": 0x0003, "boolean": 0x0004, "counter": 0x0005,
    "decimal": 0x0006, "double": 0x0007, "float": 0x0008, "int": 0x0009, "timestamp": 0x000B,
    "uuid": 0x000C, "text": 0x000D, "varint": 0x000E, "timeuuid": 0x000F, "inet": 0x0010,
    "date": 0x0011, "time": 0x0012, "smallint": 0x0013, "tinyint": 0x0014, "duration": 0x0015,
}
CUSTOM, LIST, MAP, SET, UDT, TUPLE = 0x0000, 0x0020, 0x0021, 0x0022, 0x0030, 0x0031

# native type -> (first protocol version with an option id for it, marshal class for older ones)
NEWER_TYPES = {
    "duration": (5, "org.apache.cassandra.db.marshal.DurationType"),
    "date": (4, "org.apache.cassandra.db.marshal.SimpleDateType"),
    "time": (4, "org.apache.cassandra.db.marshal.TimeType"),
    "smallint": (4, "org.apache.cassandra.db.marshal.ShortType"),
    "tinyint": (4, "org.apache.cassandra.db.marshal.ByteType"),
}


def write_type(w: BodyWriter, t: Any, version: int) -> None:
    """Append the ``[option]`` describing type ``t`` for protocol ``version``."""
    kind = t.kind
    if kind == "native":
        newer = NEWER_TYPES.get(t.name)
        if newer is not None and version < newer[0]:
            w.short(CUSTOM).string(newer[1])
        else:
            w.short(NATIVE_IDS[t.name])
    elif kind == "list":
        w.short(LIST)
        write_type(w, t.element, version)
    elif kind == "set":
        w.short(SET)
        write_type(w, t.element, version)
    elif kind == "map":
        w.short(MAP)
        write_type(w, t.key, version)
        write_type(w, t.value, version)
    elif kind == "tuple":
        w.short(TUPLE).short(len(t.items))
        for item in t.items:
            write_type(w, item, version)
    elif kind == "udt":
        w.short(UDT).string(t.keyspace).string(t.name).short(len(t.field_names))
        for name, ftype in zip(t.field_names, t.field_types):
            w.string(name)
            write_type(w, ftype, version)
    elif kind == "vector":  # no option id of its own: a custom type, as ScyllaDB and Cassandra 5 send it
        w.short(CUSTOM).string(marshal_class(t))
    else:  # pragma: no cover - every type kind is handled above
        raise AssertionError(kind)


def write_column_specs(w: BodyWriter, columns: Sequence[ColumnSpec], version: int, global_spec: bool) -> None:
    """Column specifications, with the keyspace/table written once when ``global_spec``."""
    if global_spec and columns:
        w.string(columns[0].keyspace).string(columns[0].table)
    for c in columns:
        if not global_spec:
            w.string(c.keyspace).string(c.table)
        w.string(c.name)
        write_type(w, c.type, version)


def has_global_spec(columns: Sequence[ColumnSpec]) -> bool:
    """Whether every column comes from the same keyspace and table (flag 0x0001)."""
    return bool(columns) and all(c.keyspace == columns[0].keyspace and c.table == columns[0].table
                                 for c in columns)


def encode_row(w: BodyWriter, row: Sequence[Any], columns: Sequence[ColumnSpec]) -> None:
    """Append one row's values as ``[bytes]`` (null for None)."""
    for value, col in zip(row, columns):
        w.bytes(None if value is None else col.type.serialize(value))


def decode_value(raw: bytes | None | int, spec: ColumnSpec) -> Any:
    """A bound value from the wire: None for null, ``T.UNSET`` for unset, else decoded with the spec's type."""
    return value_decoder(spec)(raw)


def value_decoder(spec: ColumnSpec) -> Callable[[bytes | None | int], Any]:
    """``decode_value`` for one bind marker, with its type's deserializer looked up once: a prepared
    statement keeps one per marker (``prepared.PreparedEntry``)."""
    deserialize = spec.type.deserialize

    def decode(raw: bytes | None | int) -> Any:
        if raw is None:
            return None
        if type(raw) is int:  # the wire reader's only int is WIRE_UNSET
            if raw == WIRE_UNSET:
                return T.UNSET
        try:
            return deserialize(raw)
        except InvalidRequest:
            raise
        except Exception as e:  # struct.error, UnicodeDecodeError, ValueError ... from a malformed value
            raise InvalidRequest(f"Invalid value for {spec.name} of type {spec.type.cql()}: "
                                 f"{type(e).__name__}: {e}") from None
    return decode
