"""Fixtures: ONE local Spark session for the whole test run, and real ``logtide serve`` processes."""

from __future__ import annotations

import os
import sys
from typing import Iterator

import pytest

from tests.server.conftest import KEYSPACE_DDL, cluster
from tests.server.test_cli import Serve

pyspark = pytest.importorskip("pyspark")

__all__ = ["KEYSPACE_DDL", "cluster", "Serve", "serve"]


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A local[2] SparkSession shared by every Spark test (UI off, few shuffle partitions, quiet logs)."""
    from pyspark.sql import SparkSession

    import logtide.spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    session = (SparkSession.builder.master("local[2]").appName("logtide-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.driver.memory", "1g")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.python.worker.reuse", "true")
               .config("spark.python.daemon.module", "logtide.spark.daemon")  # workers fork with logtide imported
               .config("spark.python.authenticate.socketTimeout", "300s")  # a loaded machine starts workers slowly
               .config("spark.sql.python.filterPushdown.enabled", "true")
               .config("spark.driver.extraJavaOptions", "-Dlog4j2.level=error")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    logtide.spark.register(session)
    yield session
    session.stop()


def serve(data_dir, *args: str) -> Serve:
    """A ``logtide serve`` process on an ephemeral port (listening when returned)."""
    srv = Serve("--data-dir", str(data_dir), "--synchronous", "OFF", *args)
    srv.wait_listening(120)
    return srv


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Serve]:
    """A ``logtide serve`` subprocess on a fresh data directory, one per test module."""
    data = tmp_path_factory.mktemp("spark-serve")
    srv = serve(data)
    srv.data_dir = data
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def cql(server):
    """A cassandra-driver session on the module's server."""
    c = cluster(server.port)
    s = c.connect()
    yield s
    c.shutdown()
