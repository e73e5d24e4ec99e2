"""A DDL statement that creates a CDC log answers once clients can see the log (#21 item 3); its changes and its
drop reach them through their events.

cassandra-driver (and cqlsh on it) refreshes, before returning a DDL's result, only the table the result names;
the log table reaches it through its own SCHEMA_CHANGE event.  The server holds the answer until the
connections registered for schema events have read the log's row of system_schema.tables (logtide.server.
schema_events), so a script can create a table with CDC and select from its log at once.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from logtide.result import SchemaChange
from logtide.server.schema_events import SchemaEvents, read_covers

from .conftest import KEYSPACE_DDL, cluster, run_cqlsh
from .serveproc import Serve

LOG_SCRIPT = """CREATE KEYSPACE ks WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}};
{create}
INSERT INTO ks.t (pk, v) VALUES (1, 10);
SELECT "cdc$operation", pk, v FROM ks.t_scylla_cdc_log;
"""

LOG_OUTPUT = """
 cdc$operation | pk | v
---------------+----+----
             2 |  1 | 10

(1 rows)
"""


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    """A real ``logtide serve`` process on free ports."""
    with Serve("--data-dir", str(tmp_path_factory.mktemp("schema-events")), "--synchronous", "OFF") as srv:
        srv.wait_listening()
        yield srv
        assert srv.stop() == 0


def cqlsh_script(port: int, tmp_path: Path, text: str) -> tuple[int, str, str]:
    script = tmp_path / "script.cql"
    script.write_text(text)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return run_cqlsh(port, home, "-f", str(script))


def fresh(serve) -> None:
    """Drop ks (left by an earlier test) through a driver."""
    c = cluster(serve.port)
    c.connect().execute("DROP KEYSPACE IF EXISTS ks")
    c.shutdown()


def test_a_cqlsh_script_selects_from_the_log_of_the_table_it_just_created(serve, tmp_path):
    fresh(serve)
    create = "CREATE TABLE ks.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true};"
    assert cqlsh_script(serve.port, tmp_path, LOG_SCRIPT.format(create=create)) == (0, LOG_OUTPUT, "")


def test_a_cqlsh_script_selects_from_the_log_that_alter_table_just_enabled(serve, tmp_path):
    fresh(serve)
    create = ("CREATE TABLE ks.t (pk int PRIMARY KEY, v int);\n"
              "ALTER TABLE ks.t WITH cdc = {'enabled': true};")
    assert cqlsh_script(serve.port, tmp_path, LOG_SCRIPT.format(create=create)) == (0, LOG_OUTPUT, "")


def test_a_cqlsh_script_sees_a_changefeed_it_just_added(serve, tmp_path):
    fresh(serve)
    text = ("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};\n"
            "CREATE TABLE ks.t (pk int PRIMARY KEY, v int);\n"
            "ALTER TABLE ks.t ADD CHANGEFEED updates WITH (MODE = 'UPDATES', FORMAT = 'JSON');\n"
            "SELECT changefeed_name, state FROM system_logtide.changefeeds WHERE keyspace_name = 'ks';\n")
    assert cqlsh_script(serve.port, tmp_path, text) == (0, """
 changefeed_name | state
-----------------+---------
         updates | ENABLED

