"""Result values of SELECT rows: a one-pass path for selections of plain columns.

A selection of plain columns (``SELECT *``, ``SELECT a, b``, the Spark sources' token-range scans,
consumers reading the CDC log by stream and time window) is planned once per query: where each
value comes from (partition key, clustering, the row's values, the static row).  Each result row is
first kept as the stored bytes of its values (:func:`raw_values_of`); from those the embedded API
deserializes Python values a page and a column at a time (:func:`raw_decoder`: integers and uuids
inline, partition key values once per partition) and the server writes the protocol's ``[bytes]`` as they are
(:func:`raw_encoder`), with no round trip through Python values (``docs/performance.md``, "Reading
the CDC log" and "Reading base tables").  Values are exactly those of each selector's ``compute``.
Any other selection goes through each selector's ``compute`` (:func:`row_projector`).

One idea split for size with ``select.py``, ``read.py``, ``cell_meta.py`` and ``select_result.py``: the
SELECT pipeline (its plain-column projection here).
"""

from __future__ import annotations

import functools
import struct
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

import msgspec

from ..schema.model import CLUSTERING, PARTITION_KEY, REGULAR, STATIC, Column, Table
from ..storage.records import uniform_values_decoder
from .read import LiveRow, column_bytes

if TYPE_CHECKING:
    from .select import CqlRow, Selected

_INT_SIZES = {"int": 4, "bigint": 8, "smallint": 2, "tinyint": 1}
_new = object.__new__
_set = object.__setattr__
_UNKNOWN = uuid.SafeUUID.unknown
_UUID = uuid.UUID
_NULL = b"\xff\xff\xff\xff"


def _int_size(col: Column) -> int:
    """The encoded size of an integer column's values (-1 for other types)."""
    t = col.type
    return _INT_SIZES.get(getattr(t, "name", ""), -1) if t.kind == "native" else -1


def _fast_deserializer(col: Column) -> Callable[[bytes], Any]:
    """The column type's deserializer, with the driver's integer and uuid decoding done inline.

    Same values as ``type.deserialize`` (``uuid.UUID(bytes=...)`` builds the same object); any
    value of an unexpected length goes to the type's own deserializer."""
    t = col.type
    des = t._deserializer
    name = getattr(t, "name", None) if t.kind == "native" else None
    size = _INT_SIZES.get(name)  # type: ignore[arg-type]
    if size is not None:
        from_bytes = int.from_bytes

        def des_int(b: bytes) -> Any:
            if len(b) == size:
                return from_bytes(b, "big", signed=True)
            return des(b)
        return des_int
    if name in ("uuid", "timeuuid"):
        from_bytes = int.from_bytes

        def des_uuid(b: bytes) -> Any:
            if len(b) == 16:
                u = _new(_UUID)
                _set(u, "int", from_bytes(b, "big"))
                _set(u, "is_safe", _UNKNOWN)
                return u
            return des(b)
        return des_uuid
    return des


def row_projector(selected: list["Selected"]) -> Callable[["CqlRow"], list[Any]]:
    """The result values of a row for any selection: each selector's ``compute``."""
    computes = [s.compute for s in selected]

    def general(r: "CqlRow") -> list[Any]:
        return [c(r) for c in computes]
    return general


def plain_columns(selected: list["Selected"]) -> list[Column] | None:
    """The columns of a selection of plain columns (aliases allowed), or None for any other selection."""
    cols = [s.column for s in selected]
    return None if any(c is None for c in cols) else cols  # type: ignore[return-value]


