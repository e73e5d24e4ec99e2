"""logtide on Apache Spark: PySpark Python data sources and the replication job (docs/spark.md).

``logtide.spark.register(spark)`` registers ``logtide`` (a table, batch) and ``logtide-cdc`` (the
ScyllaDB CDC log of a table, batch and streaming).  Needs the ``spark`` extra (pyspark, pyarrow).
"""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``logtide`` and ``logtide-cdc`` sources with a SparkSession."""
    from .cdc_source import LogtideCdcDataSource
    from .table_source import LogtideDataSource

    spark.dataSource.register(LogtideDataSource)
    spark.dataSource.register(LogtideCdcDataSource)


__all__ = ["register"]
