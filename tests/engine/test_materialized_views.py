"""Materialized views in the engine: CREATE's rules with ScyllaDB's messages, the view rows kept in the base
write's transaction (key changes, deletions, TTLs, filters), reads of a view, and the DDL rules around it."""

from __future__ import annotations

import random
import time

import pytest

from logtide.errors import AlreadyExists, ConfigurationException, InvalidRequest, SyntaxException

from ..conftest import rows


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (p int, c int, v text, w int, PRIMARY KEY (p, c))")
    return session


def mv(session, select="*", key="(v), p, c", where="v IS NOT NULL AND p IS NOT NULL AND c IS NOT NULL",
       name="mv", base="t", extra=""):
    session.execute(f"CREATE MATERIALIZED VIEW {name} AS SELECT {select} FROM {base} WHERE {where} "
                    f"PRIMARY KEY ({key}) {extra}")


def refused(session, statement, message, kind=InvalidRequest):
    with pytest.raises(kind) as e:
        session.execute(statement)
    assert str(e.value) == message


# ---------------------------------------------------------------- CREATE's rules


def test_a_view_needs_every_base_key_column_in_its_key(t):
    refused(t, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE v IS NOT NULL AND p IS NOT NULL "
               "PRIMARY KEY (v, p)",
            "Cannot create Materialized View mv without primary key columns from base t (c)")


def test_a_view_key_has_at_most_one_non_key_base_column(t):
    refused(t, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE v IS NOT NULL AND w IS NOT NULL AND "
               "p IS NOT NULL AND c IS NOT NULL PRIMARY KEY (v, w, p, c)",
            "Cannot include more than one non-primary key column 'w' in materialized view primary key")


def test_each_view_key_column_must_be_filtered_by_is_not_null(t):
    refused(t, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE p IS NOT NULL AND c IS NOT NULL "
               "PRIMARY KEY (v, p, c)",
            "Primary key column 'v' is required to be filtered by 'IS NOT NULL'")


def test_a_lone_partition_key_column_needs_no_is_not_null(session):
    session.execute("CREATE TABLE s (p int PRIMARY KEY, v int)")
    mv(session, key="v, p", where="v IS NOT NULL", base="s")
    session.execute("INSERT INTO s (p, v) VALUES (1, 2)")
    assert rows(session.execute("SELECT * FROM mv")) == [(2, 1)]


