"""``spark.read.format("logtide-cdc")`` / ``spark.readStream.format("logtide-cdc")``: a table's CDC log.

Read the way ScyllaDB's consumers read it: generations and streams from ``system_distributed``
(:mod:`.generations`), one input partition per vnode group of streams, and per stream a windowed
query ``WHERE "cdc$stream_id" = ? AND "cdc$time" > ? AND "cdc$time" <= ?``.  Nothing is read
younger than ``now - confidenceWindow``.

An offset is ``{"version": 1, "time": T}``: every log row whose ``cdc$time`` lies at or before
microsecond ``T`` has been delivered.  All rows of one write share their ``cdc$time``, so a
micro-batch never splits a write.  Options, output schema and guarantees: docs/spark.md.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any, Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..cdc import log_schema as L
from . import types as ST
from .client import Client, open_client, shared_client
from .compat import STREAM_BASES, check_stream_limit
from .errors import user_errors
from .generations import GREGORIAN_OFFSET, cdc_time_micros, load_generations, spans, time_bound
from .options import (Connection, OptionError, check_known, connector_options, lowered, parse_duration_micros,
                      parse_int, parse_timestamp_micros, quote)
from .table_info import TableInfo, load_table

CDC_KEYS = Connection.KEYS | {"startingoffsets", "startingtimestamp", "endingtimestamp", "startingtimestampmicros",
                              "endingtimestampmicros", "confidencewindow",
                              "maxrowspertrigger", "splits"}
DEFAULT_CONFIDENCE_WINDOW = "30s"
DEFAULT_SPLITS = 16  # at most this many input partitions per generation (the table source's default splits)
CHANGE_COLUMNS = "`_change_type` string, `_commit_version` bigint, `_commit_timestamp` timestamp"
# cdc$operation values (docs/cdc.md "Log rows")
PREIMAGE, UPDATE, INSERT, ROW_DELETE, PARTITION_DELETE, POSTIMAGE = 0, 1, 2, 3, 4, 9
DELETES = (ROW_DELETE, PARTITION_DELETE, -3, -4)  # -3, -4: the server's own deletions (row TTL expiry)
LEFT_BOUNDS = (5, 6)


def offset(micros: int) -> dict:
    """The offset after every row at or before ``micros`` (a dict with a stable key order)."""
    return {"version": 1, "time": int(micros)}


def offset_time(off: dict | str) -> int:
    d = json.loads(off) if isinstance(off, str) else off
    return int(d["time"])


@dataclass(frozen=True)
class CdcSettings:
    """The parsed options of a ``logtide-cdc`` read."""

    conn: Connection
    confidence: int
    starting: str  # earliest | latest | timestamp | json
    starting_time: int | None
    ending_time: int | None
    max_rows: int | None
    splits: int = DEFAULT_SPLITS

    @classmethod
    def parse(cls, options: Any) -> "CdcSettings":
        opts = lowered(options)
        check_known(opts, CDC_KEYS, "logtide-cdc")
        conn = Connection.parse(opts)
        conf = parse_duration_micros(opts, "confidenceWindow", DEFAULT_CONFIDENCE_WINDOW)
        start_ts = point_in_time(opts, "startingTimestamp")
        so = opts.get("startingoffsets")
        if so is not None and start_ts is not None:
            raise OptionError("options startingOffsets and startingTimestamp exclude each other")
        if start_ts is not None:
            starting = "timestamp"
        elif so is None:
            starting = "default"
        elif so.strip().lower() in ("earliest", "latest"):
            starting = so.strip().lower()
        else:
            try:
                start_ts = offset_time(so)
            except (ValueError, KeyError, TypeError):
                raise OptionError(f"option startingOffsets: expected earliest, latest or an offset such as "
                                  f'{{"version": 1, "time": 1700000000000000}}, got {so!r}') from None
            starting = "json"
            start_ts += 1
        return cls(conn, conf, starting, start_ts, point_in_time(opts, "endingTimestamp"),
                   parse_int(opts, "maxRowsPerTrigger", None), parse_int(opts, "splits", DEFAULT_SPLITS))


def point_in_time(opts: dict[str, str], name: str) -> int | None:
    """``name`` (ISO 8601 or milliseconds since the epoch, as Spark's Kafka source) or ``nameMicros`` (microseconds,
    the unit ``name`` had before), in microseconds."""
    micros_name = name + "Micros"
    if name.lower() in opts and micros_name.lower() in opts:
        raise OptionError(f"options {name} and {micros_name} mean the same: give one")
    if micros_name.lower() in opts:
        v = opts[micros_name.lower()]
        if not re.fullmatch(r"\s*-?\d+\s*", v):
            raise OptionError(f"option {micros_name}: expected microseconds since the epoch, got {v!r}")
        return int(v)
    return parse_timestamp_micros(opts, name, number_unit=1000)


def log_schema_ddl(log: TableInfo) -> str:
    fields = [f"{ST.quote_ident(c.name)} {ST.spark_ddl(c.type)}" for c in log.columns]
    return ", ".join(fields + [CHANGE_COLUMNS])


class LogtideCdcDataSource(DataSource):
    """The ``logtide-cdc`` source: the CDC log of ``table`` (batch and streaming)."""

    @classmethod
    def name(cls) -> str:
        return "logtide-cdc"

    def _setup(self) -> tuple[CdcSettings, "LogShape"]:
        cached = getattr(self, "_cached", None)
        if cached is None:
            settings = CdcSettings.parse(connector_options(self.options, getattr(self, "conf", None)))
            conn = settings.conn
            with open_client(conn) as client:
                base = load_table(client, conn.keyspace, conn.table)
                try:
                    log = load_table(client, conn.keyspace, L.log_name(conn.table))
                except OptionError:
                    raise OptionError(f"option table: {conn.keyspace}.{conn.table} has no CDC log "
                                      f"(ALTER TABLE ... WITH cdc = {{'enabled': true}})") from None
            keys = tuple(c.name for c in base.partition_key + base.clustering)
            cached = self._cached = (settings, LogShape(log, keys))
        return cached

    @user_errors
    def schema(self) -> str:
        return log_schema_ddl(self._setup()[1].log)

    @user_errors
    def reader(self, schema: Any) -> "CdcBatchReader":
        settings, shape = self._setup()
        return CdcBatchReader(settings, shape, [f.name for f in schema.fields])

    @user_errors
    def streamReader(self, schema: Any) -> "CdcStreamReader":
        settings, shape = self._setup()
        check_stream_limit("maxRowsPerTrigger", settings.max_rows)
        return make_stream_reader(settings, shape, [f.name for f in schema.fields])


@dataclass(frozen=True)
class LogShape:
    """The log table's columns and the names of the base table's primary-key columns (which the log repeats)."""

    log: TableInfo
    keys: tuple[str, ...]


@dataclass(frozen=True)
class VnodeGroupPartition(InputPartition):
    """The streams of one vnode range of one generation, read over ``(lo, hi]`` (microseconds)."""

    streams: tuple[bytes, ...]
    lo: int
    hi: int


class LogReading:
    """Shared by the batch and the stream reader: planning windows, and reading them in executors."""

    def __init__(self, settings: CdcSettings, shape: LogShape, names: list[str]) -> None:
        self.settings = settings
        self.log = log = shape.log
        self.keys = shape.keys
        self.names = names
        for n in names:
            if log.column(n) is None and n not in ("_change_type", "_commit_version", "_commit_timestamp"):
                raise OptionError(f"column {n!r} of the given schema is not a column of the CDC log")

    def plan(self, gens: list, lo: int, hi: int) -> list[VnodeGroupPartition]:
        """Per generation overlapping ``(lo, hi]``, its vnode groups in token order dealt into at most
        ``splits`` input partitions of consecutive groups (one group each when there are no more)."""
        out = []
        for g, a, b in spans(gens, lo, hi):
            groups = g.groups
            n = min(self.settings.splits, len(groups))
            for i in range(n):
                run = groups[len(groups) * i // n:len(groups) * (i + 1) // n]
                out.append(VnodeGroupPartition(tuple(s for group in run for s in group), a, b))
        return out

    def now_bound(self) -> int:
        return int(time.time() * 1_000_000) - self.settings.confidence

    def read(self, partition: VnodeGroupPartition) -> Iterator:
        """Executor side: the log rows of one vnode group's streams in ``(lo, hi]`` as Arrow batches,
        built column by column from the driver's pages (the change columns computed per column)."""
        import pyarrow as pa

        log = self.log
        cols = {c.name: c for c in log.columns if c.name in self.names}
        labelled = "_change_type" in self.names
        need = list(dict.fromkeys([n for n in self.names if n in cols] + [L.TIME, L.OPERATION] +
                                  ([L.STREAM_ID, *self.keys] if labelled else [])))
        idx = {n: i for i, n in enumerate(need)}
        t_i, op_i = idx[L.TIME], idx[L.OPERATION]
        label_i = len(need)  # with_change_types appends each row's _change_type
        utc = pa.timestamp("us", tz="UTC")

        memo: dict = {}

        def commit_versions(columns: list) -> Any:  # computed once per batch for both columns
            times = columns[t_i]
            if memo.get("times") is not times:
                memo["times"], memo["micros"] = times, pa.array([_micros(u) for u in times], type=pa.int64())
            return memo["micros"]

        derived = {
            "_change_type": (pa.string(), lambda columns: pa.array(columns[label_i], type=pa.string())),
            "_commit_version": (pa.int64(), commit_versions),
            "_commit_timestamp": (utc, lambda columns: commit_versions(columns).cast(utc)),
        }
        types, picks = [], []
        for n in self.names:
            if n in derived:
                types.append(derived[n][0])
                picks.append(derived[n][1])
            else:
                types.append(ST.arrow_type(cols[n].type))
                picks.append((idx[n], ST.column_converter(cols[n].type)))
        batcher = ST.PageBatcher(self.names, types, picks)
        query = (f"SELECT {', '.join(quote(n) for n in need)} FROM {quote(log.keyspace)}.{quote(log.name)} "
                 f'WHERE "{L.STREAM_ID}" = ? AND "{L.TIME}" > ? AND "{L.TIME}" <= ?')
        lo, hi = time_bound(partition.lo), time_bound(partition.hi)
        with shared_client(self.settings.conn) as client:
            pages = client.pages_of_each(query, [(stream, lo, hi) for stream in partition.streams])
            if labelled:
                pages = with_change_types(pages, idx[L.STREAM_ID], t_i, op_i, [idx[k] for k in self.keys])
            yield from batcher.batches(pages)


