"""CDC options, the log table's schema and lifecycle, and every refusal."""

from __future__ import annotations

import pytest

from logtide.errors import ConfigurationException, InvalidRequest

from ..conftest import rows


def log_columns(session, table="t"):
    r = session.execute("SELECT column_name, type, kind FROM system_schema.columns "
                        f"WHERE keyspace_name = 'ks' AND table_name = '{table}_scylla_cdc_log'")
    return {x.column_name: (x.type, x.kind) for x in r}


def test_log_schema_of_atomic_columns(session):
    session.execute("CREATE TABLE t (pk1 int, pk2 int, ck1 int, ck2 int, v int, vs int static, "
                    "PRIMARY KEY ((pk1, pk2), ck1, ck2)) WITH cdc = {'enabled': true}")
    assert log_columns(session) == {
        "cdc$stream_id": ("blob", "partition_key"),
        "cdc$time": ("timeuuid", "clustering"),
        "cdc$batch_seq_no": ("int", "clustering"),
        "cdc$operation": ("tinyint", "regular"),
        "cdc$ttl": ("bigint", "regular"),
        "cdc$end_of_batch": ("boolean", "regular"),
        "pk1": ("int", "regular"), "pk2": ("int", "regular"),
        "ck1": ("int", "regular"), "ck2": ("int", "regular"),
        "v": ("int", "regular"), "cdc$deleted_v": ("boolean", "regular"),
        "vs": ("int", "regular"), "cdc$deleted_vs": ("boolean", "regular"),
    }


def test_log_schema_of_non_atomic_columns(session):
    session.execute("CREATE TYPE ut (a int, b text)")
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, m map<int, text>, s set<int>, l list<text>, u ut, "
                    "fm frozen<map<int, text>>, fu frozen<ut>) WITH cdc = {'enabled': true}")
    cols = log_columns(session)
    assert cols["m"][0] == "frozen<map<int, text>>"
    assert cols["cdc$deleted_elements_m"][0] == "frozen<set<int>>"
    assert cols["s"][0] == "frozen<set<int>>"
    assert cols["cdc$deleted_elements_s"][0] == "frozen<set<int>>"
    assert cols["l"][0] == "frozen<map<timeuuid, text>>"
    assert cols["cdc$deleted_elements_l"][0] == "frozen<set<timeuuid>>"
    assert cols["u"][0] == "frozen<ut>"
    assert cols["cdc$deleted_elements_u"][0] == "frozen<set<smallint>>"
    assert cols["fm"][0] == "frozen<map<int, text>>" and "cdc$deleted_elements_fm" not in cols
    assert cols["fu"][0] == "frozen<ut>" and "cdc$deleted_elements_fu" not in cols
    for c in ("m", "s", "l", "u", "fm", "fu"):
        assert cols["cdc$deleted_" + c][0] == "boolean"


def test_log_table_properties(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    r = session.execute("SELECT comment, gc_grace_seconds, default_time_to_live, compaction FROM system_schema.tables "
                        "WHERE keyspace_name = 'ks' AND table_name = 't_scylla_cdc_log'").one()
    assert r.comment == "CDC log for ks.t" and r.gc_grace_seconds == 0 and r.default_time_to_live == 0
    assert "TimeWindowCompactionStrategy" in r.compaction["class"]


@pytest.mark.parametrize("options", ["{'enabled': true}", "{'enabled': 'true'}", "{'enabled': 'TRUE', 'ttl': 0}",
                                     "{'enabled': true, 'preimage': 'full', 'postimage': 'true', 'delta': 'keys'}"])
def test_accepted_options(session, options):
    session.execute(f"CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {options}")
    assert log_columns(session)


@pytest.mark.parametrize("options, exc, message", [
    ("{'enabled': true, 'nope': 1}", ConfigurationException, "Invalid CDC option: nope"),
    ("{'enabled': true, 'ttl': -1}", ConfigurationException, "ttl"),
    ("{'enabled': true, 'ttl': 'abc'}", ConfigurationException, "ttl"),
    ("{'enabled': true, 'preimage': 'sometimes'}", ConfigurationException, "preimage"),
    ("{'enabled': true, 'delta': 'some'}", ConfigurationException, "delta"),
    ("{'enabled': 'maybe'}", ConfigurationException, "enabled"),
])
def test_refused_options(session, options, exc, message):
    with pytest.raises(exc, match=message):
        session.execute(f"CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {options}")
    assert session.db.catalog.find_table("ks", "t") is None


def test_counter_table_refused(session):
    with pytest.raises(InvalidRequest, match="Cannot create CDC log for table ks.t. Counter support not implemented"):
        session.execute("CREATE TABLE t (pk int PRIMARY KEY, c counter) WITH cdc = {'enabled': true}")
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, c counter)")
    with pytest.raises(InvalidRequest, match="Counter support not implemented"):
        session.execute("ALTER TABLE t WITH cdc = {'enabled': true}")