(1 rows)
""", "")


@pytest.fixture
def driver(serve):
    c = cluster(serve.port)
    s = c.connect()
    s.execute("DROP KEYSPACE IF EXISTS ks")
    s.execute(KEYSPACE_DDL.format("ks"))
    yield c, s
    c.shutdown()


def tables(c) -> dict:
    return c.metadata.keyspaces["ks"].tables


def test_driver_metadata_has_the_log_when_create_table_with_cdc_returns(driver):
    c, s = driver
    s.execute("CREATE TABLE ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}")
    log = tables(c)["t_scylla_cdc_log"]
    assert [col.name for col in log.partition_key] == ["cdc$stream_id"]
    assert {"pk", "ck", "v", "cdc$operation"} <= set(log.columns)


def eventually(check, timeout: float = 10.0) -> None:
    """``check()`` becomes true within ``timeout`` (a driver follows an event within its refresh window, 2 s)."""
    import time
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_driver_metadata_has_the_log_when_alter_table_enabling_cdc_returns_and_follows_later_alters(driver):
    c, s = driver
    s.execute("CREATE TABLE ks.t (pk int PRIMARY KEY, v int)")
    assert "t_scylla_cdc_log" not in tables(c)
    s.execute("ALTER TABLE ks.t WITH cdc = {'enabled': true}")
    assert "v" in tables(c)["t_scylla_cdc_log"].columns  # at once
    s.execute("ALTER TABLE ks.t ADD w text")  # the log gets the column too: its event says so
    eventually(lambda: {"w", "cdc$deleted_w"} <= set(tables(c)["t_scylla_cdc_log"].columns))
    s.execute("ALTER TABLE ks.t DROP w")
    eventually(lambda: "w" not in tables(c)["t_scylla_cdc_log"].columns)
    s.execute("DROP TABLE ks.t")
    assert "t" not in tables(c)
    eventually(lambda: "t_scylla_cdc_log" not in tables(c))


# -- the mechanism, on the server's event loop with stand-in connections ------------------------------------


class Listener:
    """What SchemaEvents needs of a connection: events pushed, statements in flight, the awaited count."""

    def __init__(self) -> None:
        self.registered = {"SCHEMA_CHANGE"}
        self.closed = False
        self.tasks: set = set()
        self.awaited = 0
        self.events: list = []

    def push_event(self, event) -> None:
        self.events.append(event)


class Db:
    """parse and functions for read_covers: the engine's own."""

    def __init__(self, tmp_path) -> None:
        import logtide
        self.db = logtide.open(tmp_path)
        self.parse = self.db.parse
        self.functions = self.db.functions


class Query:
    """A QUERY request as SchemaEvents.dispatched sees it."""

    def __init__(self, text: str) -> None:
        self.query = text


CREATED = SchemaChange("CREATED", "TABLE", "ks", "t")
LOG = SchemaChange("CREATED", "TABLE", "ks", "t_scylla_cdc_log")
READ_LOG = Query("SELECT * FROM system_schema.tables WHERE keyspace_name = 'ks' AND table_name = 't_scylla_cdc_log'")


def on_loop(tmp_path, timeout: float, test) -> None:
    """Run ``test(events, listener, issuer, released)`` on an event loop, one listener registered."""
    async def go():
        db = Db(tmp_path)
        try:
            events = SchemaEvents(db, timeout=timeout)
            listener = Listener()
            events.register(listener)
            await test(events, listener, Listener(), [])
        finally:
            db.db.close()
    asyncio.run(go())


def test_an_answer_without_an_implied_creation_is_released_at_once_and_events_still_go_out(tmp_path):
    async def test(events, listener, issuer, released):
        events.announce(CREATED, [], issuer, lambda: released.append(1))
        altered = [SchemaChange("UPDATED", "TABLE", "ks", "t_scylla_cdc_log")]
        events.announce(SchemaChange("UPDATED", "TABLE", "ks", "t"), altered, issuer, lambda: released.append(2))
        dropped = [SchemaChange("DROPPED", "TABLE", "ks", "t_scylla_cdc_log")]
        events.announce(SchemaChange("DROPPED", "TABLE", "ks", "t"), dropped, issuer, lambda: released.append(3))
        assert released == [1, 2, 3] and len(listener.events) == 5 and listener.awaited == 0
    on_loop(tmp_path, 60, test)


def test_an_answer_is_held_until_the_listener_read_the_log_table_and_has_nothing_in_flight(tmp_path):
    async def test(events, listener, issuer, released):
        events.announce(CREATED, [LOG], issuer, lambda: released.append(1))
        assert len(listener.events) == 2 and listener.awaited == 1 and not released
        read, other = object(), object()
        events.dispatched(listener, other, Query("SELECT * FROM system.local"))
        events.dispatched(listener, read, READ_LOG)
        listener.tasks = {other}
        events.finished(listener, read, True)
        assert not released  # the other query of its refresh is still in flight
        listener.tasks = set()
        events.finished(listener, other, True)
        assert released == [1] and listener.awaited == 0
    on_loop(tmp_path, 60, test)


