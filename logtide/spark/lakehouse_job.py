"""The lakehouse job: a changefeed topic, read with ``logtide-changefeed``, into a Delta or parquet table.

``lakehouse(spark, source, target, format)`` (docs/spark.md, "The lakehouse job"; issue 11, "Lakehouse
sinks and the job") starts a streaming query and returns its ``StreamingQuery``:

* ``delta``: a replica of the changefeed's table, one MERGE per micro-batch (:mod:`.delta_sink`),
  each recorded as the application transaction ``(logtide-lakehouse-<query id>, batch id)``;
* ``parquet``: an append-only change table through Spark's file sink (:mod:`.parquet_sink`).

The source is ``kafka://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...]/ks/t/name`` (the Kafka protocol), or
``ks/t/name`` with ``data_dir`` (a local logtide data directory).  Unless ``startingOffsets`` (or
``startingTimestamp``) says where to start, a new Delta replica begins whole (:mod:`.lakehouse_start`: the
feed's initial scan, or a snapshot of the table joined to the feed) and a parquet change table holds the
topic from its first record.  The query keeps its offsets in ``checkpoint`` (by default
``<target>/_checkpoint``, which Delta and Spark readers skip as a hidden directory).

One idea split for size with the package's ``__init__.py``: its entry points (the lakehouse job here).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import unquote

from . import lakehouse_start as begin
from .changefeed_feed import FeedInfo, load_feed, table_options
from .changefeed_options import ChangefeedSettings
from .changefeed_rows import FeedShape
from .delta_sink import DeltaReplica, ReplicaShape, batch_columns, snapshot_rows
from .options import OptionError

FORMATS = ("delta", "parquet")
CHECKPOINT_DIR = "_checkpoint"
SNAPSHOT_SPLITS = 16  # token ranges of a replica's snapshot ...
SNAPSHOT_RANGES_AT_ONCE = 4  # ... read this many (or the default parallelism) at a time: one Spark job each
Progress = Callable[[str], None]


def source_options(source: str, data_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """The ``logtide-changefeed`` options that read ``source`` (see the module docstring)."""
    if data_dir is not None:
        if "://" in source:
            raise OptionError(f"--source: with --data-dir the source is a topic ks/t/name, got {source!r}")
        return {"topic": source, "path": str(data_dir)}
    scheme, sep, rest = source.partition("://")
    netloc, _, topic = rest.partition("/")
    if scheme != "kafka" or not sep or not netloc or not topic.strip("/"):
        raise OptionError(f"--source: expected kafka://HOST:PORT/KEYSPACE/TABLE/CHANGEFEED (or a topic "
                          f"ks/t/name with --data-dir), got {source!r}")
    hosts = netloc.rpartition("@")[2]
    opts = {"topic": topic.strip("/"), "bootstrap": hosts}
    username, password = kafka_url_login(source)
    if username:
        opts.update(username=username, password=password or "")
    return opts


def kafka_url_login(source: str) -> tuple[str | None, str | None]:
    """The user name and password a ``kafka://USER:PASSWORD@...`` source carries (None where it has none)."""
    scheme, sep, rest = source.partition("://")
    userinfo, at, _ = rest.partition("/")[0].rpartition("@")
    if not sep or not at:
        return None, None
    user, colon, password = userinfo.partition(":")
    return (unquote(user) or None), (unquote(password) if colon else None)


def job_options(source: str, data_dir: str | os.PathLike | None, options: Mapping[str, str] | None,
                max_records_per_trigger: int | None) -> dict[str, str]:
    """The ``logtide-changefeed`` options of the job's stream (before its start is chosen)."""
    opts = {**source_options(source, data_dir), **dict(options or {})}
    if max_records_per_trigger:
        opts["maxRecordsPerTrigger"] = str(max_records_per_trigger)
    return opts


def checkpoint_of(target: str | os.PathLike, checkpoint: str | os.PathLike | None) -> str:
    """The job's checkpoint directory: ``checkpoint``, by default ``<target>/_checkpoint``."""
    return str(checkpoint) if checkpoint is not None else os.path.join(str(target), CHECKPOINT_DIR)


