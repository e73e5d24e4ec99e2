"""INSERT JSON, lightweight transactions, counters, batches, TRUNCATE, prepared statements."""

from __future__ import annotations

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (pk int, ck int, v int, s text, PRIMARY KEY (pk, ck))")
    return session


def test_insert_json_sets_missing_columns_to_null(t):
    t.execute("INSERT INTO t (pk, ck, v, s) VALUES (0, 0, 1, 'x')")
    t.execute("""INSERT INTO t JSON '{"pk": 0, "ck": 0, "v": 2}'""")
    assert rows(t.execute("SELECT v, s FROM t")) == [(2, None)]


def test_insert_json_default_unset_keeps_missing_columns(t):
    t.execute("INSERT INTO t (pk, ck, v, s) VALUES (0, 0, 1, 'x')")
    t.execute("""INSERT INTO t JSON '{"pk": 0, "ck": 0, "v": 2}' DEFAULT UNSET""")
    assert rows(t.execute("SELECT v, s FROM t")) == [(2, "x")]


def test_insert_json_unknown_column(t):
    with pytest.raises(InvalidRequest, match="JSON values map contains unrecognized column: zz"):
        t.execute("""INSERT INTO t JSON '{"pk": 0, "ck": 0, "zz": 2}'""")


def test_select_json(t):
    t.execute("INSERT INTO t (pk, ck, v, s) VALUES (0, 0, 1, 'x')")
    assert rows(t.execute("SELECT JSON pk, v, s FROM t")) == [('{"pk": 0, "v": 1, "s": "x"}',)]


def test_select_json_names_a_function_call_by_its_text_unquoted(t):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 1) USING TIMESTAMP 1234")
    assert rows(t.execute("SELECT JSON ttl(v), writetime(v), v AS \"V\" FROM t")) == [
        ('{"ttl(v)": null, "writetime(v)": 1234, "\\"V\\"": 1}',)]


def test_insert_if_not_exists(t):
    r = t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 1) IF NOT EXISTS")
    # ScyllaDB's result: the row's previous values (all null: there was none), applied or not
    assert r.column_names == ["[applied]", "pk", "ck", "s", "v"] and rows(r) == [(True, None, None, None, None)]
    r = t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 2) IF NOT EXISTS")
    assert r.column_names == ["[applied]", "pk", "ck", "s", "v"]
    assert rows(r) == [(False, 0, 0, None, 1)]
    assert rows(t.execute("SELECT v FROM t")) == [(1,)]


def test_update_if_exists(t):
    r = t.execute("UPDATE t SET v = 1 WHERE pk = 0 AND ck = 0 IF EXISTS")
    assert rows(r) == [(False, None, None, None, None)]
    assert rows(t.execute("SELECT * FROM t")) == []
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 0)")
    assert rows(t.execute("UPDATE t SET v = 1 WHERE pk = 0 AND ck = 0 IF EXISTS")) == [(True, 0, 0, None, 0)]


def test_update_if_condition(t):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 0)")
    r = t.execute("UPDATE t SET v = 5 WHERE pk = 0 AND ck = 0 IF v = 3")
    assert r.column_names == ["[applied]", "v"] and rows(r) == [(False, 0)]
    assert rows(t.execute("UPDATE t SET v = 5 WHERE pk = 0 AND ck = 0 IF v = 0")) == [(True, 0)]
    assert rows(t.execute("UPDATE t SET v = 6 WHERE pk = 0 AND ck = 0 IF v > 4 AND s = null")) == [(True, None, 5)]
    assert rows(t.execute("SELECT v FROM t")) == [(6,)]


def test_delete_if_condition(t):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 0)")
    assert rows(t.execute("DELETE FROM t WHERE pk = 0 AND ck = 0 IF v = 1")) == [(False, 0)]
    assert rows(t.execute("DELETE FROM t WHERE pk = 0 AND ck = 0 IF v = 0")) == [(True, 0)]
    assert rows(t.execute("SELECT * FROM t")) == []


def test_conditional_update_refuses_custom_timestamp(t):
    with pytest.raises(InvalidRequest, match="Cannot provide custom timestamp for conditional updates"):
        t.execute("UPDATE t USING TIMESTAMP 5 SET v = 1 WHERE pk = 0 AND ck = 0 IF EXISTS")


def test_conditional_batch_applies_all_or_nothing(t):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 0)")
    r = t.execute("BEGIN BATCH UPDATE t SET v = 1 WHERE pk = 0 AND ck = 0 IF v = 9; "
                  "INSERT INTO t (pk, ck, v) VALUES (0, 1, 1); APPLY BATCH")
    assert r.one()[0] is False
    assert rows(t.execute("SELECT ck, v FROM t")) == [(0, 0)]
    with pytest.raises(InvalidRequest, match="cannot span multiple partitions"):
        t.execute("BEGIN BATCH UPDATE t SET v = 1 WHERE pk = 0 AND ck = 0 IF v = 0; "
                  "INSERT INTO t (pk, ck, v) VALUES (1, 1, 1) IF NOT EXISTS; APPLY BATCH")


