"""ScyllaDB's own CDC consumers read ``logtide serve``: scylla-cdc-java, -go, -rust and the Kafka source connector.

One scenario (module fixture) runs a real ``logtide serve`` on 4 vnodes x 2 shards, writes a mix of
changes, lets each consumer (``scylla_consumers``: each library's exact statements) read them with
a confidence window, crash mid-window and resume from its checkpoint; then restarts the server on
3 vnodes x 3 shards (a new CDC generation starting a second later), writes on both sides of the
switch, and lets the consumers finish the old generation and move to the new one.  Every change
must be read exactly once, and each row's last postimage must equal the base row.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from cassandra import InvalidRequest
from cassandra.util import Duration

from .conftest import KEYSPACE_DDL, cluster
from .scylla_consumers import CONSUMERS, GEN_STREAMS, GEN_TIMESTAMPS, Config, Run, ms_of, now_ms
from .test_cli import Serve

TABLE = ("CREATE TABLE ks.t (pk int, ck int, v int, tags set<text>, PRIMARY KEY (pk, ck)) "
         "WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}")
CRASH_AFTER = {"scylla-cdc-java": 2, "scylla-cdc-go": 3, "scylla-cdc-source-connector": 1}
POSTIMAGE, ROW_DELETE, PARTITION_DELETE = 9, 3, 4


@dataclass
class Scenario:
    """What the scenario saw: the consumers' runs, the log and base rows at the end, the node as served."""

    runs: dict[str, Run]
    log: list[Any] = field(default_factory=list)
    base: dict[tuple[int, int], Any] = field(default_factory=dict)
    generations: list[list[Any]] = field(default_factory=list)  # cdc_generation_timestamps per phase
    streams: list[dict[int, set[bytes]]] = field(default_factory=list)  # generation ms -> streams, per phase
    tokens: list[set[str]] = field(default_factory=list)  # system.local tokens per phase
    range_ends: list[set[str]] = field(default_factory=list)  # the newest generation's range ends per phase
    rings: list[list[str]] = field(default_factory=list)  # the driver's token ring per phase
    future_generation_seen: bool = False


def _write_phase_1(s: Any) -> None:
    s.execute(TABLE)
    for pk in range(6):
        s.execute("INSERT INTO ks.t (pk, ck, v, tags) VALUES (%s, 1, %s, {'a'})", [pk, pk])
    s.execute("UPDATE ks.t USING TIMEOUT 60000ms SET v = 10, tags = tags + {'b'} WHERE pk = 0 AND ck = 1")
    s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (1, 2, 7) USING TTL 3600 AND TIMEOUT 60000ms")
    s.execute("DELETE FROM ks.t USING TIMEOUT 60000ms WHERE pk = 2 AND ck = 1")
    s.execute("BEGIN BATCH USING TIMEOUT 60000ms "
              "INSERT INTO ks.t (pk, ck, v) VALUES (3, 2, 1); UPDATE ks.t SET v = 5 WHERE pk = 3 AND ck = 1; "
              "DELETE tags FROM ks.t WHERE pk = 3 AND ck = 1; APPLY BATCH")


def _write_phase_2(s: Any, before_switch: bool) -> None:
    base = 100 if before_switch else 200
    for pk in range(6):
        s.execute("UPDATE ks.t SET v = %s WHERE pk = %s AND ck = 1", [base + pk, pk])
    s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (%s, 3, 1)", [base])
    if not before_switch:
        s.execute("DELETE FROM ks.t WHERE pk = 4")
        s.execute("DELETE FROM ks.t WHERE pk = 1 AND ck = 2")


def _log_keys(s: Any) -> set[tuple[bytes, uuid.UUID]]:
    return {(r.cdc_stream_id, r.cdc_time) for r in s.execute('SELECT "cdc$stream_id", "cdc$time" FROM ks.t_scylla_cdc_log')}


