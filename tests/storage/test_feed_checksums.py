"""Changefeed records and their state carry checksums (storage format 3): damage is an error for every reader.

Bits are flipped in the SQLite file of a real store (as ``test_checksums.py`` does for rows) or, for the small
state rows, their stored value is altered through SQLite; the embedded reader, ``logtide topic read`` and
``logtide check`` must each report it by changefeed, partition and offset, never hand on altered data.
(The Kafka endpoint and the Spark source have their own tests: ``tests/kafka/test_damaged_records.py``,
``tests/spark/test_changefeed_damage.py``.)
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest

import logtide
from logtide.changefeed.reader import DirectoryTopicReader
from logtide.errors import CorruptRecord
from logtide.storage.check import check

from .helpers import KS, raw, run_logtide

JSON_FEED = "ks/t/j"
DBZ_FEED = "ks/t/d"


def make_feeds(path: Path, rows: int = 12) -> None:
    """ks.t (k int PRIMARY KEY, v text) with a JSON changefeed ``j`` (2 partitions) and a Debezium one ``d``
    (Kafka keys), ``rows`` inserts (k = i, v = 'value-<i>'), and an important consumer of ``j``."""
    with logtide.open(path) as db:
        s = db.session()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED j WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', "
                  "TOPIC_MIN_ACTIVE_PARTITIONS = 2)")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED d WITH (MODE = 'NEW_IMAGE', FORMAT = 'DEBEZIUM_JSON')")
        for i in range(rows):
            s.execute(f"INSERT INTO ks.t (k, v) VALUES ({i}, 'value-{i}')")
            time.sleep(0.002)  # every record of its own millisecond (ListOffsets by time finds each)
        db.changefeeds.add_consumer(JSON_FEED, "billing", important=True)
        db.changefeeds.commit(JSON_FEED, "billing", {0: 1, 1: 2})
    with raw(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def everything(reader, path: str) -> list[tuple]:
    """(partition, offset, write time, key, value) of every record of a topic, partition by partition."""
    out = []
    for p in reader.partitions(path):
        offset = p.start_offset
        while recs := reader.read(path, p.partition, offset):
            out += [(r.partition, r.offset, r.write_time_ms, r.key, r.value) for r in recs]
            offset = recs[-1].offset + 1
    return out


def locate(reader, path: str, k: int) -> tuple[int, int]:
    """(partition, offset) of the record about row ``k``."""
    for part, offset, _, key, value in everything(reader, path):
        about = json.loads(key)["payload"]["k"] if key else json.loads(value)["key"][0]
        if about == k:
            return part, offset
    raise AssertionError(k)


def stored_value(path: Path, topic: str, part: int, offset: int) -> bytes:
    """The ``value`` column of a record as stored (sealed)."""
    with DirectoryTopicReader(path) as r:
        _, feed = r.feed(topic)
    with raw(path) as conn:
        return conn.execute("SELECT value FROM feed_records WHERE feed_id = ? AND part = ? AND offset = ?",
                            (feed.feed_id, part, offset)).fetchone()[0]


def flip(path: Path, at: int, mask: int) -> None:
    """XOR one byte of ``logtide.db`` in place (twice restores it)."""
    fd = os.open(path / "logtide.db", os.O_RDWR)
    try:
        os.pwrite(fd, bytes([os.pread(fd, 1, at)[0] ^ mask]), at)
    finally:
        os.close(fd)


def damage_record(path: Path, topic: str, part: int, offset: int, at: int = 10) -> None:
    """Flip one bit of a record's stored value where it sits in the database file."""
    value = stored_value(path, topic, part, offset)
    content = (path / "logtide.db").read_bytes()
    where = content.index(value)
    assert content.find(value, where + 1) == -1
    flip(path, where + at, 0x20)


