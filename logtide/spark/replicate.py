"""The replication job: snapshot a table with ``logtide``, then stream its CDC log with ``logtide-cdc`` into a target.

``replicate(spark, source, target, checkpoint)`` (docs/spark.md, "The replication job"):

1. creates the target keyspace, user types and table with the source's schema when missing;
2. copies the table token range by token range (``<checkpoint>/snapshot.json`` records the ranges
   done, so a restart resumes), every cell, element and row marker with its own write time and
   original TTL when the source is logtide (:func:`snapshot_mode`);
3. starts a streaming query over the source's CDC log from its earliest row, writing each delta
   through :class:`~.cql_writes.TargetWriter` (every cell keeps its write timestamp and TTL) with
   Spark's checkpoint in ``<checkpoint>/cdc``; it returns that ``StreamingQuery``.

Every write carries its original timestamp, so replaying any part twice changes nothing: a restart
after a crash re-applies at most the micro-batch that was running, and the target converges.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qsl, unquote, urlsplit

from ..cdc import log_schema as L
from .cell_meta import server_support
from .cql_writes import APPROXIMATE, ELEMENTS, EXACT, SNAPSHOT_OPTIONS
from .client import open_client, shared_client
from .options import Connection, OptionError, connector_options, quote
from .tls import NAMES as TLS_NAMES, PROTOCOLS
from .table_info import TableInfo, load_table

SNAPSHOT_STATE = "snapshot.json"
HELD_STATEMENTS = 5000  # statements an executor task gathers (and groups by partition) before sending
Progress = Callable[[str], None]


def url_login(url: str) -> tuple[str | None, str | None]:
    """The user name and password a ``cql://`` URL carries (None where it has none)."""
    parts = urlsplit(url)
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    return username, password


URL_TLS = ("ssl", "sslCaFile", "sslVerify", "sslCertFile", "sslKeyPassword", "sslProtocol",
           "spark.cassandra.connection.ssl.enabled", "spark.cassandra.connection.ssl.trustStore.path", *TLS_NAMES)


def url_tls(query: str, role: str) -> dict[str, str]:
    """The TLS settings of a ``cql://`` URL's query (``?ssl=true&sslCaFile=ca.pem``, or the connector's
    ``spark.cassandra.connection.ssl.*`` names), as the sources take them (docs/spark.md "TLS")."""
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True) if query else []
    except ValueError:
        raise OptionError(f"--{role}: expected ?KEY=VALUE&KEY=VALUE after the table, got ?{query}") from None
    known = {n.lower(): n for n in URL_TLS}
    out: dict[str, str] = {}
    for key, value in pairs:
        if key.lower() not in known:
            raise OptionError(f"--{role}: unknown URL setting {key!r}: a cql:// URL takes TLS settings only "
                              f"({', '.join(URL_TLS)})")
        if key.lower() in out:
            raise OptionError(f"--{role}: URL setting {key} is given twice")
        out[key.lower()] = value
    return out


def parse_url(url: str, role: str, login: tuple[str | None, str | None] | None = None) -> Connection:
    """``cql://[USER:PASSWORD@]HOST[,HOST...][:PORT]/KEYSPACE.TABLE[?TLS settings]`` as connection options;
    ``login`` (user name, password), when given, instead of the URL's (the command line's choice, docs/spark.md
    "Logins").  The query takes the sources' TLS options (:func:`url_tls`)."""
    parts = urlsplit(url)
    if parts.scheme != "cql" or not parts.hostname or not parts.path.strip("/"):
        raise OptionError(f"--{role}: expected cql://HOST:PORT/KEYSPACE.TABLE[?ssl=true&sslCaFile=PEM], got {url!r}")
    hosts = parts.netloc.rpartition("@")[2]
    opts = {"table": parts.path.strip("/")}
    try:
        if parts.port:
            hosts = hosts.rsplit(":", 1)[0]
            opts["port"] = str(parts.port)
    except ValueError:
        raise OptionError(f"--{role}: bad port in {url!r}") from None
    opts["host"] = hosts
    username, password = login if login is not None else url_login(url)
    if username:
        opts["username"], opts["password"] = username, password or ""
    try:
        return Connection.parse(connector_options({**opts, **url_tls(parts.query, role)}))
    except OptionError as e:
        raise OptionError(f"--{role}: {e}") from None