def _poll_until_caught_up(s: Any, runs: dict[str, Run], timeout: float = 60) -> None:
    """Poll every consumer until each has delivered every change in the log (the confidence window lags)."""
    target = _log_keys(s)
    deadline = time.monotonic() + timeout
    while True:
        for run in runs.values():
            run.poll(s)
        missing = {n: len(target - {c.key for c in r.delivered}) for n, r in runs.items()}
        if not any(missing.values()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"consumers did not catch up: changes missing {missing}")
        time.sleep(0.1)


def _observe_node(c: Any, s: Any, sc: Scenario) -> None:
    c.refresh_schema_metadata()
    sc.rings.append([str(t.value) for t in c.metadata.token_map.ring])
    gens = list(s.execute(f"SELECT time, expired FROM {GEN_TIMESTAMPS} WHERE key = 'timestamps'"))
    sc.generations.append(gens)
    streams: dict[int, set[bytes]] = {}
    for r in s.execute(f"SELECT time, range_end, streams FROM {GEN_STREAMS}"):
        streams.setdefault(ms_of(r.time), set()).update(r.streams)
    sc.streams.append(streams)
    sc.tokens.append(set(s.execute("SELECT tokens FROM system.local").one().tokens))
    newest = max(gens, key=lambda r: r.time).time
    sc.range_ends.append({str(r.range_end) for r in s.execute(f"SELECT range_end FROM {GEN_STREAMS} WHERE time = %s",
                                                                [newest])})


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Scenario:
    data = tmp_path_factory.mktemp("consumers") / "data"
    common = ("--data-dir", str(data), "--synchronous", "OFF")
    runs: dict[str, Run] = {}
    sc = Scenario(runs)
    with Serve(*common, "--vnodes", "4", "--shards", "2") as srv:
        c = cluster(srv.wait_listening())
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("ks"))
        start = now_ms() - 1000  # the consumers' start time (go's application start, rust's start_timestamp)
        for name in CONSUMERS:
            runs[name] = Run(name, Config("ks", "t", start_ms=start, crash_after=CRASH_AFTER.get(name)))
        _write_phase_1(s)
        _observe_node(c, s, sc)
        _poll_until_caught_up(s, runs)
        c.shutdown()
        assert srv.stop() == 0
    with Serve(*common, "--vnodes", "3", "--shards", "3") as srv:  # a new generation, a second from now
        c = cluster(srv.wait_listening())
        s = c.connect()
        _observe_node(c, s, sc)
        switch = max(ms_of(r.time) for r in sc.generations[-1])
        sc.future_generation_seen = now_ms() < switch
        _write_phase_2(s, before_switch=True)  # still the old generation's streams
        while now_ms() <= switch + 5:
            time.sleep(0.05)
        _write_phase_2(s, before_switch=False)
        _poll_until_caught_up(s, runs)
        sc.log = list(s.execute("SELECT * FROM ks.t_scylla_cdc_log"))
        sc.base = {(r.pk, r.ck): r for r in s.execute("SELECT * FROM ks.t")}
        c.shutdown()
        assert srv.stop() == 0
    return sc


# -- the node as consumers see it -----------------------------------------------------------


def test_generation_tables_follow_a_restart_with_another_topology(scenario):
    first, second = scenario.generations
    assert len(first) == 1 and first[0].expired is None
    assert len(second) == 2
    new, old = second  # CLUSTERING ORDER BY (time DESC)
    assert old.time == first[0].time and old.expired == new.time
    assert ms_of(first[0].time) > 0  # scylla-cdc-java finds the first generation with time > 0
    assert {len(v) for v in scenario.streams[0].values()} == {4 * 2}
    assert {ms_of(new.time): 3 * 3, ms_of(old.time): 4 * 2} == {k: len(v) for k, v in scenario.streams[1].items()}


def test_a_new_generation_is_listed_before_it_starts(scenario):
    if not scenario.future_generation_seen:  # the client connected more than a second after the restart
        pytest.skip("machine too slow to look before the switch; tests/cdc/test_scylla_parity.py checks it too")


