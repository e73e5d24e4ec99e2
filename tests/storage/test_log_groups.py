"""Groups of log rows (record kind ``G``, storage format 2) read back exactly as single records would.

``Txn.put_rows`` stores the new log rows a commit appends to one partition as one group entry; every
other write that lands inside a group first explodes it (``docs/durability.md``, "Groups of log rows").
Random sequences of appends, writes at older keys, overwrites, deletions, range deletions and rolled
back transactions run on real stores, one writing groups and one not, against a plain dict: every
``get_row``, ``rows`` (random bounds, both directions) and ``has_rows`` answer the same, entries never
overlap and ``logtide check`` finds nothing.  The same holds for a CDC log table read through CQL.
"""

from __future__ import annotations

import random
import textwrap

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import logtide
from logtide.cdc.streams import Topology
from logtide.storage.check import check
from logtide.errors import CorruptRecord, DataDirectoryError, OldFormat
from logtide.mutation.cells import PartitionData
from logtide.storage.records import (decode_meta, encode_group, encode_meta, encode_partition, encode_uniform_row,
                                     GROUP, group_rows, is_group)
from logtide.storage.sqlite import GROUP_TABLES_KEY, Store, group_table_ids
from logtide.storage.envelope import seal

from ..engine.test_stored_bytes import _database as fixed_database
from ..sigkill import run_and_kill
from .helpers import raw, run_logtide

TID = 7
PARTS = [(TID, -5, b"s1"), (TID, 3, b"s2"), (TID + 1, 3, b"s2")]
KEYS = [bytes([i]) for i in range(0, 48, 2)]  # even bytes; odd ones fall between any two rows

part = st.integers(0, len(PARTS) - 1)
key = st.integers(0, len(KEYS) - 1)
op = st.one_of(
    st.tuples(st.just("append"), part, st.lists(st.integers(1, 3), min_size=1, max_size=4), st.booleans()),
    st.tuples(st.just("log_at"), part, st.lists(key, min_size=1, max_size=4)),
    st.tuples(st.just("put"), part, key),
    st.tuples(st.just("base"), part, st.lists(key, min_size=1, max_size=3)),
    st.tuples(st.just("delete"), part, key),
    st.tuples(st.just("delete_range"), part, key, key),
    st.tuples(st.just("commit")),
    st.tuples(st.just("rollback")),
)


class _Writer:
    """One store and its open write transaction; ``model`` is what was committed plus what is pending."""

    def __init__(self, path, groups: bool) -> None:
        self.store = Store.open(path, synchronous="OFF")
        self.store.write_groups = groups
        self.ctx = None
        self.txn = None
        self.begin()
        for tid, token, pk in PARTS:  # partition records, as every stored row has one
            self.txn.put_partition(tid, token, pk, encode_partition(PartitionData((pk,)), tid, pk))
        self.end(True)

    def begin(self) -> None:
        self.ctx = self.store.write()
        self.txn = self.ctx.__enter__()

    def end(self, commit: bool) -> None:
        if commit:
            self.ctx.__exit__(None, None, None)
        else:
            try:
                raise RuntimeError("rolled back")
            except RuntimeError as e:
                self.ctx.__exit__(RuntimeError, e, None)
        self.begin()


def _record(p: int, ck: bytes, n: int) -> bytes:
    tid, _, pk = PARTS[p]
    return encode_uniform_row((ck,), 1000 + n, 0, 0x7FFFFFFF, {"v": str(n).encode()}, tid, pk, ck)


