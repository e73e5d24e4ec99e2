"""Reading log rows by stream and time window (the read path for uniform log records) sees what the
general read path sees: the same values, TTL expiry, paging, and the per-cell functions."""

from __future__ import annotations

import uuid

from ..conftest import rows

BY_STREAM = 'SELECT * FROM t_scylla_cdc_log WHERE "cdc$stream_id" = ? AND "cdc$time" > ?'
LO = uuid.UUID("00000000-0000-1000-8080-808080808080")


def _table(session, ttl: int = 86400) -> None:
    session.execute("CREATE TABLE t (pk int, ck int, a int, b text, f frozen<list<int>>, PRIMARY KEY (pk, ck)) "
                    "WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true, 'ttl': %d}" % ttl)


def _streams(session) -> list[bytes]:
    return sorted({r[0] for r in session.execute('SELECT "cdc$stream_id" FROM t_scylla_cdc_log')})


def test_reading_each_stream_returns_every_log_row_once_with_its_values(session):
    _table(session)
    for i in range(30):
        session.execute("INSERT INTO t (pk, ck, a, b, f) VALUES (?, ?, ?, ?, ?)", [i % 3, i % 5, i, f"x{i}", [i, i]])
    whole = rows(session.execute("SELECT * FROM t_scylla_cdc_log"))
    by_stream = [r for sid in _streams(session) for r in rows(session.execute(BY_STREAM, [sid, LO]))]
    assert sorted(by_stream, key=repr) == sorted(whole, key=repr)
    assert {(r.a, r.b, tuple(r.f)) for r in session.execute("SELECT a, b, f FROM t_scylla_cdc_log") if r.a is not None} \
        == {(i, f"x{i}", (i, i)) for i in range(30)}


def test_paging_a_stream_returns_the_same_rows_as_one_read(session):
    _table(session)
    for i in range(40):
        session.execute("INSERT INTO t (pk, ck, a, b) VALUES (0, ?, ?, 'v')", [i % 7, i])
    sid = _streams(session)[0]
    whole = rows(session.execute(BY_STREAM, [sid, LO]))
    paged, state = [], None
    while True:
        page = session.execute(BY_STREAM, [sid, LO], page_size=9, paging_state=state)
        paged += rows(page)
        state = page.paging_state
        if state is None:
            break
    assert len(whole) == 7 * 2 + 33 * 3 and paged == whole  # no preimage for the first write of a row


def test_expired_log_rows_are_invisible_to_a_stream_read(session, clock):
    _table(session, ttl=60)
    session.execute("INSERT INTO t (pk, ck, a) VALUES (1, 1, 1)")
    clock.advance(seconds=30)
    session.execute("INSERT INTO t (pk, ck, a) VALUES (1, 1, 2)")
    sid = _streams(session)[0]
    assert [r.a for r in session.execute(BY_STREAM, [sid, LO])] == [1, 1, 1, 2, 2]  # delta, postimage; preimage, delta, postimage
    clock.advance(seconds=30)
    assert [r.a for r in session.execute(BY_STREAM, [sid, LO])] == [1, 2, 2]
    clock.advance(seconds=30)
    assert rows(session.execute(BY_STREAM, [sid, LO])) == []


def test_cell_functions_and_aliases_read_log_rows(session, clock):
    _table(session, ttl=60)
    session.execute("INSERT INTO t (pk, ck, a) VALUES (1, 1, 7) USING TIMESTAMP 1000")
    got = rows(session.execute('SELECT a AS x, writetime(a), ttl(a), "cdc$operation" FROM t_scylla_cdc_log'))
    assert got == [(7, 1000, 60, 2), (7, 1000, 60, 9)]  # delta, postimage


def _reads(session) -> list:
    """Values, paging states and the server's Rows bytes of by-stream reads of every shape."""
    sids = _streams(session)
    where = ' FROM t_scylla_cdc_log WHERE "cdc$stream_id" = ? AND "cdc$time" > ?'
    queries = ["SELECT *" + where, 'SELECT "cdc$stream_id", "cdc$time", "cdc$batch_seq_no", b, a' + where,
               'SELECT "cdc$stream_id" AS s, "cdc$time", "cdc$batch_seq_no", "cdc$operation"' + where,
               "SELECT *" + where + ' ORDER BY "cdc$time" DESC', "SELECT *" + where + " LIMIT 5",
               "SELECT *" + where + ' ORDER BY "cdc$time" DESC LIMIT 7',
               'SELECT * FROM t_scylla_cdc_log WHERE "cdc$stream_id" IN ? AND "cdc$time" > ?']
    out = []
    for q in queries:
        for sid in sids[:2]:
            args = [sids, LO] if " IN " in q else [sid, LO]
            for page_size in (None, 1, 4):
                state = None
                while True:
                    r = session.execute(q, args, page_size=page_size, paging_state=state)
                    out.append((q, page_size, rows(r), r.paging_state, r.wire_rows()))
                    state = r.paging_state
                    if state is None:
                        break
    return out


def test_log_rows_read_a_page_at_a_time_match_the_row_at_a_time_path(session, clock, monkeypatch):
    from logtide.query import select
    _table(session, ttl=60)
    for i in range(24):
        session.execute("INSERT INTO t (pk, ck, a, b) VALUES (?, ?, ?, ?)", [i % 2, i % 5, i, f"v{i}"])
        clock.advance(seconds=2)
    session.execute("DELETE FROM t WHERE pk = 0 AND ck = 1")
    clock.advance(seconds=20)  # the first writes' log rows have expired
    paged = _reads(session)
    monkeypatch.setattr(select, "uniform_plan", lambda *args: None)  # every row through CqlRow
    assert paged == _reads(session)
    assert any(page_rows for _, _, page_rows, _, _ in paged) and any(state for _, _, _, state, _ in paged)


def test_a_damaged_log_row_fails_a_stream_read_naming_the_log_table(tmp_path):
    import sqlite3

    import pytest

    import logtide
    from logtide.errors import CorruptRecord
    from logtide.storage.envelope import seal
    from logtide.storage.records import UNIFORM_ROW

    with logtide.open(tmp_path / "d") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("USE ks")
        _table(s)
        s.execute("INSERT INTO t (pk, ck, a, b) VALUES (1, 1, 1, 'x')")
        sid = _streams(s)[0]
    conn = sqlite3.connect(tmp_path / "d" / "logtide.db", isolation_level=None)
    tid, pk, ck, data = conn.execute("SELECT tid, pk, ck, data FROM rows WHERE pk = ? ORDER BY ck LIMIT 1",
                                     (sid,)).fetchone()
    flipped = data[:-5] + bytes([data[-5] ^ 1]) + data[-4:]
    malformed = seal(UNIFORM_ROW, tid, pk, ck, b"\x93\x01\x02\x03")  # verifies, but is no log row body
    for bad, why in [(flipped, "checksum mismatch"), (malformed, "malformed record body")]:
        conn.execute("UPDATE rows SET data = ? WHERE tid = ? AND pk = ? AND ck = ?", (bad, tid, pk, ck))
        with logtide.open(tmp_path / "d") as db:
            with pytest.raises(CorruptRecord) as err:
                db.session().execute(BY_STREAM.replace("t_scylla", "ks.t_scylla"), [sid, LO])
        assert "ks.t_scylla_cdc_log" in str(err.value) and why in str(err.value)
    conn.close()
