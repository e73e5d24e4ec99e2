"""Group commit: followers wait on their own wake-up, each write answered once, after its commit."""

from __future__ import annotations

import os
import signal
import threading
import time

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



class Interrupted(Exception):
    pass


def test_a_follower_interrupted_while_waiting_leaves_the_queue(db):
    """Ctrl-C reaches the main thread while it waits for another writer's group: its write never runs
    and the writes after it are not left waiting for it."""
    committer = db.committer
    leading, finish = threading.Event(), threading.Event()
    ran: list[str] = []

    def slow(txn):
        leading.set()
        finish.wait(30)
        return "slow"

    def on_sigint(signum, frame):
        raise Interrupted

    def interrupt_when_following() -> None:
        leading.wait(30)
        while not any(p.wake is not None for p in list(committer._queue)):
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    leader = threading.Thread(target=committer.run, args=(slow,))
    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        leader.start()
        threading.Thread(target=interrupt_when_following).start()
        leading.wait(30)
        with pytest.raises(Interrupted):
            committer.run(lambda txn: ran.append("interrupted"))
    finally:
        signal.signal(signal.SIGINT, previous)
        finish.set()
        leader.join(30)
    assert not leader.is_alive() and not committer._queue and not committer._leading
    assert committer.run(lambda txn: "next") == "next" and ran == []


def test_a_follower_woken_to_lead_that_leaves_passes_the_lead_on(db):
    """The same interruption racing with the hand-over: the lead it was given goes to the next writer."""
    from logtide.storage.group_commit import _Pending

    committer = db.committer
    first, second = _Pending(lambda txn: None), _Pending(lambda txn: None)
    for item in (first, second):
        item.wake = threading.Lock()
        item.wake.acquire()
        committer._queue.append(item)
    committer._leading = True
    committer._hand_over()  # wakes ``first`` to lead ...
    assert first.leads and not second.leads
    committer._abandon(first)  # ... but it was interrupted: ``second`` leads instead
    assert second.leads and list(committer._queue) == [second] and committer._leading
