"""Storage format 3: a format-2 directory (changefeed values without checksums) is migrated by a writer.

``format2/format2.sql`` is a directory written by logtide at 4b3b0b7 (the last to write format 2), as SQL
text, and ``format2/format2.expected.txt`` what that logtide read from it; ``format2/make_format2.py`` made
both (run by hand with that code, never here).  After migration the current code must read the same,
byte for byte, and go on from there.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import logtide
from logtide.changefeed.reader import DirectoryTopicReader
from logtide.clock import ManualClock
from logtide.errors import DataDirectoryError, OldFormat
from logtide.storage import migrate_feeds
from logtide.storage.check import check
from logtide.storage.opening import APPLICATION_ID
from logtide.storage.records import decode_meta
from logtide.storage.sqlite import Store

from ..ops.test_progress import run_on_terminal
from .format2.make_format2 import expected
from .helpers import raw, run_logtide

HERE = Path(__file__).parent / "format2"


def format2_dir(path: Path) -> Path:
    """A data directory holding the checked-in format-2 database."""
    path.mkdir(mode=0o700)
    conn = sqlite3.connect(path / "logtide.db", isolation_level=None)
    conn.executescript((HERE / "format2.sql").read_text())
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    return path


def storage_format(path: Path) -> int:
    with raw(path) as conn:
        return int(decode_meta("format", conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0]))


def add_raw_records(path: Path, feed_id: int, part: int, n: int) -> None:
    """Append ``n`` records to a format-2 partition as that format stored them (bare values, no checksum)."""
    with raw(path) as conn:
        start = conn.execute("SELECT MAX(offset) + 1 FROM feed_records WHERE feed_id = ? AND part = ?",
                             (feed_id, part)).fetchone()[0]
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO feed_records VALUES (?, ?, ?, ?, NULL, ?)",
                         [(feed_id, part, o, 1600009000000 + o, b'{"key":[%d],"update":{},"newImage":{}}' % o)
                          for o in range(start, start + n)])
        conn.execute("COMMIT")


IMG = 2  # feed id of ks/orders/img in format2.sql


def test_a_format_2_directory_of_the_last_logtide_writing_it_is_refused_read_only_until_migrated(tmp_path):
    data = format2_dir(tmp_path / "d")
    with pytest.raises(OldFormat, match="has storage format 2, whose changefeed records carry no checksums; open it "
                                        "once for writing, or run 'logtide migrate --data-dir .*', to migrate it "
                                        "to format 4"):
        DirectoryTopicReader(data)
    out = run_logtide("check", "--data-dir", str(data))
    assert out.returncode == 2 and "has storage format 2, whose changefeed records carry no checksums" in out.stderr
    out = run_logtide("topic", "read", "ks/orders/img", "--data-dir", str(data))
    assert out.returncode == 2 and "logtide migrate" in out.stderr and "Traceback" not in out.stderr
    assert storage_format(data) == 2  # nothing was changed


def test_migration_keeps_every_record_offset_consumer_floor_and_scan_state_and_goes_on_from_there(tmp_path):
    data = format2_dir(tmp_path / "d")
    out = run_logtide("migrate", "--data-dir", str(data))
    assert out.returncode == 0, out.stderr
    assert storage_format(data) == 4  # sealed (format 3), then marked format 4 (nothing more to convert)
    assert expected(data) == (HERE / "format2.expected.txt").read_text()  # what logtide 4b3b0b7 read from it
    report = check(data)
    with raw(data) as conn:  # every value sealed: not one bare JSON value left
        feed_rows = sum(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in (
            "feed_records", "feed_floors", "feed_consumers", "feed_offsets", "feed_scans", "feed_scan_marks"))
        assert not report.findings and report.records > feed_rows > 60  # check verified each of them
        assert conn.execute("SELECT COUNT(*) FROM feed_records WHERE substr(value, 1, 2) != X'0146'").fetchone()[0] \
            == 0
        assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master")} >= {"feed_floors", "feed_scans"}
        assert not [r for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE '%format2%'")]

    # and it goes on: offsets after the stored ones, scans finish, commits stick (at the time the directory was
    # written: with today's clock, retention would delete its records)
    with logtide.open(data, clock=ManualClock(1_600_007_300_000_000)) as db:
        r = db.changefeeds
        feeds = ("ks/orders/img", "ks/orders/short")  # short's partitions end at their floors (2 and 10)
        ends = {(f, p.partition): p.end_offset for f in feeds for p in r.partitions(f)}
        assert ends[("ks/orders/short", 0)] == 2 and ends[("ks/orders/short", 1)] == 10
        s = db.session()
        s.execute("INSERT INTO ks.orders (id, line, item) VALUES (1, 1, 'after migration')")
        for f in feeds:
            new = [(p, x.offset, json.loads(x.value)) for (g, p), end in ends.items() if g == f
                   for x in r.read(f, p, end)]
            changes = [n for n in new if "key" in n[2]]  # (barriers may come first: the clock moved on)
            assert [n[1] - ends[(f, n[0])] for n in changes] == [0], f  # the offset after the stored ones
            assert json.dumps(changes[0][2]).count("after migration") == 1
        r.commit("ks/orders/img", "billing", {0: 4})
        assert r.committed("ks/orders/img", "billing") == {0: 4, 1: 2}
        deadline = time.monotonic() + 60
        while r.describe("ks/stock/snap").state != "ENABLED":  # the scan resumes where it stood, marks read
            assert time.monotonic() < deadline, "the initial scan did not finish"
            time.sleep(0.05)
        snap = [json.loads(x.value) for x in r.read("ks/stock/snap", 0, 0)]
        keys = [v["key"][0] for v in snap]
        assert sorted(keys) == [0, 1, 2, 3, 4, 4, 5] and keys.count(4) == 2  # 4: scanned ahead, then its update
        assert [v["newImage"]["n"] for v in snap if v["key"] == [4]] == [4, 100]  # the mark kept it from twice
    assert not check(data).findings


def test_a_big_feed_is_migrated_in_batches_with_a_progress_bar_on_a_terminal(tmp_path):
    data = format2_dir(tmp_path / "d")
    add_raw_records(data, IMG, 0, 25_000)
    done, shown = run_on_terminal(["migrate", "--data-dir", str(data)], timeout=300)
    assert done.returncode == 0, bytes(shown)
    assert b"sealing changefeed records (storage format 3)" in shown
    assert re.search(rb" [1-9]\d*/25049 ", shown), bytes(shown)  # records counted (49 + 25,000) in batches
    assert done.stdout.decode() == f"{data}: records in the current storage format\n"
    with DirectoryTopicReader(data) as r:
        recs = r.read("ks/orders/img", 0, 6, max_records=30_000, max_bytes=1 << 30)
    assert [x.offset for x in recs] == list(range(6, 25_006))
    assert recs[-1].value == b'{"key":[25005],"update":{},"newImage":{}}' and recs[-1].write_time_ms == 1600009025005


def test_a_migration_killed_midway_changes_nothing_and_the_next_writer_completes_it(tmp_path):
    data = format2_dir(tmp_path / "d")
    add_raw_records(data, IMG, 0, 150_000)
    with raw(data) as conn:
        before = conn.execute("SELECT COUNT(*), SUM(length(value)) FROM feed_records").fetchone()
    total = before[0]
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "logtide", "migrate", "--data-dir", str(data)],
                            stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    shown = b""
    counts: list[int] = []
    deadline = time.monotonic() + 300
    try:  # killed once the bar shows part of the records rewritten (inside the one transaction)
        while proc.poll() is None and time.monotonic() < deadline and not any(0 < c < total for c in counts):
            if select.select([leader], [], [], 0.5)[0]:
                shown += os.read(leader, 65536)
                counts = [int(c) for c in re.findall(rb"(\d+)/%d" % total, shown)]
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        os.close(leader)
    assert any(0 < c < total for c in counts), shown
    assert storage_format(data) == 2
    with raw(data) as conn:
        assert conn.execute("SELECT COUNT(*), SUM(length(value)) FROM feed_records").fetchone() == before
        assert conn.execute("SELECT COUNT(*) FROM feed_records WHERE substr(value, 1, 1) = X'01'").fetchone()[0] == 0
        assert {r[1] for r in conn.execute("PRAGMA table_info(feed_offsets)")} >= {"offset"}  # the format-2 layout
    store = Store.open(data)  # the next writer migrates it all
    store.close()
    assert storage_format(data) == 4  # sealed (format 3), then marked format 4 (nothing more to convert)
    report = check(data)
    assert not report.findings
    with DirectoryTopicReader(data) as r:
        assert r.partitions("ks/orders/img")[0].end_offset == 150_006
        assert r.read("ks/orders/img", 0, 100_000)[0].value == b'{"key":[100000],"update":{},"newImage":{}}'
        assert r.committed("ks/orders/img", "billing") == {0: 3, 1: 2}


def test_a_value_of_the_wrong_type_stops_the_migration_naming_it_and_changes_nothing(tmp_path):
    data = format2_dir(tmp_path / "d")
    with raw(data) as conn:
        conn.execute("UPDATE feed_offsets SET offset = 'three' WHERE name = 'billing' AND part = 0")
    with pytest.raises(DataDirectoryError, match=r"cannot migrate data directory .* to storage format 3: its "
                                                 r"committed offset \(changefeed id 2, partition 0\) has a column of "
                                                 "the wrong type; nothing was changed"):
        Store.open(data)
    assert storage_format(data) == 2
    with raw(data) as conn:
        assert conn.execute("SELECT COUNT(*) FROM feed_records WHERE substr(value, 1, 1) = X'01'").fetchone()[0] == 0
    out = run_logtide("migrate", "--data-dir", str(data))
    assert out.returncode == 2 and "committed offset (changefeed id 2, partition 0)" in out.stderr


def test_batches_cover_every_record_whatever_the_batch_size(tmp_path, monkeypatch):
    data = format2_dir(tmp_path / "d")
    monkeypatch.setattr(migrate_feeds, "BATCH", 7)
    Store.open(data).close()
    assert expected(data) == (HERE / "format2.expected.txt").read_text()
    assert not check(data).findings