def connection_options(conn: Connection) -> dict[str, str]:
    """The data-source options that reach ``conn`` (its login and TLS settings too)."""
    opts = {"host": ",".join(conn.hosts), "port": str(conn.port), "table": f"{conn.keyspace}.{conn.table}",
            "consistency": conn.consistency}
    if conn.username is not None:
        opts.update(username=conn.username, password=conn.password or "")
    if conn.ssl:
        opts.update(ssl="true", sslVerify=str(conn.ssl_verify).lower())
        for name, value in (("sslCaFile", conn.ssl_ca_file), ("sslCertFile", conn.ssl_cert_file),
                            ("sslKeyPassword", conn.ssl_key_password),
                            ("sslProtocol", {v: k for k, v in PROTOCOLS.items()}[conn.ssl_highest] if conn.ssl_highest else None)):
            if value is not None:
                opts[name] = value
    return opts


def ensure_target(source: Connection, target: Connection) -> TableInfo:
    """Create the target keyspace, types and table (the source's schema, without CDC) when missing."""
    with open_client(source) as sc:
        info = load_table(sc, source.keyspace, source.table)
        order = {r[0]: r[1] for r in sc.rows(
            "SELECT column_name, clustering_order FROM system_schema.columns WHERE keyspace_name = ? "
            "AND table_name = ?", (source.keyspace, source.table))}
        repl = next(iter(sc.rows("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?",
                                 (source.keyspace,))))[0]
        types = list(sc.rows("SELECT type_name, field_names, field_types FROM system_schema.types "
                             "WHERE keyspace_name = ?", (source.keyspace,)))
        col_types = {r[0]: r[1] for r in sc.rows(
            "SELECT column_name, type FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?",
            (source.keyspace, source.table))}
    tks = quote(target.keyspace)
    with open_client(target) as tc:
        if not list(tc.rows("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?",
                            (target.keyspace,))):
            r = ", ".join(f"'{k}': '{v}'" for k, v in dict(repl).items())
            tc.execute(f"CREATE KEYSPACE IF NOT EXISTS {tks} WITH replication = {{{r}}}")
        pending = list(types)
        for _ in range(len(pending) + 1):  # user types may use each other: retry in dependency order
            left = []
            for name, fnames, ftypes in pending:
                fields = ", ".join(f"{quote(n)} {t}" for n, t in zip(fnames, ftypes))
                try:
                    tc.execute(f"CREATE TYPE IF NOT EXISTS {tks}.{quote(name)} ({fields})")
                except Exception:
                    left.append((name, fnames, ftypes))
            pending = left
            if not pending:
                break
        if not list(tc.rows("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND "
                            "table_name = ?", (target.keyspace, target.table))):
            cols = ", ".join(f"{quote(c.name)} {col_types[c.name]}" + (" static" if c.kind == "static" else "")
                             for c in info.columns)
            pk = "(" + ", ".join(quote(c.name) for c in info.partition_key) + ")"
            key = ", ".join([pk] + [quote(c.name) for c in info.clustering])
            ddl = f"CREATE TABLE IF NOT EXISTS {tks}.{quote(target.table)} ({cols}, PRIMARY KEY ({key}))"
            if info.clustering:
                ddl += " WITH CLUSTERING ORDER BY (" + ", ".join(
                    f"{quote(c.name)} {str(order.get(c.name) or 'asc').upper()}" for c in info.clustering) + ")"
            tc.execute(ddl)
    return info


