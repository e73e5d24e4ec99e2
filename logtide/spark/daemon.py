"""A PySpark worker daemon with logtide's Spark modules already imported (``spark.python.daemon.module``).

Spark forks every Python worker from one daemon process; a fresh worker of the stock daemon
imports logtide (its CQL grammar, type system and engine) again on its first task, a second or more
on a loaded machine.  Started as ``spark.python.daemon.module=logtide.spark.daemon``, the daemon
imports them once and every forked worker inherits them (docs/spark.md, "Starting faster").
Nothing here starts a thread or opens a connection: forking after it is safe.
"""

from __future__ import annotations


def preload() -> None:
    """Import what the executors of every logtide source and of the pipeline jobs run."""
    from . import (cdc_source, changefeed_source, client, cql_writes, replicate, table_source,  # noqa: F401
                   types)


if __name__ == "__main__":
    preload()
    from pyspark.daemon import manager

    manager()
