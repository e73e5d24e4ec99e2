"""The CDC log where the spec documents are silent: what current ScyllaDB does, case by case.

Sources: ScyllaDB's ``cdc/split.cc`` (the order of delta rows, how an INSERT with collections and
a TTL splits), ``cdc/log.cc`` (CDC option values and their messages), ``cql3/statements/
alter_table_statement.cc``, ``drop_table_statement.cc``, ``select_statement.cc`` and
``modification_statement.cc`` (what a user may do to a log table), and its tests
``test/cql/cdc_batch_delete_postimage_test`` and ``test/cqlpy/test_cdc.py``.  docs/cdc.md lists
each case with the test that pins it.
"""

from __future__ import annotations

import datetime

import pytest

from logtide import auth
from logtide.errors import ConfigurationException, InvalidRequest, Unauthorized

from ..conftest import rows

TABLE = "CREATE TABLE t (pk int, ck int, s int static, v int, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true%s}"
IMAGES = ", 'preimage': true, 'postimage': true"


def ops(session, cols='"cdc$operation", ck'):
    return rows(session.execute(f"SELECT {cols} FROM t_scylla_cdc_log"))


# -- the order of delta rows inside one cdc$time group ------------------------------------------


def test_insert_then_range_delete_in_a_batch_as_scylladb_logs_it(session):
    # test/cql/cdc_batch_delete_postimage_test, first case
    session.execute(TABLE % IMAGES)
    session.execute("BEGIN BATCH INSERT INTO t (pk, ck, v) VALUES (1, 1, 100); "
                    "DELETE FROM t WHERE pk = 1 AND ck >= 1 AND ck <= 2; APPLY BATCH")
    assert ops(session, '"cdc$batch_seq_no", "cdc$operation", pk, ck, v') == [
        (0, 2, 1, 1, 100), (1, 5, 1, 1, None), (2, 7, 1, 2, None)]


def test_insert_then_partition_delete_in_a_batch_as_scylladb_logs_it(session):
    session.execute(TABLE % IMAGES)
    session.execute("BEGIN BATCH INSERT INTO t (pk, ck, v) VALUES (1, 1, 100); DELETE FROM t WHERE pk = 1; APPLY BATCH")
    assert ops(session, '"cdc$batch_seq_no", "cdc$operation", pk, ck, v') == [(0, 2, 1, 1, 100), (1, 4, 1, None, None)]


def test_range_delete_missing_the_inserted_row_keeps_its_postimage(session):
    session.execute(TABLE % IMAGES)
    session.execute("BEGIN BATCH INSERT INTO t (pk, ck, v) VALUES (1, 1, 100); "
                    "DELETE FROM t WHERE pk = 1 AND ck >= 2 AND ck <= 3; APPLY BATCH")
    assert ops(session, '"cdc$batch_seq_no", "cdc$operation", pk, ck, v') == [
        (0, 2, 1, 1, 100), (1, 5, 1, 2, None), (2, 7, 1, 3, None), (3, 9, 1, 1, 100)]


def test_a_split_batch_logs_static_inserts_updates_row_deletes_ranges_then_partition(session):
    session.execute(TABLE % "")
    session.execute("BEGIN UNLOGGED BATCH "
                    "DELETE FROM t WHERE pk = 0 AND ck = 0; "
                    "DELETE FROM t WHERE pk = 0 AND ck > 5; "
                    "UPDATE t SET v = 1 WHERE pk = 0 AND ck = 1; "
                    "INSERT INTO t (pk, ck, v) VALUES (0, 2, 2); "
                    "UPDATE t SET s = 9 WHERE pk = 0; APPLY BATCH")
    assert ops(session) == [(1, None), (2, 2), (1, 1), (3, 0), (6, 5)]


def test_an_unsplit_batch_logs_rows_in_clustering_order(session):
    # one timestamp, no TTL, no static row, no upsert before a deletion: ScyllaDB logs the mutation as it walks it
    session.execute(TABLE % "")
    session.execute("BEGIN UNLOGGED BATCH INSERT INTO t (pk, ck, v) VALUES (0, 3, 3); "
                    "UPDATE t SET v = 2 WHERE pk = 0 AND ck = 2; DELETE FROM t WHERE pk = 0 AND ck = 1; APPLY BATCH")
    assert ops(session) == [(3, 1), (1, 2), (2, 3)]


def test_an_upsert_before_a_row_delete_splits_and_puts_the_delete_last(session):
    session.execute(TABLE % "")
    session.execute("BEGIN UNLOGGED BATCH DELETE FROM t WHERE pk = 0 AND ck = 2; "
                    "INSERT INTO t (pk, ck, v) VALUES (0, 1, 1); APPLY BATCH")
    assert ops(session) == [(2, 1), (3, 2)]