def with_change_types(pages: Iterator[list], stream_i: int, time_i: int, op_i: int, key_i: list[int]) -> Iterator[list]:
    """The pages of one input partition (each stream's rows in ``cdc$time``, ``cdc$batch_seq_no`` order) with each
    row's ``_change_type`` appended: a write's rows (one stream, one ``cdc$time``) are held until the write is
    whole, since a change's label depends on its other rows (:func:`change_types`)."""
    held: list = []
    for page in pages:
        out: list = []
        for row in page:
            if held and (row[time_i] != held[0][time_i] or row[stream_i] != held[0][stream_i]):
                out.extend(change_types(held, op_i, key_i))
                held = []
            held.append(row)
        if out:
            yield out
    if held:
        yield change_types(held, op_i, key_i)


def change_types(rows: list, op_i: int, key_i: list[int]) -> list[tuple]:
    """The rows of one write with Delta's ``_change_type`` appended (docs/spark.md "Delta's change data feed").

    A change is what the write did to one row of the base table (its rows sharing the primary key): exactly one
    of its rows says ``insert``, ``update_postimage`` or ``delete``, its preimage says ``update_preimage``, and
    its other rows (the deltas when a postimage shows the row after the change, further deltas of a change the
    log splits) have none.  The postimage is the change's row when there is one, a delete's is its preimage (the
    deleted values, as in Delta) when there is one, else the first delta.  A range delete is its left bound."""
    labels: list[str | None] = [None] * len(rows)
    changes: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        op = r[op_i]
        if op in LEFT_BOUNDS:
            labels[i] = "delete"
        elif op in (PREIMAGE, UPDATE, INSERT, POSTIMAGE, *DELETES):
            changes.setdefault(repr(tuple(r[k] for k in key_i)), []).append(i)
    for members in changes.values():
        ops = [rows[i][op_i] for i in members]
        pre = [i for i, op in zip(members, ops) if op == PREIMAGE]
        post = [i for i, op in zip(members, ops) if op == POSTIMAGE]
        deletes = [i for i, op in zip(members, ops) if op in DELETES]
        upserts = [i for i, op in zip(members, ops) if op in (UPDATE, INSERT)]
        if deletes:
            labels[pre[0] if pre else deletes[0]] = "delete"
            continue
        if pre:
            labels[pre[0]] = "update_preimage"
        carrier = post[0] if post else upserts[0] if upserts else None
        if carrier is not None:
            inserted = not pre and any(rows[i][op_i] == INSERT for i in upserts)
            labels[carrier] = "insert" if inserted else "update_postimage"
    return [(*r, label) for r, label in zip(rows, labels)]


