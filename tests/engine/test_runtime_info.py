"""``system.runtime_info``, ScyllaDB's virtual table of the node's runtime state (docs/server.md "System
tables"): the ``generic`` items logtide has, in ScyllaDB's formats, and no memtable or cache groups."""

from __future__ import annotations

import os
import re

import pytest

from logtide.errors import WriteFailure


def items(session) -> dict[tuple[str, str], str]:
    return {(r.group, r.item): r.value for r in session.execute("SELECT group, item, value FROM system.runtime_info")}


def test_runtime_info_reports_the_load_and_uptime_of_the_data_directory(session, db):
    before = items(session)
    assert set(before) == {("generic", "gossip_active"), ("generic", "incremental_backup_enabled"),
                           ("generic", "load"), ("generic", "trace_probability"), ("generic", "uptime")}
    assert before[("generic", "gossip_active")] == before[("generic", "incremental_backup_enabled")] == "false"
    assert before[("generic", "trace_probability")] == "0"
    assert re.fullmatch(r"\d+ seconds", before[("generic", "uptime")])
    session.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v blob)")
    session.execute("INSERT INTO ks.t (k, v) VALUES (1, %s)" % ("0x" + "ab" * 200_000))
    load = int(items(session)[("generic", "load")])
    on_disk = sum(os.stat(db.path / name).st_size for name in ("logtide.db", "logtide.db-wal")
                  if (db.path / name).exists())
    assert load == on_disk and load > 200_000


def test_runtime_info_has_no_memtable_and_refuses_writes(session):
    assert {g for g, _ in items(session)} == {"generic"}  # no memtable, memory or cache groups
    with pytest.raises(WriteFailure, match="this virtual table doesn't allow updates"):
        session.execute("INSERT INTO system.runtime_info (group, item, value) VALUES ('generic', 'load', '0')")
