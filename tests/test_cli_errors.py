"""Every command-line failure is one line naming the problem and exit status 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

import logtide

from .diskfull import full_disk, mount_tmpfs  # noqa: F401 - full_disk is a fixture
from .server.serveproc import Serve

DDL = ("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
       "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH cdc = {'enabled': true}",
       "INSERT INTO ks.t (k, v) VALUES (1, 'one')")


def logtide_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logtide", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def run_main(capsys, *args: str) -> subprocess.CompletedProcess:
    """``logtide ARGS`` in this process (``logtide.cli.main``), as a CompletedProcess."""
    from logtide.cli import main

    capsys.readouterr()
    try:
        status = main(list(args), environ={})
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 2
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), status, out, err)


def assert_one_line_failure(done: subprocess.CompletedProcess, command: str, *words: str) -> str:
    """Exit status 2 and exactly one stderr line ``logtide COMMAND: error: ...`` containing ``words``."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"logtide {command}: error: ".replace(" :", ":")), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def populated(path: Path) -> Path:
    with logtide.open(path, synchronous="OFF") as db:
        s = db.session()
        for stmt in DDL:
            s.execute(stmt)
    return path


@pytest.fixture
def readonly_dir(tmp_path) -> Iterator[Path]:
    """A directory nobody (not even root) can write: a read-only tmpfs as root, else mode 0500."""
    path = tmp_path / "ro"
    if mount_tmpfs(path, "ro,size=1m"):
        yield path
        subprocess.run(["umount", "-l", str(path)])
    else:
        path.chmod(0o500)
        if os.geteuid() == 0:
            pytest.skip("root without mount: cannot make a directory unwritable")
        yield path
        path.chmod(0o700)


@pytest.mark.parametrize("command", [["serve"], ["shell", "-e", "SELECT * FROM system.local"],
                                     ["replay", "ks.t", "--to", "ks.u"]])
def test_data_directory_that_is_a_file(tmp_path, capsys, command):
    target = tmp_path / "afile"
    target.write_text("not a directory")
    done = run_main(capsys, *command, "--data-dir", str(target))
    assert_one_line_failure(done, command[0], str(target), "not a directory")


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["shell", "-e", "SELECT * FROM system.local"]])
def test_read_only_directory(readonly_dir, capsys, command):
    done = run_main(capsys, *command, "--data-dir", str(readonly_dir))
    assert_one_line_failure(done, command[0], str(readonly_dir), "not writable")


def test_directory_locked_by_a_server(tmp_path):
    data = populated(tmp_path / "data")
    with Serve("--data-dir", str(data), "--synchronous", "OFF") as srv:
        srv.wait_listening()
        done = logtide_cli("shell", "-e", "SELECT * FROM ks.t", "--data-dir", str(data))
        assert_one_line_failure(done, "shell", str(data), "in use")
        srv.stop()


@pytest.mark.parametrize("command", [["shell", "-e", "SELECT * FROM ks.t"], ["serve", "--port", "0"],
                                     ["replay", "ks.t", "--to", "ks.u"]])
def test_directory_locked_by_another_writer(tmp_path, capsys, command):
    data = populated(tmp_path / "data")
    with logtide.open(data, synchronous="OFF"):
        done = run_main(capsys, *command, "--data-dir", str(data))
    assert_one_line_failure(done, command[0], str(data), "in use")


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_damaged_database(tmp_path, capsys, damage):
    data = populated(tmp_path / "data")
    db_file = data / "logtide.db"
    if damage == "garbage":
        db_file.write_bytes(b"this is not a database at all " * 200)
    else:
        with open(db_file, "r+b") as f:
            f.seek(16)
            f.write(b"\xff" * 84)  # the page size and the rest of SQLite's header
    for command in (["shell", "-e", "SELECT * FROM ks.t"], ["serve", "--port", "0"]):
        done = run_main(capsys, *command, "--data-dir", str(data))
        assert_one_line_failure(done, command[0], str(data))


def test_full_disk_at_start(full_disk, capsys):
    for command in (["serve", "--port", "0"], ["shell", "-e", "SELECT * FROM system.local"]):
        data = full_disk / command[0]
        done = run_main(capsys, *command, "--data-dir", str(data))
        line = assert_one_line_failure(done, command[0], str(data))
        assert "disk is full" in line or "No space left" in line, line


def test_port_out_of_range(tmp_path):
    done = logtide_cli("serve", "--data-dir", str(tmp_path / "d"), "--port", "70000")
    assert_one_line_failure(done, "serve", "port 70000")
    assert not (tmp_path / "d").exists()


def test_zero_workers_is_refused_rather_than_starting_a_deaf_server(tmp_path, capsys):
    done = run_main(capsys, "serve", "--data-dir", str(tmp_path / "d"), "--port", "0", "--workers", "0")
    assert_one_line_failure(done, "serve", "workers")


@pytest.mark.parametrize("args", [["--port", "abc"], ["--max-connections", "0"], ["--auth-timeout", "-1"],
                                  ["--no-such-option"]])
def test_bad_option_values(tmp_path, capsys, args):
    done = run_main(capsys, "serve", "--data-dir", str(tmp_path / "d"), *args)
    assert_one_line_failure(done, "serve" if args[0] != "--no-such-option" else "")


