"""Reading a live directory: logtide.open(readonly=True), shell --readonly, replay and check beside a running writer."""

from __future__ import annotations

import subprocess
import sys

import pytest

import logtide
from logtide.errors import ReadOnlyDatabase

from ..server.conftest import KEYSPACE_DDL, cluster
from ..server.test_cli import Serve
from .helpers import run_logtide

WRITER = """
import sys, logtide
db = logtide.open(sys.argv[1])
s = db.session()
s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
s.execute("CREATE TABLE ks.t (k int, c int, v int, PRIMARY KEY (k, c))")
print('ready', flush=True)
b = s.prepare("BEGIN BATCH INSERT INTO ks.t (k, c, v) VALUES (?, 0, ?); INSERT INTO ks.t (k, c, v) VALUES (?, 1, ?); "
              "APPLY BATCH")
i = 0
while not sys.stdin.closed:
    s.execute(b, [i, i, i, i])
    i += 1
    if i % 50 == 0:
        print(i, flush=True)
        if i >= 2000:
            break
sys.stdin.read()
db.close()
"""


def test_a_read_only_database_reads_consistent_snapshots_while_another_process_writes(tmp_path):
    data = tmp_path / "d"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(data)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready"
        assert int(writer.stdout.readline()) >= 50
        with logtide.open(data, readonly=True) as db:
            s = db.session()
            seen = []
            for _ in range(5):
                rows = list(s.execute("SELECT k, c, v FROM ks.t"))
                by_k: dict[int, set[int]] = {}
                for r in rows:
                    by_k.setdefault(r.k, set()).add(r.c)
                assert all(cs == {0, 1} for cs in by_k.values()), "a batch must be seen whole"
                seen.append(len(rows))
                writer.stdout.readline()  # the writer went on meanwhile
            assert seen == sorted(seen) and seen[-1] > seen[0]
            with pytest.raises(ReadOnlyDatabase, match="open read-only"):
                s.execute("INSERT INTO ks.t (k, c, v) VALUES (-1, 0, 0)")
            with pytest.raises(ReadOnlyDatabase):
                s.execute("CREATE TABLE ks.u (k int PRIMARY KEY)")
    finally:
        writer.stdin.close()
        writer.wait(120)
    with logtide.open(data, readonly=True) as db:
        assert len(db.session().execute("SELECT k FROM ks.t WHERE k = -1")) == 0


def test_replay_shell_and_check_read_the_directory_of_a_running_server(tmp_path):
    data = tmp_path / "d"
    with Serve("--data-dir", str(data)) as srv:
        port = srv.wait_listening()
        c = cluster(port)
        try:
            s = c.connect()
            s.execute(KEYSPACE_DDL.format("ks"))
            s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH cdc = {'enabled': true}")
            for i in range(30):
                s.execute("INSERT INTO ks.t (k, v) VALUES (%s, %s)", (i, f"v{i}"))
            out = run_logtide("replay", "ks.t", "--data-dir", str(data), "--target-data-dir", str(tmp_path / "copy"),
                              "--verify")
            assert out.returncode == 0, out.stdout + out.stderr
            assert "replayed 30 log rows" in out.stdout and "verify: 0 differences" in out.stdout
            out = run_logtide("shell", "--readonly", "--data-dir", str(data), "-e", "SELECT count(*) FROM ks.t")
            assert out.returncode == 0, out.stderr
            assert " 30" in out.stdout
            out = run_logtide("shell", "--readonly", "--data-dir", str(data), "-e",
                              "INSERT INTO ks.t (k, v) VALUES (100, 'x')")
            assert out.returncode != 0 and "open read-only" in out.stderr
            out = run_logtide("check", "--data-dir", str(data))
            assert out.returncode == 0 and "no damage found" in out.stdout, out.stdout + out.stderr
            out = run_logtide("shell", "--data-dir", str(data), "-e", "SELECT count(*) FROM ks.t")
            assert out.returncode != 0 and "in use by another logtide process" in out.stderr
            s.execute("INSERT INTO ks.t (k, v) VALUES (100, 'after')")  # the server kept serving
        finally:
            c.shutdown()
        assert srv.stop() == 0
    with logtide.open(tmp_path / "copy", readonly=True) as db:
        assert len(db.session().execute("SELECT k FROM ks.t")) == 30
