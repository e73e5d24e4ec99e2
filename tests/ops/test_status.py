"""``logtide status`` and ``logtide cdc generations|streams``: read-only views of a data directory."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import logtide
from logtide.cli import main

from ..server.conftest import cluster
from .serving import ServeProcess, free_port

DDL = ["CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
       "CREATE TABLE ks.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true, 'preimage': 'full', "
       "'postimage': true, 'ttl': 600}",
       "CREATE TABLE ks.plain (pk int PRIMARY KEY, v int)"]


def make_db(path, vnodes: int = 4) -> None:
    from logtide.cdc.streams import Topology

    with logtide.open(path, topology=Topology(vnodes, 2)) as db:
        for stmt in DDL:
            db.session().execute(stmt)


def files(path) -> dict[str, float]:
    """Modification times of a data directory's files (not SQLite's shared-memory WAL index, which every
    reader, read-only or not, updates)."""
    return {n: os.stat(path / n).st_mtime_ns for n in os.listdir(path) if not n.endswith("-shm")}


def test_status_shows_the_data_directory_cdc_tables_and_the_generation(tmp_path, capsys):
    make_db(tmp_path)
    assert main(["status", "--data-dir", str(tmp_path), "--streams"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Data directory    : {tmp_path}"
    assert out[1].startswith("Size              : ") and "bytes" in out[1]
    assert out[2:6] == [
        "Keyspaces         : 1",
        "Tables            : 2",
        "Tables with CDC   : 1 (each with its CDC log table)",
        "  ks.t -> ks.t_scylla_cdc_log (delta full, preimage full, postimage, ttl 600s)",
    ]
    assert out[6] == ("CDC generation    : 1970-01-01 00:00:00.001+0000 (1 in all; 4 token ranges x 2 shards = "
                      "8 streams)")
    assert len([line for line in out if line.startswith("  range_end ")]) == 4
    assert out[-2:] == ["Changefeeds       : 0", "Server            : not running"]


FEEDS = ["CREATE TABLE ks.f (pk int PRIMARY KEY, v int)",
         "ALTER TABLE ks.f ADD CHANGEFEED updates WITH (MODE = 'UPDATES', FORMAT = 'JSON', "
         "TOPIC_MIN_ACTIVE_PARTITIONS = 2)",
         'ALTER TOPIC "ks/f/updates" ADD CONSUMER fresh',
         'ALTER TOPIC "ks/f/updates" ADD CONSUMER late',
         *(f"INSERT INTO ks.f (pk, v) VALUES ({i}, {i})" for i in range(5))]


def make_feeds(path) -> None:
    """ks.f with a changefeed of 5 records and two consumers; ks.g's changefeed a quarter through its initial scan."""
    make_db(path)
    with logtide.open(path) as db:
        s = db.session()
        for stmt in FEEDS:
            s.execute(stmt)
        s.execute("CREATE TABLE ks.g (pk int PRIMARY KEY, v int)")
        for i in range(8):
            s.execute(f"INSERT INTO ks.g (pk, v) VALUES ({i}, {i})")
        db.feeds.pause()
        s.execute("ALTER TABLE ks.g ADD CHANGEFEED snap WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', INITIAL_SCAN = TRUE)")
        db.feeds.scan_step(partitions=2)
    # `late` reads and commits 3 records, as an operator would
    assert main(["topic", "read", "ks/f/updates", "--consumer", "late", "--format", "newline-delimited",
                 "--limit", "3", "--data-dir", str(path)]) == 0