def test_log_name_taken_refused(session):
    session.execute("CREATE TABLE t_scylla_cdc_log (pk int PRIMARY KEY)")
    with pytest.raises(InvalidRequest, match="t_scylla_cdc_log.*already exists"):
        session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")


def test_nested_log_refused(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    with pytest.raises(InvalidRequest, match="Cannot create a CDC log for a table ks.t_scylla_cdc_log, because "
                                             "creating nested CDC logs is not allowed"):
        session.execute("ALTER TABLE t_scylla_cdc_log WITH cdc = {'enabled': true}")


def test_direct_changes_to_log_columns_refused(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    with pytest.raises(InvalidRequest, match="You cannot modify the set of columns of a CDC log table directly"):
        session.execute("ALTER TABLE t_scylla_cdc_log ADD x int")
    with pytest.raises(InvalidRequest, match="You cannot modify the set of columns of a CDC log table directly"):
        session.execute("ALTER TABLE t_scylla_cdc_log DROP v")
    with pytest.raises(InvalidRequest, match="Cannot rename a column of a CDC log table."):
        session.execute('ALTER TABLE t_scylla_cdc_log RENAME "cdc$time" TO x')


def test_disable_keeps_log_and_reenable_reattaches_it(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    log_id = session.db.catalog.table("ks", "t_scylla_cdc_log").id
    session.execute("INSERT INTO t (pk, v) VALUES (1, 1)")
    session.execute("ALTER TABLE t WITH cdc = {'enabled': false}")
    session.execute("INSERT INTO t (pk, v) VALUES (2, 2)")
    assert [r.pk for r in session.execute("SELECT pk FROM t_scylla_cdc_log")] == [1]
    session.execute("ALTER TABLE t WITH cdc = {'enabled': true}")
    session.execute("INSERT INTO t (pk, v) VALUES (3, 3)")
    assert sorted(r.pk for r in session.execute("SELECT pk FROM t_scylla_cdc_log")) == [1, 3]
    assert session.db.catalog.table("ks", "t_scylla_cdc_log").id == log_id


def test_enable_with_alter_creates_log(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int)")
    assert session.db.catalog.find_table("ks", "t_scylla_cdc_log") is None
    session.execute("ALTER TABLE t WITH cdc = {'enabled': true}")
    assert session.db.catalog.find_table("ks", "t_scylla_cdc_log") is not None


def test_base_schema_changes_are_reflected(session):
    session.execute("CREATE TYPE ut (a int)")
    session.execute("CREATE TABLE t (pk int, ck int, v int, u frozen<ut>, PRIMARY KEY (pk, ck)) "
                    "WITH cdc = {'enabled': true}")
    session.execute("ALTER TABLE t ADD m map<int, int>")
    cols = log_columns(session)
    assert cols["m"][0] == "frozen<map<int, int>>" and "cdc$deleted_elements_m" in cols
    session.execute("ALTER TABLE t DROP v")
    cols = log_columns(session)
    assert "v" not in cols and "cdc$deleted_v" not in cols
    session.execute("ALTER TABLE t RENAME ck TO ck2")
    cols = log_columns(session)
    assert "ck2" in cols and "ck" not in cols
    session.execute("ALTER TYPE ut ADD b text")
    session.execute("INSERT INTO t (pk, ck2, u) VALUES (0, 0, {a: 1, b: 'x'})")
    r = session.execute("SELECT u FROM t_scylla_cdc_log").one()
    assert (r.u.a, r.u.b) == (1, "x")


def test_drop_table_drops_its_log(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    session.execute("DROP TABLE t")
    assert session.db.catalog.find_table("ks", "t_scylla_cdc_log") is None
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    assert rows(session.execute("SELECT * FROM t_scylla_cdc_log")) == []


def test_describe_shows_cdc_options_and_log_as_comment(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true, 'preimage': 'full'}")
    base = session.execute("DESCRIBE TABLE t").one().create_statement
    assert ("AND cdc = {'delta': 'full', 'enabled': 'true', 'postimage': 'false', 'preimage': 'full', "
            "'ttl': '86400'}") in base
    log = session.execute("DESCRIBE TABLE t_scylla_cdc_log").one().create_statement
    assert log.startswith("/* Do NOT execute this statement!") and log.endswith("*/")
    assert "CREATE TABLE ks.t_scylla_cdc_log (" in log
    assert ') WITH CLUSTERING ORDER BY ("cdc$time" ASC, "cdc$batch_seq_no" ASC)' in log


def test_log_table_survives_reopen(tmp_path):
    import logtide
    with logtide.open(tmp_path / "d") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
        s.execute("INSERT INTO ks.t (pk, v) VALUES (1, 1)")
        streams = db.generations.current.all_streams()
    with logtide.open(tmp_path / "d") as db:
        s = db.session("ks")
        assert db.generations.current.all_streams() == streams
        s.execute("INSERT INTO t (pk, v) VALUES (2, 2)")
        assert sorted(r.pk for r in s.execute("SELECT pk FROM t_scylla_cdc_log")) == [1, 2]