def test_a_flipped_bit_in_a_record_fails_every_reader_naming_changefeed_partition_and_offset(tmp_path):
    data = tmp_path / "d"
    make_feeds(data)
    with DirectoryTopicReader(data) as r:
        before = everything(r, JSON_FEED)
        part, offset = locate(r, JSON_FEED, 7)
        ends = {p.partition: p.end_offset for p in r.partitions(JSON_FEED)}
    assert 0 < offset < ends[part] - 1, "the damaged record lies between two others"
    damage_record(data, JSON_FEED, part, offset)
    want = f"Damaged record in changefeed {JSON_FEED}, partition {part}, offset {offset}: checksum mismatch"

    with logtide.open(data) as db:  # the embedded reader
        r = db.changefeeds
        got = r.read(JSON_FEED, part, 0)  # the records before it, then the error at it
        assert [x.offset for x in got] == list(range(offset))
        with pytest.raises(CorruptRecord) as err:
            r.read(JSON_FEED, part, offset)
        assert str(err.value).startswith(want) and err.value.code == 0x1300
        assert (err.value.keyspace, err.value.table) == ("ks", "t")
        assert [x.offset for x in r.read(JSON_FEED, part, offset + 1)][0] == offset + 1  # past it reads on
        other = 1 - part
        assert [(x.partition, x.offset, x.write_time_ms, x.key, x.value) for x in r.read(JSON_FEED, other, 0)] == \
               [x for x in before if x[0] == other]
        assert len(everything(r, DBZ_FEED)) == 12  # the other changefeed is untouched
        db.session().execute("INSERT INTO ks.t (k, v) VALUES (100, 'after')")  # writes go on (not the last one)
        assert json.loads(r.read(JSON_FEED, *locate_new(r))[0].value)["newImage"] == {"v": "after"}

    out = run_logtide("topic", "read", JSON_FEED, "--data-dir", str(data), "--partition-ids", str(part),
                      "--format", "newline-delimited")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"logtide topic read: error: {want}. Run 'logtide check' on the data directory "
                                               "for a full report"]
    assert len(out.stdout.splitlines()) == offset  # every record before the damaged one was printed

    out = run_logtide("check", "--data-dir", str(data))
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"damaged: changefeed {JSON_FEED}, partition {part}, offset {offset}: changefeed record: checksum " \
           "mismatch" in out.stdout.splitlines()
    assert out.stdout.splitlines()[-1].endswith(": 1 problems")


def locate_new(reader) -> tuple[int, int]:
    """(partition, offset) of the JSON feed's last record (the write of k = 100)."""
    return next((p.partition, p.end_offset - 1) for p in reader.partitions(JSON_FEED)
                if json.loads(reader.read(JSON_FEED, p.partition, p.end_offset - 1)[0].value)["key"] == [100])


def test_a_flipped_bit_in_a_kafka_key_or_in_the_checksum_is_detected_too(tmp_path):
    data = tmp_path / "d"
    make_feeds(data)
    with DirectoryTopicReader(data) as r:
        _, offset = locate(r, DBZ_FEED, 4)
    value = stored_value(data, DBZ_FEED, 0, offset)
    content = (data / "logtide.db").read_bytes()
    key = b'{"payload":{"k":4}}'
    where = content.index(value)
    assert content[where - len(key):where] == key  # the record's Kafka key column, just before its value
    for at, what in ((where - 3, "Kafka key"), (where + len(value) - 2, "checksum")):
        flip(data, at, 0x01)
        report = check(data)
        assert [str(f) for f in report.findings] == [
            f"changefeed {DBZ_FEED}, partition 0, offset {offset}: changefeed record: checksum mismatch"], what
        with DirectoryTopicReader(data) as r:
            with pytest.raises(CorruptRecord, match=f"partition 0, offset {offset}: checksum mismatch"):
                r.read(DBZ_FEED, 0, offset)
        flip(data, at, 0x01)
    assert not check(data).findings


def test_no_single_bit_flip_in_a_records_bytes_changes_what_readers_get(tmp_path):
    """Each bit of one record's row in the page (the column values before its value, the value and its checksum)
    flipped in turn: every reader either gets exactly the records it got before, or an error, which ``logtide
    check`` reports too.  (Before storage format 3, 6 of 8 such flips changed records silently.)"""
    data = tmp_path / "d"
    make_feeds(data, rows=8)
    with DirectoryTopicReader(data) as r:
        before = everything(r, JSON_FEED)
        part, offset = locate(r, JSON_FEED, 3)
    value = stored_value(data, JSON_FEED, part, offset)
    start = (data / "logtide.db").read_bytes().index(value) - 12  # from the record's header on
    detected = 0
    for at in range(start, start + 12 + len(value)):
        for bit in range(8):
            flip(data, at, 1 << bit)
            try:
                with DirectoryTopicReader(data) as r:
                    got = everything(r, JSON_FEED)
            except CorruptRecord:
                got = None
            if got is None:
                detected += 1
                assert check(data).findings, (at - start, bit)
            else:
                assert got == before, f"flipping bit {bit} of byte {at - start} changed records silently"
            flip(data, at, 1 << bit)
    assert detected >= 8 * len(value)  # every flip of the value and its checksum, at the least
    assert not check(data).findings


