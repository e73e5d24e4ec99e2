"""The replication job's status line (docs/spark.md "The replication job"): what is still to copy, in log rows,
and the confidence window apart, never the window counted as lag."""

from __future__ import annotations

import pytest
from pyspark.sql.datasource import DataSourceStreamReader

from logtide.spark.replicate import replicate, status_line

from ..ops.test_progress import run_on_terminal
from .conftest import KEYSPACE_DDL, cluster, serve

pytestmark = pytest.mark.long_running(seconds=50)  # the replication command starts its own Spark, beside the shared session: handed out first (tests/conftest.py)
REPORTS_LATEST = hasattr(DataSourceStreamReader, "reportLatestOffset")  # Spark 4.2+
CAUGHT_UP = "caught up but for the last {w} (the confidence window, copied by a later batch)"
ROWS = 30


def progress(batch: int, rows: int, latest: str | None, end: str) -> dict:
    """A query progress report as Spark gives it (the fields the status line reads)."""
    source = {"endOffset": end, **({"latestOffset": latest} if latest is not None else {})}
    return {"batchId": batch, "numInputRows": rows, "sources": [source]}


def test_the_status_line_says_what_is_still_to_copy_and_the_window_apart():
    end = '{"version": 1, "time": 1795787156000000}'
    assert status_line(None, "30s") is None
    assert status_line(progress(3, 400, '{"version": 1, "time": 1795787190000000, "rowsBehind": 1200}', end),
                       "30s") == "cdc: batch 3: 400 log rows copied, 1200 still to copy"
    assert status_line(progress(4, 120, '{"version": 1, "time": 1795787156000000, "rowsBehind": 0}', end),
                       "30s") == "cdc: batch 4: 120 log rows copied; " + CAUGHT_UP.format(w="30s")
    assert status_line(progress(5, 400, '{"version": 1, "time": 1795787190000000, "rowsBehindAtLeast": 900}', end),
                       "30s") == "cdc: batch 5: 400 log rows copied, more than 900 still to copy"
    # Spark 4.0/4.1 never ask the source for its latest offset: how far the log is copied, the window apart
    assert status_line(progress(6, 7, None, end), "1m") == (
        "cdc: batch 6: 7 log rows copied, up to 13:45:56 UTC (the last 1m, the confidence window, in a later batch)")


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A server whose src.t holds ROWS rows in as many partitions, each an insert in the CDC log.  Its 32 streams
    (16 vnodes of random tokens, 2 shards) keep every stream under the 11 rows a capped batch reads of each, so
    the count still to copy is exact; with 8 streams one of them sometimes held 12 and the line said "more than"."""
    srv = serve(tmp_path_factory.mktemp("status") / "d", "--vnodes", "16", "--shards", "2")
    c = cluster(srv.port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("src"))
    s.execute("CREATE TABLE src.t (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    for k in range(ROWS):
        s.execute("INSERT INTO src.t (k, v) VALUES (%s, %s)", (k, k))
    yield srv
    c.shutdown()
    srv.stop()


def test_each_micro_batch_shows_the_log_rows_still_to_copy(spark, source, tmp_path):
    url = f"cql://127.0.0.1:{source.port}"
    q = replicate(spark, f"{url}/src.t", f"{url}/dst.t", tmp_path / "ckpt", until_caught_up=True,
                  confidence_window="0s", splits=4, max_rows_per_trigger=10 if REPORTS_LATEST else None)
    q.awaitTermination(600)
    assert q.exception() is None, q.exception()
    lines = [status_line(p, "0s") for p in q.recentProgress if p["numInputRows"]]
    if REPORTS_LATEST:
        assert lines == ["cdc: batch 0: 10 log rows copied, 20 still to copy",
                         "cdc: batch 1: 10 log rows copied, 10 still to copy",
                         "cdc: batch 2: 10 log rows copied; " + CAUGHT_UP.format(w="0s")]
    else:  # no latest offset: one batch, copied up to its end
        assert len(lines) == 1 and lines[0].startswith(f"cdc: batch 0: {ROWS} log rows copied, up to")


def test_the_command_shows_spark_starting_then_the_status_and_says_caught_up(source, tmp_path, monkeypatch):
    # spark-submit arguments of the user's own: the job's log4j settings reach the driver JVM all the same
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-memory 1g pyspark-shell")
    url = f"cql://127.0.0.1:{source.port}"
    done, shown = run_on_terminal(["pipeline", "replicate", "--source", f"{url}/src.t", "--target", f"{url}/dst2.t",
                                   "--checkpoint", str(tmp_path / "ckpt"), "--until-caught-up",
                                   "--confidence-window", "0s", "--splits", "4"], timeout=900)
    assert done.returncode == 0, shown[-3000:]
    assert done.stdout.decode().endswith(
        "(caught up; changes younger than the confidence window, 0s, are copied by the next run)\n")
    assert b"starting Spark (local[2])" in shown  # while the JVM starts
    assert b"snapshot: 4/4 token ranges copied" in shown
    # the last status stays on the terminal (cut at the 80 columns of a bare pty)
    assert (f"cdc: batch 0: {ROWS} log rows copied; caught up but for".encode() in shown) == REPORTS_LATEST
    for noise in (b"Traceback", b"WARN", b"log4j", b"Setting default log level", b"incubator", b"lag "):
        assert noise not in shown, shown[-3000:]
