"""What opens as a data directory: files that are not logtide databases, a lost WAL, the writer lock, file modes."""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import logtide
from logtide.errors import LostCommits, NoDatabase, NotADatabase, StorageLocked

from .helpers import make_db, raw, run_logtide


# --- files that are not logtide databases --------------------------------------------------------------

@pytest.mark.parametrize("content, why", [
    (b"", "the file is empty"),
    (b"garbage " * 1000, "it is not a SQLite file"),
])
def test_a_file_that_is_not_a_database_is_refused_and_left_alone(tmp_path, content, why):
    data = tmp_path / "d"
    data.mkdir()
    (data / "logtide.db").write_bytes(content)
    for readonly in (False, True):
        with pytest.raises(NotADatabase, match=why):
            logtide.open(data, readonly=readonly)
    assert (data / "logtide.db").read_bytes() == content
    out = run_logtide("shell", "--data-dir", str(data), "-e", "SELECT * FROM system.local")
    assert out.returncode != 0 and "is not a logtide database" in out.stderr


def test_another_programs_sqlite_database_is_refused(tmp_path):
    data = tmp_path / "d"
    data.mkdir()
    with sqlite3.connect(data / "logtide.db") as conn:
        conn.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT)")
    with pytest.raises(NotADatabase, match="is not a logtide database"):
        logtide.open(data)
    with sqlite3.connect(data / "logtide.db") as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["accounts"]


# --- commands that only read never create a database ----------------------------------------------------