def _apply(w: _Writer, model: dict, o: tuple, n: int) -> None:
    txn = w.txn
    kind = o[0]
    if kind == "append":  # new log rows after the partition's last row (shuffled or not), as a commit writes them
        _, p, gaps, shuffle = o
        tid, token, pk = PARTS[p]
        last = max((k for (q, k) in model if q == p), default=b"\x00")
        cks, at = [], last[0]
        for g in gaps:
            at += g
            cks.append(bytes([at]))
        if shuffle:
            cks.reverse()
        txn.put_rows([(tid, token, pk, ck, _record(p, ck, n)) for ck in cks], 0)
        model.update({(p, ck): _record(p, ck, n) for ck in cks})
    elif kind == "log_at":  # log rows at any keys (an older cdc$time), the same key twice: the later one wins
        _, p, ks = o
        tid, token, pk = PARTS[p]
        rows = [(tid, token, pk, KEYS[k] + b"\x01", _record(p, KEYS[k] + b"\x01", n + i)) for i, k in enumerate(ks)]
        txn.put_rows(rows, 0)
        model.update({(p, r[3]): r[4] for r in rows})
    elif kind == "put":
        _, p, k = o
        tid, token, pk = PARTS[p]
        txn.put_row(tid, token, pk, KEYS[k], _record(p, KEYS[k], n))
        model[(p, KEYS[k])] = _record(p, KEYS[k], n)
    elif kind == "base":  # rows of a statement on the table itself (kept in the writer's cache)
        _, p, ks = o
        tid, token, pk = PARTS[p]
        rows = [(tid, token, pk, KEYS[k], _record(p, KEYS[k], n + i)) for i, k in enumerate(ks)]
        txn.put_rows(rows)
        model.update({(p, r[3]): r[4] for r in rows})
    elif kind == "delete":
        _, p, k = o
        tid, token, pk = PARTS[p]
        txn.put_row(tid, token, pk, KEYS[k], None)
        model.pop((p, KEYS[k]), None)
    elif kind == "delete_range":  # as a range deletion purges: read the range, delete each row
        _, p, a, b = o
        tid, token, pk = PARTS[p]
        lo, hi = KEYS[min(a, b)], KEYS[max(a, b)]
        for ck, _ in txn.rows(tid, token, pk, lo, hi):
            txn.put_row(tid, token, pk, ck, None)
        for q, ck in [k for k in model if k[0] == p and lo <= k[1] < hi]:
            del model[(q, ck)]


def _reads(txn, model: dict, rnd: random.Random) -> list:
    """Every kind of read, compared with the model; returns the answers (to compare the two stores)."""
    got = []
    probes = [bytes([i]) for i in range(0, 50)] + [k + b"\x01" for k in KEYS]
    for p, (tid, token, pk) in enumerate(PARTS):
        want = sorted((ck, d) for (q, ck), d in model.items() if q == p)
        assert txn.has_rows(tid, token, pk) == bool(want)
        for ck in rnd.sample(probes, 12):
            row = txn.get_row(tid, token, pk, ck)
            assert row == model.get((p, ck)), (p, ck)
            got.append(row)
        for _ in range(6):
            lo = rnd.choice(probes + [None])
            hi = rnd.choice(probes + [None])
            for reverse in (False, True):
                rows = txn.rows(tid, token, pk, lo, hi, reverse)
                expect = [(ck, d) for ck, d in want if (lo is None or ck >= lo) and (hi is None or ck < hi)]
                assert [tuple(r) for r in rows] == (expect[::-1] if reverse else expect), (p, lo, hi, reverse)
                got.append(rows)
    return got


def _entries_never_overlap(store: Store) -> int:
    """Walk the entries: a group's rows lie after the previous entry and end at its key.  Returns the groups."""
    groups = 0
    prev = None
    with store.snapshot() as txn:
        for tid, token, pk, ck, data in txn.scan("rows"):
            after = prev[1] if prev is not None and prev[0] == (tid, token, pk) else None
            if is_group(data):
                groups += 1
                inner = [c for c, _ in group_rows(data, tid, pk, ck)]
                assert len(inner) >= 2 and inner == sorted(set(inner)) and inner[-1] == ck
                assert after is None or inner[0] > after
            prev = ((tid, token, pk), ck)
    return groups


# a write after the last entry moves the partition's known tail: a later pure-looking append must see it
@example(ops=[("append", 0, [1, 1], False), ("put", 0, 20), ("log_at", 0, [19, 21])], seed=0)
@example(ops=[("append", 0, [1, 1], False), ("commit",), ("base", 0, [20]), ("log_at", 0, [19, 21, 3])], seed=0)
@example(ops=[("append", 1, [2, 2, 2], True), ("delete", 1, 2), ("append", 1, [1, 1], False)], seed=0)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(op, min_size=1, max_size=30), seed=st.integers(0, 2**16))
def test_reads_of_a_store_with_groups_equal_a_dict_and_a_store_without(tmp_path_factory, ops, seed):
    base = tmp_path_factory.mktemp("groups")
    writers = [_Writer(base / "groups", True), _Writer(base / "singles", False)]
    committed: dict = {}
    model: dict = {}
    try:
        for n, o in enumerate(ops):
            if o[0] in ("commit", "rollback"):
                for w in writers:
                    w.end(o[0] == "commit")
                model = dict(model) if o[0] == "commit" else dict(committed)
                committed = dict(model)
            else:
                before = dict(model)
                _apply(writers[0], model, o, n)
                _apply(writers[1], before, o, n)
            answers = [_reads(w.txn, model, random.Random(seed + n)) for w in writers]
            assert answers[0] == answers[1]
        for w in writers:
            w.end(True)
            with w.store.snapshot() as txn:  # a reader that never saw the writer's cache
                _reads(txn, model, random.Random(seed))
        _entries_never_overlap(writers[0].store)
        assert _entries_never_overlap(writers[1].store) == 0
    finally:
        for w in writers:
            w.store.close()
    for name in ("groups", "singles"):
        assert check(base / name).findings == []