def test_row_delete_and_update_of_one_row_log_the_update_first(session):
    session.execute(TABLE % ", 'postimage': true")
    session.execute("BEGIN UNLOGGED BATCH DELETE FROM t USING TIMESTAMP 10 WHERE pk = 0 AND ck = 0; "
                    "UPDATE t USING TIMESTAMP 10 SET v = 1 WHERE pk = 0 AND ck = 0; APPLY BATCH")
    assert ops(session) == [(1, 0), (3, 0)]  # and no postimage: the row is deleted


# -- row marker, collections and a TTL in one statement --------------------------------------------


MAPS = "CREATE TABLE t (pk int, ck int, v int, b map<int, int>, c map<int, int>, PRIMARY KEY (pk, ck)) " \
       "WITH cdc = {'enabled': true}"
COLS = '"cdc$operation", "cdc$ttl", v, b, "cdc$deleted_b", c, "cdc$deleted_c"'


def test_insert_with_collections_and_ttl_is_insert_tombstones_then_cells(session):
    # split.cc: "this should create 3 delta rows": the marker (TTL 5), the tombstones (no TTL), the cells (TTL 5)
    session.execute(MAPS)
    session.execute("INSERT INTO t (pk, ck, v, b, c) VALUES (0, 0, 1, {1: 1}, {2: 2}) USING TTL 5")
    assert ops(session, COLS) == [
        (2, 5, 1, None, None, None, None),
        (1, None, None, None, True, None, True),
        (1, 5, None, {1: 1}, None, {2: 2}, None),
    ]


def test_insert_with_collections_without_ttl_is_one_row(session):
    session.execute(MAPS)
    session.execute("INSERT INTO t (pk, ck, v, b) VALUES (0, 0, 1, {1: 1})")
    assert ops(session, COLS) == [(2, None, 1, {1: 1}, True, None, None)]


def test_row_marker_with_collection_cells_but_no_tombstone_splits_off_an_update(session):
    session.execute(MAPS)
    session.execute("BEGIN UNLOGGED BATCH INSERT INTO t (pk, ck, v) VALUES (0, 0, 1); "
                    "UPDATE t SET b = b + {3: 3} WHERE pk = 0 AND ck = 0; APPLY BATCH")
    assert ops(session, COLS) == [(2, None, 1, None, None, None, None), (1, None, None, {3: 3}, None, None, None)]


def test_insert_with_ttl_on_atomic_columns_only_is_one_row(session):
    session.execute(MAPS)
    session.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 1) USING TTL 7")
    assert ops(session, COLS) == [(2, 7, 1, None, None, None, None)]


# -- CDC option values -------------------------------------------------------------------------


@pytest.mark.parametrize("given, stored", [
    ("{'enabled': 'TRUE'}", "{'delta': 'full', 'enabled': 'true', 'postimage': 'false', 'preimage': 'false', 'ttl': '86400'}"),
    ("{'enabled': 1, 'preimage': 'FULL', 'postimage': '1'}",
     "{'delta': 'full', 'enabled': 'true', 'postimage': 'true', 'preimage': 'full', 'ttl': '86400'}"),
    ("{'Enabled': 'true', 'DELTA': 'Keys', 'ttl': ' 60s'}",
     "{'delta': 'keys', 'enabled': 'true', 'postimage': 'false', 'preimage': 'false', 'ttl': '60'}"),
    ("{'enabled': false, 'preimage': 0}",
     "{'delta': 'full', 'enabled': 'false', 'postimage': 'false', 'preimage': 'false', 'ttl': '86400'}"),
])
def test_option_spellings_scylladb_accepts_are_stored_canonically(session, given, stored):
    session.execute(f"CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {given}")
    described = session.execute("DESCRIBE TABLE t").one().create_statement
    assert f"cdc = {stored}" in described


