"""``logtide topic read|consumer`` and ``logtide changefeed list|describe`` (modelled on ``ydb topic``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import logtide
from logtide.cli import main

from .feedutil import KS, add_feed


@pytest.fixture
def data(tmp_path):
    d = tmp_path / "data"
    with logtide.open(d, synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
        add_feed(s, "ks.t", "f", mode="UPDATES", extra="TOPIC_MIN_ACTIVE_PARTITIONS = 2")
        for k in range(6):
            s.execute(f"INSERT INTO ks.t (k, v) VALUES ({k}, 'v{k}')")
        db.changefeeds.add_consumer("ks/t/f", "c")
        expected = []
        for p in db.changefeeds.partitions("ks/t/f"):
            expected += [r.value.decode() for r in db.changefeeds.read("ks/t/f", p.partition, 0)]
    return str(d), expected


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_read_newline_delimited_prints_every_partition_in_offset_order(data, capsys):
    d, expected = data
    status, out, _ = run(capsys, "topic", "read", "ks/t/f", "--data-dir", d, "--format", "newline-delimited")
    assert status == 0 and out.splitlines() == expected
    assert all(json.loads(line)["update"] for line in expected)


def test_single_message_and_concatenated_formats_limit_and_partitions(data, capsys):
    d, expected = data
    assert run(capsys, "topic", "read", "ks/t/f", "--data-dir", d)[1:] == (expected[0] + "\n", "")
    out = run(capsys, "topic", "read", "ks/t/f", "--data-dir", d, "--format", "concatenated")[1]
    assert out == "".join(expected) + "\n"
    out = run(capsys, "topic", "read", "ks/t/f", "--data-dir", d, "-f", "newline-delimited", "--limit", "2")[1]
    assert out.splitlines() == expected[:2]
    with logtide.open(d) as db:
        p1 = [r.value.decode() for r in db.changefeeds.read("ks/t/f", 1, 0)]
    out = run(capsys, "topic", "read", "ks/t/f", "--data-dir", d, "-f", "newline-delimited", "--partition-ids", "1")[1]
    assert out.splitlines() == p1


def test_a_consumer_reads_from_its_committed_offsets_and_commits(data, capsys):
    d, expected = data
    args = ("topic", "read", "ks/t/f", "--data-dir", d, "-f", "newline-delimited", "--consumer", "c")
    assert run(capsys, *args, "--limit", "2", "--commit", "false")[1].splitlines() == expected[:2]
    assert run(capsys, *args, "--limit", "2")[1].splitlines() == expected[:2]
    assert run(capsys, *args)[1].splitlines() == expected[2:]
    assert run(capsys, *args)[1] == ""
    status, out, _ = run(capsys, "topic", "consumer", "list", "ks/t/f", "--data-dir", d)
    lines = out.splitlines()
    assert lines[0].split() == ["consumer", "important", "partition", "committed", "end", "lag"]
    assert [line.split()[-1] for line in lines[1:]] == ["0", "0"]


def read_on_a_terminal(d: str, *args: str) -> tuple[str, str]:
    """``logtide topic read`` with its standard error on a pseudo-terminal: (stdout, what the terminal showed)."""
    import os
    import pty

    leader, follower = pty.openpty()
    with subprocess.Popen([sys.executable, "-m", "logtide", "topic", "read", "ks/t/f", "--data-dir", d, *args],
                          stdout=subprocess.PIPE, stderr=follower, stdin=subprocess.DEVNULL, text=True) as proc:
        os.close(follower)
        out = proc.stdout.read()
        proc.wait(60)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.returncode == 0, shown
    return out, shown.decode().replace("\r\n", "\n")


def test_on_a_terminal_the_reader_is_told_that_more_records_follow_and_how_to_see_them(data):
    d, expected = data
    out, shown = read_on_a_terminal(d)
    assert out == expected[0] + "\n"
    assert shown == (f"logtide topic read: 1 record printed, {len(expected) - 1} more follow in ks/t/f: --format "
                     "newline-delimited prints them all, one per line (--limit N: at most N)\n")
    out, shown = read_on_a_terminal(d, "-f", "newline-delimited", "--limit", "2")
    assert out.splitlines() == expected[:2] and f"2 records printed, {len(expected) - 2} more follow" in shown
    assert "--limit 0 prints them all" in shown
    out, shown = read_on_a_terminal(d, "-f", "newline-delimited")
    assert out.splitlines() == expected and shown == ""  # nothing left: nothing said


def test_consumer_add_drop_and_list(data, capsys):
    d, _ = data
    assert run(capsys, "topic", "consumer", "add", "ks/t/f", "--data-dir", d, "--consumer", "imp", "--important")[0] == 0
    out = run(capsys, "topic", "consumer", "list", "ks/t/f", "--data-dir", d)[1]
    rows = [line.split() for line in out.splitlines()[1:]]
    assert ["imp", "yes", "0", "0"] == rows[2][:4] and int(rows[2][5]) == int(rows[2][4])  # lag = everything
    status, _, err = run(capsys, "topic", "consumer", "add", "ks/t/f", "--data-dir", d, "--consumer", "imp")
    assert status == 2 and err.startswith("logtide topic consumer add: error: ") and "already exists" in err
    assert "Traceback" not in err
    assert run(capsys, "topic", "consumer", "drop", "ks/t/f", "--data-dir", d, "--consumer", "imp")[0] == 0
    status, _, err = run(capsys, "topic", "consumer", "drop", "ks/t/f", "--data-dir", d, "--consumer", "imp")
    assert status == 2 and err.startswith("logtide topic consumer drop: error: ") and "does not exist" in err


def test_changefeed_list_and_describe(data, capsys):
    d, expected = data
    out = run(capsys, "changefeed", "list", "--data-dir", d)[1]
    assert out.splitlines()[1].split() == ["ks/t/f", "UPDATES", "JSON", "ENABLED", "2", str(len(expected))]
    out = run(capsys, "changefeed", "describe", "ks/t/f", "--data-dir", d)[1]
    assert "state: ENABLED" in out and "mode: UPDATES" in out and "retention period: PT24H" in out
    assert "consumers: c" in out


def test_describe_shows_initial_scan_progress_with_a_bar(tmp_path, capsys):
    d = tmp_path / "d"
    with logtide.open(d, synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        for k in range(4):
            s.execute(f"INSERT INTO ks.t (k, v) VALUES ({k}, 0)")
        db.feeds.pause()
        add_feed(s, "ks.t", "f", extra="INITIAL_SCAN = TRUE")
        db.feeds.scan_step(partitions=1)
        out = run(capsys, "changefeed", "describe", "ks/t/f", "--data-dir", str(d))[1]
    assert "state: INITIAL_SCAN" in out
    assert "initial scan progress: [########......................] 1/4 partitions (25%)" in out


def test_errors_are_messages_not_tracebacks(data, capsys, tmp_path):
    d, _ = data
    for argv in (("topic", "read", "ks/t/nope", "--data-dir", d),
                 ("topic", "read", "ks/t/f", "--data-dir", d, "--partition-ids", "7"),
                 ("topic", "read", "ks/t/f", "--data-dir", d, "--consumer", "nobody"),
                 ("changefeed", "list", "--data-dir", str(tmp_path / "missing"))):
        status, _, err = run(capsys, *argv)
        assert status == 2 and err.startswith(f"logtide {argv[0]} {argv[1]}: error: ") and "Traceback" not in err
        assert len(err.splitlines()) == 1, err


def test_reading_the_directory_of_a_running_server(tmp_path):
    from tests.server.conftest import cluster
    from tests.server.test_cli import Serve
    d = tmp_path / "data"
    with Serve("--data-dir", str(d), "--synchronous", "NORMAL") as srv:
        port = srv.wait_listening()
        c = cluster(port)
        s = c.connect()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON')")
        s.execute('ALTER TOPIC "ks/t/f" ADD CONSUMER srv')
        reader = subprocess.Popen([sys.executable, "-m", "logtide", "topic", "read", "ks/t/f", "--data-dir", str(d),
                                   "--wait", "--timeout", "120", "-f", "newline-delimited", "--consumer", "srv"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        s.execute("INSERT INTO ks.t (k, v) VALUES (1, 'one')")
        out, err = reader.communicate(timeout=180)
        assert reader.returncode == 0, err
        assert out.splitlines() == ['{"key":[1],"update":{},"newImage":{"v":"one"}}']
        got = subprocess.run([sys.executable, "-m", "logtide", "topic", "consumer", "list", "ks/t/f", "--data-dir",
                              str(d)], capture_output=True, text=True, timeout=120)
        assert got.stdout.splitlines()[1].split() == ["srv", "no", "0", "1", "1", "0"]
        add = subprocess.run([sys.executable, "-m", "logtide", "topic", "consumer", "add", "ks/t/f", "--data-dir",
                              str(d), "--consumer", "cli"], capture_output=True, text=True, timeout=120)
        assert add.returncode == 0, add.stderr
        s.execute('ALTER TOPIC "ks/t/f" DROP CONSUMER cli')  # the server sees the consumer the CLI added
        c.shutdown()
        assert srv.stop() == 0
