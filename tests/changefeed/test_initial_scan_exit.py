"""An initial scan started by a short-lived writer (#21 item 18): the worker starts it at once, ``logtide shell``
finishes it before it exits (a bar on a terminal; Ctrl-C leaves the rest to the next writer, saying so), and
``logtide topic read`` on a feed still scanning says why it shows few records."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import logtide

from ..shell.ptyutil import PtyProcess

CREATE = """CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
CREATE TABLE ks.t (pk int PRIMARY KEY, v int);
"""
ADD_SCANNING = ("ALTER TABLE ks.t ADD CHANGEFEED scanned WITH (MODE = 'UPDATES', FORMAT = 'JSON', "
                "INITIAL_SCAN = TRUE);\n")


def shell(data: Path, script: str, tmp_path: Path) -> subprocess.CompletedProcess:
    path = tmp_path / "script.cql"
    path.write_text(script)
    return subprocess.run([sys.executable, "-m", "logtide", "shell", "--data-dir", str(data), "-f", str(path)],
                          capture_output=True, text=True, timeout=300)


def fill(data: Path, rows: int, with_feed: bool) -> None:
    """ks.t with ``rows`` rows (and, with ``with_feed``, a changefeed already), written in batches."""
    with logtide.open(data, synchronous="OFF") as db:
        s = db.session()
        for statement in CREATE.strip().split(";\n"):
            s.execute(statement.strip().rstrip(";"))
        if with_feed:
            s.execute("ALTER TABLE ks.t ADD CHANGEFEED existing WITH (MODE = 'UPDATES', FORMAT = 'JSON')")
        for start in range(0, rows, 500):
            s.execute("BEGIN UNLOGGED BATCH " + " ".join(
                f"INSERT INTO ks.t (pk, v) VALUES ({k}, {k});" for k in range(start, min(start + 500, rows)))
                + " APPLY BATCH")


def state_and_records(data: Path, path: str = "ks/t/scanned") -> tuple[str, int]:
    with logtide.open(data, readonly=True) as db:
        reader = db.changefeeds
        records = sum(p.end_offset - p.start_offset for p in reader.partitions(path))
        return reader.describe(path).state, records


def test_a_changefeed_added_by_a_shell_script_has_scanned_the_table_when_the_shell_exits(tmp_path):
    for with_feed in (True, False):  # the case: a table that already had a changefeed; and without one
        data = tmp_path / f"data-{with_feed}"
        fill(data, 300, with_feed)
        done = shell(data, ADD_SCANNING, tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert state_and_records(data) == ("ENABLED", 300)


def test_a_changefeed_added_in_a_long_lived_database_is_scanned_at_once(tmp_path):
    with logtide.open(tmp_path / "d", synchronous="OFF") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (pk int PRIMARY KEY, v int)")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED existing WITH (MODE = 'UPDATES', FORMAT = 'JSON')")
        for k in range(10):
            s.execute(f"INSERT INTO ks.t (pk, v) VALUES ({k}, {k})")
        db.feeds.tick_every = 3600  # the worker's sleep between passes: only a wake-up starts the scan
        time.sleep(0.2)  # the worker is asleep now
        s.execute(ADD_SCANNING.strip().rstrip(";"))
        deadline = time.monotonic() + 60
        while db.changefeeds.describe("ks/t/scanned").state != "ENABLED":
            assert time.monotonic() < deadline, "the initial scan did not start"
            time.sleep(0.05)


def spawn_shell(data: Path, script: Path, tmp_path: Path) -> PtyProcess:
    env = {**os.environ, "HOME": str(tmp_path), "TERM": "dumb"}
    return PtyProcess([sys.executable, "-m", "logtide", "shell", "--data-dir", str(data), "-f", str(script)],
                      env, str(tmp_path))


def test_the_shell_shows_the_scan_on_a_terminal_and_ctrl_c_leaves_the_rest_to_the_next_writer(tmp_path):
    data = tmp_path / "data"
    fill(data, 5000, True)
    script = tmp_path / "add.cql"
    script.write_text(ADD_SCANNING)
    proc = spawn_shell(data, script, tmp_path)
    try:
        proc.expect("initial scan ks/t/scanned", timeout=120)  # the bar (standard error is the terminal)
        proc.send("\x03")  # Ctrl-C
        status = proc.wait(120)
    finally:
        proc.kill()
    assert status == 0  # the statements ran; only the scan was left for later
    said = " ".join(proc.transcript.split())
    assert "logtide shell: initial scan of ks/t/scanned stopped at " in said
    assert ("partitions (Ctrl-C); it goes on when the data directory is next opened for writing "
            "(logtide serve, logtide shell)") in said
    state, records = state_and_records(data)
    assert state == "INITIAL_SCAN" and records < 5000
    done = shell(data, "SELECT count(*) FROM ks.t;\n", tmp_path)  # the next writer finishes it
    assert done.returncode == 0 and "5000" in done.stdout
    assert state_and_records(data) == ("ENABLED", 5000)


def test_the_shell_without_a_terminal_finishes_the_scan_silently(tmp_path):
    data = tmp_path / "data"
    fill(data, 200, False)
    done = shell(data, ADD_SCANNING + "SELECT count(*) FROM ks.t;\n", tmp_path)
    assert done.returncode == 0 and done.stderr == "" and "200" in done.stdout


def test_topic_read_on_a_feed_still_scanning_says_why_on_stderr(tmp_path):
    data = tmp_path / "data"
    fill(data, 50, False)
    with logtide.open(data, synchronous="OFF") as db:
        db.feeds.pause()
        db.session().execute(ADD_SCANNING.strip().rstrip(";"))
        db.feeds.scan_step(partitions=3)
    done = subprocess.run([sys.executable, "-m", "logtide", "topic", "read", "ks/t/scanned", "--data-dir", str(data),
                           "--format", "newline-delimited"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 3
    assert done.stderr == (
        "logtide topic: ks/t/scanned is still in its initial scan (3 of 50 partitions of ks.t exported): the records "
        "of the rows present when it was added appear as the scan goes on. The scan runs in the process writing to "
        "the data directory (logtide serve), or in the next one that opens it for writing (logtide serve, "
        "logtide shell)\n")
    single = subprocess.run([sys.executable, "-m", "logtide", "topic", "read", "ks/t/scanned", "--data-dir",
                               str(data)], capture_output=True, text=True, timeout=120)
    assert single.stderr.startswith("logtide topic: ks/t/scanned is still in its initial scan")