@pytest.mark.parametrize("given, message", [
    ("{'enabled': 'yes'}", 'Invalid value for CDC option "enabled": yes'),
    ("{'enabled': true, 'preimage': 'on'}", 'Invalid value for CDC option "preimage": on'),
    ("{'enabled': true, 'postimage': 'full'}", 'Invalid value for CDC option "postimage": full'),
    ("{'enabled': true, 'delta': 'none'}", 'Invalid value for CDC option "delta": none'),
    ("{'enabled': true, 'ttl': 'forever'}", 'Invalid value for CDC option "ttl": forever'),
    ("{'enabled': true, 'ttl': '-1'}", "Invalid CDC option: ttl must be >= 0"),
    ("{'enabled': true, 'ttl': '2147483648'}", "Invalid CDC option: ttl too large"),
    ("{'enabled': true, 'Nope': 1}", "Invalid CDC option: Nope"),
])
def test_option_refusals_use_scylladb_wording(session, given, message):
    with pytest.raises(ConfigurationException) as e:
        session.execute(f"CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {given}")
    assert str(e.value) == message
    assert session.db.catalog.find_table("ks", "t") is None


def test_altering_cdc_options_requires_the_enabled_flag(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    with pytest.raises(InvalidRequest, match='^Altering CDC options requires specifying "enabled" flag$'):
        session.execute("ALTER TABLE t WITH cdc = {'preimage': true}")
    session.execute("ALTER TABLE t WITH cdc = {'enabled': true, 'preimage': true}")


# -- base column names that collide with log columns ----------------------------------------------


@pytest.mark.parametrize("column", ['"cdc$operation"', '"cdc$time"', '"cdc$deleted_v"', '"cdc$end_of_batch"'])
def test_a_base_column_named_like_a_log_column_is_refused(session, column):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int, m map<int, int>) WITH cdc = {'enabled': true}")
    name = column.strip('"')
    with pytest.raises(InvalidRequest, match=f"^Invalid column name {name.replace('$', '[$]')} because it conflicts "
                                             "with a column of the CDC log table ks.t_scylla_cdc_log$"):
        session.execute(f"ALTER TABLE t ADD {column} int")
    assert session.db.catalog.find_table("ks", "t").column(name) is None
    session.execute("INSERT INTO t (pk, v) VALUES (1, 1)")
    assert len(session.execute("SELECT * FROM t_scylla_cdc_log").all()) == 1  # the log still reads


def test_enabling_cdc_on_a_table_with_a_colliding_column_is_refused(session):
    session.execute('CREATE TABLE t (pk int PRIMARY KEY, "cdc$ttl" int)')
    with pytest.raises(InvalidRequest, match="conflicts with a column of the CDC log table ks.t_scylla_cdc_log"):
        session.execute("ALTER TABLE t WITH cdc = {'enabled': true}")
    assert session.db.catalog.find_table("ks", "t_scylla_cdc_log") is None
    with pytest.raises(InvalidRequest, match="conflicts with a column of the CDC log table"):
        session.execute('CREATE TABLE u (pk int PRIMARY KEY, m map<int, int>, "cdc$deleted_elements_m" int) '
                        "WITH cdc = {'enabled': true}")


# -- what a user may do to a log table -------------------------------------------------------------