def _alter_value(data: Path, table: str, where: str, args: tuple = (), column: str = "data") -> None:
    """Flip one bit of a stored value through SQLite (the state rows are small: this is their damage)."""
    with raw(data) as conn:
        (blob,) = conn.execute(f"SELECT {column} FROM {table} WHERE {where}", args).fetchone()
        b = bytearray(blob)
        b[2] ^= 0x01  # the body's first byte
        conn.execute(f"UPDATE {table} SET {column} = ? WHERE {where}", (bytes(b), *args))


def test_a_damaged_committed_offset_fails_its_reads_and_check_names_consumer_and_partition(tmp_path):
    data = tmp_path / "d"
    make_feeds(data)
    _alter_value(data, "feed_offsets", "name = CAST('billing' AS BLOB) AND part = 1")
    with DirectoryTopicReader(data) as r:
        with pytest.raises(CorruptRecord, match=f"Damaged committed offset of consumer 'billing' in changefeed "
                                                f"{JSON_FEED}, partition 1: checksum mismatch"):
            r.committed(JSON_FEED, "billing")
        with pytest.raises(CorruptRecord, match="committed offset of consumer 'billing'"):
            r.consumers(JSON_FEED)
    out = run_logtide("topic", "consumer", "list", JSON_FEED, "--data-dir", str(data))
    assert out.returncode == 2 and "Damaged committed offset of consumer 'billing'" in out.stderr
    assert "Traceback" not in out.stderr
    assert [str(f) for f in check(data).findings] == [
        f"changefeed {JSON_FEED}, consumer 'billing', partition 1, committed offset: checksum mismatch"]


def test_dropping_a_consumer_with_a_damaged_offset_and_adding_it_again_starts_it_afresh(tmp_path):
    data = tmp_path / "d"
    make_feeds(data)
    _alter_value(data, "feed_offsets", "name = CAST('billing' AS BLOB) AND part = 1")
    db = logtide.open(str(data))
    try:
        s = db.session()
        s.execute(f'ALTER TOPIC "{JSON_FEED}" DROP CONSUMER billing')
        s.execute(f'ALTER TOPIC "{JSON_FEED}" ADD CONSUMER billing')
    finally:
        db.close()
    with DirectoryTopicReader(data) as r:
        assert dict(r.committed(JSON_FEED, "billing")) == {}
    assert check(data).findings == []


def test_damaged_consumers_floors_scan_states_and_marks_are_each_reported_by_check(tmp_path):
    data = tmp_path / "d"
    make_feeds(data)
    with logtide.open(data) as db:
        s = db.session()
        db.feeds.pause()
        s.execute("CREATE TABLE ks.u (k int PRIMARY KEY, n int)")
        for k in range(4):
            s.execute(f"INSERT INTO ks.u (k, n) VALUES ({k}, {k})")
        s.execute("ALTER TABLE ks.u ADD CHANGEFEED snap WITH (MODE = 'NEW_IMAGE', FORMAT = 'JSON', "
                  "INITIAL_SCAN = TRUE)")
        s.execute("UPDATE ks.u SET n = 9 WHERE k = 2")  # exported ahead of the scan: a mark
        with db.store.write() as txn:  # a floor, as retention leaves it
            from logtide.changefeed import storage as S
            fid = db.catalog.table("ks", "t").changefeeds[1].feed_id
            S.expire(txn, fid, 0, 1 << 62, None)
    _alter_value(data, "feed_consumers", "name = CAST('billing' AS BLOB)")
    _alter_value(data, "feed_floors", "part = 0")
    _alter_value(data, "feed_scans", "1")
    _alter_value(data, "feed_scan_marks", "1", column="data")
    found = sorted(str(f) for f in check(data).findings)
    assert found == sorted([
        f"changefeed {JSON_FEED}, consumer 'billing': checksum mismatch",
        f"changefeed {DBZ_FEED}, partition 0, offset floor: checksum mismatch",
        "changefeed ks/u/snap, initial scan state: checksum mismatch",
        "changefeed ks/u/snap, initial scan mark (token %d): checksum mismatch" % _mark_token(data),
    ])
    with DirectoryTopicReader(data) as r:
        with pytest.raises(CorruptRecord, match=f"Damaged offset floor in changefeed {DBZ_FEED}, partition 0"):
            r.partitions(DBZ_FEED)
        with pytest.raises(CorruptRecord, match=f"Damaged consumer 'billing' in changefeed {JSON_FEED}"):
            r.consumers(JSON_FEED)
        with pytest.raises(CorruptRecord, match="Damaged initial scan state in changefeed ks/u/snap"):
            r.describe("ks/u/snap")
    with pytest.raises(CorruptRecord, match="Damaged initial scan state in changefeed ks/u/snap"):
        logtide.open(data)  # as a damaged meta value: where the scan stood is unknown


