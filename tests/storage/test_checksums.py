"""Flipped bytes in logtide.db are detected: reads fail naming keyspace, table and key; logtide check reports them."""

from __future__ import annotations

from pathlib import Path

import pytest

import logtide
from logtide.errors import CorruptRecord

from .helpers import make_db, raw, run_logtide


def _checkpointed(data: Path) -> None:
    with raw(data) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _flip_in_file(data: Path, needle: bytes, at: int = 0) -> None:
    """Change one byte of ``needle`` where it sits in the database file (a value's case, say)."""
    db = data / "logtide.db"
    content = bytearray(db.read_bytes())
    i = content.index(needle)
    assert content.find(needle, i + 1) == -1
    content[i + at] ^= 0x20
    db.write_bytes(bytes(content))


def test_a_flipped_byte_in_a_value_fails_the_read_naming_keyspace_table_and_key(tmp_path):
    data = tmp_path / "d"
    make_db(data, rows=10)
    _checkpointed(data)
    _flip_in_file(data, b"value-7")  # 'v' becomes 'V': the case change a bit flip made in the field
    with logtide.open(data) as db:
        s = db.session()
        with pytest.raises(CorruptRecord) as err:
            s.execute("SELECT * FROM ks.t")
        msg = str(err.value)
        assert err.value.code == 0x1300 and err.value.keyspace == "ks" and err.value.table == "t"
        assert "ks.t, partition (k = 1), clustering key 0x" in msg and "checksum mismatch" in msg
        with pytest.raises(CorruptRecord):  # a write that reads the row first fails too, and changes nothing
            s.execute("UPDATE ks.t SET v = 'new' WHERE k = 1 AND c = 7 IF v = 'value-7'")
        # the other partitions still read
        assert len(list(s.execute("SELECT * FROM ks.t WHERE k = 0"))) == 4
    out = run_logtide("shell", "--data-dir", str(data), "-e", "SELECT * FROM ks.t WHERE k = 1")
    assert out.returncode == 1
    assert out.stderr.startswith("<stdin>:1:ReadFailure: Error from server: code=1300 [Replica(s) failed to execute "
                                 "read] message=\"Damaged row in ks.t, partition (k = 1), clustering key 0x"), out.stderr


def test_logtide_check_reports_each_damaged_record(tmp_path):
    data = tmp_path / "d"
    make_db(data, rows=10)
    _checkpointed(data)
    _flip_in_file(data, b"value-7")
    _flip_in_file(data, b"value-2", at=6)
    out = run_logtide("check", "--data-dir", str(data))
    assert out.returncode == 1, out.stdout + out.stderr
    damaged = [line for line in out.stdout.splitlines() if line.startswith("damaged:")]
    assert len(damaged) == 2, out.stdout
    assert all("ks.t, partition (k = " in line and "checksum mismatch" in line for line in damaged)
    assert "2 problems" in out.stdout


def test_logtide_check_reports_damaged_btree_pages(tmp_path):
    data = tmp_path / "d"
    make_db(data, rows=300)
    _checkpointed(data)
    db = data / "logtide.db"
    content = bytearray(db.read_bytes())
    page = 4096
    # break the header and cell pointers of the B-tree leaf page that holds one of the rows
    start = content.index(b"value-150") // page * page
    for i in range(start, start + 40):
        content[i] ^= 0xFF
    db.write_bytes(bytes(content))
    out = run_logtide("check", "--data-dir", str(data))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "damaged: " in out.stdout


def test_a_clean_directory_checks_clean(tmp_path):
    data = tmp_path / "d"
    make_db(data, rows=20, cdc=True)
    out = run_logtide("check", "--data-dir", str(data))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "of 2 tables" in out.stdout and "no damage found" in out.stdout


def test_a_damaged_meta_value_is_reported(tmp_path):
    data = tmp_path / "d"
    make_db(data, rows=1)
    with raw(data) as conn:
        conn.execute("UPDATE meta SET value = CAST(replace(CAST(value AS TEXT), '\"t\"', '\"u\"') AS BLOB) "
                     "WHERE key = 'catalog'")
    out = run_logtide("check", "--data-dir", str(data))
    assert out.returncode == 1
    assert "damaged: meta value 'catalog': checksum mismatch" in out.stdout
    with pytest.raises(CorruptRecord, match="Damaged meta value 'catalog'"):
        logtide.open(data)
