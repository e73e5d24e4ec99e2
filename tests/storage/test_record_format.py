"""Stored records hold data only: MessagePack bodies in a checksummed envelope; 0.1 pickles are migrated safely."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

import logtide
from logtide.errors import CorruptRecord, DataDirectoryError, OldFormat
from logtide.mutation.cells import Cell, ComplexColumn, Deletion, Liveness, PartitionData, RangeTombstone, RowData
from logtide.storage import records
from logtide.storage.envelope import RecordDamaged

from .helpers import make_db, raw, run_logtide, unseal_feed_tables

ROW = RowData((b"\x00\x00\x00\x01", b"x"), Liveness(10, 5, 100), Deletion(3, 4),
              {"v": Cell(10, b"abc"), "gone": Cell(11, None, 0, 99), "exp": Cell(12, b"", 7, 1234)},
              {"m": ComplexColumn(Deletion(9, 8), {b"\x00\x01": Cell(10, b"z"), b"\x00\x02": Cell(10, None, 0, 5)}),
               "s": ComplexColumn(None, {b"k": Cell(1, b"")})})
PARTITION = PartitionData((b"\x00\x00\x00\x07", b"pk2"), Deletion(1, 2),
                          [RangeTombstone(b"a", None, Deletion(5, 6)), RangeTombstone(None, b"b", Deletion(7, 8))],
                          RowData((), None, None, {"st": Cell(4, b"s")}, {}))


def test_records_round_trip_in_every_kind():
    assert records.decode_row(records.encode_row(ROW, 3, b"pk", b"ck"), 3, b"pk", b"ck") == ROW
    assert records.decode_partition(records.encode_partition(PARTITION, 3, b"pk"), 3, b"pk") == PARTITION
    data = records.encode_uniform_row((b"t", b"s"), 10, 60, 99, {"a": b"1", "b": None}, 4, b"sid", b"ck")
    assert records.decode_row(data, 4, b"sid", b"ck") == RowData(
        (b"t", b"s"), Liveness(10, 60, 99), None, {"a": Cell(10, b"1", 60, 99), "b": Cell(10, None, 60, 99)}, {})
    assert records.decode_meta("catalog", records.encode_meta("catalog", b"{}")) == b"{}"


def test_uniform_rows_of_one_partition_encode_as_each_row_alone():
    rows = [(b"ck1", ((b"t", b"s"), (10, 60, 99), {"a": b"1", "b": None})), (b"ck2", ((b"u", b"v"), (11, 0, 7), {}))]
    assert records.encode_uniform_rows(4, b"sid", rows) == [
        (ck, records.encode_uniform_row(c, ts, ttl, ldt, vals, 4, b"sid", ck)) for ck, (c, (ts, ttl, ldt), vals) in rows]


def test_a_record_is_bound_to_the_key_it_is_stored_under():
    data = records.encode_row(ROW, 3, b"pk", b"ck")
    for tid, pk, ck in [(4, b"pk", b"ck"), (3, b"pK", b"ck"), (3, b"pk", b"ck2")]:
        with pytest.raises(RecordDamaged, match="checksum mismatch"):
            records.decode_row(data, tid, pk, ck)


def test_every_flipped_bit_of_a_record_is_detected():
    data = records.encode_row(ROW, 3, b"pk", b"ck")
    for i in range(len(data)):
        for bit in (0x01, 0x20, 0x80):
            bad = bytearray(data)
            bad[i] ^= bit
            with pytest.raises(RecordDamaged):
                records.decode_row(bytes(bad), 3, b"pk", b"ck")


def test_a_body_of_the_wrong_shape_is_refused_even_with_a_valid_checksum():
    from logtide.storage.envelope import seal

    for body in (b"\x90", b"\xc0", b"\x95\x01\x02\x03\x04\x05"):
        with pytest.raises(RecordDamaged, match="malformed"):
            records.decode_row(seal(records.ROW, 1, b"p", b"c", body), 1, b"p", b"c")


class _Exploit:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_crafted_pickle_record_does_not_run_on_select(tmp_path):
    data = tmp_path / "d"
    make_db(data, rows=3)
    marker = tmp_path / "pwned"
    with raw(data) as conn:
        conn.execute("UPDATE rows SET data = ? WHERE ck = (SELECT max(ck) FROM rows)",
                     (pickle.dumps(_Exploit(marker), protocol=5),))
    with logtide.open(data) as db:
        with pytest.raises(CorruptRecord) as err:
            db.session().execute("SELECT * FROM ks.t")
    assert not marker.exists()
    assert err.value.code == 0x1300
    assert "ks.t" in str(err.value) and "pickle format of logtide 0.1" in str(err.value)


# --- logtide 0.1 directories --------------------------------------------------------------------------
# The 0.1 layout, transcribed: the same tables, no commit_seq table, no application id, no 'format' meta value,
# meta values stored bare, rows and partitions pickled (protocol 5) as plain tuples.

def _v01_row(r: RowData):
    d = lambda x: None if x is None else tuple(x)  # noqa: E731
    return (r.clustering, d(r.marker), d(r.deletion), {n: tuple(c) for n, c in r.cells.items()},
            {n: (d(c.deletion), {k: tuple(x) for k, x in c.cells.items()}) for n, c in r.complex.items()})


def _v01_partition(p: PartitionData):
    d = lambda x: None if x is None else tuple(x)  # noqa: E731
    return (p.key, d(p.deletion), [(rt.lo, rt.hi, tuple(rt.deletion)) for rt in p.range_tombstones],
            None if p.static is None else _v01_row(p.static))


def downgrade_to_v01(data: Path) -> None:
    """Rewrite a current directory as logtide 0.1 stored it."""
    (data / "logtide.commits").unlink()
    with raw(data) as conn:
        conn.execute("BEGIN")
        for tid, token, pk, d in conn.execute("SELECT tid, token, pk, data FROM partitions").fetchall():
            old = pickle.dumps(_v01_partition(records.decode_partition(d, tid, pk)), protocol=5)
            conn.execute("UPDATE partitions SET data = ? WHERE tid = ? AND token = ? AND pk = ?", (old, tid, token, pk))
        for tid, token, pk, ck, d in conn.execute("SELECT tid, token, pk, ck, data FROM rows").fetchall():
            old = pickle.dumps(_v01_row(records.decode_row(d, tid, pk, ck)), protocol=5)
            conn.execute("UPDATE rows SET data = ? WHERE tid = ? AND token = ? AND pk = ? AND ck = ?",
                         (old, tid, token, pk, ck))
        for key, d in conn.execute("SELECT key, value FROM meta").fetchall():
            conn.execute("UPDATE meta SET value = ? WHERE key = ?", (records.decode_meta(key, d), key))
        conn.execute("DELETE FROM meta WHERE key = 'format'")
        unseal_feed_tables(conn)  # 0.1 had changefeeds too, their values bare
        conn.execute("DROP TABLE commit_seq")
        conn.execute("PRAGMA application_id = 0")
        conn.execute("COMMIT")


def _rows(db) -> list:
    return sorted(tuple(r) for r in db.session().execute("SELECT k, c, v FROM ks.t"))


def test_a_v01_directory_is_migrated_when_opened_for_writing(tmp_path):
    data = tmp_path / "d"
    make_db(data, rows=12, cdc=True)
    with logtide.open(data, readonly=True) as db:
        before = _rows(db)
    downgrade_to_v01(data)
    with logtide.open(data) as db:
        assert _rows(db) == before
        db.session().execute("INSERT INTO ks.t (k, c, v) VALUES (9, 9, 'after')")
    out = run_logtide("check", "--data-dir", str(data))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no damage found" in out.stdout


def test_a_v01_directory_with_a_changefeed_is_migrated_with_its_records_and_consumers(tmp_path):
    data = tmp_path / "d"
    make_db(data, rows=5)
    with logtide.open(data) as db:
        s = db.session()
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_IMAGE', FORMAT = 'DEBEZIUM_JSON')")
        for i in range(5):
            s.execute(f"UPDATE ks.t SET v = 'new-{i}' WHERE k = {i % 3} AND c = {i}")
        db.changefeeds.add_consumer("ks/t/f", "c", important=True)
        db.changefeeds.commit("ks/t/f", "c", {0: 3})
        before = [(r.offset, r.write_time_ms, r.key, r.value) for r in db.changefeeds.read("ks/t/f", 0, 0)]
    downgrade_to_v01(data)
    with raw(data) as conn:
        assert conn.execute("SELECT value FROM feed_records WHERE offset = 0").fetchone()[0].startswith(b'{"payload"')
    out = run_logtide("migrate", "--data-dir", str(data))
    assert out.returncode == 0, out.stderr
    with logtide.open(data, readonly=True) as db:
        assert [(r.offset, r.write_time_ms, r.key, r.value) for r in db.changefeeds.read("ks/t/f", 0, 0)] == before
        assert len(before) == 5 and db.changefeeds.consumers("ks/t/f")[0].important
        assert db.changefeeds.committed("ks/t/f", "c") == {0: 3}
    out = run_logtide("check", "--data-dir", str(data))
    assert out.returncode == 0 and "no damage found" in out.stdout, out.stdout


def test_a_v01_directory_is_refused_read_only_with_how_to_migrate(tmp_path):
    data = tmp_path / "d"
    make_db(data, rows=2)
    downgrade_to_v01(data)
    with pytest.raises(OldFormat, match="logtide migrate"):
        logtide.open(data, readonly=True)
    out = run_logtide("migrate", "--data-dir", str(data))
    assert out.returncode == 0, out.stderr
    with logtide.open(data, readonly=True) as db:
        assert len(_rows(db)) == 2


def test_a_crafted_pickle_in_a_v01_directory_stops_the_migration_and_runs_nothing(tmp_path):
    data = tmp_path / "d"
    make_db(data, rows=2)
    downgrade_to_v01(data)
    marker = tmp_path / "pwned"
    with raw(data) as conn:
        conn.execute("UPDATE rows SET data = ? WHERE ck = (SELECT max(ck) FROM rows)",
                     (pickle.dumps(_Exploit(marker), protocol=5),))
    with pytest.raises(DataDirectoryError, match="is not plain data.*nothing was changed"):
        logtide.open(data)
    assert not marker.exists()
    with raw(data) as conn:  # still 0.1: nothing was rewritten
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM meta WHERE key = 'format'").fetchone()[0] == 0
