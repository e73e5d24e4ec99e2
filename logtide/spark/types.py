"""CQL types as Spark types, and CQL values (as cassandra-driver decodes them) as Arrow columns.

The mapping (docs/spark.md, "Types") follows the Spark Cassandra Connector where it is exact and
keeps every value exact otherwise:

| CQL | Spark |
| --- | --- |
| ascii, text, varchar | string |
| tinyint, smallint, int, bigint, counter | byte, short, int, long |
| float, double, boolean | float, double, boolean |
| varint | decimal(38,0) |
| decimal | string (the exact decimal, e.g. ``"12.340"``) |
| blob | binary |
| uuid, timeuuid, inet | string |
| timestamp | timestamp (UTC, millisecond values) |
| date | date |
| time | long (nanoseconds since midnight) |
| duration | struct<months:int, days:int, nanoseconds:long> |
| list<T>, set<T> (frozen or not) | array<T> |
| map<K, V> (frozen or not) | map<K, V> |
| tuple<A, B, ...> | struct<_1:A, _2:B, ...> |
| user type | struct of its fields |

Nothing here imports pyspark or pyarrow at module level: executors import this module on demand.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any, Callable, Iterable, Iterator

from ..schema import types as T

_SIMPLE_DDL = {
    "ascii": "string", "text": "string", "varchar": "string",
    "tinyint": "tinyint", "smallint": "smallint", "int": "int", "bigint": "bigint", "counter": "bigint",
    "float": "float", "double": "double", "boolean": "boolean", "varint": "decimal(38,0)",
    "decimal": "string", "blob": "binary", "uuid": "string", "timeuuid": "string", "inet": "string",
    "timestamp": "timestamp", "date": "date", "time": "bigint",
    "duration": "struct<months:int,days:int,nanoseconds:bigint>",
}


def _name(t: Any) -> str:
    return t.cql().lower()


def quote_ident(name: str) -> str:
    """A Spark DDL identifier in backquotes."""
    return "`" + name.replace("`", "``") + "`"


def spark_ddl(t: Any) -> str:
    """The Spark DDL type string of a CQL type (see the module's table)."""
    if isinstance(t, (T.ListType, T.SetType, T.VectorType)):
        return f"array<{spark_ddl(t.element)}>"
    if isinstance(t, T.MapType):
        return f"map<{spark_ddl(t.key)},{spark_ddl(t.value)}>"
    if isinstance(t, T.UserType):
        return "struct<" + ",".join(f"{quote_ident(n)}:{spark_ddl(ft)}"
                                for n, ft in zip(t.field_names, t.field_types)) + ">"
    if isinstance(t, T.TupleType):
        return "struct<" + ",".join(f"_{i + 1}:{spark_ddl(ft)}" for i, ft in enumerate(t.items)) + ">"
    name = _name(t)
    if name not in _SIMPLE_DDL:
        raise ValueError(f"CQL type {t.cql()} has no Spark mapping")
    return _SIMPLE_DDL[name]


def arrow_type(t: Any) -> Any:
    """The Arrow type Spark expects for the Spark type of CQL type ``t``."""
    import pyarrow as pa

    if isinstance(t, (T.ListType, T.SetType, T.VectorType)):
        return pa.list_(arrow_type(t.element))
    if isinstance(t, T.MapType):
        return pa.map_(arrow_type(t.key), arrow_type(t.value))
    if isinstance(t, T.UserType):
        return pa.struct([pa.field(n, arrow_type(ft)) for n, ft in zip(t.field_names, t.field_types)])
    if isinstance(t, T.TupleType):
        return pa.struct([pa.field(f"_{i + 1}", arrow_type(ft)) for i, ft in enumerate(t.items)])
    return {
        "string": pa.string(), "tinyint": pa.int8(), "smallint": pa.int16(), "int": pa.int32(),
        "bigint": pa.int64(), "float": pa.float32(), "double": pa.float64(), "boolean": pa.bool_(),
        "decimal(38,0)": pa.decimal128(38, 0), "binary": pa.binary(), "timestamp": pa.timestamp("us", tz="UTC"),
        "date": pa.date32(),
        "struct<months:int,days:int,nanoseconds:bigint>": pa.struct(
            [pa.field("months", pa.int32()), pa.field("days", pa.int32()), pa.field("nanoseconds", pa.int64())]),
    }[spark_ddl(t)]


def _identity(v: Any) -> Any:
    return v


def converter(t: Any) -> Callable[[Any], Any]:
    """A function from a driver-decoded CQL value to the Python value Arrow takes for ``arrow_type(t)``."""
    if isinstance(t, (T.ListType, T.SetType, T.VectorType)):
        el = converter(t.element)
        return lambda v: None if v is None else [el(x) for x in v]
    if isinstance(t, T.MapType):
        k, val = converter(t.key), converter(t.value)
        return lambda v: None if v is None else [(k(a), val(b)) for a, b in v.items()]
    if isinstance(t, (T.UserType, T.TupleType)):
        if isinstance(t, T.UserType):
            names = list(t.field_names)
            convs = [converter(ft) for ft in t.field_types]
        else:
            names = [f"_{i + 1}" for i in range(len(t.items))]
            convs = [converter(ft) for ft in t.items]

        def struct(v: Any) -> Any:
            if v is None:
                return None
            vals = list(v) + [None] * (len(names) - len(v))
            return {n: c(x) for n, c, x in zip(names, convs, vals)}
        return struct
    name = _name(t)
    if name in ("uuid", "timeuuid", "inet"):
        return lambda v: None if v is None else str(v)
    if name == "decimal":
        return lambda v: None if v is None else str(v)
    if name == "varint":
        return lambda v: None if v is None else decimal.Decimal(v)
    if name == "date":
        return _date
    if name == "time":
        return lambda v: None if v is None else int(getattr(v, "nanosecond_time", v))
    if name == "timestamp":
        return _timestamp
    if name == "duration":
        return lambda v: None if v is None else {"months": v.months, "days": v.days, "nanoseconds": v.nanoseconds}
    return _identity


_EPOCH = datetime.date(1970, 1, 1)


def _date(v: Any) -> Any:
    if v is None or isinstance(v, datetime.date):
        return v
    try:
        return v.date()
    except ValueError:  # outside Python's date range: days since the epoch
        return _EPOCH + datetime.timedelta(days=v.days_from_epoch)


def _timestamp(v: Any) -> Any:
    if v is None:
        return None
    return v if v.tzinfo else v.replace(tzinfo=datetime.timezone.utc)


class ArrowBatcher:
    """Collects converted rows column by column and cuts them into ``pyarrow.RecordBatch`` objects."""

    def __init__(self, names: list[str], types: list[Any], batch_rows: int = 4096) -> None:
        import pyarrow as pa

        self._pa = pa
        self.schema = pa.schema([pa.field(n, t) for n, t in zip(names, types)])
        self.batch_rows = batch_rows
        self.columns: list[list[Any]] = [[] for _ in names]
        self.rows = 0

    def add(self, values: list[Any] | tuple) -> Any:
        """Add one row (already converted); returns a full batch when one is ready, else None."""
        for col, v in zip(self.columns, values):
            col.append(v)
        self.rows += 1
        if self.rows >= self.batch_rows:
            return self.flush()
        return None

    def flush(self) -> Any:
        """The pending rows as one batch (None when there are none)."""
        if not self.rows:
            return None
        pa = self._pa
        arrays = [pa.array(col, type=f.type) for col, f in zip(self.columns, self.schema)]
        self.columns = [[] for _ in self.columns]
        self.rows = 0
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def column_converter(t: Any) -> Callable[[Any], Any] | None:
    """:func:`converter` for a column, or None when Arrow takes the driver's values as they are."""
    conv = converter(t)
    return None if conv is _identity else conv


class PageBatcher:
    """Turns pages of driver rows (lists of tuples) into ``pyarrow.RecordBatch`` objects column by column.

    No per-row work in Python beyond what a column needs: the pending rows are transposed once
    (``zip(*rows)``), columns whose values Arrow takes as they are go to ``pyarrow.array`` directly,
    the others through their converter in one comprehension.  Output column ``i`` is either the
    row's value ``picks[i] = (index, converter or None)``, or, when ``picks[i]`` is a callable, what
    it computes from the transposed columns (an Arrow array: the CDC source's ``_change_type`` ...)."""

    def __init__(self, names: list[str], types: list[Any], picks: list[Any], batch_rows: int = 50_000) -> None:
        import pyarrow as pa

        self._pa = pa
        self.schema = pa.schema([pa.field(n, t) for n, t in zip(names, types)])
        self.picks = picks
        self.batch_rows = batch_rows
        self.pending: list = []

    def add(self, page: list) -> Any:
        """Add one page of rows; returns a batch once ``batch_rows`` rows are pending, else None."""
        self.pending.extend(page)
        if len(self.pending) >= self.batch_rows:
            return self.flush()
        return None

    def flush(self) -> Any:
        """The pending rows as one batch (None when there are none)."""
        if not self.pending:
            return None
        pa = self._pa
        rows, self.pending = self.pending, []
        columns = list(zip(*rows))
        arrays = []
        for pick, f in zip(self.picks, self.schema):
            if callable(pick):
                arrays.append(pick(columns))
                continue
            col, conv = columns[pick[0]], pick[1]
            arrays.append(pa.array(col if conv is None else [conv(v) for v in col], type=f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def batches(self, pages: Iterable[list]) -> Iterator[Any]:
        """The batches of every page of ``pages``, the last one flushed at their end."""
        for page in pages:
            batch = self.add(page)
            if batch is not None:
                yield batch
        batch = self.flush()
        if batch is not None:
            yield batch