def test_replay_into_an_existing_table_of_another_schema(tmp_path, capsys):
    data = populated(tmp_path / "data")
    with logtide.open(data, synchronous="OFF") as db:
        db.session().execute("CREATE TABLE ks.other (id int PRIMARY KEY, v text)")
        db.session().execute("CREATE TABLE ks.retyped (k int PRIMARY KEY, v int)")
    done = run_main(capsys, "replay", "ks.t", "--to", "ks.other", "--data-dir", str(data))
    assert_one_line_failure(done, "replay", "ks.other", "primary key")
    done = run_main(capsys, "replay", "ks.t", "--to", "ks.retyped", "--data-dir", str(data))
    assert_one_line_failure(done, "replay", "ks.retyped", "column v")
    done = run_main(capsys, "replay", "ks.t", "--to", "ks.copy", "--data-dir", str(data))
    assert done.returncode == 0, done.stderr


READERS = [("status", []), ("cdc generations", []), ("cdc streams", ["ks.t"]), ("check", []), ("migrate", []),
           ("topic read", ["ks/t/f"]), ("topic consumer list", ["ks/t/f"]), ("changefeed list", []),
           ("changefeed describe", ["ks/t/f"]), ("replay", ["ks.t", "--to", "ks.u"]),
           ("replay", ["ks.t", "--target-data-dir", "/nonexistent/target"]),
           ("shell", ["--readonly", "-e", "SELECT 1"])]


@pytest.mark.parametrize("command, args", READERS, ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_a_missing_data_directory_is_worded_one_way_by_every_command(tmp_path, capsys, command, args):
    missing, empty = tmp_path / "typo", tmp_path / "empty"
    empty.mkdir()
    done = run_main(capsys, *command.split(), *args, "--data-dir", str(missing))
    line = assert_one_line_failure(done, command)
    assert line == f"logtide {command}: error: {missing} holds no logtide database (the directory does not exist)"
    done = run_main(capsys, *command.split(), *args, "--data-dir", str(empty))
    line = assert_one_line_failure(done, command)
    assert line == f"logtide {command}: error: {empty} holds no logtide database (no logtide.db in it)"
    assert not missing.exists() and list(empty.iterdir()) == []
    assert not os.path.exists("/nonexistent/target")


@pytest.mark.parametrize("command, args, words", [
    ("topic read", ["ks/t/nope"], ["ks/t/nope"]),
    ("topic read", ["ks/t/f", "--partition-ids", "x"], ["--partition-ids must be comma-separated integers"]),
    ("topic consumer drop", ["ks/t/f", "--consumer", "nobody"], ["nobody"]),
    ("changefeed describe", ["ks/t/nope"], ["ks/t/nope"]),
    ("replay", ["t", "--to", "ks.u"], ["expected KEYSPACE.TABLE, got 't'"]),
    ("replay", ["ks.t"], ["the target is the source table; give --to or --target-data-dir"]),
    ("pipeline replicate", ["--source", "http://h/ks.t", "--target", "cql://127.0.0.1:1/ks.u", "--checkpoint", "ck"],
     ["--source"]),
    ("compile", ["logtide.no_such_module"], ["logtide.no_such_module is not among the modules logtide compiles"]),
    ("shell", ["--vnodes", "0", "-e", "SELECT 1"], ["vnodes"]),
], ids=lambda v: v if isinstance(v, str) else "")
def test_every_subcommand_fails_with_one_error_line_and_status_2(tmp_path, capsys, command, args, words):
    data = populated(tmp_path / "data")
    with logtide.open(data, synchronous="OFF") as db:
        db.session().execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'UPDATES', FORMAT = 'JSON')")
    if command.startswith("pipeline"):  # its jobs take no --data-dir; bad options are refused before Spark starts
        done = logtide_cli(*command.split(), *args)
    else:
        done = run_main(capsys, *command.split(), *args, "--data-dir", str(data))
    assert_one_line_failure(done, command, *words)


def test_shell_and_replay_beside_a_running_server_name_the_forms_that_work(tmp_path):
    data = populated(tmp_path / "data")
    with Serve("--data-dir", str(data), "--synchronous", "OFF") as srv:
        port = srv.wait_listening()
        done = logtide_cli("shell", "-e", "SELECT * FROM ks.t", "--data-dir", str(data))
        line = assert_one_line_failure(done, "shell", f"data directory {data} is in use")
        assert line.endswith(f"a logtide serve (pid {srv.proc.pid}) holds it, answering CQL on 127.0.0.1:{port}; "
                             f"give --readonly to read beside it, or write through the server (cqlsh 127.0.0.1 {port})")
        done = logtide_cli("shell", "--readonly", "-e", "SELECT v FROM ks.t", "--data-dir", str(data))
        assert done.returncode == 0 and " one" in done.stdout, done.stderr
        done = logtide_cli("replay", "ks.t", "--to", "ks.copy", "--verify", "--data-dir", str(data))
        line = assert_one_line_failure(done, "replay", f"data directory {data} is in use")
        assert line.endswith(f"answering CQL on 127.0.0.1:{port}; replay into another data directory with "
                             "--target-data-dir DIR (the source is then only read, beside the server)")
        done = logtide_cli("replay", "ks.t", "--target-data-dir", str(tmp_path / "other"), "--verify",
                           "--data-dir", str(data))
        assert done.returncode == 0 and "verify: 0 differences" in done.stdout, done.stderr
        assert srv.stop() == 0