def test_read_only_opens_of_a_missing_directory_create_nothing(tmp_path):
    missing = tmp_path / "typo"
    with pytest.raises(NoDatabase, match="holds no logtide database"):
        logtide.open(missing, readonly=True)
    with pytest.raises(NoDatabase, match="holds no logtide database"):
        logtide.open(missing, create=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(NoDatabase, match=r"no logtide.db in it"):
        logtide.open(tmp_path / "empty", readonly=True)
    for args in (["check"], ["shell", "--readonly", "-e", "SELECT * FROM system.local"],
                 ["replay", "ks.t", "--to", "ks.u"], ["replay", "ks.t", "--target-data-dir", str(tmp_path / "t")],
                 ["migrate"]):
        out = run_logtide(*args, "--data-dir", str(missing))
        assert out.returncode != 0, args
        assert "holds no logtide database" in out.stderr, (args, out.stderr)
    assert not missing.exists() and not (tmp_path / "t").exists()
    assert os.listdir(tmp_path / "empty") == []


# --- a lost or truncated write-ahead log ---------------------------------------------------------------

WRITER = """
import os, signal, sys, logtide
with logtide.open(sys.argv[1]) as db:  # closed cleanly: the schema reaches logtide.db itself
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
db = logtide.open(sys.argv[1])
s = db.session()
p = s.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
for i in range(200):
    s.execute(p, [i, 'v' * 100])
print('acknowledged', flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed_writer(data: Path) -> None:
    out = subprocess.run([sys.executable, "-c", WRITER, str(data)], capture_output=True, text=True, timeout=120)
    assert out.returncode == -signal.SIGKILL and "acknowledged" in out.stdout, out.stderr
    assert (data / "logtide.db-wal").stat().st_size > 0


def test_after_a_crash_the_wal_recovers_everything(tmp_path):
    data = tmp_path / "d"
    _killed_writer(data)
    with logtide.open(data) as db:
        assert len(db.session().execute("SELECT k FROM ks.t")) == 200


@pytest.mark.parametrize("damage", ["deleted", "truncated"])
def test_a_lost_wal_is_detected_and_the_directory_refused(tmp_path, damage):
    data = tmp_path / "d"
    _killed_writer(data)
    wal = data / "logtide.db-wal"
    if damage == "deleted":
        wal.unlink()
        (data / "logtide.db-shm").unlink()
    else:
        os.truncate(wal, wal.stat().st_size // 2)
    for readonly in (False, True):
        with pytest.raises(LostCommits, match=r"lost acknowledged commits: the database holds commits up to #\d+ "
                                              r"but #\d+ was acknowledged"):
            logtide.open(data, readonly=readonly)
    out = run_logtide("check", "--data-dir", str(data))
    assert out.returncode == 1 and "damaged: commit sequence: data directory" in out.stdout, out.stdout + out.stderr
    out = run_logtide("check", "--accept-lost-commits", "--data-dir", str(data))
    assert out.returncode == 1 and "lost commits accepted" in out.stderr
    with logtide.open(data) as db:  # what remains opens again, and takes writes
        db.session().execute("INSERT INTO ks.t (k, v) VALUES (1000, 'after')")
    assert run_logtide("check", "--data-dir", str(data)).returncode == 0


BUSY_WRITER = """
import sys, logtide
db = logtide.open(sys.argv[1], synchronous="OFF")
s = db.session()
p = s.prepare("INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?)")
print('writing', flush=True)
i = 0
while True:
    s.execute(p, [i % 3, i, 'v'])
    i += 1
"""


def test_read_only_opens_next_to_a_busy_writer_see_no_lost_commits(tmp_path):
    # a reader compares the commit sequence file with the database's: it reads the file first, since the
    # writer records a commit there after making it (a commit landing in between is not a loss)
    data = tmp_path / "d"
    make_db(data)
    writer = subprocess.Popen([sys.executable, "-c", BUSY_WRITER, str(data)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "writing\n"
        opens, deadline = 0, time.monotonic() + 2
        while time.monotonic() < deadline:
            logtide.open(data, readonly=True).close()
            opens += 1
        assert opens > 50
    finally:
        writer.kill()
        writer.wait(30)


# --- the writer lock ------------------------------------------------------------------------------------

HOLDER = """
import sys, time, logtide
db = logtide.open(sys.argv[1])
print('open', flush=True)
sys.stdin.read()
db.close()
"""


def test_the_writer_lock_holds_when_every_other_file_is_deleted(tmp_path):
    data = tmp_path / "d"
    make_db(data, rows=1)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(data)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        for name in os.listdir(data):
            if name != "logtide.db":
                (data / name).unlink()
        second = subprocess.run([sys.executable, "-c", f"import logtide; logtide.open({str(data)!r})"],
                                capture_output=True, text=True, timeout=120)
        assert second.returncode != 0
        assert "in use by another logtide process" in second.stderr
        with pytest.raises(StorageLocked):
            logtide.open(data)
    finally:
        holder.communicate("", timeout=120)
    with logtide.open(data):
        pass


# --- file modes ------------------------------------------------------------------------------------------

def test_the_directory_is_private_and_every_file_in_it_too(tmp_path):
    data = tmp_path / "d"
    old = os.umask(0o022)
    try:
        with logtide.open(data) as db:
            db.session().execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', "
                                 "'replication_factor': 1}")
            with logtide.open(data, readonly=True) as ro:
                ro.session().execute("SELECT * FROM system_schema.keyspaces")
                names = set(os.listdir(data))
                assert {"logtide.db", "logtide.db-wal", "logtide.db-shm", "logtide.commits"} <= names
                modes = {n: stat.S_IMODE((data / n).stat().st_mode) for n in names}
    finally:
        os.umask(old)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert all(m == 0o600 for m in modes.values()), modes


def test_an_existing_database_readable_by_others_is_made_private(tmp_path):
    data = tmp_path / "d"
    make_db(data, rows=1)
    os.chmod(data / "logtide.db", 0o644)
    with logtide.open(data):
        assert stat.S_IMODE((data / "logtide.db").stat().st_mode) == 0o600
        assert stat.S_IMODE((data / "logtide.db-wal").stat().st_mode) == 0o600


# --- page size ----------------------------------------------------------------------------------------

def test_a_new_database_has_the_chosen_page_size_and_an_old_one_keeps_its_own(tmp_path, monkeypatch):
    from logtide.storage import opening

    make_db(tmp_path / "new", rows=3)
    with raw(tmp_path / "new") as conn:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == opening.PAGE_SIZE == 4096
    monkeypatch.setattr(opening, "PAGE_SIZE", 1024)  # a database created with another page size ...
    make_db(tmp_path / "old", rows=30, cdc=True)
    monkeypatch.undo()
    with logtide.open(tmp_path / "old") as db:  # ... opens, reads and writes with the one it has
        s = db.session()
        s.execute("INSERT INTO ks.t (k, c, v) VALUES (0, 100, 'after')")
        assert len(list(s.execute("SELECT * FROM ks.t"))) == 31
    with raw(tmp_path / "old") as conn:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == 1024
    out = run_logtide("check", "--data-dir", str(tmp_path / "old"))
    assert out.returncode == 0, out.stdout + out.stderr
