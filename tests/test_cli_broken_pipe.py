"""A reader that goes away (``logtide status | head``) ends every command quietly, as Unix tools do: nothing on
standard error, exit status 141 (128 + SIGPIPE, what a shell shows for a tool killed by SIGPIPE) or 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import logtide

COMMANDS = [["shell", "-e", "SELECT * FROM ks.t"],
            ["shell", "--readonly", "--output", "json", "-e", "SELECT * FROM ks.t"],
            ["status", "--interval", "0"], ["cdc", "generations"], ["cdc", "streams", "ks.t", "--all"], ["check"],
            ["migrate"], ["topic", "read", "ks/t/f", "-f", "newline-delimited"],
            ["topic", "consumer", "list", "ks/t/f"], ["changefeed", "list"], ["changefeed", "describe", "ks/t/f"],
            ["replay", "ks.t", "--to", "ks.u", "--verify"],
            ["--help"], ["status", "--help"], ["--version"]]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pipe") / "data"
    with logtide.open(path, synchronous="OFF") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH cdc = {'enabled': true}")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'UPDATES', FORMAT = 'JSON')")
        for k in range(200):
            s.execute(f"INSERT INTO ks.t (k, v) VALUES ({k}, '{'v' * 50}')")
        db.changefeeds.add_consumer("ks/t/f", "c")
    return path


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_closed_pipe_ends_the_command_quietly(data, command):
    args = [sys.executable, "-m", "logtide", *command]
    if "--help" not in command and "--version" not in command:
        args += ["--data-dir", str(data)]
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before the command writes its first byte
    try:
        done = subprocess.run(args, stdout=writer, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                              timeout=120)
    finally:
        os.close(writer)
    assert done.stderr == ""
    assert done.returncode in (0, 141)


def test_topic_read_commits_nothing_it_could_not_deliver(data):
    reader, writer = os.pipe()
    os.close(reader)
    try:
        subprocess.run([sys.executable, "-m", "logtide", "topic", "read", "ks/t/f", "--consumer", "c", "-f",
                        "newline-delimited", "--data-dir", str(data)], stdout=writer, stderr=subprocess.PIPE,
                       timeout=120)
    finally:
        os.close(writer)
    with logtide.open(data, readonly=True) as db:
        assert not any(db.changefeeds.committed("ks/t/f", "c").values())
