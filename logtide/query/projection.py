"""Result values of SELECT rows, with a one-pass path for rows read from uniform (CDC log) records.

Consumers read the CDC log by stream and time window, ``SELECT * FROM ks.t_scylla_cdc_log WHERE
"cdc$stream_id" = ? AND "cdc$time" > ? ...`` (ScyllaDB's CDC docs, "Querying CDC log tables"): many
rows of one partition, every column a plain column.  For such a selection the work that is the same
for every row -- which column comes from where, and with which codec -- is planned once per query
and the partition key values are deserialized once per partition (``docs/performance.md``,
"Reading the CDC log").  Values are exactly those of each selector's ``compute``.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Callable

from ..schema.model import CLUSTERING, PARTITION_KEY, STATIC, Column

if TYPE_CHECKING:
    from .select import CqlRow, Selected

_INT_SIZES = {"int": 4, "bigint": 8, "smallint": 2, "tinyint": 1}
_new = object.__new__
_set = object.__setattr__
_UNKNOWN = uuid.SafeUUID.unknown
_UUID = uuid.UUID


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
    """The result values of a row for a selection.

    When every selector is a plain non-static column, rows read from uniform records (CDC log rows,
    ``read.uniform_live_row``) are projected in one pass over a plan made once per query.  Any
    other row or selection goes through each selector's ``compute``."""
    computes = [s.compute for s in selected]

    def general(r: "CqlRow") -> list[Any]:
        return [c(r) for c in computes]
    cols = [s.column for s in selected]
    if any(c is None or c.kind == STATIC or c.type.is_multicell for c in cols):
        return general
    # partition key values are shared by the rows of a partition only when immutable (native types)
    key_plan = [(i, c.position, _fast_deserializer(c)) for i, c in enumerate(cols)  # type: ignore[union-attr]
                if c.kind == PARTITION_KEY and c.type.kind == "native"]  # type: ignore[union-attr]
    shared = {i for i, _, _ in key_plan}
    pk_plan = [(i, c.position, _fast_deserializer(c)) for i, c in enumerate(cols)  # type: ignore[union-attr]
               if c.kind == PARTITION_KEY and i not in shared]  # type: ignore[union-attr]
    ck_plan = [(i, c.position, _int_size(c), _fast_deserializer(c)) for i, c in enumerate(cols)  # type: ignore
               if c.kind == CLUSTERING]  # type: ignore[union-attr]
    value_plan = [(i, c.name, _int_size(c), _fast_deserializer(c)) for i, c in enumerate(cols)  # type: ignore
                  if not c.is_primary_key]  # type: ignore[union-attr]
    from_bytes = int.from_bytes
    template: list[Any] = [None] * len(cols)
    last_key: list[Any] = [None]

    def project(r: "CqlRow") -> list[Any]:
        row = r.row
        if row is None or row.values is None:
            return general(r)
        key = r.key
        if key is not last_key[0]:
            last_key[0] = key
            for i, at, des in key_plan:
                template[i] = des(key[at])
        out = template.copy()
        for i, at, des in pk_plan:
            out[i] = des(key[at])
        clustering = row.clustering
        for i, at, size, des in ck_plan:  # integers inline: most log columns are
            b = clustering[at]
            out[i] = from_bytes(b, "big", signed=True) if len(b) == size else des(b)
        get = row.values.get
        for i, at, size, des in value_plan:
            b = get(at)
            if b is not None:
                out[i] = from_bytes(b, "big", signed=True) if len(b) == size else des(b)
        return out
    return project
