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
