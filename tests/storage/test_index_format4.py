"""Storage format 4: secondary index entries and materialized views.  A format-3 directory (written by the last
logtide that writes format 3) is read as it is read-only and marked format 4 by a writer, nothing else changed;
from then on a logtide reading format 3 refuses it with its "written by a newer logtide" message, rather than
write tables without maintaining their indexes and views (docs/durability.md, "Secondary indexes and views
(storage format 4)").

``format3/format3.sql`` is a directory written by logtide at c2c2682, as SQL text, and
``format3/format3.expected.txt`` what that logtide read from it; ``format3/make_format3.py`` made both (run by
hand with that code, never here).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import logtide
from logtide.clock import ManualClock
from logtide.errors import DataDirectoryError
from logtide.storage.check import check
from logtide.storage.opening import APPLICATION_ID

from .format3.make_format3 import expected
from .helpers import raw, run_logtide
from .test_feed_format3 import storage_format

HERE = Path(__file__).parent / "format3"


def format3_dir(path: Path) -> Path:
    """A data directory holding the checked-in format-3 database."""
    path.mkdir(mode=0o700)
    conn = sqlite3.connect(path / "logtide.db", isolation_level=None)
    conn.executescript((HERE / "format3.sql").read_text())
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    return path


def test_a_format_3_directory_is_read_as_it_is_read_only(tmp_path):
    data = format3_dir(tmp_path / "d")
    assert expected(data) == (HERE / "format3.expected.txt").read_text()
    out = run_logtide("check", "--data-dir", str(data))
    assert out.returncode == 0, out.stderr
    assert storage_format(data) == 3  # nothing was changed


def test_a_writer_marks_a_format_3_directory_format_4_and_changes_nothing_else(tmp_path):
    data = format3_dir(tmp_path / "d")
    with raw(data) as conn:
        before = {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2, 3").fetchall()
                  for t in ("partitions", "rows", "feed_records")}
    out = run_logtide("migrate", "--data-dir", str(data))
    assert out.returncode == 0, out.stderr
    assert storage_format(data) == 4
    with raw(data) as conn:
        assert {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2, 3").fetchall() for t in before} == before
    assert expected(data) == (HERE / "format3.expected.txt").read_text()  # what logtide c2c2682 read from it
    assert not check(data).findings
    # and it goes on: an index and a view on the migrated tables, built from their rows
    with logtide.open(data, clock=ManualClock()) as db:
        s = db.session()
        s.execute("CREATE INDEX ON ks.people (city)")
        s.execute("CREATE MATERIALIZED VIEW ks.by_item AS SELECT * FROM ks.orders WHERE item IS NOT NULL "
                  "AND id IS NOT NULL AND line IS NOT NULL PRIMARY KEY (item, id, line)")
        assert sorted(r.id for r in s.execute("SELECT id FROM ks.people WHERE city = 'city-1'")) == [1, 4, 10]
        db.view_builds.finish()  # the view's build, in the background otherwise
        assert [tuple(r) for r in s.execute("SELECT id, line FROM ks.by_item WHERE item = 'changed'")] == [(1, 5)]
    assert not check(data).findings


def test_a_directory_of_format_4_is_refused_by_a_logtide_reading_format_3(tmp_path, monkeypatch):
    """What the last logtide of format 3 does with this version's directory (its code path: the format it reads
    is its FORMAT, 3)."""
    from logtide.storage import opening
    data = tmp_path / "d"
    logtide.open(data).close()
    assert storage_format(data) == 4
    monkeypatch.setattr(opening, "FORMAT", 3)
    for readonly in (False, True):
        with pytest.raises(DataDirectoryError, match="has storage format 4, written by a newer logtide "
                                                     r"\(this one reads format 3\)"):
            logtide.open(data, readonly=readonly)
    assert storage_format(data) == 4
