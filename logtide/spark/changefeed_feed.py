"""What the driver learns about a changefeed before reading it: its table's columns, MODE, FORMAT, barriers.

From the local catalog (``path``), else over CQL (``system_schema`` and ``system_logtide.changefeeds``
on ``cqlHost:cqlPort``), else from the ``tableSchema``, ``mode`` and ``format`` options (a topic on a
foreign Kafka cluster).  docs/spark.md "Source 3".
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import types as T
from .changefeed_options import ChangefeedSettings
from .changefeed_rows import FeedShape
from .options import Connection, OptionError
from .table_info import ColumnInfo, TableInfo

_KIND_ORDER = {"partition_key": 0, "clustering": 1}


@dataclass(frozen=True)
class FeedInfo:
    """The feed's shape, whether its records carry virtual timestamps and barriers, whether it was created WITH
    INITIAL_SCAN = TRUE and its scan is still running (None: unknown, for a topic known by ``tableSchema`` only)."""

    shape: FeedShape
    virtual_timestamps: bool | None
    barriers: bool | None
    initial_scan: bool | None = None
    scanning: bool | None = None

    @property
    def table_readable(self) -> bool:
        """Whether the feed's table can be read (its schema came from a catalog: a data directory or CQL)."""
        return self.initial_scan is not None


def table_info(keyspace: str, name: str, columns: list[ColumnInfo]) -> TableInfo:
    cols = sorted(columns, key=lambda c: (_KIND_ORDER.get(c.kind, 2),
                                          c.position if c.kind in _KIND_ORDER else 0, c.name))
    return TableInfo(keyspace, name, tuple(cols))


def load_feed(s: ChangefeedSettings) -> FeedInfo:
    """The feed's info from wherever the options say (see the module docstring)."""
    if s.address.path is not None:
        return _local(s)
    if s.table_schema is not None:
        return _given(s)
    return _over_cql(s)


def _with_overrides(s: ChangefeedSettings, table: TableInfo, mode: str, fmt: str, vts: bool | None,
                    barriers: bool | None, initial_scan: bool, scanning: bool) -> FeedInfo:
    return FeedInfo(FeedShape(table, s.mode or mode, s.format or fmt), vts, barriers, initial_scan, scanning)


def _local(s: ChangefeedSettings) -> FeedInfo:
    from ..changefeed.api import UnknownTopic
    from ..changefeed.reader import DirectoryTopicReader

    try:
        reader = DirectoryTopicReader(s.address.path)
    except Exception as e:  # noqa: BLE001 (a missing or unreadable directory)
        raise OptionError(f"option path: cannot open the logtide data directory {s.address.path}: {e}") from None
    try:
        table, feed = reader.feed(s.address.topic)
        state = reader.describe(s.address.topic).state
    except UnknownTopic as e:
        raise OptionError(f"option topic: {e}") from None
    finally:
        reader.close()
    cols = [ColumnInfo(c.name, c.kind, c.position, c.type) for c in table.columns]
    o = feed.options
    return _with_overrides(s, table_info(table.keyspace, table.name, cols), o.mode, o.format,
                           bool(o.virtual_timestamps), bool(o.barriers_interval_ms), bool(o.initial_scan),
                           state == "INITIAL_SCAN")


def _given(s: ChangefeedSettings) -> FeedInfo:
    from ..cql.parser import parse
    from ..errors import CqlError

    if s.mode is None or s.format is None:
        raise OptionError("options mode and format are required with tableSchema (the changefeed's MODE and FORMAT)")
    ddl = f"CREATE TABLE x.y ({s.table_schema})"
    try:
        stmt = parse(ddl).statement
        cols = []
        for c in stmt.columns:
            t = T.resolve_type(c.type, s.keyspace, lambda ks, n: None)
            if c.name in stmt.partition_key:
                cols.append(ColumnInfo(c.name, "partition_key", stmt.partition_key.index(c.name), t))
            elif c.name in stmt.clustering_key:
                cols.append(ColumnInfo(c.name, "clustering", stmt.clustering_key.index(c.name), t))
            else:
                cols.append(ColumnInfo(c.name, "static" if c.static else "regular", -1, t))
    except (CqlError, ValueError, AttributeError, TypeError) as e:
        raise OptionError(f"option tableSchema: expected CQL column definitions with a PRIMARY KEY, such as "
                          f"'pk int, ck int, a text, PRIMARY KEY ((pk), ck)': {e}") from None
    if not stmt.partition_key:
        raise OptionError("option tableSchema: no PRIMARY KEY")
    return FeedInfo(FeedShape(table_info(s.keyspace, s.table, cols), s.mode, s.format), None, None)


def table_connection(s: ChangefeedSettings) -> Connection:
    """Where the feed's table is read: the data directory (``path``), else CQL on ``cqlHost:cqlPort`` with the
    Kafka login and TLS settings."""
    if s.address.path is not None:
        return Connection(s.keyspace, s.table, path=s.address.path)
    kafka = s.address.kafka
    assert kafka is not None and s.cql_host is not None
    extra = dict(kafka.extra)  # kafka.security.protocol / kafka.ssl.ca.location say TLS for CQL too
    tls = kafka.ssl or extra.get("security.protocol", "").upper() in ("SSL", "SASL_SSL")
    return Connection(s.keyspace, s.table, (s.cql_host,), s.cql_port, None, s.cql_username, s.cql_password,
                      tls, kafka.ssl_ca_file or extra.get("ssl.ca.location"), timeout=kafka.timeout)


def table_options(s: ChangefeedSettings) -> dict[str, str]:
    """The ``logtide`` (table) source options that read the feed's table (:func:`table_connection`)."""
    conn = table_connection(s)
    opts = {"table": conn.qualified}
    if conn.path is not None:
        return {**opts, "path": conn.path}
    opts.update(host=",".join(conn.hosts), port=str(conn.port), timeout=str(conn.timeout))
    if conn.username is not None:
        opts.update(username=conn.username, password=conn.password or "")
    if conn.ssl:
        opts["ssl"] = "true"
    if conn.ssl and conn.ssl_ca_file:
        opts["sslCaFile"] = conn.ssl_ca_file
    return opts


def _over_cql(s: ChangefeedSettings) -> FeedInfo:
    from .client import ConnectionRefused, open_client
    from .table_info import load_table

    conn = table_connection(s)
    try:
        client = open_client(conn)
    except ConnectionRefused:  # reached, and the login or TLS settings are wrong: the message says which
        raise
    except ConnectionError as e:
        raise OptionError(f"options cqlHost/cqlPort: the table's schema is read over CQL ({e}); give cqlHost and "
                          f"cqlPort, or tableSchema, mode and format for a topic without a CQL endpoint") from None
    with client:
        table = load_table(client, s.keyspace, s.table)
        rows = list(client.rows("SELECT mode, format, virtual_timestamps, barriers_interval_ms, initial_scan, state "
                                "FROM system_logtide.changefeeds WHERE keyspace_name = ? AND table_name = ? "
                                "AND changefeed_name = ?", (s.keyspace, s.table, s.feed)))
    if not rows:
        raise OptionError(f"option topic: table {s.keyspace}.{s.table} has no changefeed {s.feed!r}")
    mode, fmt, vts, barriers, initial_scan, state = rows[0]
    return _with_overrides(s, table, mode, fmt, bool(vts), bool(barriers), bool(initial_scan),
                           state == "INITIAL_SCAN")
