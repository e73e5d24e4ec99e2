"""``system.config``, ScyllaDB's table of the server's configuration (docs/server.md, "system.config"), against the
real ``logtide serve``: what it was started with, the live updates ScyllaDB allows and its refusals on the wire,
the settings that act (the row TTL's scan period, the CQL dialect switches, the default ``speculative_retry``),
and the per-row TTL's expiry seen by a driver; and ScyllaDB's other small virtual tables of the node
(``protocol_servers``, ``versions``, ``token_ring``)."""

from __future__ import annotations

import time
import urllib.request

import pytest
from cassandra import WriteFailure

from .conftest import KEYSPACE_DDL, cluster
from .serveproc import Serve


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``logtide serve --alternator-ttl-period-in-seconds 0.25`` (metrics on a free port) and a driver session with
    keyspace ks."""
    d = tmp_path_factory.mktemp("config")
    with Serve("--data-dir", str(d / "data"), "--synchronous", "OFF", "--metrics-port", "0", "--console", "off",
               "--alternator-ttl-period-in-seconds", "0.25") as srv:
        srv.wait_listening()
        c = cluster(srv.port)
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("ks"))
        yield srv, s
        c.shutdown()


def config(s, name):
    row = s.execute("SELECT name, source, type, value FROM system.config WHERE name = %s", (name,)).one()
    return None if row is None else (row.source, row.type, row.value)


def test_system_config_shows_the_settings_the_server_was_started_with(served):
    srv, s = served
    assert config(s, "alternator_ttl_period_in_seconds") == ("cli", "double", "0.25")
    assert config(s, "native_transport_port") == ("cli", "integer", str(srv.port))  # --port 0: the port bound
    assert config(s, "listen_address") == ("default", "string", '"127.0.0.1"')
    assert config(s, "authenticator") == ("default", "string", '"AllowAllAuthenticator"')
    assert config(s, "num_tokens") == ("default", "integer", "16")
    assert config(s, "cql_in_bind_variable_name_uses_uppercase_operator") == ("default", "bool", "true")
    names = [r.name for r in s.execute("SELECT name FROM system.config")]
    assert len(names) == len(set(names)) >= 10


def test_a_config_file_setting_shows_its_source(tmp_path):
    (tmp_path / "logtide.toml").write_text("alternator_ttl_period_in_seconds = 7\n")
    with Serve("--data-dir", str(tmp_path / "data"), "--synchronous", "OFF",
               "--config", str(tmp_path / "logtide.toml")) as srv:
        srv.wait_listening()
        c = cluster(srv.port)
        assert config(c.connect(), "alternator_ttl_period_in_seconds") == ("config", "double", "7")
        c.shutdown()


def test_a_bad_period_is_refused_at_startup(tmp_path):
    with Serve("--data-dir", str(tmp_path / "data"), "--alternator-ttl-period-in-seconds", "0") as srv:
        assert srv.proc.wait(60) == 2
        assert "alternator_ttl_period_in_seconds must be a positive number of seconds, not 0.0" in srv.output()


@pytest.mark.parametrize("statement, message", [
    ("UPDATE system.config SET value = '5' WHERE name = 'alternator_ttl_period_in_seconds'",
     "option is not live-updateable"),
    ("UPDATE system.config SET value = '5' WHERE name = 'no_such_setting'", "no such option"),
    ("UPDATE system.config SET value = 'maybe' WHERE name = 'cql_in_bind_variable_name_uses_uppercase_operator'",
     "cannot parse option value"),
    ("UPDATE system.config SET type = 'x' WHERE name = 'cql_in_bind_variable_name_uses_uppercase_operator'",
     "option type is immutable"),
    ("INSERT INTO system.one_row (\"system$dummy\") VALUES ('Y')", "this virtual table doesn't allow updates"),
])
def test_refused_updates_are_write_failures_with_scylladb_messages_and_change_nothing(served, statement, message):
    _, s = served
    before = list(s.execute("SELECT * FROM system.config"))
    with pytest.raises(WriteFailure, match=message):
        s.execute(statement)
    assert list(s.execute("SELECT * FROM system.config")) == before


def test_in_bind_variable_spelling_follows_its_live_setting(served):
    _, s = served
    s.execute("CREATE TABLE ks.inb (p int, c int, PRIMARY KEY (p, c))")
    query = "SELECT * FROM ks.inb WHERE p = ? AND c IN ?"
    assert [c.name for c in s.prepare(query).column_metadata] == ["p", "IN(c)"]
    s.execute("UPDATE system.config SET value = '0' WHERE name = 'cql_in_bind_variable_name_uses_uppercase_operator'")
    try:
        assert config(s, "cql_in_bind_variable_name_uses_uppercase_operator") == ("cql", "bool", "false")
        prepared = s.prepare(query)
        assert [c.name for c in prepared.column_metadata] == ["p", "in(c)"]
        s.execute("INSERT INTO ks.inb (p, c) VALUES (1, 1)")
        assert list(s.execute(prepared, {"p": 1, "in(c)": [1, 2]})) == [(1, 1)]
    finally:
        s.execute("UPDATE system.config SET value = 'true' "
                  "WHERE name = 'cql_in_bind_variable_name_uses_uppercase_operator'")


def test_duplicate_bind_variable_names_follow_their_live_setting(served):
    _, s = served
    s.execute("CREATE TABLE ks.dup (p int, c int, PRIMARY KEY (p, c))")
    s.execute("INSERT INTO ks.dup (p, c) VALUES (1, 1)")
    s.execute("INSERT INTO ks.dup (p, c) VALUES (1, 2)")
    query = "SELECT * FROM ks.dup WHERE c = :x AND p = :x"
    assert s.prepare(query).routing_key_indexes == [0]  # ScyllaDB: one variable named x
    name = "cql_duplicate_bind_variable_names_refer_to_same_variable"
    s.execute(f"UPDATE system.config SET value = 'false' WHERE name = '{name}'")
    try:
        prepared = s.prepare(query)  # Cassandra's rule: two variables, both named x
        assert prepared.routing_key_indexes == [1]
        assert list(s.execute(prepared, (2, 1))) == [(1, 2)]
    finally:
        s.execute(f"UPDATE system.config SET value = 'true' WHERE name = '{name}'")


def test_speculative_retry_default_applies_to_tables_created_after_it_changes(served):
    _, s = served

    def retry(table):
        return s.execute("SELECT speculative_retry FROM system_schema.tables WHERE keyspace_name = 'ks' "
                         "AND table_name = %s", (table,)).one().speculative_retry

    s.execute("CREATE TABLE ks.before (p int PRIMARY KEY)")
    name = "speculative_retry_user_table_default"
    s.execute(f"UPDATE system.config SET value = '200ms' WHERE name = '{name}'")
    try:
        s.execute("CREATE TABLE ks.after (p int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
        s.execute("CREATE TABLE ks.own (p int PRIMARY KEY) WITH speculative_retry = '37.0PERCENTILE'")
        s.execute(f"UPDATE system.config SET value = 'dog' WHERE name = '{name}'")  # invalid: the last valid stays
        s.execute("CREATE TABLE ks.later (p int PRIMARY KEY)")
        assert [retry(t) for t in ("before", "after", "after_scylla_cdc_log", "own", "later")] == [
            "99.0PERCENTILE", "200.00ms", "200.00ms", "37.0PERCENTILE", "200.00ms"]
    finally:
        s.execute(f"UPDATE system.config SET value = '99.0PERCENTILE' WHERE name = '{name}'")


def test_expired_rows_disappear_within_the_period_and_the_cdc_log_and_metrics_say_so(served):
    srv, s = served
    s.execute("CREATE TABLE ks.exp (p int, c int, e bigint TTL, PRIMARY KEY (p, c)) "
              "WITH cdc = {'enabled': true, 'preimage': true}")
    now = int(time.time())
    s.execute(f"INSERT INTO ks.exp (p, c, e) VALUES (1, 1, {now - 60})")
    s.execute(f"INSERT INTO ks.exp (p, c, e) VALUES (1, 2, {now + 3600})")
    s.execute("INSERT INTO ks.exp (p, c) VALUES (1, 3)")
    deadline = time.monotonic() + 30
    while len(list(s.execute("SELECT c FROM ks.exp"))) == 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [r.c for r in s.execute("SELECT c FROM ks.exp")] == [2, 3]
    ops = [(r.cdc_operation, r.c) for r in s.execute("SELECT * FROM ks.exp_scylla_cdc_log")]
    assert sorted(ops) == sorted([(2, 1), (2, 2), (2, 3), (0, 1), (-3, 1)])
    with urllib.request.urlopen(srv.metrics_url, timeout=30) as answer:
        metrics = dict(line.rsplit(" ", 1) for line in answer.read().decode().splitlines()
                       if line.startswith("logtide_expiration_"))
    assert float(metrics["logtide_expiration_items_deleted_total"]) >= 1
    assert float(metrics["logtide_expiration_scan_passes_total"]) >= 1
    assert float(metrics["logtide_expiration_scan_table_total"]) >= 1


def test_protocol_servers_versions_and_token_ring_describe_the_served_node(served):
    srv, s = served
    from logtide.version import package_version

    cql = s.execute("SELECT * FROM system.protocol_servers").one()
    assert (cql.name, cql.protocol, cql.protocol_version, cql.listen_addresses) == (
        "native transport", "cql", "3.4.5", [f"127.0.0.1:{srv.port}"])
    version = s.execute("SELECT key, version, build_mode FROM system.versions").one()
    assert tuple(version) == ("local", package_version(), "release")
    ring = list(s.execute("SELECT * FROM system.token_ring WHERE keyspace_name = 'ks'"))
    tokens = sorted(int(t) for t in s.execute("SELECT tokens FROM system.local").one().tokens)
    num_tokens = int(s.execute("SELECT value FROM system.config WHERE name = 'num_tokens'").one().value)
    assert len(ring) == len(tokens) == num_tokens
    assert {r.table_name for r in ring} == {"<ALL>"} and {r.endpoint for r in ring} == {"127.0.0.1"}
    assert sorted(int(r.end_token) for r in ring) == tokens
    assert sorted(int(r.start_token) for r in ring) == tokens  # each range starts where the one before ends
