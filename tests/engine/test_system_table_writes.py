"""Writes to system tables (docs/server.md "System tables"): logtide makes every system table's rows from its
catalog and state, so a write, a TRUNCATE or a batch touching one is refused (ScyllaDB's refusal for its virtual
tables) instead of being acknowledged and never read; ``UPDATE system.config`` alone changes a live setting."""

from __future__ import annotations

import pytest

from logtide.errors import WriteFailure

REFUSED = "this virtual table doesn't allow updates"


@pytest.mark.parametrize("statement", [
    "INSERT INTO system.local (key) VALUES ('local')",
    "UPDATE system.peers SET rack = 'r' WHERE peer = '10.0.0.1'",
    "DELETE FROM system_schema.tables WHERE keyspace_name = 'ks'",
    "INSERT INTO system_auth.roles (role) VALUES ('x')",
    "INSERT INTO system_traces.sessions (session_id) VALUES (5a1b2c3d-0000-1000-8000-000000000000)",
    "TRUNCATE system.local",
    "TRUNCATE system_schema.columns",
    "BEGIN BATCH INSERT INTO ks.t (k) VALUES (1); INSERT INTO system.local (key) VALUES ('local') APPLY BATCH",
    "BEGIN BATCH UPDATE system.config SET value = '200ms' WHERE name = 'speculative_retry_user_table_default' "
    "APPLY BATCH",
])
def test_writes_to_system_tables_are_refused_and_change_nothing(session, statement):
    session.execute("CREATE TABLE ks.t (k int PRIMARY KEY)")
    local = list(session.execute("SELECT * FROM system.local"))
    with pytest.raises(WriteFailure, match=REFUSED):
        session.execute(statement)
    assert list(session.execute("SELECT * FROM system.local")) == local
    assert list(session.execute("SELECT * FROM ks.t")) == []
    with session.db.store.snapshot() as txn:  # nothing stored under a system table's id
        assert txn.sql("SELECT count(*) FROM rows WHERE tid < 0")[0][0] == 0
        assert txn.sql("SELECT count(*) FROM partitions WHERE tid < 0")[0][0] == 0


def test_a_setting_is_still_updated_through_system_config_alone(session):
    session.execute("UPDATE system.config SET value = '200ms' WHERE name = 'speculative_retry_user_table_default'")
    [row] = session.execute("SELECT value FROM system.config WHERE name = 'speculative_retry_user_table_default'")
    assert row.value == '"200ms"'  # a string setting's value as ScyllaDB prints it, in JSON
    session.execute("USE system_auth")  # an unqualified `config` is not system.config here
    with pytest.raises(WriteFailure, match=REFUSED):
        session.execute("INSERT INTO config (name, value) VALUES ('speculative_retry_user_table_default', '1ms')")