def test_system_local_tokens_are_the_newest_generation_vnode_tokens(scenario):
    assert [len(t) for t in scenario.tokens] == [4, 3]
    assert scenario.tokens == scenario.range_ends


def test_a_token_aware_driver_sees_the_vnode_ring(scenario):
    assert [set(r) for r in scenario.rings] == scenario.tokens


# -- each consumer ------------------------------------------------------------------------


def _changes_in_log(log: list[Any]) -> dict[tuple[bytes, uuid.UUID], list[Any]]:
    out: dict[tuple[bytes, uuid.UUID], list[Any]] = {}
    for r in log:
        out.setdefault((r.cdc_stream_id, r.cdc_time), []).append(r)
    return out


def _last_images(changes: list[Any]) -> dict[tuple[int, int], Any]:
    """Per row, what the last change touching it left: its postimage row, or None for a delete."""
    last: dict[tuple[int, int], Any] = {}
    for ch in sorted(changes, key=lambda c: c.time.time):
        for r in ch.rows:
            op = r.cdc_operation
            if op == POSTIMAGE:
                last[(r.pk, r.ck)] = r
            elif op == ROW_DELETE:
                last[(r.pk, r.ck)] = None
            elif op == PARTITION_DELETE:
                for key in [k for k in last if k[0] == r.pk]:
                    last[key] = None
    return last


@pytest.mark.parametrize("name", list(CONSUMERS))
def test_consumer_reads_every_change_exactly_once(scenario, name):
    run = scenario.runs[name]
    keys = [c.key for c in run.delivered]
    assert len(keys) == len(set(keys)), "a change was delivered twice"
    log = _changes_in_log(scenario.log)
    assert set(keys) == set(log)
    for ch in run.delivered:
        assert ch.rows == log[ch.key]  # every row of the change, in log order
    if name in CRASH_AFTER:
        assert run.crashes == 1


@pytest.mark.parametrize("name", list(CONSUMERS))
def test_consumer_crosses_the_generation_switch(scenario, name):
    old_gen, new_gen = (scenario.streams[1][k] for k in sorted(scenario.streams[1]))
    streams = {c.stream for c in scenario.runs[name].delivered}
    assert streams & old_gen and streams & new_gen and streams <= old_gen | new_gen


@pytest.mark.parametrize("name", list(CONSUMERS))
def test_last_postimage_of_each_row_equals_the_base_row(scenario, name):
    last = _last_images(scenario.runs[name].delivered)
    assert set(scenario.base) <= set(last)
    for key, image in last.items():
        row = scenario.base.get(key)
        if row is None:
            assert image is None, f"row {key} is gone but its last change is not a delete"
        else:
            assert image is not None and (image.v, image.tags) == (row.v, row.tags), key


# -- the CQL the consumers and their drivers send ----------------------------------------------


@pytest.fixture(scope="module")
def session(server):
    c = cluster(server.port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("ext"))
    s.execute("CREATE TABLE ext.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}")
    yield s
    c.shutdown()


def test_bypass_cache_and_using_timeout_on_select(session):
    session.execute("INSERT INTO ext.t (pk, ck, v) VALUES (1, 1, 1) USING TIMEOUT 60s")
    for q in ("SELECT * FROM ext.t WHERE pk = 1 BYPASS CACHE",
              "SELECT * FROM ext.t WHERE pk = 1 USING TIMEOUT 60000ms",
              "SELECT * FROM ext.t WHERE pk = 1 LIMIT 5 ALLOW FILTERING BYPASS CACHE USING TIMEOUT 60000ms",
              "SELECT v FROM ext.t WHERE pk = 1 PER PARTITION LIMIT 1 BYPASS CACHE"):
        assert [r.v for r in session.execute(q)] == [1], q
    prepared = session.prepare("SELECT v FROM ext.t WHERE pk = ? BYPASS CACHE USING TIMEOUT ?")
    assert [r.v for r in session.execute(prepared, [1, Duration(0, 0, 60_000_000_000)])] == [1]