def _database(path, groups: bool) -> logtide.Database:
    """A database whose host id (so its streams), clock and cdc$time bits are fixed; with or without groups."""
    db = fixed_database(path, topology=Topology(vnodes=2, shards=1))
    db.store.write_groups = groups
    return db


def _full_cdc_table(s) -> None:
    """ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) with preimage 'full' and postimage."""
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) "
              "WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}")


LOG = "ks.t_scylla_cdc_log"
pk_ = st.integers(0, 5)
cql_op = st.one_of(
    st.tuples(st.just("insert"), pk_, st.integers(0, 3)),
    st.tuples(st.just("batch"), st.lists(st.tuples(pk_, st.integers(0, 3)), min_size=1, max_size=6)),
    st.tuples(st.just("older"), pk_, st.integers(1, 40)),  # USING TIMESTAMP in the past: an older cdc$time
    st.tuples(st.just("ttl"), pk_),  # a log row of a table whose CDC ttl is 1 second
    st.tuples(st.just("delete_log_row"), st.integers(0, 200)),
    st.tuples(st.just("delete_log_range"), st.integers(0, 200)),
    st.tuples(st.just("overwrite_log_row"), st.integers(0, 200)),
    st.tuples(st.just("advance"), st.integers(0, 2)),
)


def _log_keys(s) -> list[tuple]:
    return sorted((r[0], r[1], r[2]) for r in s.execute(f'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no" FROM {LOG}'))


def _run(db: logtide.Database, o: tuple, n: int) -> None:
    s = db.session()
    kind = o[0]
    db.clock.advance(micros=997)
    if kind == "insert":
        s.execute(f"INSERT INTO ks.t (pk, ck, v) VALUES ({o[1]}, {o[2]}, {n})")
    elif kind == "batch":
        s.execute_batch("UNLOGGED", [(f"INSERT INTO ks.t (pk, ck, v) VALUES ({p}, {c}, {n})", ()) for p, c in o[1]])
    elif kind == "older":
        s.execute(f"INSERT INTO ks.t (pk, ck, v) VALUES ({o[1]}, 9, {n}) "
                  f"USING TIMESTAMP {db.clock.now_micros() - o[2] * 1000}")
    elif kind == "ttl":
        s.execute(f"INSERT INTO ks.short (pk, ck, v) VALUES ({o[1]}, 1, {n})")
    elif kind == "advance":
        db.clock.advance(seconds=o[1])
    else:
        keys = _log_keys(s)
        if not keys:
            return
        stream, time, seq = keys[o[1] % len(keys)]
        if kind == "delete_log_row":
            s.execute(f'DELETE FROM {LOG} WHERE "cdc$stream_id" = ? AND "cdc$time" = ? AND "cdc$batch_seq_no" = ?',
                      [stream, time, seq])
        elif kind == "delete_log_range":
            s.execute(f'DELETE FROM {LOG} WHERE "cdc$stream_id" = ? AND "cdc$time" = ?', [stream, time])
        else:
            s.execute(f'UPDATE {LOG} SET v = {-n} WHERE "cdc$stream_id" = ? AND "cdc$time" = ? '
                      'AND "cdc$batch_seq_no" = ?', [stream, time, seq])


