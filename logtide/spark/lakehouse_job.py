"""The lakehouse job: a changefeed topic, read with ``logtide-changefeed``, into a Delta or parquet table.

``lakehouse(spark, source, target, format)`` (docs/spark.md, "The lakehouse job"; issue 11, "Lakehouse
sinks and the job") starts a streaming query and returns its ``StreamingQuery``:

* ``delta``: a replica of the changefeed's table, one MERGE per micro-batch (:mod:`.delta_sink`),
  each recorded as the application transaction ``(logtide-lakehouse-<query id>, batch id)``;
* ``parquet``: an append-only change table through Spark's file sink (:mod:`.parquet_sink`).

The source is ``kafka://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...]/ks/t/name`` (the Kafka protocol), or
``ks/t/name`` with ``data_dir`` (a local logtide data directory). The query reads from the earliest
record unless ``startingOffsets`` says otherwise, and keeps its offsets in ``checkpoint`` (by default
``<target>/_checkpoint``, which Delta and Spark readers skip as a hidden directory).

One idea split for size with the package's ``__init__.py``: its entry points (the lakehouse job here).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import unquote

from .delta_sink import DeltaReplica, ReplicaShape, batch_columns
from .options import OptionError

FORMATS = ("delta", "parquet")
CHECKPOINT_DIR = "_checkpoint"
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
    userinfo, at, hosts = netloc.rpartition("@")
    opts = {"topic": topic.strip("/"), "bootstrap": hosts}
    if at:
        user, _, password = userinfo.partition(":")
        opts.update(username=unquote(user), password=unquote(password))
    return opts


def feed_mode(options: Mapping[str, str]) -> str:
    """The changefeed's MODE, as the source resolves it (catalog, CQL, or the ``mode`` option)."""
    from .changefeed_feed import load_feed
    from .changefeed_options import ChangefeedSettings

    return load_feed(ChangefeedSettings.parse(options)).shape.mode


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
              max_records_per_trigger: int | None = None, options: Mapping[str, str] | None = None) -> Any:
    """Stream the changefeed ``source`` into ``target`` as a Delta replica or a parquet change table;
    returns the StreamingQuery.

    ``until_caught_up``: Trigger.AvailableNow, so the query stops once every record present at its start
    is in the target; otherwise one micro-batch per ``trigger_interval``. ``options``: further
    ``logtide-changefeed`` options (``startingOffsets``, ``consistent``, ``cqlPort``, ``sslCaFile``, ...)."""
    from . import register

    fmt = format.lower()
    if fmt not in FORMATS:
        raise OptionError(f"--format: expected delta or parquet, got {format!r}")
    opts = {"startingOffsets": "earliest", **source_options(source, data_dir), **dict(options or {})}
    if max_records_per_trigger:
        opts["maxRecordsPerTrigger"] = str(max_records_per_trigger)
    target = str(target)
    ckpt = str(checkpoint) if checkpoint is not None else os.path.join(target, CHECKPOINT_DIR)
    mode = feed_mode(opts)  # bad options and unknown topics fail here, with the source's own message
    register(spark)
    stream = spark.readStream.format("logtide-changefeed").options(**opts).load()
    name = f"logtide-lakehouse-{opts['topic'].strip('/').replace('/', '.')}"
    if fmt == "delta":
        shape = ReplicaShape.of(stream.schema, mode)
        replica = DeltaReplica(target, shape)
        replica.ensure(shape.arrow_schema(stream.schema))
        writer = stream.writeStream.foreachBatch(DeltaBatches(replica, ckpt)).option("checkpointLocation", ckpt)
    else:
        from .parquet_sink import writer as parquet_writer

        writer = parquet_writer(stream, target, ckpt)
    writer = writer.trigger(availableNow=True) if until_caught_up else writer.trigger(processingTime=trigger_interval)
    return writer.queryName(name).start()


def progress_line(query: Any) -> str | None:
    """``batch N: R records, lag L records`` from the query's last progress (None before the first). L is the
    sum of the source's ``latestOffset`` (every partition's end, from ``reportLatestOffset``) minus that of
    ``endOffset``; without a ``latestOffset`` (Spark 4.0/4.1 never ask for it) the line has no lag."""
    p = query.lastProgress
    if not p:
        return None
    try:
        src = p["sources"][0]
        lag = _offset_total(src.get("latestOffset")) - _offset_total(src.get("endOffset"))
    except (KeyError, IndexError, TypeError, ValueError):
        lag = None
    line = f"batch {p.get('batchId')}: {p.get('numInputRows', 0)} records"
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
