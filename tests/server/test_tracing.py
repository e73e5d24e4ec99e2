"""Query tracing as ScyllaDB and Cassandra expose it (#21 item 12): the frame's tracing flag answered with a
tracing session id, system_traces.sessions and .events, cassandra-driver's get_query_trace() and cqlsh's
TRACING ON."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from cassandra import InvalidRequest
from cassandra.protocol import QueryMessage
from cassandra.query import BatchStatement, SimpleStatement

from logtide.tracing import TraceStore

from .conftest import KEYSPACE_DDL, cluster, run_cqlsh
from .rawclient import RawClient
from .serveproc import Serve

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    """A real ``logtide serve`` process (synchronous=FULL, the default) with a CDC table that has a changefeed."""
    with Serve("--data-dir", str(tmp_path_factory.mktemp("tracing"))) as srv:
        srv.wait_listening()
        c = cluster(srv.port)
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("ks"))
        s.execute("CREATE TABLE ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) "
                  "WITH cdc = {'enabled': true, 'preimage': true}")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED updates WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON')")
        s.execute("CREATE TABLE ks.plain (k int PRIMARY KEY, v text)")
        c.shutdown()
        yield srv
        assert srv.stop() == 0


@pytest.fixture
def session(serve):
    c = cluster(serve.port)
    yield c.connect()
    c.shutdown()


def activities(trace) -> list[str]:
    return [e.description for e in trace.events]


def test_a_traced_cdc_write_shows_its_stages_from_parse_to_fsync(session):
    rs = session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (1, 1, 10)", trace=True)
    trace = rs.get_query_trace()
    assert trace.request_type == "Execute CQL3 query"
    assert trace.coordinator == "127.0.0.1" and trace.client == "127.0.0.1"
    assert trace.parameters["query"] == "INSERT INTO ks.t (pk, ck, v) VALUES (1, 1, 10)"
    assert trace.parameters["consistency_level"] == "LOCAL_ONE"
    assert trace.duration.total_seconds() > 0
    steps = [re.sub(r"\d{10,}", "T", a) for a in activities(trace)]
    assert steps == [
        "Parsing INSERT INTO ks.t (pk, ck, v) VALUES (1, 1, 10)",
        "Preparing Insert statement",
        "Waiting for the write lock (group commit)",
        "Write transaction started: write timestamp T",
        "Mutation built: 1 partition(s) of ks.t",
        "CDC: 1 log row(s) in 1 stream(s) of ks.t_scylla_cdc_log",
        "Changefeeds: the rows the write touches are read for their images",
        "Rows appended to the write transaction with their CDC log rows",
        "Changefeeds: 1 record(s) appended",
        "Write transaction committed and synced to disk (synchronous=FULL)",
        "Sending RESULT",
    ]
    elapsed = [e.source_elapsed.total_seconds() for e in trace.events]
    assert elapsed == sorted(elapsed) and elapsed[-1] <= trace.duration.total_seconds()
    assert all(e.source == "127.0.0.1" for e in trace.events)
    assert trace.events[0].thread_name.startswith("logtide-cql-")  # a worker thread


def test_a_traced_read_says_how_it_reads_and_how_many_rows(session):
    session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (2, 1, 20)")
    one = session.execute("SELECT * FROM ks.t WHERE pk = 2", trace=True).get_query_trace()
    assert activities(one)[2:] == ["Executing single-partition query on ks.t", "Read 1 live row(s)", "Sending RESULT"]
    scan = session.execute(SimpleStatement("SELECT * FROM ks.t", fetch_size=1), trace=True).get_query_trace()
    assert activities(scan)[2:] == ["Scanning the token range of ks.t (a snapshot of committed data)",
                                    "Read 1 live row(s); more pages follow", "Sending RESULT"]
    assert scan.parameters["page_size"] == "1"


def test_prepared_statements_batches_and_schema_changes_are_traced(session):
    insert = session.prepare("INSERT INTO ks.plain (k, v) VALUES (?, ?)")
    trace = session.execute(insert, [1, "a"], trace=True).get_query_trace()
    assert trace.request_type == "Execute CQL3 prepared query"
    assert trace.parameters["query"] == "INSERT INTO ks.plain (k, v) VALUES (?, ?)"
    assert activities(trace)[0].startswith("Executing prepared statement ")
    assert activities(trace)[0].endswith(": binding 2 value(s)")
    assert "CDC: " not in " ".join(activities(trace))  # no CDC on this table: no CDC event
    batch = BatchStatement()
    batch.add(insert, [2, "b"])
    batch.add("INSERT INTO ks.plain (k, v) VALUES (3, 'c')")
    trace = session.execute(batch, trace=True).get_query_trace()
    assert trace.request_type == "Execute batch of CQL3 queries"
    assert "Preparing LOGGED batch of 2 statement(s)" in activities(trace)
    assert "Mutation built: 2 partition(s) of ks.plain" in activities(trace)
    trace = session.execute("ALTER TABLE ks.plain ADD w int", trace=True).get_query_trace()
    assert "Schema change: UPDATED TABLE ks.plain" in activities(trace)


def test_a_failed_request_is_traced_with_its_error(session):
    future = session.execute_async("SELECT * FROM ks.nope", trace=True)
    with pytest.raises(InvalidRequest):
        future.result()
    trace = future.get_query_trace()
    assert activities(trace)[-2:] == ["Request failed: InvalidRequest: unconfigured table nope", "Sending ERROR"]


def test_only_a_request_with_the_tracing_flag_gets_a_tracing_session(serve):
    with RawClient(serve.port) as raw:
        raw.startup()
        raw.send(QueryMessage("SELECT k FROM ks.plain WHERE k = 1", consistency_level=1))
        _, flags, _, _, _ = raw.recv_frame()
        assert flags & 0x02 == 0
        message = QueryMessage("SELECT k FROM ks.plain WHERE k = 1", consistency_level=1)
        message.tracing = True  # the driver's encoder sets the frame's tracing flag
        raw.send(message)
        _, flags, _, _, body = raw.recv_frame()
        assert flags & 0x02
        session_id = uuid.UUID(bytes=body[:16])
    c = cluster(serve.port)
    s = c.connect()
    row = s.execute("SELECT * FROM system_traces.sessions WHERE session_id = %s", [session_id]).one()
    assert row.request == "Execute CQL3 query" and row.command == "QUERY" and row.duration > 0
    assert row.request_size > 0 and row.response_size > 16 and row.username is None
    events = list(s.execute("SELECT * FROM system_traces.events WHERE session_id = %s", [session_id]))
    assert [e.activity for e in events][0] == "Parsing SELECT k FROM ks.plain WHERE k = 1"
    assert all(e.event_id.version == 1 for e in events)  # timeuuids, in time order
    c.shutdown()


def test_the_trace_tables_are_in_system_schema_with_cassandras_and_scyllas_columns(session):
    meta = session.cluster.metadata.keyspaces["system_traces"]
    assert meta.replication_strategy.replication_factor == 2
    sessions = meta.tables["sessions"]
    assert {n: c.cql_type for n, c in sessions.columns.items()} == {
        "session_id": "uuid", "client": "inet", "command": "text", "coordinator": "inet", "coordinator_port": "int",
        "duration": "int", "parameters": "map<text, text>", "request": "text", "request_size": "int",
        "response_size": "int", "started_at": "timestamp", "username": "text"}
    events = meta.tables["events"]
    assert [c.name for c in events.primary_key] == ["session_id", "event_id"]
    assert {n: c.cql_type for n, c in events.columns.items()} == {
        "session_id": "uuid", "event_id": "timeuuid", "activity": "text", "source": "inet", "source_elapsed": "int",
        "source_port": "int", "thread": "text"}
    assert sessions.options["comment"] == "tracing sessions"


def masked(out: str) -> str:
    """cqlsh's trace output with what changes from run to run masked (ids, times, thread numbers), one row per
    line as ``activity | timestamp | source | source_elapsed | client``."""
    lines = []
    for line in out.splitlines():
        if line.startswith("Tracing session: "):
            lines.append("Tracing session: <id>")
        elif " | " in line:
            cells = [c.strip() for c in line.split(" | ")]
            if cells[0] == "activity":
                lines.append(" | ".join(cells))
            elif len(cells) == 5:
                activity = re.sub(r"\d{10,}", "<timestamp>", cells[0])
                activity = re.sub(r"logtide-cql-\d+", "logtide-cql-N", activity)
                lines.append(" | ".join([activity, "<time>", cells[2], "<elapsed>", cells[4]]))
            else:
                lines.append(line.rstrip())
        elif not set(line.strip()) <= {"-", "+"} or not line.strip():
            lines.append(line.rstrip())
    return "\n".join(lines).strip() + "\n"


def test_cqlsh_tracing_on_prints_the_trace_of_each_statement(serve, tmp_path):
    script = tmp_path / "trace.cql"
    script.write_text("TRACING ON;\n"
                      "INSERT INTO ks.plain (k, v) VALUES (10, 'x');\n"
                      "SELECT k, v FROM ks.plain WHERE k = 10;\n"
                      "TRACING OFF;\n")
    home = tmp_path / "home"
    home.mkdir()
    status, out, err = run_cqlsh(serve.port, home, "-f", str(script))
    assert (status, err) == (0, "")
    assert masked(out) == (GOLDEN / "cqlsh_tracing_on.txt").read_text()


# -- the store: bounded in number and time ---------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.micros = 1_700_000_000_000_000

    def __call__(self) -> int:
        return self.micros


def test_the_trace_store_keeps_the_newest_sessions_up_to_its_capacity():
    store = TraceStore(Clock(), capacity=3)
    ids = [store.start("Execute CQL3 query", "10.0.0.1", "127.0.0.1", 9042, {}, 10).session_id for _ in range(5)]
    assert [r["session_id"] for r in store.sessions_rows()] == sorted(ids[2:], key=lambda u: u.bytes)


def test_traces_expire_after_a_day_as_cassandras_ttl():
    clock = Clock()
    store = TraceStore(clock)
    old = store.start("Execute CQL3 query", "10.0.0.1", "127.0.0.1", 9042, {}, 10)
    old.event("Parsing x")
    clock.micros += 86_399 * 1_000_000
    new = store.start("Execute CQL3 query", "10.0.0.1", "127.0.0.1", 9042, {}, 10)
    assert len(store.sessions_rows()) == 2
    clock.micros += 2 * 1_000_000
    assert [r["session_id"] for r in store.sessions_rows()] == [new.session_id]
    assert store.events_rows() == []


def test_a_session_keeps_at_most_max_events_and_is_complete_once_finished():
    store = TraceStore(Clock(), max_events=2)
    session = store.start("Execute CQL3 query", "10.0.0.1", "127.0.0.1", 9042, {"query": "q"}, 10)
    for n in range(5):
        session.event(f"step {n}")
    assert [r["activity"] for r in store.events_rows()] == ["step 0", "step 1"]
    assert store.sessions_rows()[0]["duration"] is None
    session.finish(42)
    row = store.sessions_rows()[0]
    assert row["duration"] >= 1 and row["response_size"] == 42 and row["parameters"] == {"query": "q"}
