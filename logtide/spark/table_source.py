"""``spark.read.format("logtide")``: a table read in token ranges over CQL, or from a local data directory.

Each input partition is a token range ``(lo, hi]`` read with
``SELECT ... WHERE token(pk) > ? AND token(pk) <= ?`` (what the Spark Cassandra Connector and
scylla-migrator do), by an executor, as Arrow batches.  Options and the type mapping: docs/spark.md.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from . import types as ST
from .cell_meta import (OPTION_KEYS, WRITETIME_PREFIX, MetaColumn, MetaOptions, Support, legacy_columns,
                        server_support)
from .client import open_client, shared_client
from .compat import has_filter_pushdown, require
from .errors import user_errors
from .options import Connection, OptionError, check_known, connector_options, parse_bool, parse_int, quote
from .split_size import OPTION as SPLIT_SIZE, split_count, split_size_mb, table_size
from .table_info import ColumnInfo, TableInfo, load_table

MIN_TOKEN = -(1 << 63)
MAX_TOKEN = (1 << 63) - 1
TABLE_KEYS = Connection.KEYS | OPTION_KEYS | {"splits", "tokenranges", "filterpushdown", SPLIT_SIZE.lower()}
_PUSHABLE = {"ascii", "text", "varchar", "int", "bigint", "smallint", "tinyint", "boolean", "uuid", "timeuuid"}


def token_ranges(splits: int) -> list[tuple[int, int]]:
    """The Murmur3 ring cut into ``splits`` ranges ``(lo, hi]`` of equal width, covering every token."""
    width = ((MAX_TOKEN - MIN_TOKEN) // splits) + 1
    bounds = [MIN_TOKEN + i * width for i in range(splits)] + [MAX_TOKEN]
    return [(bounds[i], bounds[i + 1]) for i in range(splits)]


def parse_token_ranges(text: str) -> list[tuple[int, int]]:
    """``lo:hi,lo:hi`` (each range ``(lo, hi]``)."""
    out = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition(":")
        try:
            r = (int(lo), int(hi))
        except ValueError:
            raise OptionError(f"option tokenRanges: expected lo:hi pairs separated by commas, got {part!r}") from None
        if not sep or not MIN_TOKEN <= r[0] < r[1] <= MAX_TOKEN:
            raise OptionError(f"option tokenRanges: {part!r} is not a token range lo:hi with lo < hi")
        out.append(r)
    return out


@dataclass(frozen=True)
class TokenRangePartition(InputPartition):
    """One input partition: a token range, or (when the partition key was pushed down) a list of keys."""

    lo: int
    hi: int
    keys: tuple = ()


def table_schema_ddl(info: TableInfo, meta: list[MetaColumn]) -> str:
    """The Spark schema of a table, then its metadata columns (``cell_meta``)."""
    fields = [f"{ST.quote_ident(c.name)} {ST.spark_ddl(c.type)}" for c in info.columns]
    for m in meta:
        ddl = ST.spark_ddl(m.type) if m.type is not None else (
            "bigint" if m.name.startswith(WRITETIME_PREFIX) else "int")
        fields.append(f"{ST.quote_ident(m.name)} {ddl}")
    return ", ".join(fields)


class LogtideDataSource(DataSource):
    """The ``logtide`` batch source: one table (options ``host``/``port`` or ``path``, ``table``, ...)."""

    @classmethod
    def name(cls) -> str:
        return "logtide"

    def _setup(self) -> tuple[Connection, TableInfo, dict[str, str], list[MetaColumn]]:
        cached = getattr(self, "_cached", None)
        if cached is None:
            opts = connector_options(self.options, getattr(self, "conf", None))
            check_known(opts, TABLE_KEYS, "logtide")
            conn = Connection.parse(opts)
            meta = MetaOptions.parse(opts)
            support = None
            with open_client(conn) as client:
                info = load_table(client, conn.keyspace, conn.table)
                if meta.needs() != Support(False, False):
                    support = server_support(client, info)
                    meta.check(support, conn.path or ",".join(conn.hosts))
            cached = self._cached = (conn, info, opts, meta.columns(info, support is None or support.logtide))
        return cached

    @user_errors
    def schema(self) -> str:
        conn, info, opts, meta = self._setup()
        return table_schema_ddl(info, meta)

    @user_errors
    def reader(self, schema: Any) -> "TableReader":
        conn, info, opts, meta = self._setup()
        ranges = self._ranges(conn, opts)
        # Spark refuses a reader with pushFilters() unless spark.sql.python.filterPushdown.enabled is true,
        # so the pushing reader is opt-in (option filterPushdown=true, with that setting)
        pushdown = parse_bool(opts, "filterPushdown", False)
        if pushdown:
            require(has_filter_pushdown(), "filterPushdown", "4.1", "filter pushdown into Python data sources")
        cls = PushdownTableReader if pushdown else TableReader
        return cls(conn, info, [f.name for f in schema.fields], ranges, meta)


    def _ranges(self, conn: Connection, opts: dict[str, str]) -> list[tuple[int, int]]:
        """The token ranges to read: ``tokenRanges``, else ``splits`` even ranges, else as many as the table's
        estimated size over ``spark.cassandra.input.split.sizeInMB`` (an option, or from the Spark conf)."""
        given = [name for name in ("tokenRanges", "splits") if name.lower() in opts]
        if len(given) == 2:
            raise OptionError("options tokenRanges and splits exclude each other")
        if given and SPLIT_SIZE.lower() in opts:
            raise OptionError(f"options {given[0]} and {SPLIT_SIZE} exclude each other: give one")
        if "tokenranges" in opts:
            return parse_token_ranges(opts["tokenranges"])
        size_mb = None if given else split_size_mb(opts, getattr(self, "conf", None))
        if size_mb is None:
            return token_ranges(parse_int(opts, "splits", 16))
        with open_client(conn) as client:
            size = table_size(client, conn.keyspace, conn.table, conn.path or ",".join(conn.hosts))
        return token_ranges(split_count(size, size_mb))


class TableReader(DataSourceReader):
    """Plans token ranges (or pushed-down keys) and reads them as Arrow batches."""

    def __init__(self, conn: Connection, info: TableInfo, names: list[str], ranges: list[tuple[int, int]],
                 meta: Sequence[MetaColumn] = ()) -> None:
        self.conn = conn
        self.info = info
        self.names = names
        self.ranges = ranges
        self.keys: tuple | None = None
        self.selectors, self.types = _selectors(info, names, meta)

    def partitions(self) -> list:
        if self.keys is not None:
            return [TokenRangePartition(0, 0, self.keys)]
        return [TokenRangePartition(lo, hi) for lo, hi in self.ranges]

    @user_errors
    def read(self, partition: TokenRangePartition) -> Iterator:
        return read_range(self, partition)


class PushdownTableReader(TableReader):
    """A TableReader that pushes partition-key predicates into CQL (Spark 4.1+)."""

    def pushFilters(self, filters: list) -> Iterator:
        """Push ``=``/``IN`` on every partition-key column into the CQL (one query per key); keep the rest."""
        from pyspark.sql.datasource import EqualTo, In  # Spark 4.1+ (the option is refused on 4.0)

        pk = self.info.partition_key
        values: dict[str, list] = {}
        pushed = []
        for f in filters:
            col = self.info.column(f.attribute[0]) if len(f.attribute) == 1 else None
            if col is None or col.kind != "partition_key" or col.type.cql() not in _PUSHABLE:
                continue
            if isinstance(f, EqualTo):
                vals = [f.value]
            elif isinstance(f, In):
                vals = list(f.value)
            else:
                continue
            prev = values.get(col.name)
            values[col.name] = vals if prev is None else [v for v in prev if v in vals]
            pushed.append(f)
        if values and len(values) == len(pk):
            combos = itertools.product(*[[_to_cql(c, v) for v in values[c.name]] for c in pk])
            self.keys = tuple(combos)
        else:
            pushed = []
        for f in filters:
            if not any(f is p for p in pushed):
                yield f


def read_range(reader: TableReader, partition: TokenRangePartition) -> Iterator:
    """Executor side: the rows of one token range (or of the pushed-down keys) as Arrow batches.

    Pages of driver rows go to Arrow column by column (:class:`~.types.PageBatcher`); the executor
    process keeps its CQL connection across tasks (:func:`~.client.shared_client`)."""
    picks = [(i, ST.column_converter(t) if t is not None else None) for i, t in enumerate(reader.types)]
    batcher = ST.PageBatcher(reader.names, [_arrow(t, n) for t, n in zip(reader.types, reader.names)], picks)
    pk = ", ".join(quote(c.name) for c in reader.info.partition_key)
    base = f"SELECT {', '.join(reader.selectors)} FROM {reader.conn.qualified}"
    with shared_client(reader.conn) as client:
        if partition.keys:
            where = " AND ".join(f"{quote(c.name)} = ?" for c in reader.info.partition_key)
            pages = itertools.chain.from_iterable(
                client.pages(f"{base} WHERE {where}", key) for key in partition.keys)
        else:
            pages = client.pages(f"{base} WHERE token({pk}) > ? AND token({pk}) <= ?", (partition.lo, partition.hi))
        yield from batcher.batches(pages)


def _arrow(t: Any, name: str) -> Any:
    import pyarrow as pa

    if t is not None:
        return ST.arrow_type(t)
    return pa.int64() if name.startswith(WRITETIME_PREFIX) else pa.int32()


def _selectors(info: TableInfo, names: list[str], meta: Sequence[MetaColumn] = ()) -> tuple[list[str], list[Any]]:
    """CQL selectors and CQL types (None for atomic write times and TTLs) of the requested Spark columns."""
    extra = legacy_columns(info) | {m.name: m for m in meta}
    selectors, types = [], []
    for n in names:
        col = info.column(n)
        if col is not None:
            selectors.append(quote(n))
            types.append(col.type)
        elif n in extra:
            selectors.append(extra[n].selector)
            types.append(extra[n].type)
        else:
            raise OptionError(f"column {n!r} of the given schema is not a column of {info.keyspace}.{info.name}")
    return selectors, types


def _to_cql(col: ColumnInfo, v: Any) -> Any:
    if col.type.cql() in ("uuid", "timeuuid") and isinstance(v, str):
        return uuid.UUID(v)
    return v