def _answers(db: logtide.Database, rnd: random.Random) -> list:
    """The full log, and each stream by random time windows, both directions, as plain tuples."""
    s = db.session()
    out = []
    for log in (LOG, "ks.short_scylla_cdc_log"):
        full = [tuple(r) for r in s.execute(f"SELECT * FROM {log}")]
        out.append(sorted(map(repr, full)))
        streams = sorted({r[0] for r in s.execute(f'SELECT "cdc$stream_id", "cdc$time" FROM {log}')})
        times = sorted({r[1] for r in s.execute(f'SELECT "cdc$stream_id", "cdc$time" FROM {log}')}, key=lambda u: u.time)
        for stream in streams:
            for _ in range(3):
                lo, hi = rnd.choice(times), rnd.choice(times)
                for order in ("ASC", "DESC"):
                    out.append([tuple(r) for r in s.execute(
                        f'SELECT * FROM {log} WHERE "cdc$stream_id" = ? AND "cdc$time" >= ? AND "cdc$time" < ? '
                        f'ORDER BY "cdc$time" {order}', [stream, lo, hi])])
            out.append([tuple(r) for r in s.execute(
                f'SELECT * FROM {log} WHERE "cdc$stream_id" = ? ORDER BY "cdc$time" DESC', [stream])])
    return out


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(ops=[("batch", [(0, 0), (1, 1), (2, 2), (3, 3)]), ("older", 1, 5), ("delete_log_row", 3),
              ("overwrite_log_row", 7), ("delete_log_range", 1), ("ttl", 2), ("ttl", 3), ("advance", 2)], seed=1)
@given(ops=st.lists(cql_op, min_size=1, max_size=10), seed=st.integers(0, 2**16))
def test_a_cdc_log_reads_the_same_through_cql_with_groups_and_without(tmp_path_factory, ops, seed):
    base = tmp_path_factory.mktemp("cql")
    dbs = [_database(base / "groups", True), _database(base / "singles", False)]
    try:
        for db in dbs:
            s = db.session()
            _full_cdc_table(s)
            s.execute("CREATE TABLE ks.short (pk int, ck int, v int, PRIMARY KEY (pk, ck)) "
                      "WITH cdc = {'enabled': true, 'postimage': true, 'ttl': 1}")
        for n, o in enumerate(ops):
            for db in dbs:
                _run(db, o, n)
        assert _answers(dbs[0], random.Random(seed)) == _answers(dbs[1], random.Random(seed))
    finally:
        for db in dbs:
            db.close()
    assert check(base / "groups").findings == []


def test_a_full_cdc_upsert_stores_its_log_rows_as_one_group_entry(tmp_path):
    db = _database(tmp_path / "d", True)
    try:
        s = db.session()
        _full_cdc_table(s)
        for i in range(3):
            s.execute(f"INSERT INTO ks.t (pk, ck, v) VALUES (1, 1, {i})")
        log = db.catalog.find_table("ks", "t_scylla_cdc_log")
        with db.store.snapshot() as txn:
            entries = [r for r in txn.scan("rows") if r[0] == log.store_id]
            assert [len(group_rows(d, tid, pk, ck)) for tid, _, pk, ck, d in entries] == [2, 3, 3]
            assert txn.get_meta("group_tables") == str(log.store_id).encode()
        assert len(list(s.execute(f"SELECT * FROM {LOG}"))) == 8
    finally:
        db.close()


def _cdc_dir(path) -> None:
    """A directory whose CDC log holds groups (full CDC upserts) and single log rows (delta-only writes)."""
    with logtide.open(path) as db:
        s = db.session()
        _full_cdc_table(s)
        for i in range(12):
            s.execute(f"INSERT INTO ks.t (pk, ck, v) VALUES ({i % 3}, {i % 2}, {i})")


def _groups(path) -> list[tuple]:
    with raw(path) as conn:
        return [r for r in conn.execute("SELECT tid, token, pk, ck, data FROM rows") if is_group(r[4])]


def _replace(path, entry: tuple, data: bytes) -> None:
    tid, token, pk, ck, _ = entry
    with raw(path) as conn:
        conn.execute("UPDATE rows SET data = ? WHERE tid = ? AND token = ? AND pk = ? AND ck = ?",
                     (data, tid, token, pk, ck))


def _check(path) -> list[str]:
    out = run_logtide("check", "--data-dir", str(path))
    return [line for line in out.stdout.splitlines() if line.startswith("damaged:")]


def test_logtide_check_finds_nothing_in_a_clean_log_of_groups(tmp_path):
    _cdc_dir(tmp_path / "d")
    assert len(_groups(tmp_path / "d")) == 12
    out = run_logtide("check", "--data-dir", str(tmp_path / "d"))
    assert out.returncode == 0 and "no damage found" in out.stdout, out.stdout + out.stderr