@dataclass(frozen=True)
class WriteTask:
    """What an executor needs to write rows into the target (pickled to executors).

    The statements of one task (a token range of the snapshot, a vnode group of a micro-batch) are
    grouped by partition and sent as UNLOGGED batches of that partition, many at a time, over the
    executor process's one connection (:func:`~.client.shared_client`).  Every statement carries its
    own timestamp and TTL, so neither the grouping nor the order of arrival changes the outcome."""

    target: Connection
    source: TableInfo
    concurrency: int = 8  # batches in flight per task
    snapshot_mode: str = "approximate"  # what the snapshot rows carry (cql_writes.SNAPSHOT_OPTIONS)

    def writer(self) -> Any:
        from .cql_writes import TargetWriter

        return TargetWriter(self.source, f"{quote(self.target.keyspace)}.{quote(self.target.table)}",
                            self.snapshot_mode)

    def write_snapshot(self, rows: Any) -> None:
        w = self.writer()
        self._run((row, w.snapshot_statements(row)) for row in rows)

    def write_deltas(self, rows: Any) -> None:
        """Rows of one input partition: writes grouped by (stream, cdc$time), in log order."""
        w = self.writer()

        def statements():
            group: list = []
            for row in rows:
                if group and (group[0][L.STREAM_ID], group[0][L.TIME]) != (row[L.STREAM_ID], row[L.TIME]):
                    yield from self._per_partition(w, group)
                    group = []
                group.append(row)
            if group:
                yield from self._per_partition(w, group)
        self._run(statements())

    def _per_partition(self, w: Any, group: list) -> Any:
        """One write's rows split by partition (a batch may touch several partitions of one stream)."""
        parts: dict[str, list] = {}
        for row in group:
            parts.setdefault(self._partition(row), []).append(row)
        for rows in parts.values():
            yield rows[0], w.delta_statements(rows)

    def _partition(self, row: Any) -> str:
        return repr([row[c.name] for c in self.source.partition_key])

    def _run(self, statements: Any) -> None:
        """``statements``: (row, its statements); the rows' partition keys group them into batches."""
        with shared_client(self.target) as client:
            by_partition: dict[str, list] = {}
            held = 0
            for row, sts in statements:
                by_partition.setdefault(self._partition(row), []).extend(sts)
                held += len(sts)
                if held >= HELD_STATEMENTS:
                    client.execute_partition_batches(by_partition.values(), self.concurrency)
                    by_partition, held = {}, 0
            if by_partition:
                client.execute_partition_batches(by_partition.values(), self.concurrency)


def _load_state(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return {}


def _save_state(path: Path, state: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, sort_keys=True))
    os.replace(tmp, path)


def snapshot_mode(source: Connection, info: TableInfo) -> str:
    """What the source server lets the snapshot copy (docs/spark.md, "What the snapshot copies"):
    ``exact`` (logtide: every cell's write time and original TTL, list keys, row markers),
    ``elements`` (Cassandra 5.0: per-element write times and remaining TTLs) or ``approximate``."""
    with open_client(source) as client:
        support = server_support(client, info)
    return EXACT if support.logtide else ELEMENTS if support.elements else APPROXIMATE


def snapshot(spark: Any, source: Connection, task: WriteTask, checkpoint: Path, splits: int,
             progress: Progress) -> None:
    """Copy the table range by range; ranges already done (per the checkpoint) are skipped."""
    from .table_source import token_ranges

    state_path = checkpoint / SNAPSHOT_STATE
    state = _load_state(state_path)
    ranges = [tuple(r) for r in state.get("ranges", [])] or token_ranges(splits)
    done = {tuple(r) for r in state.get("done", [])}
    if "started" not in state:
        state = {"ranges": [list(r) for r in ranges], "done": [], "started": int(time.time() * 1_000_000)}
        _save_state(state_path, state)
    todo = [r for r in ranges if r not in done]
    step = max(1, spark.sparkContext.defaultParallelism)
    for i in range(0, len(todo), step):
        chunk = todo[i:i + step]
        df = (spark.read.format("logtide").options(**connection_options(source))
              .options(**SNAPSHOT_OPTIONS[task.snapshot_mode])
              .option("tokenRanges", ",".join(f"{lo}:{hi}" for lo, hi in chunk)).load())
        df.foreachPartition(task.write_snapshot)
        done.update(chunk)
        state["done"] = sorted(list(r) for r in done)
        _save_state(state_path, state)
        progress(f"snapshot: {len(done)}/{len(ranges)} token ranges copied")
    if not todo:
        progress(f"snapshot: {len(ranges)}/{len(ranges)} token ranges copied (done earlier)")