def starts_where_told(settings: ChangefeedSettings) -> bool:
    """Whether the options say where the stream starts (``startingOffsets`` or ``startingTimestamp``)."""
    return settings.starting is not None or settings.starting_time_ms is not None


def new_replica_start(settings: ChangefeedSettings, info: FeedInfo, checkpoint: str | os.PathLike,
                      keep: bool = True) -> "begin.Start":
    """How a new Delta replica begins (:mod:`.lakehouse_start`): the start an earlier run on ``checkpoint``
    chose, else the one chosen now from the topic's partitions (kept in the checkpoint when ``keep``)."""
    start = begin.load(checkpoint) if keep else None
    if start is None:
        access = settings.address.open()
        try:
            bounds = access.partitions()
        finally:
            access.close()
        start = begin.choose(info, bounds, settings.address.topic)
        if keep:
            begin.save(checkpoint, start)
    return start


def copy_table(spark: Any, replica: DeltaReplica, feed: FeedShape, options: Mapping[str, str], start: "begin.Start",
               progress: Progress) -> int:
    """The snapshot of a new replica: the feed's table read with the ``logtide`` source, a few token ranges at a
    time, written into the Delta table in one commit that replaces its rows; returns the rows copied."""
    from pyspark.sql import functions as F

    from .table_source import token_ranges
    from .types import quote_ident

    table = f"{feed.table.keyspace}.{feed.table.name}"
    ranges = token_ranges(SNAPSHOT_SPLITS)
    step = max(SNAPSHOT_RANGES_AT_ONCE, spark.sparkContext.defaultParallelism)
    columns = [F.col(quote_ident(c)) for c in replica.shape.columns]
    names = {kind: [c.name for c in cols] for kind, cols in (
        ("partition_key", feed.table.partition_key), ("clustering", feed.table.clustering),
        ("static", [c for c in feed.table.regular if c.kind == "static"]))}
    copied = 0

    def chunks() -> Any:
        nonlocal copied
        for i in range(0, len(ranges), step):
            part = ranges[i:i + step]
            rows = (spark.read.format("logtide").options(**options)
                    .option("tokenRanges", ",".join(f"{lo}:{hi}" for lo, hi in part)).load()
                    .select(*columns).toArrow())
            copied += rows.num_rows
            progress(f"snapshot of {table}: {copied} rows copied ({min(i + step, len(ranges))}/{len(ranges)} "
                     f"token ranges)")
            yield snapshot_rows(rows, names["partition_key"], names["clustering"], names["static"])

    progress(f"snapshot of {table}: reading the table")
    replica.overwrite(chunks(), {"logtide.snapshot.startingOffsets": start.starting_offsets()})
    return copied


def query_id(checkpoint: str | os.PathLike) -> str:
    """The streaming query's id, kept by Spark in ``<checkpoint>/metadata`` across restarts."""
    return json.loads((Path(checkpoint) / "metadata").read_text())["id"]


@dataclass(frozen=True)
class DeltaBatches:
    """The ``foreachBatch`` function of the delta sink: MERGE each micro-batch once."""

    replica: DeltaReplica
    checkpoint: str

    def app_id(self) -> str:
        """The Delta application id of this query (the same for every run on this checkpoint)."""
        return f"logtide-lakehouse-{query_id(self.checkpoint)}"

    def __call__(self, df: Any, batch_id: int) -> None:
        from pyspark.sql import functions as F

        from .types import quote_ident

        rows = df.select(*[F.col(quote_ident(c)) for c in batch_columns(self.replica.shape)]).toArrow()
        self.replica.apply(rows, self.app_id(), batch_id)