def test_views_are_refused_on_counter_tables_views_and_cdc_logs(session):
    session.execute("CREATE TABLE k (p int PRIMARY KEY, n counter)")
    refused(session, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM k PRIMARY KEY (p)",
            "Materialized views are not supported on counter tables")
    session.execute("CREATE TABLE b (p int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    mv(session, key="v, p", where="v IS NOT NULL", base="b")
    refused(session, "CREATE MATERIALIZED VIEW mv2 AS SELECT * FROM mv WHERE v IS NOT NULL PRIMARY KEY (v, p)",
            "Materialized views cannot be created against other materialized views")
    refused(session, "CREATE MATERIALIZED VIEW mv3 AS SELECT * FROM b_scylla_cdc_log PRIMARY KEY (\"cdc$stream_id\")",
            "Materialized views cannot be created on CDC Log tables")


def test_a_view_cannot_have_a_secondary_index_of_its_own(session):
    """ScyllaDB refuses it; here the view's rows are written by its maintenance, which keeps no index entries."""
    session.execute("CREATE TABLE b (p int PRIMARY KEY, v int, w int)")
    mv(session, key="v, p", where="v IS NOT NULL", base="b")
    refused(session, "CREATE INDEX ON mv (w)", "Secondary indexes are not supported on materialized views")
    session.execute("CREATE INDEX ON b (w)")  # the base table may have one beside its view
    session.execute("INSERT INTO b (p, v, w) VALUES (1, 2, 3)")
    assert rows(session.execute("SELECT p, v FROM b WHERE w = 3")) == [(1, 2)]
    assert rows(session.execute("SELECT p, w FROM mv WHERE v = 2")) == [(1, 3)]


def test_static_columns_cannot_be_in_a_view(session):
    session.execute("CREATE TABLE s (p int, c int, s int STATIC, v int, PRIMARY KEY (p, c))")
    refused(session, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM s WHERE c IS NOT NULL PRIMARY KEY (p, c)",
            "Unable to include static column 's' which would be included by Materialized View SELECT * statement")
    refused(session, "CREATE MATERIALIZED VIEW mv AS SELECT p, c FROM s WHERE s IS NOT NULL AND c IS NOT NULL "
                     "PRIMARY KEY (s, p, c)",
            "Cannot use Static column 's' in PRIMARY KEY of materialized view")
    mv(session, select="p, c, v", key="p, c", where="c IS NOT NULL", base="s")  # not selecting it is fine


def test_view_key_columns_cannot_be_collections_or_durations(session):
    session.execute("CREATE TABLE s (p int PRIMARY KEY, l list<int>, d duration)")
    refused(session, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM s WHERE l IS NOT NULL PRIMARY KEY (l, p)",
            "Cannot use MultiCell column 'l' in PRIMARY KEY of materialized view")
    refused(session, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM s WHERE d IS NOT NULL PRIMARY KEY (d, p)",
            "Cannot use Duration column 'd' in PRIMARY KEY of materialized view")


def test_select_clause_and_where_clause_checks(t):
    refused(t, "CREATE MATERIALIZED VIEW mv AS SELECT v AS x FROM t WHERE v IS NOT NULL AND c IS NOT NULL "
               "AND p IS NOT NULL PRIMARY KEY (v, p, c)", "Cannot use alias when defining a materialized view")
    refused(t, "CREATE MATERIALIZED VIEW mv AS SELECT nope FROM t WHERE v IS NOT NULL AND c IS NOT NULL "
               "AND p IS NOT NULL PRIMARY KEY (v, p, c)",
            "Unknown column name detected in CREATE MATERIALIZED VIEW statement: nope")
    refused(t, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE w = 3 AND c IS NOT NULL AND p IS NOT NULL "
               "PRIMARY KEY (p, c)",
            "Non-primary key columns cannot be restricted in the SELECT statement used for materialized view mv "
            "creation (got restrictions on: w)")
    refused(t, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE w IS NOT NULL AND c IS NOT NULL "
               "AND p IS NOT NULL PRIMARY KEY (p, c)",
            "The IS NOT NULL restriction is allowed only columns which are part of the view's primary key, found "
            "columns: w. The flag strict_is_not_null_in_views can be used to turn this error into a warning, or to "
            "silence it. (true - error, warn - warning, false - silent)")
    refused(t, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE p IS NOT 3 PRIMARY KEY (p, c)",
            "line 1:62 mismatched input '3' expecting K_NULL (...mv AS SELECT * FROM t WHERE p IS NOT [3]...)",
            SyntaxException)
    refused(t, "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE c IS NOT NULL AND p IS NOT NULL "
               "PRIMARY KEY (p, c) WITH CLUSTERING ORDER BY (w DESC)",
            "CLUSTERING ORDER BY lists w which is not a clustering column in the view")


def test_view_names_and_keyspaces(t):
    refused(t, "CREATE MATERIALIZED VIEW other.mv AS SELECT * FROM ks.t PRIMARY KEY (p, c)",
            "Cannot create a materialized view on a table in a separate keyspace ('ks' != 'other')")
    refused(t, f"CREATE MATERIALIZED VIEW {'x' * 193} AS SELECT * FROM t WHERE c IS NOT NULL AND p IS NOT NULL "
               "PRIMARY KEY (p, c)",
            f'materialized view names shouldn\'t be more than 192 characters long (got "{"x" * 193}")')
    mv(t)
    with pytest.raises(AlreadyExists):
        mv(t)
    t.execute(
        "CREATE MATERIALIZED VIEW IF NOT EXISTS mv AS SELECT * FROM t WHERE v IS NOT NULL AND p IS NOT NULL "
        "AND c IS NOT NULL PRIMARY KEY (v, p, c)")


def test_view_properties_refuse_cdc_and_default_ttl(t):
    where = "c IS NOT NULL AND p IS NOT NULL"
    refused(t, f"CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE {where} PRIMARY KEY (c, p) "
               "WITH cdc = {'enabled': true}", "Cannot enable CDC for a materialized view")
    refused(t, f"CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE {where} PRIMARY KEY (c, p) "
               "WITH default_time_to_live = 10",
            "Cannot set or alter default_time_to_live for a materialized view. Data in a materialized view always "
            "expire at the same time than the corresponding data in the parent table.")
    refused(t, f"CREATE MATERIALIZED VIEW mv AS SELECT * FROM t WHERE p = ? AND {where} PRIMARY KEY (c, p)",
            "Cannot use query parameters in CREATE MATERIALIZED VIEW statements")


# ---------------------------------------------------------------- maintenance


def test_view_rows_follow_inserts_updates_and_deletes(t):
    mv(t)
    t.execute("INSERT INTO t (p, c, v, w) VALUES (1, 1, 'a', 10)")
    t.execute("INSERT INTO t (p, c, v, w) VALUES (1, 2, 'b', 20)")
    t.execute("UPDATE t SET v = 'c', w = 30 WHERE p = 2 AND c = 1")  # a row that lives by its cells only
    assert rows(t.execute("SELECT * FROM mv")) == [("a", 1, 1, 10), ("c", 2, 1, 30), ("b", 1, 2, 20)]
    t.execute("UPDATE t SET v = 'z' WHERE p = 1 AND c = 1")  # the view key changes: old row gone, new one there
    assert rows(t.execute("SELECT * FROM mv WHERE v = 'a'")) == []
    assert rows(t.execute("SELECT * FROM mv WHERE v = 'z'")) == [("z", 1, 1, 10)]
    t.execute("UPDATE t SET v = null WHERE p = 1 AND c = 2")  # a null view key: no view row
    assert rows(t.execute("SELECT v FROM mv")) == [("z",), ("c",)]
    t.execute("DELETE FROM t WHERE p = 1")  # a partition deletion removes its rows' view rows
    assert rows(t.execute("SELECT * FROM mv")) == [("c", 2, 1, 30)]
    t.execute("DELETE FROM t WHERE p = 2 AND c >= 0")  # a range deletion too
    assert rows(t.execute("SELECT * FROM mv")) == []


def test_a_view_key_changed_back_and_forth_keeps_one_view_row(t):
    mv(t)
    for value in ["a", "b", "a", "c", "a"]:
        t.execute(f"UPDATE t SET v = '{value}' WHERE p = 1 AND c = 1")
    assert rows(t.execute("SELECT v, p, c FROM mv")) == [("a", 1, 1)]


def test_an_older_write_to_the_view_key_does_not_move_the_view_row(t):
    mv(t)
    t.execute("UPDATE t USING TIMESTAMP 100 SET v = 'new' WHERE p = 1 AND c = 1")
    t.execute("UPDATE t USING TIMESTAMP 50 SET v = 'old' WHERE p = 1 AND c = 1")
    assert rows(t.execute("SELECT v FROM mv")) == [("new",)]


def test_view_cells_keep_the_base_write_times_and_ttls(t, clock):
    mv(t)
    t.execute("INSERT INTO t (p, c, v, w) VALUES (1, 1, 'a', 10) USING TIMESTAMP 1234")
    t.execute("UPDATE t USING TTL 100 SET w = 11 WHERE p = 1 AND c = 1")
    got = rows(t.execute("SELECT writetime(v), ttl(v), ttl(w) FROM t"))
    assert got == [(1234, None, 100)]
    assert rows(t.execute("SELECT ttl(w) FROM mv")) == [(100,)]


def test_a_ttl_on_the_view_key_column_expires_the_view_row(t, clock):
    mv(t)
    t.execute("INSERT INTO t (p, c, w) VALUES (1, 1, 10)")
    t.execute("UPDATE t USING TTL 5 SET v = 'a' WHERE p = 1 AND c = 1")
    assert rows(t.execute("SELECT * FROM mv")) == [("a", 1, 1, 10)]
    clock.advance(seconds=5)
    assert rows(t.execute("SELECT * FROM mv")) == []
    assert rows(t.execute("SELECT * FROM t")) == [(1, 1, None, 10)]


def test_a_base_row_that_expires_takes_its_view_row_with_it(session, clock):
    session.execute("CREATE TABLE s (p int, c int, v int, PRIMARY KEY (p, c))")
    mv(session, select="p, c", key="c, p", where="c IS NOT NULL AND p IS NOT NULL", base="s")
    session.execute("INSERT INTO s (p, c, v) VALUES (1, 1, 1) USING TTL 10")
    session.execute("UPDATE s USING TTL 20 SET v = 2 WHERE p = 1 AND c = 1")  # keeps the base row alive longer
    clock.advance(seconds=10)
    assert rows(session.execute("SELECT * FROM s")) == [(1, 1, 2)]
    assert rows(session.execute("SELECT * FROM mv")) == [(1, 1)]  # unselected v keeps the view row alive
    clock.advance(seconds=10)
    assert rows(session.execute("SELECT * FROM mv")) == []


def test_a_where_clause_filters_base_rows(t):
    mv(t, key="c, p", where="c IS NOT NULL AND p IS NOT NULL AND c > 1 AND p IN (1, 3)")
    for p in range(4):
        for c in range(4):
            t.execute(f"INSERT INTO t (p, c) VALUES ({p}, {c})")
    assert sorted(rows(t.execute("SELECT c, p FROM mv"))) == [(2, 1), (2, 3), (3, 1), (3, 3)]


@pytest.fixture
def wide(session):
    session.execute("CREATE TABLE wide (p int, c1 int, c2 int, v text, PRIMARY KEY (p, c1, c2))")
    return session


def fill_wide(session, n=4):
    for p in range(n):
        for c1 in range(n):
            for c2 in range(n):
                session.execute(f"INSERT INTO wide (p, c1, c2, v) VALUES ({p}, {c1}, {c2}, 'x')")


def keys_of(session, query):
    return sorted((r.p, r.c1, r.c2) for r in session.execute(query))


def test_a_multi_column_restriction_on_clustering_columns_filters_the_view_as_a_select_does(wide):
    mv(wide, base="wide", key="(c1), c2, p", where="p IS NOT NULL AND (c1, c2) > (1, 2)")
    mv(wide, base="wide", name="pairs", key="p, c1, c2", where="(c1, c2) IN ((0, 1), (3, 3)) AND p IS NOT NULL")
    fill_wide(wide)
    assert keys_of(wide, "SELECT * FROM mv") == keys_of(wide, "SELECT * FROM wide WHERE (c1, c2) > (1, 2) ALLOW FILTERING")
    assert keys_of(wide, "SELECT * FROM pairs") == [(p, c1, c2) for p in range(4) for c1, c2 in ((0, 1), (3, 3))]
    wide.execute("DELETE FROM wide WHERE p = 1 AND c1 = 3")
    assert (1, 3, 3) not in keys_of(wide, "SELECT * FROM pairs")
    assert keys_of(wide, "SELECT * FROM mv") == keys_of(wide, "SELECT * FROM wide WHERE (c1, c2) > (1, 2) ALLOW FILTERING")


def test_a_token_restriction_filters_the_view_by_the_base_partition_token(wide):
    from cassandra.murmur3 import murmur3

    tokens = sorted(murmur3(p.to_bytes(4, "big")) for p in range(6))
    where = f"token(p) > {tokens[1]} AND token(p) <= {tokens[4]}"
    mv(wide, base="wide", key="p, c1, c2", where=f"{where} AND c1 IS NOT NULL AND c2 IS NOT NULL")
    fill_wide(wide, 6)
    expected = keys_of(wide, f"SELECT * FROM wide WHERE {where}")
    assert len(expected) == 3 * 36  # the partitions of the 3rd, 4th and 5th tokens
    assert keys_of(wide, "SELECT * FROM mv") == expected


def test_multi_column_and_token_restrictions_apply_when_a_view_is_built_over_existing_rows(wide, db):
    fill_wide(wide)
    mv(wide, base="wide", key="(c1), c2, p", where="token(p) < 0 AND (c1, c2) <= (2, 1)")
    wait_built(db)
    assert keys_of(wide, "SELECT * FROM mv") == keys_of(
        wide, "SELECT * FROM wide WHERE token(p) < 0 AND (c1, c2) <= (2, 1) ALLOW FILTERING")


def test_multi_column_and_token_relations_of_a_view_are_refused_as_its_select_refuses_them(wide):
    def view(where):
        return f"CREATE MATERIALIZED VIEW mv AS SELECT * FROM wide WHERE {where} PRIMARY KEY (p, c1, c2)"

    refused(wide, view("p IS NOT NULL AND c1 IS NOT NULL AND (c1, v) = (1, 'a')"),
            "Multi-column relations can only be applied to clustering columns but was applied to: v")
    refused(wide, view("p IS NOT NULL AND (c1, nope) > (1, 2)"), "Undefined column name nope in table ks.wide")
    refused(wide, view("p IS NOT NULL AND (c2, c1) > (1, 2)"),
            "Clustering columns may not be skipped in multi-column relations. They should appear in the PRIMARY KEY "
            "order")
    refused(wide, view("p IS NOT NULL AND (c1, c2) = (1, 2, 3)"),
            "Expected 2 elements in value tuple, but got 3: (1, 2, 3)")
    refused(wide, view("p IS NOT NULL AND (c1, c2) != (1, 2)"), 'Unsupported "!=" relation: (c1, c2) != (1, 2)')
    refused(wide, view("token(c1) > 0 AND c1 IS NOT NULL AND c2 IS NOT NULL"),
            "The token function arguments must be in the partition key order: p")
    refused(wide, view("token(p) > 0 AND p = 1 AND c1 IS NOT NULL AND c2 IS NOT NULL"),
            'Columns "p" cannot be restricted by both a normal relation and a token relation')
    assert wide.db.catalog.find_table("ks", "mv") is None


def test_multi_column_and_token_relations_are_stored_in_the_where_clause_as_scylla_renders_them(wide):
    mv(wide, base="wide", key="(c1), c2, p", where="token(p)>=-5 AND (c1,c2) IN ((1,2),(3,4)) AND p IS NOT NULL")
    assert rows(wide.execute("SELECT where_clause FROM system_schema.views")) == [
        ("token(p) >= -5 AND (c1, c2) IN ((1, 2), (3, 4)) AND p IS NOT null",)]


def test_renaming_key_columns_rewrites_the_where_clause_keeping_strings_and_quoted_names(session):
    session.execute('CREATE TABLE r (p int, "Ck" int, v text, PRIMARY KEY (p, "Ck"))')
    mv(session, base="r", key='(v), p, "Ck"',
       where="v IS NOT NULL AND p IS NOT NULL AND \"Ck\" IS NOT NULL AND v IN ('x AND p', 'it''s AND \"Ck\"') "
             'AND ("Ck") >= (0)')
    session.execute('ALTER TABLE r RENAME p TO "New p" AND "Ck" TO ck')
    assert rows(session.execute("SELECT where_clause FROM system_schema.views")) == [
        ("v IS NOT null AND \"New p\" IS NOT null AND ck IS NOT null AND v IN ('x AND p', 'it''s AND \"Ck\"') "
         "AND (ck) >= (0)",)]
    session.execute("INSERT INTO r (\"New p\", ck, v) VALUES (1, 1, 'x AND p')")
    session.execute("INSERT INTO r (\"New p\", ck, v) VALUES (2, 1, 'it''s AND \"Ck\"')")
    session.execute("INSERT INTO r (\"New p\", ck, v) VALUES (3, 1, 'other')")
    assert sorted(rows(session.execute('SELECT "New p", ck FROM mv'))) == [(1, 1), (2, 1)]


def test_a_filter_on_the_non_key_view_column_moves_rows_in_and_out(t):
    mv(t, where="v IS NOT NULL AND p IS NOT NULL AND c IS NOT NULL AND v = 'yes'")
    t.execute("INSERT INTO t (p, c, v) VALUES (1, 1, 'yes')")
    assert rows(t.execute("SELECT v, p FROM mv")) == [("yes", 1)]
    t.execute("UPDATE t SET v = 'no' WHERE p = 1 AND c = 1")
    assert rows(t.execute("SELECT v, p FROM mv")) == []


def test_a_batch_over_several_partitions_updates_the_view_once_per_row(t):
    mv(t)
    t.execute("BEGIN BATCH INSERT INTO t (p, c, v) VALUES (1, 1, 'a'); UPDATE t SET v = 'b' WHERE p = 1 AND c = 1; "
              "INSERT INTO t (p, c, v) VALUES (2, 1, 'a') APPLY BATCH")
    assert rows(t.execute("SELECT v, p, c FROM mv")) == [("a", 2, 1), ("b", 1, 1)]


def test_collections_are_copied_into_the_view(session):
    session.execute("CREATE TABLE s (p int PRIMARY KEY, k int, m map<int, text>)")
    mv(session, key="k, p", where="k IS NOT NULL", base="s")
    session.execute("INSERT INTO s (p, k, m) VALUES (1, 2, {1: 'a'})")
    session.execute("UPDATE s SET m = m + {2: 'b'} WHERE p = 1")
    assert rows(session.execute("SELECT * FROM mv")) == [(2, 1, {1: "a", 2: "b"})]


def wait_built(db) -> None:
    """Until the background builds of the database's views are over (30 s at most)."""
    deadline = time.monotonic() + 30
    while db.view_builds.progress() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not db.view_builds.progress()


def test_creating_a_view_over_existing_rows_builds_it(t, db):
    for i in range(20):
        t.execute(f"INSERT INTO t (p, c, v, w) VALUES ({i}, {i}, 'v{i % 3}', {i})")
    mv(t, extra="WITH CLUSTERING ORDER BY (p DESC)")
    wait_built(db)
    assert rows(t.execute("SELECT p FROM mv WHERE v = 'v0'")) == [(18,), (15,), (12,), (9,), (6,), (3,), (0,)]
    assert len(rows(t.execute("SELECT * FROM mv"))) == 20


def test_reading_a_view_pages_and_orders_by_its_key(t):
    mv(t, extra="WITH CLUSTERING ORDER BY (p DESC)")
    for i in range(10):
        t.execute(f"INSERT INTO t (p, c, v) VALUES ({i}, 0, 'same')")
    assert [r[0] for r in rows(t.execute("SELECT p FROM mv WHERE v = 'same'"))] == list(range(9, -1, -1))
    assert [r[0] for r in rows(t.execute("SELECT p FROM mv WHERE v = 'same' ORDER BY p ASC LIMIT 3"))] == [0, 1, 2]


def test_view_rows_equal_their_derivation_after_random_writes(t, clock):
    """A model check: after many random writes (inserts, updates with TTLs, deletions of cells, rows, ranges and
    partitions) the view holds exactly the base rows it should, re-keyed."""
    mv(t)
    rnd = random.Random(26)
    for _ in range(300):
        p, c = rnd.randrange(4), rnd.randrange(4)
        v = rnd.choice(["'a'", "'b'", "'c'", "null"])
        kind = rnd.randrange(7)
        if kind == 0:
            t.execute(f"INSERT INTO t (p, c, v, w) VALUES ({p}, {c}, {v}, {rnd.randrange(9)})")
        elif kind == 1:
            t.execute(f"UPDATE t USING TTL {rnd.randrange(1, 4)} SET v = {v} WHERE p = {p} AND c = {c}")
        elif kind == 2:
            t.execute(f"UPDATE t SET w = {rnd.randrange(9)} WHERE p = {p} AND c = {c}")
        elif kind == 3:
            t.execute(f"DELETE v FROM t WHERE p = {p} AND c = {c}")
        elif kind == 4:
            t.execute(f"DELETE FROM t WHERE p = {p} AND c = {c}")
        elif kind == 5:
            t.execute(f"DELETE FROM t WHERE p = {p} AND c > {c}")
        else:
            clock.advance(seconds=1)
        expected = sorted((r[2], r[0], r[1], r[3]) for r in rows(t.execute("SELECT p, c, v, w FROM t"))
                          if r[2] is not None)
        assert sorted(rows(t.execute("SELECT v, p, c, w FROM mv"))) == expected


# ---------------------------------------------------------------- DDL around views


def test_writes_to_a_view_are_refused(t):
    mv(t)
    refused(t, "INSERT INTO mv (v, p, c) VALUES ('a', 1, 1)", "Cannot directly modify a materialized view")
    refused(t, "UPDATE mv SET w = 1 WHERE v = 'a' AND p = 1 AND c = 1", "Cannot directly modify a materialized view")
    refused(t, "DELETE FROM mv WHERE v = 'a'", "Cannot directly modify a materialized view")
    refused(t, "TRUNCATE mv", "Cannot TRUNCATE materialized view directly; must truncate base table instead")


def test_a_base_table_with_views_cannot_be_dropped(t):
    mv(t)
    mv(t, name="mv2", key="c, p", where="c IS NOT NULL AND p IS NOT NULL")
    refused(t, "DROP TABLE t", "Cannot drop table when materialized views still depend on it (ks.{mv, mv2})")
    refused(t, "DROP TABLE mv", "Cannot use DROP TABLE on Materialized View. (Did you mean DROP MATERIALIZED VIEW)?")
    t.execute("DROP MATERIALIZED VIEW mv")
    t.execute("DROP MATERIALIZED VIEW mv2")
    t.execute("DROP TABLE t")


def test_drop_materialized_view_rules(t):
    refused(t, "DROP MATERIALIZED VIEW nope", "Cannot drop non existing materialized view 'nope' in keyspace 'ks'.",
            ConfigurationException)
    t.execute("DROP MATERIALIZED VIEW IF EXISTS nope")
    refused(t, "DROP MATERIALIZED VIEW t", "Cannot use DROP MATERIALIZED VIEW on Table. (Did you mean DROP TABLE)?")


def test_drop_keyspace_takes_its_views(session, db):
    session.execute("CREATE TABLE t (p int PRIMARY KEY, v int)")
    mv(session, key="v, p", where="v IS NOT NULL")
    session.execute("DROP KEYSPACE ks")
    assert rows(session.execute("SELECT * FROM system_schema.views")) == []


def test_alter_of_a_view_and_of_its_base(t):
    mv(t)
    refused(t, "ALTER TABLE mv WITH comment = 'x'",
            "Cannot use ALTER TABLE on Materialized View. (Did you mean ALTER MATERIALIZED VIEW)?")
    refused(t, "ALTER MATERIALIZED VIEW t WITH comment = 'x'",
            "Cannot use ALTER MATERIALIZED VIEW on Table. (Did you mean ALTER TABLE)?")
    refused(t, "ALTER MATERIALIZED VIEW mv WITH cdc = {'enabled': true}", "Cannot enable CDC for a materialized view")
    refused(t, "ALTER MATERIALIZED VIEW nope WITH comment = 'x'",
            "Cannot update non existing materialized view 'nope' in keyspace 'ks'.", ConfigurationException)
    t.execute("ALTER MATERIALIZED VIEW mv WITH comment = 'mine' AND synchronous_updates = true")
    assert rows(t.execute("SELECT comment FROM system_schema.views WHERE keyspace_name = 'ks'")) == [("mine",)]
    refused(t, "ALTER TABLE t DROP w", "Cannot drop column w from base table ks.t: materialized view mv needs this column")
    t.execute("ALTER TABLE t ADD x int")  # joins the SELECT * view
    t.execute("INSERT INTO t (p, c, v, x) VALUES (1, 1, 'a', 7)")
    assert rows(t.execute("SELECT x FROM mv")) == [(7,)]
    t.execute("ALTER TABLE t RENAME p TO q")
    t.execute("INSERT INTO t (q, c, v) VALUES (2, 1, 'b')")
    assert rows(t.execute("SELECT v, q, c FROM mv")) == [("a", 1, 1), ("b", 2, 1)]


def test_a_table_without_views_has_no_view_lookup_cost(db, t):
    assert db.catalog.views_by_base == {}


@pytest.fixture
def reopen(tmp_path, clock):
    """Opens the test's data directory again and again (the test's clock, no fsync): the first time with keyspace
    ``ks`` and the base table ``ks.t`` made in it, for the tests of what a view keeps across a restart."""
    import logtide

    path = tmp_path / "again"

    def opened():
        fresh = not path.exists()
        db = logtide.open(path, clock=clock, synchronous="OFF")
        if fresh:
            s = db.session()
            s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
            s.execute("CREATE TABLE ks.t (p int, c int, v text, w int, PRIMARY KEY (p, c))")
        return db
    return opened


def test_views_survive_a_restart(reopen, clock):
    with reopen() as first:
        s = first.session()
        mv(s, base="ks.t", name="ks.mv")
        s.execute("INSERT INTO ks.t (p, c, v) VALUES (1, 1, 'a')")
    clock.advance(seconds=1)
    with reopen() as second:
        s = second.session()
        s.execute("UPDATE ks.t SET v = 'b' WHERE p = 1 AND c = 1")
        assert rows(s.execute("SELECT v, p, c FROM ks.mv")) == [("b", 1, 1)]
        assert rows(s.execute("SELECT where_clause FROM system_schema.views")) == [
            ("v IS NOT null AND p IS NOT null AND c IS NOT null",)]


# ---------------------------------------------------------------- CDC and changefeeds beside views


WRITES = [
    "INSERT INTO {t} (p, c, v, w) VALUES (1, 1, 'a', 1)",
    "UPDATE {t} SET v = 'b' WHERE p = 1 AND c = 1",
    "UPDATE {t} USING TTL 50 SET w = 2 WHERE p = 1 AND c = 2",
    "DELETE v FROM {t} WHERE p = 1 AND c = 1",
    "INSERT INTO {t} (p, c, v) VALUES (2, 1, 'c')",
    "DELETE FROM {t} WHERE p = 2 AND c > 0",
    "DELETE FROM {t} WHERE p = 1",
]


def cdc_log(session, table):
    return [tuple(r) for r in session.execute(
        f'SELECT "cdc$batch_seq_no", "cdc$operation", "cdc$ttl", p, c, v, w, "cdc$deleted_v", "cdc$deleted_w" '
        f"FROM {table}_scylla_cdc_log")]


def test_a_cdc_base_with_a_view_logs_exactly_what_it_logs_without(session):
    for name in ("plain", "viewed"):
        session.execute(f"CREATE TABLE {name} (p int, c int, v text, w int, PRIMARY KEY (p, c)) "
                        "WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}")
    mv(session, base="viewed")
    for w in WRITES:
        session.execute(w.format(t="plain"))
        session.execute(w.format(t="viewed"))
    assert cdc_log(session, "viewed") == cdc_log(session, "plain")
    assert len(cdc_log(session, "plain")) > len(WRITES)
    assert rows(session.execute("SELECT * FROM system_schema.tables WHERE keyspace_name = 'ks' AND "
                                "table_name = 'mv_scylla_cdc_log'")) == []


def test_a_changefeed_cannot_be_added_to_a_view(t):
    mv(t)
    refused(t, "ALTER TABLE mv ADD CHANGEFEED f WITH (FORMAT = 'JSON', MODE = 'UPDATES')",
            "Cannot add changefeed to materialized view ks.mv: a view is derived from its base table ks.t, add the "
            "changefeed there")
    t.execute("ALTER TABLE t ADD CHANGEFEED f WITH (FORMAT = 'JSON', MODE = 'UPDATES')")  # the base may have one
    t.execute("INSERT INTO t (p, c, v) VALUES (1, 1, 'a')")
    assert rows(t.execute("SELECT v FROM mv")) == [("a",)]


def test_a_restriction_other_than_is_not_null_also_filters_a_key_column(session):
    session.execute("CREATE TABLE s (p int PRIMARY KEY, v int)")
    mv(session, key="v, p", where="v >= 0 AND p IS NOT NULL", base="s")
    session.execute("INSERT INTO s (p, v) VALUES (1, 1)")
    assert rows(session.execute("SELECT * FROM mv")) == [(1, 1)]
    session.execute("UPDATE s SET v = -1 WHERE p = 1")
    assert rows(session.execute("SELECT * FROM mv")) == []


def test_an_unselected_column_keeps_view_rows_alive_and_cannot_be_dropped(session):
    session.execute("CREATE TABLE s (p int PRIMARY KEY, a int, b int, c int)")
    mv(session, select="p, a", key="p", where="p IS NOT NULL", base="s")
    refused(session, "ALTER TABLE s DROP b",
            "Cannot drop column b from base table ks.s: materialized view mv needs this column")
    session.execute("DROP MATERIALIZED VIEW mv")
    mv(session, select="p, a, b", key="a, p", where="a IS NOT NULL AND p IS NOT NULL", base="s")
    session.execute("ALTER TABLE s DROP c")  # the view's key has a regular column: no virtual columns


def test_a_build_runs_in_the_background_while_writes_go_on(t, db):
    """Writes during a build (new rows, view keys moved in rows built and not yet built, rows deleted) end up
    in the view exactly once; the build's progress shows in ScyllaDB's tables meanwhile."""
    for i in range(60):
        t.execute(f"INSERT INTO t (p, c, v, w) VALUES ({i}, 0, 'a', {i})")
    db.view_builds.chunk = 7
    db.view_builds.pause()
    mv(t)
    assert rows(t.execute("SELECT keyspace_name, view_name, last_token FROM system.views_builds_in_progress")) == [
        ("ks", "mv", None)]
    assert rows(t.execute("SELECT status FROM system_distributed.view_build_status")) == [("STARTED",)]
    assert rows(t.execute("SELECT * FROM system.built_views")) == []
    rnd = random.Random(3)
    while db.view_builds.progress():
        db.view_builds.step()
        for _ in range(5):
            p = rnd.randrange(80)
            kind = rnd.randrange(3)
            if kind == 0:
                t.execute(f"UPDATE t SET v = '{rnd.choice('abc')}' WHERE p = {p} AND c = 0")
            elif kind == 1:
                t.execute(f"DELETE FROM t WHERE p = {p}")
            else:
                t.execute(f"INSERT INTO t (p, c, v, w) VALUES ({p}, 0, 'b', {p})")
        if db.view_builds.progress():
            assert rows(t.execute("SELECT last_token FROM system.views_builds_in_progress"))[0][0] is not None
    expected = sorted((r[2], r[0], r[1], r[3]) for r in rows(t.execute("SELECT p, c, v, w FROM t")))
    assert sorted(rows(t.execute("SELECT v, p, c, w FROM mv"))) == expected
    assert rows(t.execute("SELECT status FROM system_distributed.view_build_status")) == [("SUCCESS",)]


def test_a_build_goes_on_after_a_restart(reopen):
    with reopen() as first:
        s = first.session()
        for i in range(50):
            s.execute(f"INSERT INTO ks.t (p, c, v) VALUES ({i}, 0, 'x')")
        first.view_builds.chunk = 10
        first.view_builds.pause()
        mv(s, base="ks.t", name="ks.mv")
        first.view_builds.step()
        assert len(rows(s.execute("SELECT * FROM ks.mv"))) == 10
    with reopen() as second:
        wait_built(second)
        assert len(rows(second.session().execute("SELECT * FROM ks.mv"))) == 50


def test_dropping_a_view_while_it_builds_ends_its_build(t, db):
    for i in range(30):
        t.execute(f"INSERT INTO t (p, c, v) VALUES ({i}, 0, 'x')")
    db.view_builds.chunk = 5
    db.view_builds.pause()
    mv(t)
    db.view_builds.step()
    t.execute("DROP MATERIALIZED VIEW mv")
    db.view_builds.step()
    assert db.view_builds.progress() == {}
    assert rows(t.execute("SELECT * FROM system.views_builds_in_progress")) == []


def test_build_progress_tables_show_every_view_built(t, db):
    mv(t)
    assert rows(t.execute("SELECT * FROM system.built_views")) == [("ks", "mv")]
    assert rows(t.execute("SELECT keyspace_name, view_name, status FROM system_distributed.view_build_status")) == [
        ("ks", "mv", "SUCCESS")]
    assert rows(t.execute("SELECT * FROM system.views_builds_in_progress")) == []



def test_creating_altering_and_dropping_a_view_needs_alter_permission(tmp_path):
    import logtide
    from logtide import auth
    from logtide.errors import Unauthorized

    with logtide.open(tmp_path / "auth", synchronous="OFF") as database:
        auth.attach(database, enabled=True, superuser="root", password="r")
        root = database.session(user="root")
        root.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        root.execute("CREATE TABLE ks.t (p int PRIMARY KEY, v int)")
        root.execute("CREATE ROLE bob WITH PASSWORD = 'b' AND LOGIN = true")
        root.execute("GRANT SELECT ON ks.t TO bob")
        bob = database.session(user="bob")
        create = "CREATE MATERIALIZED VIEW ks.mv AS SELECT * FROM ks.t WHERE v IS NOT NULL PRIMARY KEY (v, p)"
        with pytest.raises(Unauthorized):
            bob.execute(create)
        root.execute("GRANT ALTER ON ks.t TO bob")
        bob.execute(create)  # its creator gets every permission on the view, as on a table it creates
        bob.execute("ALTER MATERIALIZED VIEW ks.mv WITH comment = 'b'")
        bob.execute("DROP MATERIALIZED VIEW ks.mv")
        root.execute("CREATE MATERIALIZED VIEW ks.mv2 AS SELECT * FROM ks.t WHERE v IS NOT NULL PRIMARY KEY (v, p)")
        with pytest.raises(Unauthorized):
            bob.execute("DROP MATERIALIZED VIEW ks.mv2")


def test_the_view_tables_list_every_view_of_every_keyspace_from_one_walk_of_the_catalog(t):
    from logtide.schema.views import catalog_views

    t.execute("CREATE KEYSPACE a WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    t.execute("CREATE TABLE a.b (p int PRIMARY KEY, v int)")
    mv(t, name="zz")
    mv(t, name="aa")
    mv(t, base="a.b", name="a.only", key="p", where="p IS NOT NULL")
    order = [("a", "only"), ("ks", "aa"), ("ks", "zz")]
    assert [(v.keyspace, v.name) for v in catalog_views(t.db.catalog)] == order
    for table in ("system_schema.views", "system_distributed.view_build_status", "system.built_views"):
        assert sorted(rows(t.execute(f"SELECT keyspace_name, view_name FROM {table}"))) == order
    assert sorted(len(v) for v in t.db.catalog.views_by_base.values()) == [1, 2]
