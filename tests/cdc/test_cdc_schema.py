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


# ---------------------------------------------------------------- log properties, ids and DESCRIBE (issue #24)

def describe(session, text):
    return [(r.keyspace_name, r.type, r.name, r.create_statement) for r in session.execute(text)]


def test_log_properties_altered_directly_are_applied_and_kept(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    session.execute("ALTER TABLE t_scylla_cdc_log WITH comment = 'mine' AND gc_grace_seconds = 7 "
                    "AND compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_size': '5', "
                    "'compaction_window_unit': 'HOURS'}")
    expected = {"comment": "mine", "gc_grace_seconds": 7,
                "compaction": {"class": "TimeWindowCompactionStrategy", "compaction_window_size": "5",
                               "compaction_window_unit": "HOURS"}}

    def options():
        return {k: session.db.catalog.table("ks", "t_scylla_cdc_log").options[k] for k in expected}

    assert options() == expected
    session.execute("ALTER TABLE t ADD w int")  # a base change rebuilds the log's columns, not its properties
    assert options() == expected
    session.execute("ALTER TABLE t WITH cdc = {'enabled': false}")
    assert options() == expected
    session.execute("ALTER TABLE t WITH cdc = {'enabled': true, 'ttl': 60}")
    assert options() == expected


def test_new_log_properties_follow_the_cdc_ttl(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY) WITH cdc = {'enabled': true, 'ttl': 3000}")
    opts = session.db.catalog.table("ks", "t_scylla_cdc_log").options
    # windows of ceil(3000 / 24) = 125 s, in whole minutes rounded up; checked every half window
    assert opts["compaction"] == {"class": "TimeWindowCompactionStrategy", "compaction_window_size": "3",
                                  "compaction_window_unit": "MINUTES", "expired_sstable_check_frequency_seconds": "62"}
    assert opts["gc_grace_seconds"] == 0
    session.execute("CREATE TABLE u (pk int PRIMARY KEY) WITH cdc = {'enabled': true, 'ttl': 0}")
    opts = session.db.catalog.table("ks", "u_scylla_cdc_log").options
    assert opts["compaction"] == {"class": "TimeWindowCompactionStrategy"} and opts["gc_grace_seconds"] == 864000


def test_log_columns_removed_by_base_changes_are_kept_as_dropped(session):
    session.execute("CREATE TABLE t (p int, v int, u int, a int, PRIMARY KEY (p, v)) WITH cdc = {'enabled': true}")
    log_id = session.db.catalog.table("ks", "t_scylla_cdc_log").id
    session.execute("ALTER TABLE t WITH cdc = {'enabled': false}")
    session.execute("ALTER TABLE t DROP a")
    session.execute("ALTER TABLE t RENAME v TO v2")
    session.execute("ALTER TABLE t WITH cdc = {'enabled': true}")
    log = session.db.catalog.table("ks", "t_scylla_cdc_log")
    assert log.id == log_id
    assert sorted(log.dropped_columns) == ["a", "cdc$deleted_a", "v"]
    assert {n: t for n, (t, _) in log.dropped_columns.items()} == {"a": "int", "cdc$deleted_a": "boolean", "v": "int"}
    dropped = session.execute("SELECT column_name FROM system_schema.dropped_columns "
                              "WHERE keyspace_name = 'ks' AND table_name = 't_scylla_cdc_log'")
    assert sorted(r.column_name for r in dropped) == ["a", "cdc$deleted_a", "v"]


def test_describe_log_with_internals_shows_id_and_dropped_columns(session):
    session.execute("CREATE TABLE t (p int PRIMARY KEY, a int) WITH cdc = {'enabled': true}")
    session.execute("ALTER TABLE t DROP a")
    log = session.db.catalog.table("ks", "t_scylla_cdc_log")
    [(ks, kind, name, text)] = describe(session, "DESC TABLE t_scylla_cdc_log WITH INTERNALS")
    assert (ks, kind, name) == ("ks", "table", "t_scylla_cdc_log")
    assert text.startswith("/* Do NOT execute this statement! It's only for informational purposes.\n")
    assert text.endswith(";\n*/")
    assert f") WITH ID = {log.id}\nAND CLUSTERING ORDER BY" in text
    # dropped columns: in the column list, then dropped again at their drop time
    assert '    "cdc$deleted_a" boolean,\n    a int,\n    PRIMARY KEY' in text
    when = log.dropped_columns["a"][1]
    assert f"\nALTER TABLE ks.t_scylla_cdc_log DROP a USING TIMESTAMP {when};" in text
    plain = describe(session, "DESC TABLE t_scylla_cdc_log")[0][3]
    assert "ID = " not in plain and "a int" not in plain.replace("cdc$", "")


def test_describe_with_internals_readds_a_column_dropped_earlier(session):
    session.execute("CREATE TABLE t (p int PRIMARY KEY, b int, c int)")
    session.execute("ALTER TABLE t DROP b")
    session.execute("ALTER TABLE t ADD b int")
    [(_, _, _, text)] = describe(session, "DESC TABLE t WITH INTERNALS")
    drop = session.db.catalog.table("ks", "t").dropped_columns["b"][1]
    assert text.index("    b int,") > text.index("    c int,")  # the dropped one, listed after the live columns
    assert text.endswith(f";\n\nALTER TABLE ks.t DROP b USING TIMESTAMP {drop};\nALTER TABLE ks.t ADD b int;")


def test_keyspace_description_restores_log_properties_with_alter(session):
    session.execute("CREATE TABLE t (p int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    session.execute("ALTER TABLE t_scylla_cdc_log WITH comment = 'kept' AND gc_grace_seconds = 11")
    rows_ = describe(session, "DESC KEYSPACE ks")
    assert [(r[1], r[2]) for r in rows_] == [("keyspace", "ks"), ("table", "t"), ("table", "t_scylla_cdc_log")]
    alter = rows_[2][3]
    assert alter.startswith("ALTER TABLE ks.t_scylla_cdc_log WITH bloom_filter_fp_chance = 0.01\n    AND caching = ")
    assert "AND comment = 'kept'" in alter and "AND gc_grace_seconds = 11" in alter and alter.endswith("};\n")
    assert "t_scylla_cdc_log" not in [r.name for r in session.execute("DESC TABLES")]
    # the statements rebuild the table and its log with the log's properties
    session.execute("DROP TABLE t")
    for _, _, _, text in rows_[1:]:
        session.execute(text)
    log = session.db.catalog.table("ks", "t_scylla_cdc_log")
    assert (log.options["comment"], log.options["gc_grace_seconds"]) == ("kept", 11)
    # an ALTER with every property as DESCRIBE prints them changes nothing
    before = describe(session, "DESC KEYSPACE ks")
    session.execute(before[2][3])
    assert describe(session, "DESC KEYSPACE ks") == before


def test_detached_log_is_described_as_a_table(session):
    session.execute("CREATE TABLE t (p int PRIMARY KEY) WITH cdc = {'enabled': true}")
    session.execute("ALTER TABLE t WITH cdc = {'enabled': false}")
    assert [r.name for r in session.execute("DESC TABLES")] == ["t", "t_scylla_cdc_log"]
    text = describe(session, "DESC TABLE t_scylla_cdc_log")[0][3]
    assert text.startswith("CREATE TABLE ks.t_scylla_cdc_log (")
    assert [r[2] for r in describe(session, "DESC TABLE t")] == ["t"]