def _micros(u: Any) -> int:
    """:func:`~.generations.cdc_time_micros` on the UUID's integer (the per-row hot path)."""
    i = u.int
    return ((((i >> 64) & 0x0FFF) << 48 | ((i >> 80) & 0xFFFF) << 32 | (i >> 96)) - GREGORIAN_OFFSET) // 10


class CdcBatchReader(DataSourceReader):
    """A batch read of the log between startingTimestamp/startingOffsets (default: earliest) and
    endingTimestamp (default: now minus the confidence window)."""

    def __init__(self, settings: CdcSettings, shape: LogShape, names: list[str]) -> None:
        self.reading = LogReading(settings, shape, names)
        with open_client(settings.conn) as client:
            self.gens = load_generations(client)
        hi = settings.ending_time if settings.ending_time is not None else self.reading.now_bound()
        if settings.starting == "latest":
            lo = self.reading.now_bound()
        elif settings.starting_time is not None:
            lo = settings.starting_time - 1
        else:
            lo = -(1 << 62)
        self.lo, self.hi = lo, hi

    def partitions(self) -> list:
        parts = self.reading.plan(self.gens, self.lo, self.hi)
        return parts or [VnodeGroupPartition((), 0, 0)]

    @user_errors
    def read(self, partition: VnodeGroupPartition) -> Iterator:
        return self.reading.read(partition)