def test_a_flipped_byte_in_a_group_is_found_by_check_and_fails_the_read(tmp_path):
    data = tmp_path / "d"
    _cdc_dir(data)
    entry = _groups(data)[3]
    damaged = bytearray(entry[4])
    damaged[len(damaged) // 2] ^= 0x10  # inside one of its records: the group's own checksum catches it
    _replace(data, entry, bytes(damaged))
    damaged_lines = _check(data)
    assert len(damaged_lines) == 1 and "ks.t_scylla_cdc_log" in damaged_lines[0], damaged_lines
    assert "group of log rows: checksum mismatch" in damaged_lines[0]
    with logtide.open(data) as db:
        with pytest.raises(CorruptRecord, match="t_scylla_cdc_log.*checksum mismatch"):
            list(db.session().execute(f"SELECT * FROM {LOG}"))


def test_check_verifies_each_record_of_a_group_against_its_own_key_and_their_order(tmp_path):
    data = tmp_path / "d"
    _cdc_dir(data)
    entries = _groups(data)
    tid, token, pk, ck, blob = entries[0]
    inner = group_rows(blob, tid, pk, ck)
    bad = bytearray(inner[1][1])
    bad[5] ^= 0x01
    _replace(data, entries[0], encode_group(tid, pk, [inner[0], (inner[1][0], bytes(bad))] + inner[2:]))
    lines = _check(data)
    assert len(lines) == 1 and "checksum mismatch" in lines[0] and "group" not in lines[0], lines
    # a group whose rows are out of order: found, the envelope itself being sound
    three = [e for e in entries[1:] if len(group_rows(e[4], e[0], e[2], e[3])) == 3][0]
    tid, token, pk, ck, blob = three
    inner = group_rows(blob, tid, pk, ck)
    _replace(data, three, encode_group(tid, pk, [inner[1], inner[0], inner[2]]))
    lines = _check(data)
    assert len(lines) == 2 and any("out of order or overlapping" in line for line in lines), lines


def test_an_empty_group_is_damage_for_check_reads_and_writes_not_a_traceback(tmp_path):
    data = tmp_path / "d"
    _cdc_dir(data)
    tid, token, pk, ck, _ = entry = _groups(data)[0]
    _replace(data, entry, seal(GROUP, tid, pk, ck, b"\x90"))  # a sound envelope around an empty list
    lines = _check(data)
    assert len(lines) == 1 and "group of log rows that holds no row" in lines[0], lines
    with logtide.open(data) as db:
        s = db.session()
        with pytest.raises(CorruptRecord, match="t_scylla_cdc_log"):
            list(s.execute(f"SELECT * FROM {LOG}"))
        with pytest.raises(CorruptRecord, match="t_scylla_cdc_log"):  # a write at an older key meets it too
            s.execute(f"DELETE FROM {LOG} WHERE \"cdc$stream_id\" = 0x{pk.hex()} AND \"cdc$time\" = minTimeuuid(0)")


def _format(path) -> int:
    with raw(path) as conn:
        return int(decode_meta("format", conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0]))


