"""logtide on Apache Spark: PySpark Python data sources, the replication job and the lakehouse job (docs/spark.md).

``logtide.spark.register(spark)`` registers ``logtide`` (a table, batch), ``logtide-cdc`` (the
ScyllaDB CDC log of a table, batch and streaming) and ``logtide-changefeed`` (a changefeed topic, over
Kafka or a local data directory, batch and streaming).  Needs the ``spark`` extra (pyspark, pyarrow).

One idea split for size with ``lakehouse_job.py``: the package's entry points (the lakehouse job there).
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


def lakehouse(spark: Any, source: str, target: Any, format: str = "delta", **kwargs: Any) -> Any:
    """Stream a changefeed into a Delta replica or a parquet change table; returns the StreamingQuery.

    See :func:`logtide.spark.lakehouse_job.lakehouse` for the keyword arguments (``checkpoint``,
    ``until_caught_up``, ``data_dir``, ``trigger_interval``, ``max_records_per_trigger``, ``options``)."""
    from .lakehouse_job import lakehouse as start

    return start(spark, source, target, format, **kwargs)


__all__ = ["lakehouse", "register"]