def test_counters(session):
    session.execute("CREATE TABLE c (pk int PRIMARY KEY, n counter)")
    session.execute("UPDATE c SET n = n + 5 WHERE pk = 0")
    session.execute("UPDATE c SET n = n - 2 WHERE pk = 0")
    assert rows(session.execute("SELECT n FROM c")) == [(3,)]
    with pytest.raises(InvalidRequest, match="INSERT statements are not allowed on counter tables"):
        session.execute("INSERT INTO c (pk, n) VALUES (1, 1)")
    with pytest.raises(InvalidRequest, match="Cannot set the value of counter column n"):
        session.execute("UPDATE c SET n = 1 WHERE pk = 0")
    with pytest.raises(InvalidRequest, match="custom timestamp for counter"):
        session.execute("UPDATE c USING TIMESTAMP 5 SET n = n + 1 WHERE pk = 0")
    session.execute("BEGIN COUNTER BATCH UPDATE c SET n = n + 1 WHERE pk = 0; UPDATE c SET n = n + 1 WHERE pk = 1; APPLY BATCH")
    assert sorted(rows(session.execute("SELECT pk, n FROM c"))) == [(0, 4), (1, 1)]
    with pytest.raises(InvalidRequest, match="counter"):
        session.execute("BEGIN BATCH UPDATE c SET n = n + 1 WHERE pk = 0; APPLY BATCH")


def test_counter_batch_refuses_normal_statements(t):
    with pytest.raises(InvalidRequest, match="Cannot include non-counter statement in a counter batch"):
        t.execute("BEGIN COUNTER BATCH UPDATE t SET v = 1 WHERE pk = 0 AND ck = 0; APPLY BATCH")


def test_batch_is_atomic_when_a_statement_fails(t):
    with pytest.raises(InvalidRequest):
        t.execute("BEGIN BATCH INSERT INTO t (pk, ck, v) VALUES (0, 0, 0); "
                  "UPDATE t SET v = 'text' WHERE pk = 0 AND ck = 1; APPLY BATCH")
    assert rows(t.execute("SELECT * FROM t")) == []


def test_batch_across_tables_and_partitions(session):
    session.execute("CREATE TABLE a (pk int PRIMARY KEY, v int)")
    session.execute("CREATE TABLE b (pk int PRIMARY KEY, v int)")
    session.execute("BEGIN BATCH INSERT INTO a (pk, v) VALUES (1, 1); INSERT INTO b (pk, v) VALUES (2, 2); "
                    "INSERT INTO a (pk, v) VALUES (3, 3); APPLY BATCH")
    assert sorted(rows(session.execute("SELECT * FROM a"))) == [(1, 1), (3, 3)]
    assert rows(session.execute("SELECT * FROM b")) == [(2, 2)]


def test_truncate(t):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 0)")
    t.execute("TRUNCATE t")
    assert rows(t.execute("SELECT * FROM t")) == []
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 0)")
    t.execute("TRUNCATE TABLE ks.t")
    assert rows(t.execute("SELECT * FROM t")) == []


def test_prepared_statements_with_positional_and_named_markers(t):
    ins = t.prepare("INSERT INTO t (pk, ck, v) VALUES (?, ?, ?)")
    for i in range(3):
        t.execute(ins, [0, i, i * 10])
    sel = t.prepare("SELECT v FROM t WHERE pk = :p AND ck = :c")
    assert rows(t.execute(sel, {"p": 0, "c": 2})) == [(20,)]
    assert rows(t.execute("SELECT v FROM t WHERE pk = ? AND ck IN ?", [0, [0, 1]])) == [(0,), (10,)]


def test_wrong_number_of_bound_values(t):
    with pytest.raises(InvalidRequest, match="markers"):
        t.execute("INSERT INTO t (pk, ck, v) VALUES (?, ?, ?)", [1, 2])


def test_rows_have_attribute_and_mapping_access(t):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 7)")
    r = t.execute("SELECT v AS \"cdc$x\", pk FROM t").one()
    assert r["cdc$x"] == 7 and r.pk == 0 and r[0] == 7


def test_drop_column_using_timestamp_hides_only_older_cells(session):
    """ScyllaDB's ``ALTER TABLE ... DROP c USING TIMESTAMP t``, literal or prepared: the drop time is ``t``, so
    after the column is added again the cells written at or before ``t`` stay hidden and later ones show."""
    prepared = session.prepare("ALTER TABLE t DROP todrop USING TIMESTAMP ?")  # the table need not exist yet
    session.execute("CREATE TABLE t (id int, c int, todrop int, PRIMARY KEY (id, c))")
    for i in range(5):
        session.execute(f"INSERT INTO t (id, c, todrop) VALUES (1, {i}, {i}) USING TIMESTAMP {10000 * i}")
    session.execute(prepared, [20000])
    session.execute("ALTER TABLE t ADD todrop int")
    assert [(r.c, r.todrop) for r in session.execute("SELECT c, todrop FROM t")] == \
        [(0, None), (1, None), (2, None), (3, 3), (4, 4)]
    assert session.db.catalog.table("ks", "t").dropped_columns["todrop"] == ("int", 20000)
    session.execute("ALTER TABLE t DROP todrop USING TIMESTAMP 35000")
    session.execute("ALTER TABLE t ADD todrop int")
    assert [r.todrop for r in session.execute("SELECT todrop FROM t")] == [None, None, None, None, 4]
    with pytest.raises(InvalidRequest, match="Invalid null value of timestamp"):
        session.execute(prepared, [None])
