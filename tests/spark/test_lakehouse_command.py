"""``logtide pipeline lakehouse`` run as a user runs it, each job in its own process with its own Spark (not the
suite's shared session, so the suite's scheduler runs this file beside the Spark tests): killed while it copies the
snapshot and twice in the middle of a micro-batch (the second a later batch), the Delta replica still equals the
table; a bad source is one line before Spark starts (docs/spark.md "The lakehouse job")."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import KEYSPACE_DDL, cluster, serve
from .test_changefeed_source import kafka_port
from .test_lakehouse import base_rows, delta_rows
from .test_replicate import BackgroundWriter
from .test_replicate import Job as ReplicateJob
from .test_replicate import mid_batch

pytestmark = pytest.mark.long_running(seconds=145)  # a job killed and restarted three times: handed out first (tests/conftest.py)


def random_statement(rng: random.Random) -> tuple[str, tuple]:
    pk, ck, x = rng.randrange(5), rng.randrange(6), rng.randrange(1000)
    key = "WHERE pk = %s AND ck = %s"
    return rng.choice([
        ("INSERT INTO ks.t (pk, ck, a, b, l, m) VALUES (%s, %s, %s, %s, %s, %s)",
         (pk, ck, f"a{x}", x, [x, x + 1], {f"k{x % 3}": x})),
        ("INSERT INTO ks.t (pk, ck, b) VALUES (%s, %s, %s)", (pk, ck, x)),
        (f"UPDATE ks.t SET a = %s {key}", (f"u{x}", pk, ck)),
        (f"UPDATE ks.t SET b = %s, a = null {key}", (x, pk, ck)),
        (f"UPDATE ks.t SET l = l + %s, m[%s] = %s {key}", ([x], f"k{x % 3}", x, pk, ck)),
        (f"DELETE a FROM ks.t {key}", (pk, ck)),
        (f"DELETE FROM ks.t {key}", (pk, ck)),
        ("DELETE FROM ks.t WHERE pk = %s AND ck >= %s AND ck < %s", (pk, ck, ck + 2)),
        ("DELETE FROM ks.t WHERE pk = %s", (pk,)) if rng.random() < 0.3 else ("SELECT now() FROM system.local", ()),
        ("BEGIN BATCH INSERT INTO ks.t (pk, ck, a) VALUES (%s, %s, 'batch'); "
         "UPDATE ks.t SET b = %s WHERE pk = %s AND ck = %s; APPLY BATCH", (pk, ck, x, (pk + 1) % 5, ck)),
    ])


def write_randomly(session, rng: random.Random, n: int) -> None:
    for _ in range(n):
        session.execute(*random_statement(rng))


class Job(ReplicateJob):
    """``logtide pipeline lakehouse`` (delta) in its own process group, the Spark JVM with it."""

    def __init__(self, source: list[str], target: Path, checkpoint: Path, *extra: str) -> None:
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "logtide", "pipeline", "lakehouse", *source, "--target", str(target),
             "--format", "delta", "--checkpoint", str(checkpoint), "--trigger-interval", "0.5 seconds", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)


def test_delta_job_over_kafka_killed_in_the_snapshot_and_twice_mid_batch_equals_the_base_table(tmp_path):
    data = tmp_path / "d"
    srv = serve(data, "--kafka-port", "auto")
    c = cluster(srv.port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("ks"))
    s.execute("CREATE TABLE ks.t (pk int, ck int, a text, b bigint, l list<int>, m map<text, int>, "
              "PRIMARY KEY (pk, ck))")
    write_randomly(s, random.Random(2), 60)  # before the changefeed: the replica's snapshot (over CQL) holds them
    s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON', "
              "TOPIC_MIN_ACTIVE_PARTITIONS = 3)")
    write_randomly(s, random.Random(3), 120)
    # slower than the job reads, so that it keeps up between restarts
    writer = BackgroundWriter(lambda wrng: write_randomly(s, wrng, 2), seed=5, pause=0.4)
    source = ["--source", f"kafka://127.0.0.1:{kafka_port(srv)}/ks/t/f", "--cql-port", str(srv.port)]
    target, job = tmp_path / "delta", tmp_path / "job"
    ckpt = job / "cdc"  # mid_batch() looks for the streaming checkpoint under <dir>/cdc
    try:
        # killed once while the snapshot of the table is copied (its start chosen, kept in the checkpoint) ...
        assert Job(source, target, ckpt, "--max-records-per-trigger", "60").kill_when(
            lambda: (ckpt / "logtide_start.json").exists())
        killed = -1
        for _ in range(2):  # ... then twice in the middle of a micro-batch (planned, not committed), the second a later one
            assert Job(source, target, ckpt, "--max-records-per-trigger", "60").kill_when(
                lambda: mid_batch(job) > killed)
            killed = mid_batch(job)
        assert not writer.stop()
        status, out, err = Job(source, target, ckpt, "--until-caught-up").finish()  # the rest in one batch
        assert status == 0, err[-3000:]
        assert "caught up" in out and "Traceback" not in err
        cols, want = base_rows(s, "ks.t")
        assert len(want) > 5
        assert delta_rows(target, cols) == want
        # a topic known only by a schema given in options cannot be snapshotted: refused before Spark starts
        schema_only = subprocess.run(
            [sys.executable, "-m", "logtide", "pipeline", "lakehouse", "--source", source[1], "--target",
             str(tmp_path / "other"), "--format", "delta", "-o", "mode=NEW_AND_OLD_IMAGES", "-o", "format=JSON",
             "-o", "tableSchema=pk int, ck int, a text, b bigint, l list<int>, m map<text, int>, "
                   "PRIMARY KEY (pk, ck)"], capture_output=True, text=True, timeout=120)
        assert schema_only.returncode == 2 and "INITIAL_SCAN = TRUE" in schema_only.stderr, schema_only.stderr
    finally:
        writer.stop()
        c.shutdown()
        srv.stop()


def test_the_command_names_a_bad_source_in_one_line(tmp_path):
    run = [sys.executable, "-m", "logtide", "pipeline", "lakehouse", "--target", str(tmp_path / "t"), "--format", "delta"]
    bad_url = subprocess.run(run + ["--source", "cql://h/ks.t"], capture_output=True, text=True, timeout=120)
    assert bad_url.returncode == 2 and "--source: expected kafka://" in bad_url.stderr
    missing = subprocess.run(run + ["--data-dir", str(tmp_path / "none"), "--source", "ks/t/f"],
                             capture_output=True, text=True, timeout=600,
                             env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert missing.returncode == 2  # bad input, found before Spark starts
    assert "logtide pipeline lakehouse: error: option path: cannot open the logtide data directory" in missing.stderr
    assert "Traceback" not in missing.stderr
