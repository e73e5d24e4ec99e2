"""logtide on Apache Spark: PySpark Python data sources, the replication job and the lakehouse job (docs/spark.md).

``logtide.spark.register(spark)`` registers ``logtide`` (a table, batch), ``logtide-cdc`` (the
ScyllaDB CDC log of a table, batch and streaming) and ``logtide-changefeed`` (a changefeed topic, over
Kafka or a local data directory, batch and streaming).  Needs the ``spark`` extra (pyspark, pyarrow).

One idea split for size with ``lakehouse_job.py``: the package's entry points (the lakehouse job there).
"""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``logtide``, ``logtide-cdc`` and ``logtide-changefeed`` sources with a SparkSession.

    Their Python workers run :func:`~.session.worker_python`: the Python chosen with ``PYSPARK_PYTHON`` (or
    ``spark.pyspark.python``), else, on a local master, this interpreter, so that a virtualenv's Python works
    without the virtualenv activated (docs/spark.md "The workers' Python"); a chosen Python that cannot import
    logtide raises :class:`~.session.WorkerPythonError` saying what to set."""
    from .cdc_source import LogtideCdcDataSource
    from .changefeed_source import LogtideChangefeedDataSource
    from .session import worker_python
    from .table_source import LogtideDataSource

    conf = {k: v for k, v in spark.conf.getAll.items() if k.startswith("spark.cassandra.")}
    sc = spark.sparkContext
    python, default = worker_python(sc), sc.pythonExec
    sc.pythonExec = python  # what PySpark serializes with each source: its planner and readers run it
    try:
        spark.dataSource.register(with_conf(LogtideDataSource, conf))
        spark.dataSource.register(with_conf(LogtideCdcDataSource, conf))
        spark.dataSource.register(LogtideChangefeedDataSource)
    finally:
        sc.pythonExec = default  # the session's other Python functions keep PySpark's choice


def with_conf(source: type, conf: dict[str, str]) -> type:
    """``source`` carrying the session's ``spark.cassandra.*`` conf (read when registering), as the Spark Cassandra
    Connector reads its settings from the conf: a subclass that PySpark pickles by value, attribute included (the
    source's planner runs in a Python worker, where no session is active)."""
    return type(source.__name__, (source,), {"conf": dict(conf), "__module__": __name__,
                                             "__qualname__": f"with_conf.<locals>.{source.__name__}"})


def lakehouse(spark: Any, source: str, target: Any, format: str = "delta", **kwargs: Any) -> Any:
    """Stream a changefeed into a Delta replica or a parquet change table; returns the StreamingQuery.

    A new Delta replica begins whole (the rows written before the changefeed included: docs/spark.md "The
    rows written before the changefeed").  See :func:`logtide.spark.lakehouse_job.lakehouse` for the keyword
    arguments (``checkpoint``, ``until_caught_up``, ``data_dir``, ``trigger_interval``,
    ``max_records_per_trigger``, ``options``, ``progress``)."""
    from .lakehouse_job import lakehouse as start

    return start(spark, source, target, format, **kwargs)


__all__ = ["lakehouse", "register"]