def _mark_token(data: Path) -> int:
    with raw(data) as conn:
        return conn.execute("SELECT token FROM feed_scan_marks").fetchone()[0]


def test_a_record_missing_between_two_others_is_damage_for_readers_and_check(tmp_path):
    data = tmp_path / "d"
    make_feeds(data)
    with DirectoryTopicReader(data) as r:
        _, offset = locate(r, DBZ_FEED, 5)
        _, feed = r.feed(DBZ_FEED)
    with raw(data) as conn:  # as a damaged key moves a record away from its place
        conn.execute("UPDATE feed_records SET offset = offset + 1000 WHERE feed_id = ? AND offset = ?",
                     (feed.feed_id, offset))
    with DirectoryTopicReader(data) as r:
        assert [x.offset for x in r.read(DBZ_FEED, 0, 0)] == list(range(offset))
        with pytest.raises(CorruptRecord, match=f"Damaged record in changefeed {DBZ_FEED}, partition 0, offset "
                                                f"{offset}: it is missing while records before and after it"):
            r.read(DBZ_FEED, 0, offset)
    found = [str(f) for f in check(data).findings]
    assert f"changefeed {DBZ_FEED}, partition 0, offset {offset}: changefeed records missing between two stored " \
           "ones (a damaged key, or deleted outside logtide)" in found
    assert f"changefeed {DBZ_FEED}, partition 0, offset {offset + 1000}: changefeed record: checksum mismatch" in found


def test_a_damaged_last_record_fails_the_writes_that_follow_it_and_dropping_the_changefeed_recovers(tmp_path):
    data = tmp_path / "d"
    make_feeds(data)
    with DirectoryTopicReader(data) as r:
        last = r.partitions(DBZ_FEED)[0].end_offset - 1
    damage_record(data, DBZ_FEED, 0, last)
    with logtide.open(data) as db:
        s = db.session()
        with pytest.raises(CorruptRecord, match=f"Damaged record in changefeed {DBZ_FEED}, partition 0, offset "
                                                f"{last}: checksum mismatch"):
            s.execute("INSERT INTO ks.t (k, v) VALUES (50, 'refused')")
        assert list(s.execute("SELECT * FROM ks.t WHERE k = 50")) == []  # nothing of it was written
        s.execute("ALTER TABLE ks.t DROP CHANGEFEED d")
        s.execute("INSERT INTO ks.t (k, v) VALUES (50, 'written')")
        assert [tuple(x) for x in s.execute("SELECT v FROM ks.t WHERE k = 50")] == [("written",)]
    assert not check(data).findings


def test_retention_and_barriers_skip_a_damaged_partition_and_say_so(tmp_path, clock, caplog):
    data = tmp_path / "d"
    with logtide.open(data, clock=clock, synchronous="OFF") as db:
        s = db.session()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'UPDATES', FORMAT = 'JSON', "
                  "RETENTION_PERIOD = Interval('PT1H'), BARRIERS_INTERVAL = Interval('PT1S'))")
        for i in range(3):
            s.execute(f"INSERT INTO ks.t (k, v) VALUES ({i}, {i})")
    _alter_value(data, "feed_records", "offset = 2", column="value")  # the last record, which retention deletes
    clock.advance(seconds=7200)
    with logtide.open(data, clock=clock, synchronous="OFF") as db:
        with caplog.at_level(logging.ERROR, logger="logtide.changefeed"):
            db.feeds.tick()
        r = db.changefeeds
        assert [(p.start_offset, p.end_offset) for p in r.partitions("ks/t/f")] == [(0, 3)]  # nothing written
        assert len(r.read("ks/t/f", 0, 0)) == 2  # nor deleted
        skipped = [m for m in caplog.messages if m.startswith("changefeed ")]
        assert [m.split(":")[0] for m in skipped] == ["changefeed barriers skipped", "changefeed retention skipped"]
        assert all("Damaged record in changefeed ks/t/f, partition 0, offset 2: checksum mismatch" in m
                   for m in skipped)
        caplog.clear()
        with caplog.at_level(logging.ERROR, logger="logtide.changefeed"):
            db.feeds.tick()  # the same again within the minute: said once
        assert not [m for m in caplog.messages if m.startswith("changefeed ")]
