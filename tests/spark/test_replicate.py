"""``logtide pipeline replicate``: random writes while the job runs, the job killed and restarted, then the
target equals the source cell for cell (values, write times, TTLs), compared as ``logtide replay --verify`` does."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from typing import Callable

import pytest

import logtide
from logtide.cdc.replay import compare_tables

from .conftest import KEYSPACE_DDL, cluster, serve

pytestmark = pytest.mark.long_running(seconds=150)  # a replication job killed and restarted: handed out first (tests/conftest.py)

SCHEMA = [
    KEYSPACE_DDL.format("src"),
    "CREATE TYPE src.addr (street text, n int)",
    "CREATE TABLE src.t (pk int, ck int, v text, n int, l list<int>, s set<int>, m map<int, text>, u addr,"
    " f frozen<list<int>>, st int static, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}",
]


def random_statement(rng: random.Random) -> tuple[str, tuple]:
    pk, ck, x = rng.randrange(6), rng.randrange(8), rng.randrange(100)
    ttl = f" USING TTL {rng.randrange(5000, 9000)}" if rng.random() < 0.2 else ""
    key = "WHERE pk = %s AND ck = %s"
    return rng.choice([
        (f"INSERT INTO src.t (pk, ck, v, n, l, s, m, u, f) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s){ttl}",
         (pk, ck, f"v{x}", x, [x, x + 1], {x}, {x: "m"}, ("st", x), [x])),
        (f"INSERT INTO src.t (pk, ck){' ' if ttl else ''}VALUES (%s, %s){ttl}", (pk, ck)),
        (f"UPDATE src.t{ttl} SET v = %s, n = null {key}", (f"u{x}", pk, ck)),
        (f"UPDATE src.t{ttl} SET l = l + %s {key}", ([x], pk, ck)),
        (f"UPDATE src.t SET l = %s + l {key}", ([x], pk, ck)),
        (f"UPDATE src.t SET l = l - %s {key}", ([x % 10], pk, ck)),
        (f"UPDATE src.t{ttl} SET s = s + %s, m[%s] = %s {key}", ({x, x + 1}, x, f"e{x}", pk, ck)),
        (f"UPDATE src.t SET s = s - %s, m = m - %s {key}", ({x % 10}, {x % 10}, pk, ck)),
        (f"UPDATE src.t SET s = %s, m = %s {key}", ({x}, {x: "over"}, pk, ck)),
        (f"UPDATE src.t{ttl} SET u.n = %s {key}", (x, pk, ck)),
        (f"UPDATE src.t SET u = %s {key}", (("w", x), pk, ck)),
        (f"UPDATE src.t SET f = %s, st = %s {key}", ([x, x], x, pk, ck)),
        (f"UPDATE src.t SET st = %s WHERE pk = %s", (x, pk)),
        (f"DELETE l, u.street FROM src.t {key}", (pk, ck)),
        (f"DELETE FROM src.t {key}", (pk, ck)),
        ("DELETE FROM src.t WHERE pk = %s AND ck >= %s AND ck < %s", (pk, ck, ck + 2)),
        ("DELETE FROM src.t WHERE pk = %s", (pk,)) if rng.random() < 0.3 else ("SELECT now() FROM system.local", ()),
        ("BEGIN BATCH INSERT INTO src.t (pk, ck, v) VALUES (%s, %s, 'b1'); UPDATE src.t SET s = s + {1} "
         "WHERE pk = %s AND ck = %s; DELETE m FROM src.t WHERE pk = %s AND ck = %s; APPLY BATCH",
         (pk, ck, (pk + 1) % 6, ck, pk, (ck + 1) % 8)),
    ])


def write_randomly(session, rng: random.Random, n: int) -> None:
    for _ in range(n):
        q, p = random_statement(rng)
        try:
            session.execute(q, p)
        except Exception as e:  # list index out of bounds and similar: the statement changes nothing
            assert "out of bound" in str(e) or "Invalid" in str(e), e


class BackgroundWriter:
    """``write(rng)`` again and again on a daemon thread, ``pause`` seconds apart, while a job runs; ``stop()``
    ends it and returns what it raised (the test asserts there is nothing)."""

    def __init__(self, write: Callable[[random.Random], None], seed: int, pause: float) -> None:
        self.halt = threading.Event()
        self.failures: list[BaseException] = []
        rng = random.Random(seed)

        def run() -> None:
            try:
                while not self.halt.is_set():
                    write(rng)
                    time.sleep(pause)
            except BaseException as e:  # noqa: BLE001 - reported by the test
                self.failures.append(e)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def stop(self) -> list[BaseException]:
        self.halt.set()
        self.thread.join(60)
        return self.failures


class Job:
    """``logtide pipeline replicate`` in its own process group (the Spark JVM with it)."""

    def __init__(self, port: int, checkpoint) -> None:
        conf = checkpoint.parent / "spark-conf"  # workers fork from a daemon with logtide imported
        conf.mkdir(exist_ok=True)
        (conf / "spark-defaults.conf").write_text("spark.python.daemon.module logtide.spark.daemon\n")
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_CONF_DIR": str(conf)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "logtide", "pipeline", "replicate", "--source", f"cql://127.0.0.1:{port}/src.t",
             "--target", f"cql://127.0.0.1:{port}/dst.t", "--checkpoint", str(checkpoint), "--until-caught-up",
             "--confidence-window", "1s", "--splits", "4", "--max-rows-per-trigger", "400"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)

    def kill_when(self, ready, timeout: float = 300) -> bool:
        """SIGKILL the job (and its JVM) as soon as ``ready()`` holds; False if it never did."""
        deadline = time.monotonic() + timeout
        while not ready() and self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        hit = ready()
        self.kill()
        return hit

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(60)

    def finish(self, timeout: float = 600) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err


def snapshot_started(ckpt) -> bool:
    return (ckpt / "snapshot.json").exists()


def mid_batch(ckpt) -> int:
    """The micro-batch planned (offsets/N written) and not yet committed (no commits/N), else -1."""
    offsets, commits = ckpt / "cdc" / "offsets", ckpt / "cdc" / "commits"
    try:
        planned = {int(p.name) for p in offsets.iterdir() if p.name.isdigit()}
        done = {int(p.name) for p in commits.iterdir() if p.name.isdigit()} if commits.exists() else set()
    except FileNotFoundError:
        return -1
    running = planned - done
    return max(running) if running else -1


def test_replicate_converges_cell_for_cell_with_the_job_killed_three_times(tmp_path):
    data = tmp_path / "d"
    srv = serve(data, "--vnodes", "4")
    c = cluster(srv.port)
    s = c.connect()
    for ddl in SCHEMA:
        s.execute(ddl)
    rng = random.Random(7)
    write_randomly(s, rng, 150)
    writer = BackgroundWriter(lambda wrng: write_randomly(s, wrng, 5), seed=11, pause=1.0)
    try:
        ckpt = tmp_path / "ckpt"
        # killed once while the snapshot is copied, then twice in the middle of a CDC micro-batch
        # (planned in offsets/N, not yet in commits/N), each time a later batch than before
        assert Job(srv.port, ckpt).kill_when(lambda: snapshot_started(ckpt))
        killed = -1
        for _ in range(2):
            assert Job(srv.port, ckpt).kill_when(lambda: mid_batch(ckpt) > killed)
            killed = mid_batch(ckpt)
        assert not writer.stop()
        time.sleep(1.5)  # the last writes leave the confidence window
        status, out, err = Job(srv.port, tmp_path / "ckpt").finish()
        assert status == 0, err[-3000:]
        assert "caught up" in out
        assert "Traceback" not in err and "[Stage" not in err and "snapshot:" not in err  # quiet when piped
        assert "Setting default log level" not in err  # Spark's start-up banner is configured away
        db = logtide.open(data, readonly=True)
        try:
            diffs = compare_tables(db, db.catalog.table("src", "t"), db, db.catalog.table("dst", "t"))
            assert len(list(s.execute("SELECT * FROM src.t"))) > 10
        finally:
            db.close()
        assert diffs == []
    finally:
        writer.stop()
        c.shutdown()
        srv.stop()