def test_status_lists_changefeeds_with_state_partitions_records_and_consumer_lag(tmp_path, capsys):
    make_feeds(tmp_path)
    capsys.readouterr()
    before = files(tmp_path)
    assert main(["status", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert files(tmp_path) == before
    assert out[out.index("Changefeeds       : 2"):] == [
        "Changefeeds       : 2",
        "  ks/f/updates ENABLED (UPDATES, JSON): 2 partitions, 5 records",
        "    consumer fresh: lag 5 records",
        "    consumer late: lag 2 records",
        "  ks/g/snap INITIAL_SCAN (NEW_IMAGE, JSON): 1 partition, 2 records, initial scan 25%",
        "    no consumers",
        "Server            : not running",
    ]


def test_changefeed_describe_shows_the_initial_scan_progress(tmp_path, capsys):
    make_feeds(tmp_path)
    capsys.readouterr()
    assert main(["changefeed", "describe", "ks/g/snap", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "state: INITIAL_SCAN" in out
    assert "initial scan progress: [########......................] 2/8 partitions (25%)" in out
    with logtide.open(tmp_path) as db:  # reopened, the database's changefeed worker finishes the scan
        deadline = time.monotonic() + 120
        while db.changefeeds.describe("ks/g/snap").state == "INITIAL_SCAN":
            assert time.monotonic() < deadline, "the initial scan did not finish"
            time.sleep(0.05)
    assert main(["changefeed", "describe", "ks/g/snap", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "state: ENABLED" in out
    assert "initial scan progress: [##############################] 8/8 partitions (100%)" in out


def test_cdc_generations_and_streams_list_what_system_distributed_holds(tmp_path, capsys):
    make_db(tmp_path)
    with logtide.open(tmp_path) as db:
        rows = list(db.session().execute("SELECT range_end, streams FROM system_distributed.cdc_streams_descriptions_v2"))
    assert main(["cdc", "generations", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ("time                          expired  ranges  streams\n"
                                       "1970-01-01 00:00:00.001+0000  -        4       8\n")
    assert main(["cdc", "streams", "ks.t", "--data-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["time", "range_end", "stream_id"]
    listed = [(int(line.split()[2]), line.split()[3]) for line in lines[1:]]
    assert listed == [(r.range_end, "0x" + s.hex()) for r in rows for s in sorted(r.streams)]


def test_a_new_generation_expires_the_old_one(tmp_path, capsys):
    make_db(tmp_path)
    make_db_again = logtide.open  # a different topology starts a new generation
    from logtide.cdc.streams import Topology

    make_db_again(tmp_path, topology=Topology(2, 1)).close()
    assert main(["cdc", "generations", "--data-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert lines[1].split()[2] != "-" and lines[1].split()[-2:] == ["4", "8"]
    assert lines[2].split()[2:] == ["-", "2", "2"]
    assert main(["cdc", "streams", "ks.t", "--all", "--data-dir", str(tmp_path)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 8 + 2


def test_cdc_streams_of_a_table_without_cdc_or_missing(tmp_path, capsys):
    make_db(tmp_path)
    assert main(["cdc", "streams", "ks.plain", "--data-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "logtide cdc streams: error: CDC is not enabled on ks.plain\n"
    assert main(["cdc", "streams", "ks.nope", "--data-dir", str(tmp_path)]) == 2
    assert "unconfigured table nope" in capsys.readouterr().err


def test_status_on_a_directory_without_a_database_creates_nothing(tmp_path, capsys):
    missing = tmp_path / "typo"
    for argv in (["status"], ["cdc", "generations"], ["cdc", "streams", "ks.t"]):
        assert main([*argv, "--data-dir", str(missing)]) == 2
        assert capsys.readouterr().err.endswith(f"{missing} holds no logtide database (the directory does not exist)\n")
    assert not missing.exists()


def test_status_reads_a_running_servers_directory_without_writing_and_shows_its_requests(tmp_path):
    make_db(tmp_path)
    with ServeProcess.logtide("--data-dir", str(tmp_path), "--metrics-port", str(free_port())) as srv:
        port = srv.wait_listening()
        c = cluster(port)
        s = c.connect()
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED feed WITH (MODE = 'KEYS_ONLY', FORMAT = 'JSON')")
        s.execute('ALTER TOPIC "ks/t/feed" ADD CONSUMER app')
        for i in range(4):
            s.execute("INSERT INTO ks.t (pk, v) VALUES (%s, %s)", (i, i))
        before = files(tmp_path)
        done = subprocess.run([sys.executable, "-m", "logtide", "status", "--data-dir", str(tmp_path),
                               "--interval", "0.2"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert files(tmp_path) == before  # nothing written, not even the WAL
        out = done.stdout
        assert f"running, pid {srv.proc.pid}, CQL 127.0.0.1:{port}" in out
        assert "  ks/t/feed ENABLED (KEYS_ONLY, JSON): 1 partition, 4 records\n    consumer app: lag 4 records\n" in out
        assert "Connections       : 2" in out  # the driver's control connection and one pool connection
        query = next(line for line in out.splitlines() if line.startswith("  QUERY"))
        assert "requests" in query and "/s" in query and "latency mean" in query and "p99 <=" in query
        c.shutdown()
        assert srv.stop() == 0
    assert not (tmp_path / "serve.json").exists()
    done = subprocess.run([sys.executable, "-m", "logtide", "status", "--data-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.rstrip().endswith("Server            : not running")
