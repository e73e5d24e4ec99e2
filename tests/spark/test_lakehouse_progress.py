"""The lakehouse job's progress line, ``batch N: R records, lag L records`` (docs/spark.md "The lakehouse job"): the
changefeed source reports every partition's end (``reportLatestOffset``, Spark 4.2+), so the lag is the records not
yet in the target; on Spark 4.0/4.1, which never ask, the line has no lag."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from pyspark.sql.datasource import DataSourceStreamReader

import logtide
from logtide.spark.lakehouse_job import lakehouse, progress_line

from ..ops.test_progress import run_on_terminal

pytest.importorskip("deltalake")

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
RECORDS = 30
pytestmark = pytest.mark.long_running(seconds=45)  # the lakehouse command starts its own Spark, beside the shared session: handed out first (tests/conftest.py)
REPORTS_LATEST = hasattr(DataSourceStreamReader, "reportLatestOffset")  # Spark 4.2+


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> str:
    """A data directory whose changefeed ks/t/f holds RECORDS records in two partitions."""
    data = tmp_path_factory.mktemp("lakehouse-progress") / "data"
    with logtide.open(data, synchronous="OFF") as d:
        s = d.session()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', "
                  "TOPIC_MIN_ACTIVE_PARTITIONS = 2)")
        for k in range(RECORDS):
            s.execute(f"INSERT INTO ks.t (k, v) VALUES ({k}, {k})")
    return str(data)


@dataclass(frozen=True)
class Progressed:
    """What ``progress_line`` reads of a StreamingQuery: one of its real progress reports."""

    lastProgress: dict[str, Any]


def lines_of(batch: int) -> list[str]:
    """The progress lines of a query reading RECORDS records, at most ``batch`` per micro-batch."""
    return [f"batch {i}: {batch} records, lag {RECORDS - batch * (i + 1)} records" for i in range(RECORDS // batch)]


def test_the_progress_line_counts_the_records_not_yet_in_the_target(spark, data_dir, tmp_path):
    q = lakehouse(spark, "ks/t/f", tmp_path / "delta", "delta", data_dir=data_dir, until_caught_up=True,
                  max_records_per_trigger=10, options={"startingOffsets": "earliest"})  # every record, no snapshot
    q.awaitTermination()
    assert q.exception() is None, q.exception()
    lines = [progress_line(Progressed(p)) for p in q.recentProgress if p["numInputRows"]]
    if REPORTS_LATEST:
        assert lines == lines_of(10)
    else:  # Spark 4.0/4.1: no latest offset, no lag
        assert lines and not any(", lag" in line for line in lines)


def test_the_command_shows_the_lag_on_a_terminal(data_dir, tmp_path):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    done, shown = run_on_terminal(["pipeline", "lakehouse", "--data-dir", data_dir, "--source", "ks/t/f",
                                   "--target", str(tmp_path / "parquet"), "--format", "parquet",
                                   "--until-caught-up", "--max-records-per-trigger", "15"], timeout=600)
    assert done.returncode == 0, shown[-3000:]
    assert done.stdout.decode().endswith("(caught up)\n")
    assert b"starting Spark (local[2])" in shown  # said while the JVM starts
    # Spark's banner and WARN lines (log4j2.properties on the driver JVM), and the JVM's own warning, stay away
    for noise in (b"Traceback", b"WARN", b"log4j", b"Setting default log level", b"incubator"):
        assert noise not in shown, shown[-3000:]
    if REPORTS_LATEST:
        assert lines_of(15)[-1].encode() in shown  # the last status stays on the terminal
    else:
        assert b" records" in shown and b", lag" not in shown
