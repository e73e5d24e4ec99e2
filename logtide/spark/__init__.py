"""logtide on Apache Spark: PySpark Python data sources and the replication job (docs/spark.md).

``logtide.spark.register(spark)`` registers ``logtide`` (a table, batch), ``logtide-cdc`` (the
ScyllaDB CDC log of a table, batch and streaming) and ``logtide-changefeed`` (a changefeed topic, over
Kafka or a local data directory, batch and streaming).  Needs the ``spark`` extra (pyspark, pyarrow).
"""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``logtide``, ``logtide-cdc`` and ``logtide-changefeed`` sources with a SparkSession."""
    from .cdc_source import LogtideCdcDataSource
    from .changefeed_source import LogtideChangefeedDataSource
    from .table_source import LogtideDataSource

    spark.dataSource.register(LogtideDataSource)
    spark.dataSource.register(LogtideCdcDataSource)
    spark.dataSource.register(LogtideChangefeedDataSource)


__all__ = ["register"]
