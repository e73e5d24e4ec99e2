"""Fixtures: ONE local Spark session for the whole test run, and real ``logtide serve`` processes."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from tests.server.conftest import KEYSPACE_DDL, cluster
from tests.server.test_cli import Serve

pyspark = pytest.importorskip("pyspark")

__all__ = ["KEYSPACE_DDL", "cluster", "Serve", "refused_stream", "serve"]


QUICK_JVM_START = "-XX:TieredStopAtLevel=1"


@pytest.fixture(scope="session", autouse=True)
def quick_jvm_start() -> Iterator[None]:
    """Every Spark JVM the tests start (the shared session, and the ``logtide pipeline`` jobs run as commands, which
    inherit the environment) compiles with the JVM's quick C1 compiler only (``$SPARK_SUBMIT_OPTS``, which
    spark-submit puts on the driver JVM's command line; one the runner set, even empty, is kept): the tests'
    Spark work is short, and on a loaded 2-core machine the optimising C2 compiler's threads took about a third
    of each job's start-up and first queries.  It changes no behaviour, only how fast Spark's own code starts
    (DEVELOPERS.md "Running")."""
    given = os.environ.get("SPARK_SUBMIT_OPTS")
    if given is None:
        os.environ["SPARK_SUBMIT_OPTS"] = QUICK_JVM_START
    yield
    if given is None:
        os.environ.pop("SPARK_SUBMIT_OPTS", None)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A local[2] SparkSession shared by every Spark test: the pipeline jobs' session (UI off, quiet logs, UTC,
    workers forked with logtide imported), with the Python filter pushdown on and a small driver."""
    import logtide.spark
    from logtide.spark.session import spark_session

    session = spark_session("local[2]", "logtide-tests", {
        "spark.default.parallelism": "2",
        "spark.driver.memory": "1g",
        "spark.sql.python.filterPushdown.enabled": "true",
    })
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


def refused_stream(reader, checkpoint) -> str:
    """The error a stream that must be refused ends with (``reader`` a ``DataStreamReader`` with its options)."""
    try:
        q = (reader.load().writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
        q.awaitTermination(120)
    except Exception as e:  # refused while the query starts
        return str(e)
    assert q.exception() is not None, "the stream was not refused"
    return str(q.exception())