@pytest.mark.parametrize("timeout, message", [
    ("1d", "Timeout values cannot be expressed in days/months"),
    ("5us", "Timeout values cannot have granularity finer than milliseconds"),
    ("-5ms", "Timeout values must be non-negative"),
    ("null", "Timeout value cannot be null"),
])
def test_bad_timeouts_are_refused_as_scylladb_words_them(session, timeout, message):
    for q in (f"SELECT * FROM ext.t USING TIMEOUT {timeout}",
              f"INSERT INTO ext.t (pk, ck, v) VALUES (9, 9, 9) USING TIMEOUT {timeout}"):
        with pytest.raises(InvalidRequest, match=message):
            session.execute(q)
    assert session.execute("SELECT * FROM ext.t WHERE pk = 9").one() is None


def test_select_takes_only_a_timeout_in_its_using_clause(session):
    from cassandra.protocol import SyntaxException
    with pytest.raises(SyntaxException):
        session.execute("SELECT * FROM ext.t USING TTL 5")


def test_peers_tables_are_empty_and_well_formed(session):
    for table in ("peers", "peers_v2"):
        rs = session.execute(f"SELECT * FROM system.{table}")
        assert rs.all() == []
        assert "tokens" in rs.column_names and "host_id" in rs.column_names
    assert session.execute("SELECT COUNT(*) FROM system.peers").one()[0] == 0
    assert session.execute("SELECT initial_tablets FROM system_schema.scylla_keyspaces "
                           "WHERE keyspace_name = 'ext'").all() == []


def test_cdc_options_are_in_the_schema_extension_as_scylladb_serializes_them(session):
    from .scylla_consumers import parse_cdc_extension
    ext = session.execute("SELECT extensions FROM system_schema.tables WHERE keyspace_name = 'ext' "
                          "AND table_name = 't'").one()[0]
    assert parse_cdc_extension(ext["cdc"]) == {"delta": "full", "enabled": "true", "postimage": "false",
                                               "preimage": "false", "ttl": "86400"}


def test_generation_and_log_queries_consumers_send(session):
    gens = [r.time for r in session.execute(f"SELECT time FROM {GEN_TIMESTAMPS} WHERE key = 'timestamps'")]
    first = min(gens)
    assert session.execute(f"SELECT min(time) FROM {GEN_TIMESTAMPS} WHERE key = 'timestamps' AND time > 0").one()[0] == first
    assert session.execute(f"SELECT * FROM {GEN_TIMESTAMPS} WHERE time > 0 ALLOW FILTERING").one().time == first
    streams = [s for r in session.execute(f"SELECT streams FROM {GEN_STREAMS} WHERE time = %s", [first]) for s in r.streams]
    assert len(session.execute(f"SELECT * FROM {GEN_STREAMS} ALLOW FILTERING").all()) == len(
        session.execute(f"SELECT * FROM {GEN_STREAMS} WHERE time = %s BYPASS CACHE", [first]).all())
    for pk in range(3):
        session.execute("INSERT INTO ext.t (pk, ck, v) VALUES (%s, 1, 1)", [pk])
        session.execute("INSERT INTO ext.t (pk, ck, v) VALUES (%s, 2, 2)", [pk])
    first_rows = session.prepare('SELECT "cdc$stream_id", "cdc$time" FROM ext.t_scylla_cdc_log WHERE "cdc$stream_id" '
                                 'IN ? AND "cdc$time" > ? AND "cdc$time" <= ? PER PARTITION LIMIT 1 BYPASS CACHE')
    lo, hi = uuid.UUID("00000000-0000-1000-8080-808080808080"), uuid.UUID("ffffffff-ffff-1fff-7f7f-7f7f7f7f7f7f")
    got = session.execute(first_rows, [streams, lo, hi]).all()
    assert len(got) == len({r.cdc_stream_id for r in got}) and got