def test_a_failed_or_unrelated_read_does_not_release_the_answer_and_the_timeout_does(tmp_path):
    async def test(events, listener, issuer, released):
        events.announce(CREATED, [LOG], issuer, lambda: released.append(1))
        failed, unrelated = object(), object()
        events.dispatched(listener, failed, Query("SELECT * FROM system_schema.tables WHERE keyspace_name = 'ks'"))
        events.finished(listener, failed, False)
        events.dispatched(listener, unrelated, Query("SELECT * FROM system_schema.tables WHERE keyspace_name = 'x'"))
        events.finished(listener, unrelated, True)
        assert not released
        for _ in range(100):
            if released:
                break
            await asyncio.sleep(0.02)
        assert released == [1]
        released.clear()  # the listener let the timeout pass: the next answer does not wait for it
        events.announce(CREATED, [LOG], issuer, lambda: released.append(2))
        assert released == [2]
    on_loop(tmp_path, 0.05, test)


def test_a_listener_that_closes_or_the_server_stopping_releases_held_answers(tmp_path):
    async def test(events, listener, issuer, released):
        other = Listener()
        events.register(other)
        events.announce(CREATED, [LOG], issuer, lambda: released.append(1))
        events.unregister(listener)
        assert not released
        events.unregister(other)
        assert released == [1]
        events.register(Listener())
        events.announce(CREATED, [LOG], issuer, lambda: released.append(2))
        events.release_all()
        assert released == [1, 2]
    on_loop(tmp_path, 60, test)


@pytest.mark.parametrize("where, covers", [
    ("", {("ks", "t_scylla_cdc_log"), ("other", "x")}),
    (" WHERE keyspace_name = 'ks'", {("ks", "t_scylla_cdc_log")}),
    (" WHERE keyspace_name = 'ks' AND table_name = 't_scylla_cdc_log'", {("ks", "t_scylla_cdc_log")}),
    (" WHERE keyspace_name = 'ks' AND table_name = 't'", set()),
    (" WHERE keyspace_name IN ('a', 'ks')", {("ks", "t_scylla_cdc_log")}),
])
def test_which_reads_of_system_schema_tables_cover_a_table(tmp_path, where, covers):
    db = Db(tmp_path)
    check = read_covers(db, "SELECT * FROM system_schema.tables" + where, False)
    assert {t for t in [("ks", "t_scylla_cdc_log"), ("other", "x")] if check(*t)} == covers
    assert read_covers(db, "SELECT * FROM system_schema.columns", False) is None
    assert read_covers(db, "SELECT * FROM ks.t", False) is None
    db.db.close()


def test_a_client_registered_for_events_that_never_reads_the_schema_is_waited_for_once(tmp_path):
    """A raw connection that REGISTERs and never refreshes: the first CDC DDL waits for it until the timeout (the
    driver's own listener catches up before), later ones do not wait for it (the server learnt it does not
    refresh); the driver sees each log as its DDL returns."""
    import logtide
    from cassandra.protocol import RegisterMessage
    from logtide.server import BackgroundServer, ServerConfig

    from .rawclient import RawClient

    db = logtide.open(tmp_path / "d", synchronous="OFF")
    srv = BackgroundServer(db, ServerConfig(port=0, schema_catch_up_timeout=5), close_db=True).start()
    try:
        raw = RawClient(srv.port)
        raw.startup()
        raw.request(RegisterMessage(event_list=["SCHEMA_CHANGE"]))
        c = cluster(srv.port)
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("ks"))
        s.execute("CREATE TABLE ks.a (k int PRIMARY KEY) WITH cdc = {'enabled': true}")
        assert "a_scylla_cdc_log" in c.metadata.keyspaces["ks"].tables
        events = srv.server.schema_events
        raw_port = raw.sock.getsockname()[1]
        assert [conn.peer for conn in events._slow] == [f"127.0.0.1:{raw_port}"]
        s.execute("CREATE TABLE ks.b (k int PRIMARY KEY) WITH cdc = {'enabled': true}")
        assert "b_scylla_cdc_log" in c.metadata.keyspaces["ks"].tables
        c.shutdown()
        raw.close()
    finally:
        srv.stop()