def lakehouse(spark: Any, source: str, target: str | os.PathLike, format: str = "delta",
              checkpoint: str | os.PathLike | None = None, until_caught_up: bool = False,
              data_dir: str | os.PathLike | None = None, trigger_interval: str = "10 seconds",
              max_records_per_trigger: int | None = None, options: Mapping[str, str] | None = None,
              progress: Progress | None = None) -> Any:
    """Stream the changefeed ``source`` into ``target`` as a Delta replica or a parquet change table;
    returns the StreamingQuery.

    A new Delta replica begins whole unless ``options`` say where to start (:mod:`.lakehouse_start`: a
    snapshot of the table, copied before this returns, or the feed's initial scan).  ``until_caught_up``:
    Trigger.AvailableNow, so the query stops once every record present at its start is in the target;
    otherwise one micro-batch per ``trigger_interval``. ``options``: further ``logtide-changefeed`` options
    (``startingOffsets``, ``consistent``, ``cqlPort``, ``sslCaFile``, ...); ``progress`` gets status lines."""
    from . import register

    say = progress or (lambda _msg: None)
    fmt = format.lower()
    if fmt not in FORMATS:
        raise OptionError(f"--format: expected delta or parquet, got {format!r}")
    opts = job_options(source, data_dir, options, max_records_per_trigger)
    target = str(target)
    ckpt = checkpoint_of(target, checkpoint)
    settings = ChangefeedSettings.parse(opts)
    info = load_feed(settings)  # bad options and unknown topics fail here, with the source's own message
    start = None
    if not starts_where_told(settings):
        if fmt == "delta" and not begin.stream_started(ckpt):
            start = new_replica_start(settings, info, ckpt)
            opts["startingOffsets"] = start.starting_offsets()
        else:
            opts["startingOffsets"] = "earliest"
    register(spark)
    stream = spark.readStream.format("logtide-changefeed").options(**opts).load()
    name = f"logtide-lakehouse-{opts['topic'].strip('/').replace('/', '.')}"
    if fmt == "delta":
        shape = ReplicaShape.of(stream.schema, info.shape.mode)
        replica = DeltaReplica(target, shape)
        replica.ensure(shape.arrow_schema(stream.schema))
        if start is not None and start.snapshot and not start.copied:
            copy_table(spark, replica, info.shape, table_options(settings), start, say)
            begin.save(ckpt, dataclasses.replace(start, copied=True))
        writer = stream.writeStream.foreachBatch(DeltaBatches(replica, ckpt)).option("checkpointLocation", ckpt)
    else:
        from .parquet_sink import writer as parquet_writer

        writer = parquet_writer(stream, target, ckpt)
    writer = writer.trigger(availableNow=True) if until_caught_up else writer.trigger(processingTime=trigger_interval)
    return writer.queryName(name).start()


def progress_line(query: Any) -> str | None:
    """``batch N: R records, lag L records`` from the query's last progress (None before the first). R is the
    records (topic messages) of the micro-batch, its end offset's sum minus its start offset's; L is the sum of
    the source's ``latestOffset`` (every partition's end, from ``reportLatestOffset``) minus that of
    ``endOffset``; without a ``latestOffset`` (Spark 4.0/4.1 never ask for it) the line has no lag."""
    p = query.lastProgress
    if not p:
        return None
    try:
        src = p["sources"][0]
    except (KeyError, IndexError, TypeError):
        src = {}
    try:
        records = _offset_total(src.get("endOffset")) - _offset_total(src.get("startOffset"))
    except (TypeError, ValueError):
        records = p.get("numInputRows", 0)  # no start offset (the first batch of a Spark that gives none)
    try:
        lag = _offset_total(src.get("latestOffset")) - _offset_total(src.get("endOffset"))
    except (TypeError, ValueError):
        lag = None
    line = f"batch {p.get('batchId')}: {records} records"
    return line + (f", lag {lag} records" if lag is not None and lag >= 0 else "")


def _offset_total(offset: Any) -> int:
    """The sum of the numbers in an offset (a JSON string or dict of partition positions)."""
    if isinstance(offset, str):
        offset = json.loads(offset)
    if isinstance(offset, bool) or offset is None:
        raise ValueError("no offset")
    if isinstance(offset, int):
        return offset
    if isinstance(offset, dict):
        return sum(_offset_total(v) for v in offset.values() if not isinstance(v, bool))
    if isinstance(offset, list):
        return sum(_offset_total(v) for v in offset)
    raise ValueError(f"not an offset: {offset!r}")
