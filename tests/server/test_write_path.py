"""The server's write path (``logtide/server/committer.py``): writes from many requests commit in groups on one
committer thread; every acknowledged write is durable, a failing write fails alone, a connection's writes commit
in the order they were sent."""

from __future__ import annotations

import threading
import time

import pytest
from cassandra import InvalidRequest

import logtide
from logtide.server import BackgroundServer, ServerConfig

from ..sigkill import write_until_killed
from .conftest import KEYSPACE_DDL, cluster
from .serveproc import Serve


class Groups(list):
    """The ``ok`` flags of each committed group, and the name of the thread that committed it."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []


@pytest.fixture
def spied(tmp_path):
    """A server (synchronous FULL, as served) whose groups are recorded: one list of ``ok`` flags per commit."""
    db = logtide.open(tmp_path / "data")
    groups = Groups()
    run_group = db.committer.run_group

    def recorded(fns, blocking=True):
        outcomes = run_group(fns, blocking)
        if outcomes is not None:
            groups.append([ok for ok, _ in outcomes])
            groups.threads.append(threading.current_thread().name)
        return outcomes

    db.committer.run_group = recorded  # the committer thread takes it when the server starts
    srv = BackgroundServer(db, ServerConfig(port=0), close_db=True).start()
    c = cluster(srv.port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("wp"))
    s.execute("CREATE TABLE wp.t (k int PRIMARY KEY, v int, l list<int>) WITH cdc = {'enabled': true}")
    yield srv, s, groups
    c.shutdown()
    srv.stop()


def test_concurrent_writes_share_commits_and_all_acknowledged_rows_are_stored(spied):
    srv, s, groups = spied
    insert = s.prepare("INSERT INTO wp.t (k, v) VALUES (?, ?)")
    futures = [s.execute_async(insert, (i, i * 10)) for i in range(600)]
    for f in futures:
        f.result()
    rows = {r.k: r.v for r in s.execute("SELECT k, v FROM wp.t")}
    assert rows == {i: i * 10 for i in range(600)}
    log_rows = s.execute('SELECT count(*) FROM wp.t_scylla_cdc_log').one()[0]
    assert log_rows == 600
    assert max(len(g) for g in groups) > 1  # writes in flight together committed together
    assert sum(len(g) for g in groups) == 600
    assert srv.server.stats()["queued"] == 0


def test_a_lone_write_commits_on_the_event_loop_and_writes_in_flight_together_on_the_committer(spied):
    srv, s, groups = spied
    insert = s.prepare("INSERT INTO wp.t (k, v) VALUES (?, ?)")
    del groups.threads[:]
    for i in range(5):
        s.execute(insert, (i, i))  # one at a time: nothing else queued, the loop commits it itself
    assert groups.threads == ["logtide-cql-server"] * 5
    del groups.threads[:]
    with srv.server.db.write_lock:  # a lone write finding the write lock taken is handed to the committer
        future = s.execute_async(insert, (5, 5))
        deadline = time.monotonic() + 10
        while srv.server.committer.pending() < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
    future.result()
    futures = [s.execute_async(insert, (i, i)) for i in range(6, 206)]
    for f in futures:
        f.result()
    assert groups.threads[0] == "logtide-committer"
    assert groups.threads.count("logtide-committer") > len(groups.threads) / 2
    assert {r.k: r.v for r in s.execute("SELECT k, v FROM wp.t")} == {i: i for i in range(206)}


def test_a_write_failing_in_its_group_fails_alone_with_its_own_error(spied):
    srv, s, groups = spied
    db = srv.server.db
    s.execute("INSERT INTO wp.t (k, v, l) VALUES (0, 0, [1, 2])")
    insert = s.prepare("INSERT INTO wp.t (k, v) VALUES (?, ?)")
    set_element = s.prepare("UPDATE wp.t SET l[?] = ? WHERE k = 0")  # fails while writing: index out of bound
    groups.clear()
    with db.write_lock:  # the committer waits for the lock while every request below queues up
        futures = []
        for i in range(1, 41):
            futures.append(s.execute_async(insert, (i, i)))
            if i % 10 == 0:
                futures.append(s.execute_async(set_element, (5, i)))
        deadline = time.monotonic() + 10
        while srv.server.committer.pending() < 30 and time.monotonic() < deadline:
            time.sleep(0.01)
    failed = []
    for f in futures:
        try:
            f.result()
        except InvalidRequest as e:
            failed.append(str(e))
    assert len(failed) == 4
    assert all("List index 5 out of bound, list has size 2" in message for message in failed)
    assert any(False in g and True in g for g in groups)  # failing and succeeding writes in one commit
    assert {r.k for r in s.execute("SELECT k FROM wp.t")} == set(range(41))
    assert s.execute("SELECT l FROM wp.t WHERE k = 0").one().l == [1, 2]


def test_writes_of_one_connection_commit_in_the_order_sent(spied):
    _, s, _ = spied
    s.execute("INSERT INTO wp.t (k, l) VALUES (7, [])")
    append = s.prepare("UPDATE wp.t SET l = l + ?, v = ? WHERE k = 7")
    futures = [s.execute_async(append, ([i], i)) for i in range(300)]  # pipelined on the one connection
    for f in futures:
        f.result()
    row = s.execute("SELECT l, v, writetime(v) FROM wp.t WHERE k = 7").one()
    assert row.l == list(range(300))
    assert row.v == 299


def test_writes_refused_before_or_while_writing_get_their_error_and_change_nothing(spied):
    _, s, groups = spied
    groups.clear()
    with pytest.raises(InvalidRequest, match="Cannot provide custom timestamp for conditional updates"):
        s.execute("INSERT INTO wp.t (k, v) VALUES (1, 1) IF NOT EXISTS USING TIMESTAMP 5")
    assert groups == []  # refused on the loop, before reaching the committer
    with pytest.raises(InvalidRequest, match="Unable to make int from '1234567890123'"):
        s.execute("INSERT INTO wp.t (k, v) VALUES (1, 1234567890123)")
    assert groups == [[False]]  # refused while writing: its transaction rolled back
    assert s.execute("SELECT k FROM wp.t WHERE k = 1").one() is None
    applied = s.execute("INSERT INTO wp.t (k, v) VALUES (1, 1) IF NOT EXISTS").one()
    assert applied[0] is True
    not_applied = s.execute("INSERT INTO wp.t (k, v) VALUES (1, 2) IF NOT EXISTS").one()
    assert not_applied[0] is False and not_applied.v == 1


def test_sigkill_loses_no_acknowledged_write(tmp_path):
    data = tmp_path / "data"
    with Serve("--data-dir", str(data)) as srv:
        c = cluster(srv.wait_listening())
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("wp"))
        s.execute("CREATE TABLE wp.t (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
        insert = s.prepare("INSERT INTO wp.t (k, v) VALUES (?, ?)")
        # killed mid-stream: once some writes are answered, with many more in flight
        done = write_until_killed(s, insert, [(i, i) for i in range(3000)], srv.proc)
        c.shutdown()
    assert done
    with logtide.open(data) as db:
        stored = {r.k for r in db.session().execute("SELECT k FROM wp.t")}
    assert set(done) <= stored


def test_stop_commits_and_answers_the_writes_queued_for_the_committer(tmp_path):
    db = logtide.open(tmp_path / "data")
    srv = BackgroundServer(db, ServerConfig(port=0)).start()
    c = cluster(srv.port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("wp"))
    s.execute("CREATE TABLE wp.t (k int PRIMARY KEY, v int)")
    insert = s.prepare("INSERT INTO wp.t (k, v) VALUES (?, ?)")
    with db.write_lock:  # the writes wait in the committer's queue while the server begins to stop
        futures = [s.execute_async(insert, (i, i)) for i in range(50)]
        deadline = time.monotonic() + 10
        while srv.server.committer.pending() < 49 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert srv.server.committer.pending() == 49  # the first write waits for the lock, the others queue
        stopping = threading.Thread(target=srv.stop)
        stopping.start()
        time.sleep(0.2)
    stopping.join(60)
    assert not stopping.is_alive()
    for f in futures:
        f.result()  # every write was answered, none failed
    c.shutdown()
    assert {r.k for r in db.session().execute("SELECT k FROM wp.t")} == set(range(50))
    db.close()


def test_a_connection_is_not_read_past_max_in_flight_and_resumes_as_its_statements_finish(tmp_path):
    from cassandra import ConsistencyLevel
    from cassandra.protocol import QueryMessage, ResultMessage

    from .rawclient import RawClient

    db = logtide.open(tmp_path / "data")
    srv = BackgroundServer(db, ServerConfig(port=0, max_in_flight=4), close_db=True).start()
    try:
        with RawClient(srv.port) as c:
            c.startup()
            for ddl in (KEYSPACE_DDL.format("wp"), "CREATE TABLE wp.t (k int PRIMARY KEY, v int)"):
                assert isinstance(c.request(QueryMessage(ddl, ConsistencyLevel.ONE)), ResultMessage)
            with db.write_lock:  # the writes wait for the lock: the first 4 stay in flight
                for i in range(40):
                    c.send(QueryMessage(f"INSERT INTO wp.t (k, v) VALUES ({i}, {i})", ConsistencyLevel.ONE), i + 1)
                deadline = time.monotonic() + 10
                while srv.server.stats()["tasks"] < 4 and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(0.3)
                assert srv.server.stats()["tasks"] == 4  # nothing more read from the connection
            answers = [c.recv() for _ in range(40)]
        assert sorted(a.stream_id for a in answers) == list(range(1, 41))
        assert all(isinstance(a, ResultMessage) for a in answers)
        assert {r["k"] for r in db.session().execute("SELECT k FROM wp.t").rows} == set(range(40))
    finally:
        srv.stop()