def raw_values_of(cols: list[Column]) -> Callable[[tuple[bytes, ...], LiveRow | None, LiveRow | None],
                                                    list[bytes | None]]:
    """The stored bytes of a row's values for a selection of plain columns (None for null), the row
    given as its partition key, live row and static row: what ``CqlRow.bytes_of`` gives for each
    column, in one pass over a plan made once per query."""
    key_plan = [(i, c.position) for i, c in enumerate(cols) if c.kind == PARTITION_KEY]
    ck_plan = [(i, c.position) for i, c in enumerate(cols) if c.kind == CLUSTERING]
    value_plan = [(i, c.name) for i, c in enumerate(cols) if not c.is_primary_key and c.kind != STATIC]
    value_cols = [(i, c) for i, c in enumerate(cols) if not c.is_primary_key and c.kind != STATIC]
    static_cols = [(i, c) for i, c in enumerate(cols) if c.kind == STATIC]
    # a uniform record (a CDC log row) has no element cells: its non-frozen collections are null
    multicell = any(c.type.is_multicell for _, c in value_cols)
    n = len(cols)

    def raw(key: tuple[bytes, ...], row: LiveRow | None, static: LiveRow | None) -> list[bytes | None]:
        out: list[bytes | None] = [None] * n
        for i, at in key_plan:
            out[i] = key[at]
        if row is not None:
            clustering = row.clustering
            for i, at in ck_plan:
                out[i] = clustering[at]
            values = row.values
            if values is not None and not (multicell and row.liveness is not None):
                get = values.get
                for i, name in value_plan:
                    out[i] = get(name)
            else:
                for i, c in value_cols:
                    out[i] = column_bytes(row, c)
        if static is not None:
            for i, c in static_cols:
                out[i] = column_bytes(static, c)
        return out
    return raw


@dataclass(frozen=True)
class UniformPlan:
    """How uniform row records (CDC log rows, ``storage/records.py``) become :func:`raw_values_of` rows of
    a plain-column selection in one pass per record (``read.PartitionView.value_rows``): the record's
    ``{column: value}`` map is decoded straight into a per-selection msgspec struct whose first
    ``selected`` fields are the selected values, so a result row is the partition key, the clustering
    and those fields, with no ``LiveRow`` or ``CqlRow`` in between."""

    decode: Callable[[memoryview], tuple]  # records.uniform_values_decoder of the struct
    selected: int  # how many of the struct's fields are selected (the others are the table's other columns)
    trim: bool  # whether the struct has fields beyond the selected ones
    general: Callable[[tuple[bytes, ...], LiveRow | None, LiveRow | None], list[bytes | None]]  # raw_values_of


def uniform_plan(table: Table, cols: list[Column],
                 general: Callable[[tuple[bytes, ...], LiveRow | None, LiveRow | None], list[bytes | None]]
                 ) -> UniformPlan | None:
    """The :class:`UniformPlan` of a selection laid out as ``SELECT *`` is (the partition key columns,
    the clustering columns, then distinct atomic regular columns), for a table without static or
    dropped columns; None for any other selection or table (then rows go through :func:`raw_values_of`).
    ``general`` is the selection's :func:`raw_values_of`, for general records.

    The struct keeps the table's other regular columns as fields too, so a record body is checked
    for the same shape as ``decode_row_or_uniform`` checks it."""
    if table.dropped_columns or table.static_columns:
        return None
    keys = table.primary_key
    nk = len(keys)
    if len(cols) < nk or any(c.name != k.name for c, k in zip(cols, keys)):
        return None
    rest = cols[nk:]
    if any(c.kind != REGULAR or c.type.is_multicell for c in rest):
        return None
    names = tuple(c.name for c in rest)
    regular = table.regular_columns
    if len(names) == len(regular) and set(names) == {c.name for c in regular}:
        others: tuple[str, ...] = ()
    elif len(set(names)) == len(names):
        others = tuple(c.name for c in regular if c.name not in set(names))
    else:
        return None
    return UniformPlan(_values_decoder(names + others), len(names), bool(others), general)