def replicate(spark: Any, source: str | Connection, target: str | Connection, checkpoint: str | os.PathLike,
              until_caught_up: bool = False, confidence_window: str = "30s", splits: int = 16,
              trigger_interval: str = "1 second", max_rows_per_trigger: int | None = None,
              progress: Progress | None = None) -> Any:
    """Snapshot ``source`` into ``target``, then stream its CDC log into it; returns the StreamingQuery.

    ``source``/``target`` are ``cql://HOST:PORT/KS.TABLE`` URLs or :class:`Connection` values.
    With ``until_caught_up`` the query runs with Trigger.AvailableNow and stops once the target has
    every change older than the confidence window; otherwise it runs on, one micro-batch per
    ``trigger_interval``; ``max_rows_per_trigger`` caps the log rows of one micro-batch."""
    from . import register

    src = parse_url(source, "source") if isinstance(source, str) else source
    tgt = parse_url(target, "target") if isinstance(target, str) else target
    if (src.hosts, src.port, src.keyspace, src.table) == (tgt.hosts, tgt.port, tgt.keyspace, tgt.table):
        raise OptionError("the target is the source table")
    say = progress or (lambda _msg: None)
    ckpt = Path(checkpoint)
    ckpt.mkdir(parents=True, exist_ok=True)
    register(spark)
    info = ensure_target(src, tgt)
    mode = snapshot_mode(src, info)
    if mode != EXACT:
        say(f"snapshot: the source server gives no original TTLs, list keys or row markers ({mode} copy): "
            "rows older than the CDC log are copied approximately (docs/spark.md)")
    task = WriteTask(replace(tgt, page_size=src.page_size), info, snapshot_mode=mode)
    snapshot(spark, src, task, ckpt, splits, say)

    def apply_batch(df: Any, batch_id: int) -> None:
        df.foreachPartition(task.write_deltas)

    stream = (spark.readStream.format("logtide-cdc").options(**connection_options(src))
              .option("startingOffsets", "earliest").option("confidenceWindow", confidence_window))
    if max_rows_per_trigger:
        stream = stream.option("maxRowsPerTrigger", str(max_rows_per_trigger))
    stream = stream.load()
    writer = stream.writeStream.foreachBatch(apply_batch).option("checkpointLocation", str(ckpt / "cdc"))
    writer = writer.trigger(availableNow=True) if until_caught_up else writer.trigger(processingTime=trigger_interval)
    return writer.queryName(f"logtide-replicate-{src.keyspace}.{src.table}").start()


def status_line(progress: Any, confidence_window: str) -> str | None:
    """The job's status after a micro-batch, from the query's last progress (None before the first): the log
    rows it copied and what is still to copy, the confidence window apart, e.g. ``cdc: batch 3: 400 log rows
    copied, 1200 still to copy`` or ``cdc: batch 4: 120 log rows copied; caught up but for the last 30s (the
    confidence window, copied by a later batch)``.  The rows still to copy come from the source's latest offset
    (Spark 4.2+); on 4.0/4.1 the line says up to when the log is copied instead."""
    if not progress:
        return None
    try:
        src = progress["sources"][0]
        line = f"cdc: batch {progress['batchId']}: {progress.get('numInputRows', 0)} log rows copied"
        latest = _offset(src.get("latestOffset"))
        end = _offset(src.get("endOffset"))
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    if latest is not None and "rowsBehind" in latest:
        if latest["rowsBehind"] == 0:
            return (f"{line}; caught up but for the last {confidence_window} (the confidence window, copied by a "
                    f"later batch)")
        return f"{line}, {latest['rowsBehind']} still to copy"
    if latest is not None and "rowsBehindAtLeast" in latest:
        return f"{line}, more than {latest['rowsBehindAtLeast']} still to copy"
    if end is not None and "time" in end:
        upto = time.strftime("%H:%M:%S", time.gmtime(end["time"] / 1_000_000))
        return f"{line}, up to {upto} UTC (the last {confidence_window}, the confidence window, in a later batch)"
    return line


def _offset(value: Any) -> dict | None:
    """An offset of the query's progress (JSON text or a dict), or None."""
    if value is None:
        return None
    return json.loads(value) if isinstance(value, str) else dict(value)
