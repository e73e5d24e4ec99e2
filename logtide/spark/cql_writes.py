"""CQL writes that reproduce a source table's cells in a target table, with their original timestamps and TTLs.

Two producers: a CDC delta row (:func:`delta_statements`, the way ScyllaDB's CDC replicator and
``logtide replay`` read spec 000/002), and a snapshot row read with write times and TTLs
(:func:`snapshot_statements`, in the mode the source server allows: :data:`SNAPSHOT_OPTIONS`).
Every statement carries ``USING TIMESTAMP``, so applying any of them again changes nothing; non-frozen list elements keep their timeuuid keys through
``SCYLLA_TIMEUUID_LIST_INDEX(?)``.  Values arrive as Spark hands them over and go back to the
Python values cassandra-driver binds.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from typing import Any, Callable, Iterable

from ..cdc import log_schema as L
from ..schema import types as T
from .cell_meta import LIST_KEYS_PREFIX, MARKER_TTL, MARKER_WRITETIME, TTL_PREFIX, WRITETIME_PREFIX
from .options import quote
from .table_info import ColumnInfo, TableInfo

Statement = tuple[str, tuple]
UPDATE, INSERT, ROW_DELETE, PARTITION_DELETE = 1, 2, 3, 4
LEFT_INCLUSIVE, LEFT_EXCLUSIVE, RIGHT_INCLUSIVE, RIGHT_EXCLUSIVE = 5, 6, 7, 8
SNAPSHOT_COLLECTION_TIMESTAMP = 1  # see docs/spark.md, "What the snapshot copies"
APPROXIMATE, ELEMENTS, EXACT = "approximate", "elements", "exact"
SNAPSHOT_OPTIONS = {  # the table source's options for each snapshot mode (what the source server answers)
    EXACT: {"writetime": "elements", "ttl": "original", "listKeys": "true", "rowMarker": "true"},
    ELEMENTS: {"writetime": "elements", "ttl": "elements"},
    APPROXIMATE: {"writetime": "true", "ttl": "true"},
}


def to_cql(t: Any) -> Callable[[Any], Any]:
    """The inverse of :func:`logtide.spark.types.converter`: a Spark value back to a driver value."""
    if isinstance(t, (T.ListType, T.VectorType)):
        el = to_cql(t.element)
        return lambda v: None if v is None else [el(x) for x in v]
    if isinstance(t, T.SetType):
        el = to_cql(t.element)
        return lambda v: None if v is None else {el(x) for x in v}
    if isinstance(t, T.MapType):
        k, val = to_cql(t.key), to_cql(t.value)
        return lambda v: None if v is None else {k(a): val(b) for a, b in _items(v)}
    if isinstance(t, (T.UserType, T.TupleType)):
        types = t.field_types if isinstance(t, T.UserType) else t.items
        convs = [to_cql(ft) for ft in types]
        return lambda v: None if v is None else tuple(c(x) for c, x in zip(convs, list(v)))
    name = t.cql().lower()
    if name in ("uuid", "timeuuid"):
        return lambda v: None if v is None else uuid.UUID(v)
    if name == "decimal":
        return lambda v: None if v is None else decimal.Decimal(v)
    if name == "varint":
        return lambda v: None if v is None else int(v)
    if name == "blob":
        return lambda v: None if v is None else bytes(v)
    if name == "duration":
        from cassandra.util import Duration

        return lambda v: None if v is None else Duration(v["months"], v["days"], v["nanoseconds"])
    if name == "timestamp":
        return lambda v: None if v is None else (v if v.tzinfo else v.replace(tzinfo=datetime.timezone.utc))
    return lambda v: v


def _items(v: Any) -> Iterable:
    return v.items() if isinstance(v, dict) else v


class TargetWriter:
    """Builds the statements for one target table from rows of the source table or of its CDC log."""

    def __init__(self, source: TableInfo, target: str, snapshot_mode: str = APPROXIMATE) -> None:
        self.source = source
        self.target = target
        self.snapshot_mode = snapshot_mode  # what the snapshot rows carry: see SNAPSHOT_OPTIONS
        self.convert = {c.name: to_cql(c.type) for c in source.columns}

    def _key(self, row: Any, prefix_only: bool = False) -> tuple[list[str], list[Any]]:
        where, params = [], []
        for c in self.source.partition_key:
            where.append(f"{quote(c.name)} = ?")
            params.append(self.convert[c.name](row[c.name]))
        for c in self.source.clustering:
            v = row[c.name]
            if v is None:
                break
            where.append(f"{quote(c.name)} = ?")
            params.append(self.convert[c.name](v))
        return where, params

    def _full_clustering(self, row: Any) -> bool:
        return all(row[c.name] is not None for c in self.source.clustering)

    def _regular(self, row: Any) -> list[ColumnInfo]:
        static_only = not self._full_clustering(row)
        return [c for c in self.source.regular if (c.kind == "static") or not static_only]

    # -- CDC delta rows ----------------------------------------------------
    def delta_statements(self, rows: list[Any]) -> list[Statement]:
        """The statements of one write (the delta rows of one ``cdc$stream_id``/``cdc$time``, in order)."""
        out: list[Statement] = []
        left = None
        for row in rows:
            op = row[L.OPERATION]
            ts = row["_commit_version"]
            if op in (UPDATE, INSERT):
                out.extend(self._cells(row, ts, op == INSERT))
            elif op in (ROW_DELETE, PARTITION_DELETE, -3, -4):  # -3, -4: the server's row TTL expiry
                where, params = self._key(row)
                out.append((f"DELETE FROM {self.target} USING TIMESTAMP {ts} WHERE {' AND '.join(where)}",
                            tuple(params)))
            elif op in (LEFT_INCLUSIVE, LEFT_EXCLUSIVE):
                left = row
            elif op in (RIGHT_INCLUSIVE, RIGHT_EXCLUSIVE):
                out.append(self._range(left, row, ts))
                left = None
        if left is not None:
            out.append(self._range(left, None, left["_commit_version"]))
        return out

    def _range(self, left: Any, right: Any, ts: int) -> Statement:
        base = left if left is not None else right
        where = [f"{quote(c.name)} = ?" for c in self.source.partition_key]
        params = [self.convert[c.name](base[c.name]) for c in self.source.partition_key]
        for row, ops in ((left, {LEFT_INCLUSIVE: ">=", LEFT_EXCLUSIVE: ">"}),
                         (right, {RIGHT_INCLUSIVE: "<=", RIGHT_EXCLUSIVE: "<"})):
            if row is None:
                continue
            cols = [c for c in self.source.clustering if row[c.name] is not None]
            if not cols:
                continue
            names = ", ".join(quote(c.name) for c in cols)
            where.append(f"({names}) {ops[row[L.OPERATION]]} ({', '.join('?' for _ in cols)})")
            params.extend(self.convert[c.name](row[c.name]) for c in cols)
        return f"DELETE FROM {self.target} USING TIMESTAMP {ts} WHERE {' AND '.join(where)}", tuple(params)

    def _cells(self, row: Any, ts: int, insert: bool) -> list[Statement]:
        where, key = self._key(row)
        w = " AND ".join(where)
        ttl = row[L.TTL]
        using = f"USING TIMESTAMP {ts}" + (f" AND TTL {ttl}" if ttl else "")
        out: list[Statement] = []
        if insert and self._full_clustering(row):
            cols = [quote(c.name) for c in self.source.partition_key + self.source.clustering]
            out.append((f"INSERT INTO {self.target} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)}) "
                        f"{using}", tuple(key)))
        sets, params = [], []
        for c in self._regular(row):
            name, q = c.name, quote(c.name)
            value = row[name]
            deleted = bool(row[L.DELETED + name])
            if not c.type.is_multicell:
                if value is not None:
                    sets.append(f"{q} = ?")
                    params.append(self.convert[name](value))
                elif deleted:
                    sets.append(f"{q} = null")
                continue
            if deleted:  # a collection tombstone one below the write (spec 002)
                out.append((f"UPDATE {self.target} USING TIMESTAMP {ts} SET {q} = null WHERE {w}", tuple(key)))
            removed = row[L.DELETED_ELEMENTS + name]
            s, p = self._elements(c, value, removed)
            sets.extend(s)
            params.extend(p)
        if sets:
            out.append((f"UPDATE {self.target} {using} SET {', '.join(sets)} WHERE {w}", tuple(params + key)))
        return out

    def _elements(self, c: ColumnInfo, value: Any, removed: Any) -> tuple[list[str], list[Any]]:
        t, q = c.type, quote(c.name)
        sets: list[str] = []
        params: list[Any] = []
        if isinstance(t, T.ListType):
            # the log holds map<timeuuid, element>: each element under its own key
            el = to_cql(t.element)
            for k, v in _items(value or []):
                sets.append(f"{q}[SCYLLA_TIMEUUID_LIST_INDEX(?)] = ?")
                params.extend([uuid.UUID(k), el(v)])
            for k in removed or []:
                sets.append(f"{q}[SCYLLA_TIMEUUID_LIST_INDEX(?)] = null")
                params.append(uuid.UUID(k))
        elif isinstance(t, T.UserType):
            for i, (fname, ftype) in enumerate(zip(t.field_names, t.field_types)):
                v = None if value is None else _field(value, fname, i)
                if v is not None:
                    sets.append(f"{q}.{quote(fname)} = ?")
                    params.append(to_cql(ftype)(v))
            for i in removed or []:
                sets.append(f"{q}.{quote(t.field_names[i])} = null")
        else:
            if value is not None:
                sets.append(f"{q} = {q} + ?")
                params.append(self.convert[c.name](value))
            if removed:
                key_type = t.element if isinstance(t, T.SetType) else t.key
                sets.append(f"{q} = {q} - ?")
                params.append({to_cql(key_type)(k) for k in removed})
        return sets, params

    # -- snapshot rows -----------------------------------------------------
    def snapshot_statements(self, row: Any) -> list[Statement]:
        """Statements that copy one row read with ``writetime`` and ``ttl`` columns (docs/spark.md)."""
        if self.snapshot_mode != APPROXIMATE:
            return self._per_element_snapshot(row)
        where, key = self._key(row)
        w = " AND ".join(where)
        out: list[Statement] = []
        regular = self._regular(row)
        if self._full_clustering(row) and all(row[c.name] is None for c in regular if c.kind != "static"):
            cols = [quote(c.name) for c in self.source.partition_key + self.source.clustering]
            out.append((f"INSERT INTO {self.target} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)}) "
                        f"USING TIMESTAMP {SNAPSHOT_COLLECTION_TIMESTAMP}", tuple(key)))
        atomic: dict[tuple[str, tuple], list[tuple[str, Any]]] = {}  # cells sharing (timestamp, TTL) and key
        for c in regular:
            value = row[c.name]
            if value is None:
                continue
            q = quote(c.name)
            cwhere, ckey = (w, key)
            if c.kind == "static":
                pk = self.source.partition_key
                cwhere = " AND ".join(f"{quote(p.name)} = ?" for p in pk)
                ckey = key[:len(pk)]
            if not c.type.is_multicell:
                ttl = row["_ttl_" + c.name]
                using = f"USING TIMESTAMP {row['_writetime_' + c.name]}" + (f" AND TTL {ttl}" if ttl else "")
                atomic.setdefault((f"{using} WHERE {cwhere}", tuple(ckey)), []).append(
                    (f"{q} = ?", self.convert[c.name](value)))
            elif isinstance(c.type, T.ListType):
                continue  # element keys cannot be read over CQL: lists come from the CDC log
            elif isinstance(c.type, T.UserType):
                sets, params = self._elements(c, value, None)
                if sets:
                    out.append((f"UPDATE {self.target} USING TIMESTAMP {SNAPSHOT_COLLECTION_TIMESTAMP} "
                                f"SET {', '.join(sets)} WHERE {cwhere}", (*params, *ckey)))
            else:
                out.append((f"UPDATE {self.target} USING TIMESTAMP {SNAPSHOT_COLLECTION_TIMESTAMP} "
                            f"SET {q} = {q} + ? WHERE {cwhere}", (self.convert[c.name](value), *ckey)))
        for (using_where, ckey), cells in atomic.items():
            using, _, cwhere = using_where.partition(" WHERE ")
            out.append((f"UPDATE {self.target} {using} SET {', '.join(a for a, _ in cells)} WHERE {cwhere}",
                        (*[v for _, v in cells], *ckey)))
        return out


    def _per_element_snapshot(self, row: Any) -> list[Statement]:
        """A row read with per-element write times and TTLs: every cell, element and field with its own.

        ``EXACT`` rows (a logtide source) also carry original TTLs, list keys and the row marker;
        ``ELEMENTS`` rows (Cassandra 5.0) carry remaining TTLs, and lists and markers are copied as
        the approximate snapshot copies them (docs/spark.md, "What the snapshot copies")."""
        where, key = self._key(row)
        pk = len(self.source.partition_key)
        out: list[Statement] = []
        exact = self.snapshot_mode == EXACT
        cols = [quote(c.name) for c in self.source.partition_key + self.source.clustering]
        insert = f"INSERT INTO {self.target} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)}) "
        regular = self._regular(row)
        full = self._full_clustering(row)
        if full and exact and row[MARKER_WRITETIME] is not None:
            ttl = row[MARKER_TTL]
            out.append((insert + f"USING TIMESTAMP {row[MARKER_WRITETIME]}" + (f" AND TTL {ttl}" if ttl else ""),
                        tuple(key)))
        elif full and not exact and all(row[c.name] is None for c in regular if c.kind != "static"):
            out.append((insert + f"USING TIMESTAMP {SNAPSHOT_COLLECTION_TIMESTAMP}", tuple(key)))
        groups: dict[tuple[int, int, bool], tuple[list[str], list[Any]]] = {}  # (timestamp, TTL, static)
        merged: dict[tuple[tuple[int, int, bool], str], Any] = {}  # set/map elements of one group, merged

        def put(ts: int, ttl: int | None, static: bool, clause: str, *params: Any) -> None:
            sets, ps = groups.setdefault((ts, ttl or 0, static), ([], []))
            sets.append(clause)
            ps.extend(params)

        for c in regular:
            value = row[c.name]
            if value is None or (not exact and isinstance(c.type, T.ListType) and c.type.is_multicell):
                continue  # without their keys, lists come from the CDC log only
            t, q, static = c.type, quote(c.name), c.kind == "static"
            stamps, ttls = row[WRITETIME_PREFIX + c.name], row[TTL_PREFIX + c.name]
            if not t.is_multicell:
                put(stamps, ttls, static, f"{q} = ?", self.convert[c.name](value))
            elif isinstance(t, T.ListType):
                el = to_cql(t.element)
                for k, v, ts, ttl in zip(row[LIST_KEYS_PREFIX + c.name], value, stamps, ttls):
                    put(ts, ttl, static, f"{q}[SCYLLA_TIMEUUID_LIST_INDEX(?)] = ?", uuid.UUID(k), el(v))
            elif isinstance(t, T.UserType):
                for i, (fname, ftype) in enumerate(zip(t.field_names, t.field_types)):
                    v = _field(value, fname, i)
                    if v is not None:
                        put(stamps[i], ttls[i], static, f"{q}.{quote(fname)} = ?", to_cql(ftype)(v))
            else:
                for (k, v), ts, ttl in zip(_in_cql_order(t, value), stamps, ttls):
                    part = merged.setdefault(((ts, ttl or 0, static), c.name),
                                             {} if isinstance(t, T.MapType) else set())
                    if isinstance(part, dict):
                        part[k] = v
                    else:
                        part.add(k)
        for (group, name), part in merged.items():
            put(*group, f"{quote(name)} = {quote(name)} + ?", part)
        for (ts, ttl, static), (sets, params) in groups.items():
            using = f"USING TIMESTAMP {ts}" + (f" AND TTL {ttl}" if ttl else "")
            ckey = key[:pk] if static else key
            cwhere = " AND ".join(where[:pk] if static else where)
            out.append((f"UPDATE {self.target} {using} SET {', '.join(sets)} WHERE {cwhere}", (*params, *ckey)))
        return out


def _in_cql_order(t: Any, value: Any) -> list[tuple[Any, Any]]:
    """A set's or map's (key, value) pairs as driver values, in CQL's element order (the order
    ``WRITETIME`` lists its elements in); Spark's order is not CQL's for every type."""
    kt = t.element if isinstance(t, T.SetType) else t.key
    key, val = to_cql(kt), (to_cql(t.value) if isinstance(t, T.MapType) else None)
    pairs = [(key(k), val(v)) for k, v in _items(value)] if val else [(key(k), None) for k in value]
    return sorted(pairs, key=lambda kv: kt.comparable(kt.serialize(kv[0])))


def _field(value: Any, name: str, index: int) -> Any:
    if isinstance(value, dict):
        return value.get(name)
    try:
        return value[name]
    except (KeyError, TypeError, ValueError, IndexError):
        return value[index] if index < len(value) else None