def test_dropping_an_attached_log_is_unauthorized_and_a_detached_one_drops(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    with pytest.raises(Unauthorized, match="^Cannot DROP cdc log table t_scylla_cdc_log$"):
        session.execute("DROP TABLE t_scylla_cdc_log")
    session.execute("ALTER TABLE t WITH cdc = {'enabled': false}")
    session.execute("DROP TABLE t_scylla_cdc_log")
    assert session.db.catalog.find_table("ks", "t_scylla_cdc_log") is None


def test_a_manually_created_table_with_a_log_name_drops(session):
    # test/cql/cdc_allow_dropping_manually_created_log_test
    session.execute("CREATE TABLE test_scylla_cdc_log (pk int PRIMARY KEY)")
    session.execute("DROP TABLE test_scylla_cdc_log")


def test_log_properties_may_change_writes_and_truncate_are_allowed(session):
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    session.execute("ALTER TABLE t_scylla_cdc_log WITH comment = 'mine'")
    session.execute('INSERT INTO t_scylla_cdc_log ("cdc$stream_id", "cdc$time", "cdc$batch_seq_no", v) '
                    "VALUES (0x01, now(), 0, 1)")
    session.execute("TRUNCATE t_scylla_cdc_log")
    assert session.execute("SELECT * FROM t_scylla_cdc_log").all() == []


@pytest.fixture
def roles(db, session):
    auth.attach(db, True, "admin", "secret")
    session.execute("CREATE TABLE t (pk int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    session.execute("CREATE ROLE writer WITH PASSWORD = 'w' AND LOGIN = true")
    session.execute("GRANT MODIFY ON ks.t TO writer")
    session.execute("GRANT SELECT ON ks.t TO writer")
    return db.session("ks", user="writer")


LOG_INSERT = 'INSERT INTO t_scylla_cdc_log ("cdc$stream_id", "cdc$time", "cdc$batch_seq_no", v) VALUES (0x01, now(), 0, 1)'


def test_a_grant_on_the_base_table_reads_the_log_but_does_not_write_it(roles, session):
    roles.execute("INSERT INTO t (pk, v) VALUES (1, 1)")
    assert len(roles.execute("SELECT * FROM t_scylla_cdc_log").all()) == 1
    for q, perm in ((LOG_INSERT, "MODIFY"), ("TRUNCATE t_scylla_cdc_log", "MODIFY"),
                    ("ALTER TABLE t_scylla_cdc_log WITH comment = 'x'", "ALTER"),
                    ("DROP TABLE t_scylla_cdc_log", "DROP")):
        with pytest.raises(Unauthorized, match=f"^User writer has no {perm} permission on "
                                               "<table ks.t_scylla_cdc_log> or any of its parents$"):
            roles.execute(q)
    session.execute("GRANT MODIFY ON ks.t_scylla_cdc_log TO writer")
    roles.execute(LOG_INSERT)


def test_drop_of_a_log_checks_the_drop_permission_before_refusing(roles, session):
    session.execute("GRANT DROP ON ks.t_scylla_cdc_log TO writer")
    with pytest.raises(Unauthorized, match="^Cannot DROP cdc log table t_scylla_cdc_log$"):
        roles.execute("DROP TABLE t_scylla_cdc_log")


# -- generations as consumers poll them -----------------------------------------------------------


def test_a_new_generation_is_visible_to_time_queries_before_it_starts(tmp_path, clock):
    import logtide
    from logtide.cdc.streams import Topology

    with logtide.open(tmp_path / "d", clock=clock, topology=Topology(vnodes=2, shards=1)) as db:
        first = rows(db.session().execute("SELECT time FROM system_distributed.cdc_generation_timestamps"))
    with logtide.open(tmp_path / "d", clock=clock, topology=Topology(vnodes=3, shards=1)) as db:
        s = db.session()
        q = "SELECT min(time) FROM system_distributed.cdc_generation_timestamps WHERE key = 'timestamps' AND time > ?"
        nxt = s.execute(q, [first[0][0]]).one()[0]
        start = db.generations.current.timestamp
        assert start % 1000 == 0 and start > clock.micros  # on a whole millisecond, ahead of now
        assert nxt == datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=start)
        tokens = s.execute("SELECT tokens FROM system.local").one()[0]
        assert set(tokens) == {str(e) for e in db.generations.current.range_ends} and len(tokens) == 3


def test_a_detached_log_keeps_refusing_column_changes_with_scylladb_messages(session):
    # test/cqlpy/test_cdc.py: test_alter_column_of_inactive_cdc_log_table, test_rename_column_of_inactive_cdc_log_table
    session.execute("CREATE TABLE t (p int PRIMARY KEY, v int, u int) WITH cdc = {'enabled': true}")
    session.execute("INSERT INTO t (p, v, u) VALUES (1, 2, 3)")
    session.execute("ALTER TABLE t WITH cdc = {'enabled': false}")
    columns = ("You cannot modify the set of columns of a CDC log table directly. Although the base table has "
               "deactivated CDC, this table will continue being a CDC log table until it is dropped. If you want to "
               "modify the columns in it, you can only do that by reenabling CDC on the base table, which will "
               "reattach this log table. Then you will be able to modify the columns in the base table, and that "
               "will have effect on the log table too. Modifying the columns of a CDC log table directly is never "
               "allowed.")
    for q in ("ADD c int", "DROP u", 'DROP "cdc$stream_id"', "ALTER u TYPE float"):
        with pytest.raises(InvalidRequest) as e:
            session.execute(f"ALTER TABLE t_scylla_cdc_log {q}")
        assert str(e.value) == columns
    with pytest.raises(InvalidRequest) as e:
        session.execute('ALTER TABLE t_scylla_cdc_log RENAME "cdc$stream_id" TO c')
    assert str(e.value) == ("You cannot rename a column of a CDC log table. Although the base table has deactivated "
                            "CDC, this table will continue being a CDC log table until it is dropped.")


def test_a_table_merely_named_like_a_log_is_a_plain_table(session):
    # test/cqlpy/test_cdc.py: test_alter_column_of_fake_cdc_log_table, test_rename_column_of_fake_cdc_log_table
    session.execute("CREATE TABLE x_scylla_cdc_log (p int PRIMARY KEY, v int)")
    session.execute("ALTER TABLE x_scylla_cdc_log DROP v")
    session.execute("ALTER TABLE x_scylla_cdc_log RENAME p TO q")