def _set_format(path, fmt: int) -> None:
    with raw(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'format'", (encode_meta("format", str(fmt).encode()),))


def test_meta_group_tables_is_read_alike_by_the_writer_and_check_ignoring_what_is_no_id(tmp_path):
    assert group_table_ids(None) == set() and group_table_ids(b"") == set()
    assert group_table_ids(b"12 x 7 -3 9") == {7, 9, 12}
    data = tmp_path / "d"
    _cdc_dir(data)
    store = Store.open(data)  # a sound value with a token that is no table id (crafted)
    try:
        with store.write() as txn:
            listed = group_table_ids(txn.get_meta(GROUP_TABLES_KEY))
            txn.put_meta(GROUP_TABLES_KEY, b"junk " + b" ".join(b"%d" % t for t in sorted(listed)))
    finally:
        store.close()
    with logtide.open(data) as db:  # the writer still knows the log table holds groups: it explodes one
        s = db.session()
        first = [tuple(r) for r in s.execute(f'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no" FROM {LOG}')]
        stream, when, seq = first[0]  # the first row of a group of several (not stored under its own key)
        assert seq == 0 and sum(1 for r in first if r[:2] == (stream, when)) > 1
        s.execute(f'DELETE FROM {LOG} WHERE "cdc$stream_id" = %s AND "cdc$time" = %s AND "cdc$batch_seq_no" = 0'
                  % ("0x" + stream.hex(), when))
        after = [tuple(r) for r in s.execute(f'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no" FROM {LOG}')]
        assert after == first[1:]
    assert _check(data) == []


def test_a_new_directory_is_storage_format_4(tmp_path):
    logtide.open(tmp_path / "d").close()
    assert _format(tmp_path / "d") == 4


def test_a_format_1_directory_is_refused_read_only_and_a_writer_migrates_it_its_log_reading_the_same(tmp_path):
    data = tmp_path / "d"
    with logtide.open(data) as db:
        db.store.write_groups = False  # the single records storage format 1 holds
        s = db.session()
        _full_cdc_table(s)
        for i in range(4):
            s.execute(f"INSERT INTO ks.t (pk, ck, v) VALUES (1, {i % 2}, {i})")
        before = [tuple(r) for r in s.execute(f"SELECT * FROM {LOG}")]
    _set_format(data, 1)  # (no changefeed: its changefeed tables are empty, alike in formats 1 and 3)
    with pytest.raises(OldFormat, match="has storage format 1, whose changefeed records carry no checksums"):
        logtide.open(data, readonly=True)
    assert _format(data) == 1 and len(before) == 10
    with logtide.open(data) as db:
        assert _format(data) == 4  # changefeed tables sealed (storage format 3), which groups may follow
        s = db.session()
        assert [tuple(r) for r in s.execute(f"SELECT * FROM {LOG}")] == before
        s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (1, 0, 9)")
        assert len(list(s.execute(f"SELECT * FROM {LOG}"))) == 13
    assert len(_groups(data)) == 1
    with logtide.open(data, readonly=True) as db:
        assert len(list(db.session().execute(f"SELECT * FROM {LOG}"))) == 13


def test_a_directory_of_a_newer_storage_format_is_refused(tmp_path):
    logtide.open(tmp_path / "d").close()
    _set_format(tmp_path / "d", 5)
    for readonly in (False, True):
        with pytest.raises(DataDirectoryError, match="has storage format 5, written by a newer logtide "
                                                     r"\(this one reads format 4\)"):
            logtide.open(tmp_path / "d", readonly=readonly)


CDC_WRITER = textwrap.dedent("""
    import sys
    import time
    import logtide
    db = logtide.open(sys.argv[1])
    s = db.session()
    s.execute("CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE IF NOT EXISTS ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) "
              "WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}")
    seq = int(sys.argv[2])
    print("ready", flush=True)
    while True:
        if seq % 3 == 0:
            s.execute(f"INSERT INTO ks.t (pk, ck, v) VALUES ({seq % 5}, {seq % 4}, {seq})")
        elif seq % 3 == 1:
            s.execute(f"BEGIN BATCH INSERT INTO ks.t (pk, ck, v) VALUES ({seq % 5}, {seq % 4}, {seq}); "
                      f"INSERT INTO ks.t (pk, ck, v) VALUES ({seq % 5 + 1}, {seq % 4}, {seq}); APPLY BATCH")
        else:  # a cdc$time 2 ms back: lands among the stream's last groups, which explode
            s.execute(f"INSERT INTO ks.t (pk, ck, v) VALUES ({seq % 5}, 9, {seq}) "
                      f"USING TIMESTAMP {time.time_ns() // 1000 - 2000}")
        print(seq, flush=True)
        seq += 1
""")


def test_acknowledged_log_rows_in_groups_survive_sigkill_whole(tmp_path):
    data = tmp_path / "data"
    script = tmp_path / "writer.py"
    script.write_text(CDC_WRITER)
    rng = random.Random(11)
    acked, next_seq = -1, 0
    for _ in range(6):
        acked = max(acked, run_and_kill(script, data, next_seq, rng))
        with logtide.open(data) as db:
            deltas: dict[int, int] = {}
            for r in db.session().execute(f'SELECT v, "cdc$operation" FROM {LOG}'):
                if r[1] in (1, 2):
                    deltas[r.v] = deltas.get(r.v, 0) + 1
        for seq in range(acked + 1):
            assert deltas.get(seq) == (2 if seq % 3 == 1 else 1), f"acknowledged write {seq}: log rows lost"
        assert all(n == (2 if seq % 3 == 1 else 1) for seq, n in deltas.items()), "a partial commit is visible"
        assert check(data).findings == []
        next_seq = max(deltas, default=-1) + 1
    assert acked > 20 and len(_groups(data)) > 10
