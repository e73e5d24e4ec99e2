"""What a ``logtide pipeline`` job checks before it starts Spark (docs/spark.md "Before Spark starts").

Starting Spark (a JVM, then Python workers) takes tens of seconds on a loaded machine, so everything that can
be known without it is checked first, with the message the job would give later: the source can be reached and
holds the table (and its CDC log) or the changefeed, the target can be reached or written, the checkpoint
directory can be made.  Nothing here imports pyspark.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Mapping

from ..cdc import log_schema as L
from .client import open_client
from .options import Connection, OptionError

REACH_SECONDS = 5.0  # a bootstrap server that does not accept a TCP connection within this is unreachable


def directory_can_be_made(path: str | os.PathLike, option: str) -> None:
    """``path`` is a directory, or can be made: its nearest existing ancestor is a writable directory."""
    p = Path(path).absolute()
    if p.exists():
        if not p.is_dir():
            raise OptionError(f"{option}: {path} is a file, not a directory")
        if not os.access(p, os.W_OK | os.X_OK):
            raise OptionError(f"{option}: {path} is not writable")
        return
    parent = p.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise OptionError(f"{option}: cannot create {path}: {parent} is not a writable directory")


def check_replicate(source: Connection, target: Connection, checkpoint: str | os.PathLike) -> None:
    """The replication job's source table exists with a CDC log, the target cluster answers, and a target table
    that exists already has the source's columns."""
    from .table_info import load_table

    if (source.hosts, source.port, source.keyspace, source.table) == (target.hosts, target.port, target.keyspace,
                                                                       target.table):
        raise OptionError("the target is the source table")
    directory_can_be_made(checkpoint, "--checkpoint")
    with open_client(source) as client:
        try:
            info = load_table(client, source.keyspace, source.table)
        except OptionError:
            raise OptionError(f"--source: table {source.keyspace}.{source.table} does not exist") from None
        try:
            load_table(client, source.keyspace, L.log_name(source.table))
        except OptionError:
            raise OptionError(f"--source: {source.keyspace}.{source.table} has no CDC log, which the job follows "
                              f"after its snapshot (ALTER TABLE ... WITH cdc = {{'enabled': true}})") from None
    with open_client(target) as client:
        try:
            existing = load_table(client, target.keyspace, target.table)
        except OptionError:
            return  # the job creates it
    want = [(c.name, c.kind, c.type.cql()) for c in info.columns]
    got = [(c.name, c.kind, c.type.cql()) for c in existing.columns]
    if sorted(want) != sorted(got):
        raise OptionError(f"--target: table {target.keyspace}.{target.table} exists with other columns than "
                          f"{source.keyspace}.{source.table} (" + ", ".join(f"{n} {t}" for n, _, t in got) + ")")


def bootstrap_reachable(bootstrap: str) -> None:
    """At least one Kafka bootstrap server accepts a TCP connection (librdkafka itself retries until its timeout)."""
    reasons = []
    for server in bootstrap.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_SECONDS).close()
            return
        except OSError as e:
            reasons.append(f"{server.strip()}: {e.strerror or e}")
    raise ConnectionError(f"cannot reach the Kafka bootstrap servers {bootstrap}: {'; '.join(reasons)}")


def check_lakehouse(options: Mapping[str, str], target: str, fmt: str, checkpoint: str) -> None:
    """The lakehouse job's changefeed exists and can be read (its schema, its topic's partitions), the target
    can hold what the job writes, and a new replica can begin whole (:mod:`.lakehouse_start`)."""
    from . import lakehouse_start as begin
    from .changefeed_feed import load_feed
    from .changefeed_options import ChangefeedSettings
    from .changefeed_rows import output_names
    from .delta_sink import check_mode, check_target
    from .lakehouse_job import starts_where_told
    from .parquet_sink import PARTITION_COLUMN

    settings = ChangefeedSettings.parse(options)
    if settings.address.kafka is not None:
        bootstrap_reachable(settings.address.kafka.bootstrap)
    info = load_feed(settings)
    access = settings.address.open()
    try:
        bounds = access.partitions()
    finally:
        access.close()
    directory_can_be_made(target, "--target")
    directory_can_be_made(checkpoint, "--checkpoint")
    shape = info.shape
    if fmt == "delta":
        check_mode(shape.mode)
        check_target(target, [c.name for c in shape.key_columns + shape.value_columns])
        if not starts_where_told(settings) and not begin.stream_started(checkpoint) and begin.load(checkpoint) is None:
            begin.choose(info, bounds, settings.address.topic)
        return
    if PARTITION_COLUMN in output_names(shape, settings.raw):
        raise OptionError(f"the table has a column named {PARTITION_COLUMN}, the parquet sink's partition column")
    if os.path.isdir(target) and not os.path.isdir(os.path.join(target, "_spark_metadata")) and any(
            not n.startswith((".", "_")) for n in os.listdir(target)):
        raise OptionError(f"--target: {target} holds files that are not a change table written by this job "
                          f"(no _spark_metadata)")
