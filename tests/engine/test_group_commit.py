"""Group commit: followers wait on their own wake-up, each write answered once, after its commit."""

from __future__ import annotations

import threading

import pytest

import logtide
from logtide.errors import InvalidRequest

KEYSPACE = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"


@pytest.fixture
def db(tmp_path):
    with logtide.open(tmp_path / "d") as db:
        s = db.session()
        s.execute(KEYSPACE)
        s.execute("CREATE TABLE ks.t (pk int, ck int, v int, l list<int>, PRIMARY KEY (pk, ck))")
        yield db


def run_threads(n: int, target) -> None:
    threads = [threading.Thread(target=target, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a writer never got its answer"


def test_every_writer_gets_its_own_result_or_error_in_shared_commits(db):
    committer = db.committer
    sizes: list[int] = []
    real_commit = committer._commit

    def commit(group):
        sizes.append(len(group))
        real_commit(group)

    committer._commit = commit  # type: ignore[method-assign]
    outcomes: dict[tuple[int, int], object] = {}

    def writer(k: int) -> None:
        for i in range(60):
            def fn(txn, k=k, i=i):
                if i % 7 == 3:
                    raise InvalidRequest(f"no {k}/{i}")
                return (k, i)
            try:
                outcomes[(k, i)] = committer.run(fn)
            except InvalidRequest as e:
                outcomes[(k, i)] = str(e)

    run_threads(12, writer)
    assert outcomes == {(k, i): (f"no {k}/{i}" if i % 7 == 3 else (k, i)) for k in range(12) for i in range(60)}
    assert sum(sizes) == 720 and len(sizes) < 720  # each write ran once; writers shared commits
    assert not committer._queue and not committer._leading  # the lead was given up with nothing queued


def test_a_thread_holding_the_write_lock_writes_while_others_follow(db):
    """DDL and changefeed scans call the committer with the write lock held: no deadlock with a waiting leader."""
    s = db.session("ks")
    stop = threading.Event()

    def writer(k: int) -> None:
        ws = db.session("ks")
        i = 0
        while not stop.is_set() or i < 20:
            ws.execute(f"INSERT INTO t (pk, ck, v) VALUES ({k}, {i}, {i})")
            i += 1

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    try:
        for j in range(30):
            with db.write_lock:
                s.execute(f"INSERT INTO t (pk, ck, v) VALUES (100, {j}, {j})")
                s.execute(f"INSERT INTO t (pk, ck, v) VALUES (101, {j}, {j})")
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert len(list(s.execute("SELECT * FROM t WHERE pk = 100"))) == 30
    assert not db.committer._queue and not db.committer._leading


def test_a_failed_commit_fails_each_member_of_its_group_and_the_next_writes_commit(db):
    s = db.session("ks")
    real_write = db.store.write
    fail = threading.Event()
    fail.set()

    def failing_write():
        if fail.is_set():
            raise OSError(28, "No space left on device")
        return real_write()

    db.store.write = failing_write  # type: ignore[method-assign]
    errors: list[Exception] = []

    def writer(k: int) -> None:
        ws = db.session("ks")
        for i in range(10):
            try:
                ws.execute(f"INSERT INTO t (pk, ck, v) VALUES ({k}, {i}, 1)")
            except Exception as e:  # noqa: BLE001 - every one is checked below
                errors.append(e)

    run_threads(6, writer)
    assert len(errors) == 60
    fail.clear()
    run_threads(6, writer)
    assert len(errors) == 60
    assert len(list(s.execute("SELECT * FROM t"))) == 60
