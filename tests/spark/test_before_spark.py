"""``logtide pipeline`` checks its source, table, topic and target before it starts Spark (docs/spark.md "Before
Spark starts"): each failure is one line (``logtide pipeline JOB: error: ...``, status 2), and pyspark is never
imported (a stand-in ``pyspark`` package on PYTHONPATH records any import, so a job that went on to start Spark is
caught)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

import logtide

from .conftest import KEYSPACE_DDL

STAND_IN = """import os, sys
open(os.environ["LOGTIDE_TEST_PYSPARK_IMPORTED"], "w").write("imported")
sys.exit("pyspark was imported")
"""


def run_before_spark(tmp_path, *argv: str) -> subprocess.CompletedProcess:
    """``logtide pipeline ARGV`` with a stand-in pyspark; fails the test if the job imported it."""
    stand_in = tmp_path / "stand-in"
    (stand_in / "pyspark").mkdir(parents=True, exist_ok=True)
    (stand_in / "pyspark" / "__init__.py").write_text(STAND_IN)
    marker = tmp_path / "pyspark-imported"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stand_in), os.environ.get("PYTHONPATH", "")]),
           "LOGTIDE_TEST_PYSPARK_IMPORTED": str(marker)}
    done = subprocess.run([sys.executable, "-m", "logtide", "pipeline", *argv], capture_output=True, text=True,
                          env=env, timeout=300)
    assert not marker.exists(), f"the job imported pyspark before failing: {done.stderr}"
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> str:
    """A data directory: ks.t with a NEW_IMAGE changefeed f and a KEYS_ONLY changefeed k."""
    path = tmp_path_factory.mktemp("before-spark") / "data"
    with logtide.open(path, synchronous="OFF") as d:
        s = d.session()
        s.execute(KEYSPACE_DDL.format("ks"))
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON')")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED k WITH (MODE = 'KEYS_ONLY', FORMAT = 'JSON')")
    return str(path)


def lakehouse(tmp_path, *argv: str, fmt: str = "delta") -> subprocess.CompletedProcess:
    return run_before_spark(tmp_path, "lakehouse", "--format", fmt, *argv)


def test_the_lakehouse_job_finds_bad_sources_and_targets_before_spark_starts(data, tmp_path):
    target = str(tmp_path / "target")
    missing = lakehouse(tmp_path, "--data-dir", str(tmp_path / "none"), "--source", "ks/t/f", "--target", target)
    assert missing.returncode == 2
    assert "logtide pipeline lakehouse: error: option path: cannot open the logtide data directory" in missing.stderr
    no_feed = lakehouse(tmp_path, "--data-dir", data, "--source", "ks/t/nope", "--target", target)
    assert no_feed.returncode == 2 and "option topic: Topic 'ks/t/nope' does not exist" in no_feed.stderr
    port = free_port()
    no_kafka = lakehouse(tmp_path, "--source", f"kafka://127.0.0.1:{port}/ks/t/f", "--target", target)
    assert no_kafka.returncode == 2
    assert f"cannot reach the Kafka bootstrap servers 127.0.0.1:{port}: 127.0.0.1:{port}: " in no_kafka.stderr
    keys_only = lakehouse(tmp_path, "--data-dir", data, "--source", "ks/t/k", "--target", target)
    assert keys_only.returncode == 2 and "a KEYS_ONLY changefeed carries no new values" in keys_only.stderr
    (tmp_path / "file").write_text("x")
    a_file = lakehouse(tmp_path, "--data-dir", data, "--source", "ks/t/f", "--target", str(tmp_path / "file"))
    assert a_file.returncode == 2 and f"--target: {tmp_path / 'file'} is a file" in a_file.stderr
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    other = lakehouse(tmp_path, "--data-dir", data, "--source", "ks/t/f", "--target", str(tmp_path / "other"))
    assert other.returncode == 2 and "exists and is not a Delta table" in other.stderr
    parquet = lakehouse(tmp_path, "--data-dir", data, "--source", "ks/t/k", "--target", str(tmp_path / "other"),
                        fmt="parquet")
    assert parquet.returncode == 2 and "that are not a change table written by this job" in parquet.stderr


def test_a_delta_target_with_other_columns_is_refused_before_spark_starts(data, tmp_path):
    deltalake = pytest.importorskip("deltalake")
    import pyarrow as pa

    target = tmp_path / "delta"
    deltalake.write_deltalake(str(target), pa.table({"k": pa.array([1], pa.int32()), "w": ["x"]}))
    done = lakehouse(tmp_path, "--data-dir", data, "--source", "ks/t/f", "--target", str(target))
    assert done.returncode == 2
    assert f"--target: {target} holds a Delta table with columns k, w, not the changefeed table's k, v" in done.stderr


def test_the_replication_job_finds_bad_sources_and_targets_before_spark_starts(server, cql, tmp_path):
    cql.execute(KEYSPACE_DDL.format("rk"))
    cql.execute("CREATE TABLE rk.plain (k int PRIMARY KEY, v int)")
    cql.execute("CREATE TABLE rk.logged (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    cql.execute("CREATE TABLE rk.other (k int PRIMARY KEY, w text)")
    here, ckpt = f"cql://127.0.0.1:{server.port}", str(tmp_path / "ckpt")

    def replicate(source: str, target: str) -> subprocess.CompletedProcess:
        return run_before_spark(tmp_path, "replicate", "--source", source, "--target", target, "--checkpoint", ckpt)

    port = free_port()
    unreachable = replicate(f"cql://127.0.0.1:{port}/rk.logged", f"{here}/rk.copy")
    assert unreachable.returncode == 2
    assert f"logtide pipeline replicate: error: cannot connect to 127.0.0.1:{port}: " in unreachable.stderr
    missing = replicate(f"{here}/rk.nope", f"{here}/rk.copy")
    assert missing.returncode == 2 and "--source: table rk.nope does not exist" in missing.stderr
    no_log = replicate(f"{here}/rk.plain", f"{here}/rk.copy")
    assert no_log.returncode == 2 and "--source: rk.plain has no CDC log" in no_log.stderr
    other = replicate(f"{here}/rk.logged", f"{here}/rk.other")
    assert other.returncode == 2 and "--target: table rk.other exists with other columns" in other.stderr
    itself = replicate(f"{here}/rk.logged", f"{here}/rk.logged")
    assert itself.returncode == 2 and "the target is the source table" in itself.stderr