class CdcStreamReader(*STREAM_BASES):  # type: ignore[misc]
    """The streaming reader (micro-batches between offsets; admission control on Spark 4.2+)."""

    def __init__(self, settings: CdcSettings, shape: LogShape, names: list[str]) -> None:
        self.reading = LogReading(settings, shape, names)
        self.settings = settings
        self._client: Client | None = None
        self.gens: list = []
        self.available_now: int | None = None
        self.last: int | None = None
        self.latest: dict | None = None  # what reportLatestOffset tells the query's progress

    def __getstate__(self) -> dict:  # executors get a copy without the driver's connection
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    # -- driver side ---------------------------------------------------------
    def client(self) -> Client:
        if self._client is None:
            self._client = open_client(self.settings.conn)
        return self._client

    def refresh(self) -> list:
        self.gens = load_generations(self.client())
        return self.gens

    @user_errors
    def initialOffset(self) -> dict:
        s = self.settings
        gens = self.refresh()
        if s.starting in ("earliest",):
            t = (gens[0].start - 1) if len(gens) > 1 else -1
            t = min(t, -1)
        elif s.starting_time is not None:
            t = s.starting_time - 1
        else:  # latest (the default for streams)
            t = self.reading.now_bound()
        self.last = t
        return offset(t)

    def getDefaultReadLimit(self) -> Any:
        from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

        return ReadMaxRows(self.settings.max_rows) if self.settings.max_rows else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.available_now = self.reading.now_bound()

    @user_errors
    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        """The end of the next micro-batch: now minus the confidence window, capped by the read limit.

        Spark 4.0/4.1 call it without arguments (and maxRowsPerTrigger is refused there: see
        :func:`~.compat.check_stream_limit`); the end is then simply now minus the window."""
        begin = offset_time(start) if start is not None else (self.last if self.last is not None else -1)
        target = self.reading.now_bound()
        if self.available_now is not None:
            target = min(target, self.available_now)
        max_rows = getattr(limit, "max_rows", None)  # ReadMaxRows (from the option) or ReadAllAvailable
        gens = self.refresh()
        latest, behind, exact = target, 0, True
        if max_rows and target > begin:
            target, behind, exact = self._cap(gens, begin, target, max_rows)
        self.latest = {**offset(latest), ("rowsBehind" if exact else "rowsBehindAtLeast"): behind}
        end = max(begin, target)
        if start is None:
            self.last = end
        return offset(end) if end != begin or start is None else start

    def _cap(self, gens: list, begin: int, target: int, max_rows: int) -> tuple[int, int, bool]:
        """The largest time <= target such that (begin, time] holds at most max_rows rows (at least one write),
        the rows of (time, target] and whether that count is exact (no stream had more than max_rows + 1 rows,
        the most read of each: else it is a lower bound)."""
        log = self.reading.log
        query = (f'SELECT "{L.TIME}" FROM {quote(log.keyspace)}.{quote(log.name)} WHERE "{L.STREAM_ID}" = ? '
                 f'AND "{L.TIME}" > ? AND "{L.TIME}" <= ? LIMIT {max_rows + 1}')
        times: list[int] = []
        exact = True
        for part in self.reading.plan(gens, begin, target):
            for stream in part.streams:
                got = [cdc_time_micros(r[0]) for r in self.client().rows(
                    query, (stream, time_bound(part.lo), time_bound(part.hi)))]
                exact = exact and len(got) <= max_rows
                times.extend(got)
        if len(times) <= max_rows:
            return target, 0, True
        times.sort()
        cut = times[max_rows]  # the first time that does not fit
        fitting = [t for t in times[:max_rows] if t < cut]
        end = fitting[-1] if fitting else cut
        return end, sum(1 for t in times if t > end), exact

    def reportLatestOffset(self) -> dict | None:
        """The end the last micro-batch would have had without ``maxRowsPerTrigger`` (now minus the confidence
        window, or the AvailableNow end) with the log rows between the batch's end and it: ``rowsBehind``, or
        ``rowsBehindAtLeast`` when a stream held more than the rows read to cut the batch.  Spark 4.2+ puts it in
        the query's progress as ``sources[0].latestOffset`` (the replication job's status line); 4.0/4.1 never
        ask."""
        return self.latest

    @user_errors
    def partitions(self, start: dict, end: dict) -> list:
        lo, hi = offset_time(start), offset_time(end)
        if hi <= lo:
            return []
        # generations only ever start in the future, so those known now cover (lo, hi] for good
        gens = self.gens or self.refresh()
        return self.reading.plan(gens, lo, hi)

    def commit(self, end: dict) -> None:
        pass

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- executor side -------------------------------------------------------
    @user_errors
    def read(self, partition: VnodeGroupPartition) -> Iterator:
        return self.reading.read(partition)


def make_stream_reader(settings: CdcSettings, shape: LogShape, names: list[str]) -> CdcStreamReader:
    """A stream reader (on Spark 4.2+ it also supports Trigger.AvailableNow)."""
    return CdcStreamReader(settings, shape, names)
