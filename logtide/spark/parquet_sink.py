"""The parquet sink of the lakehouse job: an append-only change table, partitioned by commit date.

docs/spark.md, "The lakehouse job": every row of the ``logtide-changefeed`` source (all its columns)
goes through Spark's own file sink, whose ``_spark_metadata`` log lists the files of each committed
micro-batch, so readers that honour that log (Spark) see every change exactly once, even when the
job is killed mid-batch. Rows are partitioned by ``commit_date``, the UTC date of ``_commit_timestamp``.
"""

from __future__ import annotations

from typing import Any

from .options import OptionError

PARTITION_COLUMN = "commit_date"


def change_table(stream: Any) -> Any:
    """The source's streaming DataFrame with the partition column ``commit_date`` (UTC, whatever the
    session's time zone) added."""
    from pyspark.sql import functions as F

    if PARTITION_COLUMN in stream.columns:
        raise OptionError(f"the table has a column named {PARTITION_COLUMN}, the parquet sink's partition column")
    day = F.floor(F.unix_micros(F.col("_commit_timestamp")) / 86_400_000_000).cast("int")
    return stream.withColumn(PARTITION_COLUMN, F.date_from_unix_date(day))


def writer(stream: Any, target: str, checkpoint: str) -> Any:
    """A DataStreamWriter appending the change rows as parquet under ``target`` (Spark's file sink)."""
    return (change_table(stream).writeStream.format("parquet").outputMode("append")
            .option("path", target).option("checkpointLocation", checkpoint).partitionBy(PARTITION_COLUMN))