@functools.lru_cache(maxsize=256)
def _values_decoder(fields: tuple[str, ...]) -> Callable[[memoryview], tuple]:
    """The uniform body decoder whose values struct has ``fields`` (column names) in this order; made
    once per distinct field list (a struct type and its decoder cost far more than a small read)."""
    values = msgspec.defstruct("UniformValues", [(f"v{i}", Optional[bytes], None) for i in range(len(fields))],
                               rename={f"v{i}": name for i, name in enumerate(fields)})
    return uniform_values_decoder(values)


def raw_decoder(cols: list[Column]) -> Callable[[list[list[bytes | None]]], list[tuple]]:
    """Python values (what ``type.deserialize`` gives) of a page of :func:`raw_values_of` rows, as one
    tuple per row, decoded a column at a time: integers decoded inline, uuids and the other types by
    :func:`_fast_deserializer`, and a partition key value deserialized once for the rows of its
    partition when it is immutable (a native type)."""
    from_bytes = int.from_bytes
    int_plan = [(i, _int_size(c), _fast_deserializer(c)) for i, c in enumerate(cols)
                if _int_size(c) > 0 and c.kind != PARTITION_KEY]
    other_plan = [(i, _fast_deserializer(c)) for i, c in enumerate(cols)
                  if _int_size(c) < 0 and not (c.kind == PARTITION_KEY and c.type.kind == "native")]
    shared_plan = [(i, _fast_deserializer(c)) for i, c in enumerate(cols)
                   if c.kind == PARTITION_KEY and c.type.kind == "native"]

    def shared(column: tuple, des: Callable[[bytes], Any]) -> list[Any]:
        out: list[Any] = []
        add = out.append
        last: Any = None
        value: Any = None
        for b in column:
            if b is None:
                add(None)
                continue
            if b is not last:
                last, value = b, des(b)
            add(value)
        return out

    def decode(raw: list[list[bytes | None]]) -> list[tuple]:
        if not raw:
            return []
        columns: list[Any] = list(zip(*raw))
        for i, des in shared_plan:
            columns[i] = shared(columns[i], des)
        for i, size, des in int_plan:
            columns[i] = [None if b is None else from_bytes(b, "big", signed=True) if len(b) == size else des(b)
                          for b in columns[i]]
        for i, des in other_plan:
            columns[i] = [None if b is None else des(b) for b in columns[i]]
        return list(zip(*columns))
    return decode


def wire_exact(t: Any) -> bool:
    """Whether stored bytes of type ``t`` are already what serializing their deserialized value gives.

    Every value is stored as the type's canonical serialization (``types_codec``: sets and maps
    sorted by the comparator, ``EMPTY`` kept), so they are, except user types: a frozen value
    written before ``ALTER TYPE ... ADD`` has fewer fields than the type now has, and a read
    returns it with the new fields null."""
    if t.kind == "udt":
        return False
    k = t.kind
    inner: tuple = ()
    if k in ("list", "set", "vector"):
        inner = (t.element,)
    elif k == "map":
        inner = (t.key, t.value)
    elif k == "tuple":
        inner = tuple(t.items)
    return all(wire_exact(i) for i in inner)


def raw_encoder(cols: list[Column]) -> Callable[[list[list[bytes | None]]], bytes]:
    """A Rows result's ``<rows_content>`` (protocol v3 to v5) from :func:`raw_values_of` rows: each value
    as ``[bytes]``, as stored, the same bytes as serializing the deserialized value (``wire_exact``;
    values of other types do make that round trip)."""
    again = [(i, (lambda b, t=c.type: t.serialize(t.deserialize(b))))
             for i, c in enumerate(cols) if not wire_exact(c.type)]
    pack = struct.Struct(">i").pack

    def encode(rows: list[list[bytes | None]]) -> bytes:
        out: list[bytes] = []
        add = out.append
        for raw in rows:
            if again:
                raw = raw.copy()
                for i, f in again:
                    if raw[i] is not None:
                        raw[i] = f(raw[i])
            for b in raw:
                if b is None:
                    add(_NULL)
                else:
                    add(pack(len(b)))
                    add(b)
        return b"".join(out)
    return encode
