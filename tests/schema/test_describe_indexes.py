"""DESCRIBE of secondary indexes as ScyllaDB prints them (docs/views-and-indexes.md, "Schema surfaces"): ``WITH ID =
...`` under ``WITH INTERNALS``, ScyllaDB's ``synchronous_updates``, and the materialized view ScyllaDB backs an
index with, ``<index>_index``, described inside a comment (golden text in tests/schema/golden/index_views.cql);
that view is listed in ``system_schema.views`` and ``columns`` as ScyllaDB lists it, and in no other schema
surface."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

import logtide
from logtide.errors import ConfigurationException, InvalidRequest

GOLDEN = Path(__file__).parent / "golden"
INDEX_ID = uuid.UUID("018ad550-b25d-09d0-7e90-ea5438411dc7")
TABLE = ("CREATE TABLE t (p int, q int, c int, d int, v int, idx_token int, l list<int>, m map<text, int>, "
         "st int static, PRIMARY KEY ((p, q), c, d)) WITH CLUSTERING ORDER BY (c DESC, d ASC)")


@pytest.fixture
def s(session):
    session.execute(TABLE)
    return session


def statement(s, query: str) -> str:
    [row] = list(s.execute(query))
    return row.create_statement


def test_describe_index_with_internals_prints_the_id_given_at_creation(s):
    s.execute(f"CREATE INDEX i ON t (v) WITH ID = {INDEX_ID} AND comment = 'c'")
    plain = statement(s, "DESC INDEX i")
    assert plain.startswith("CREATE INDEX i ON ks.t(v) WITH bloom_filter_fp_chance = 0.01\n")
    assert "ID =" not in plain
    internals = statement(s, "DESC INDEX i WITH INTERNALS")
    assert internals == plain.replace(" WITH ", f" WITH ID = {INDEX_ID}\n    AND ", 1)
    assert statement(s, "DESC ks.i WITH INTERNALS") == internals
    [*_, index] = s.execute("DESC TABLE t WITH INTERNALS")
    assert index.create_statement == internals
    # the described statement, run again, makes the same index with the same id
    s.execute("DROP INDEX i")
    s.execute(internals)
    assert statement(s, "DESC INDEX i WITH INTERNALS") == internals


def test_an_index_without_an_id_keeps_the_one_it_was_given_across_a_restart(tmp_path, clock):
    path = tmp_path / "data"
    with logtide.open(path, clock=clock, synchronous="OFF") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (p int PRIMARY KEY, v int)")
        s.execute("CREATE INDEX ON ks.t (v) WITH synchronous_updates = true")
        before = statement(s, "DESC INDEX ks.t_v_idx WITH INTERNALS")
        view_before = statement(s, "DESC MATERIALIZED VIEW ks.t_v_idx_index WITH INTERNALS")
    assert " WITH ID = " in before
    with logtide.open(path, clock=clock, synchronous="OFF") as db:
        s = db.session()
        assert statement(s, "DESC INDEX ks.t_v_idx WITH INTERNALS") == before
        assert statement(s, "DESC MATERIALIZED VIEW ks.t_v_idx_index WITH INTERNALS") == view_before


def test_an_index_id_that_is_no_uuid_is_refused_and_nothing_changes(s):
    before = s.db.catalog
    with pytest.raises(ConfigurationException, match="Invalid table id"):
        s.execute("CREATE INDEX i ON t (v) WITH ID = 'nonsense'")
    assert s.db.catalog is before


@pytest.mark.parametrize("value", ["true", "false"])
def test_synchronous_updates_of_an_index_is_kept_and_described_last(s, value):
    s.execute(f"CREATE INDEX i ON t (v) WITH synchronous_updates = {value} AND gc_grace_seconds = 13")
    text = statement(s, "DESC INDEX i")
    assert text.endswith("\n    AND tombstone_gc = {'mode': 'timeout', 'propagation_delay_in_seconds': '3600'}\n"
                         f"    AND synchronous_updates = {value};\n")
    assert "\n    AND gc_grace_seconds = 13\n" in text
    s.execute("DROP INDEX i")
    s.execute(text)
    assert statement(s, "DESC INDEX i") == text


def test_synchronous_updates_is_refused_where_scylladb_refuses_it(s):
    before = s.db.catalog
    with pytest.raises(ConfigurationException, match="Invalid value for synchronous_updates"):
        s.execute("CREATE INDEX i ON t (v) WITH synchronous_updates = 'sometimes'")
    message = "The synchronous_updates option is only applicable to materialized views, not to base tables"
    with pytest.raises(InvalidRequest, match=message):
        s.execute("CREATE TABLE t2 (p int PRIMARY KEY) WITH synchronous_updates = true")
    with pytest.raises(InvalidRequest, match=message):
        s.execute("ALTER TABLE t WITH synchronous_updates = false")
    assert s.db.catalog is before


def test_view_properties_of_an_index_follow_a_views_rules(s):
    before = s.db.catalog
    with pytest.raises(InvalidRequest, match="Cannot set or alter default_time_to_live for a materialized view"):
        s.execute("CREATE INDEX i ON t (v) WITH default_time_to_live = 5")
    with pytest.raises(InvalidRequest, match="Cannot enable CDC for a materialized view"):
        s.execute("CREATE INDEX i ON t (v) WITH cdc = {'enabled': true}")
    assert s.db.catalog is before


def test_the_view_scylladb_backs_each_index_with_is_described_inside_a_comment(s):
    # a regular column (its view's idx_token renamed: the base has a column of that name), a list's values (a
    # computed key column and keys_for_values_idx), a static column (no clustering columns), a partition key
    # column, and a local index
    s.execute(f"CREATE INDEX by_v ON t (v) WITH ID = {INDEX_ID} AND synchronous_updates = true")
    s.execute("CREATE INDEX ON t (l)")
    s.execute("CREATE INDEX ON t (entries(m))")
    s.execute("CREATE INDEX ON t (st)")
    s.execute("CREATE INDEX ON t (q)")
    s.execute("CREATE INDEX local_v ON t ((p, q), v)")
    got = [statement(s, "DESC MATERIALIZED VIEW by_v_index WITH INTERNALS")]
    got += [statement(s, f"DESC MATERIALIZED VIEW ks.{name}_index")
            for name in ("t_l_idx", "t_m_idx", "t_st_idx", "t_q_idx", "local_v")]
    assert "\n".join(got) + "\n" == (GOLDEN / "index_views.cql").read_text()
    assert statement(s, "DESC ks.t_l_idx_index") == got[1]
    rows = list(s.execute("DESC MATERIALIZED VIEW t_l_idx_index"))
    assert [(r.keyspace_name, r.type, r.name) for r in rows] == [("ks", "view", "t_l_idx_index")]


def test_the_view_of_an_index_is_listed_in_system_schema_views_and_columns_as_scylladb_lists_it(s):
    s.execute("CREATE INDEX ON t (v) WITH speculative_retry = '50ms' AND comment = 'by v'")
    s.execute("CREATE INDEX ON t (l)")
    s.execute("ALTER TABLE t ADD fl frozen<list<int>>")
    s.execute("CREATE INDEX ON t (full(fl))")
    s.execute("CREATE MATERIALIZED VIEW mv AS SELECT p, q, c, d FROM t WHERE p IS NOT NULL AND q IS NOT NULL "
              "AND c IS NOT NULL AND d IS NOT NULL PRIMARY KEY ((q, p), c, d)")
    views = {r.view_name: r for r in s.execute("SELECT * FROM system_schema.views WHERE keyspace_name = 'ks'")}
    assert list(views) == ["mv", "t_fl_idx_index", "t_l_idx_index", "t_v_idx_index"]  # by name, with the views
    v = views["t_v_idx_index"]
    base_id = next(iter(s.execute("SELECT id FROM system_schema.tables WHERE keyspace_name = 'ks'"))).id
    assert (v.base_table_name, v.base_table_id, v.include_all_columns, v.where_clause) == ("t", base_id, False,
                                                                                         "v IS NOT NULL")
    assert (v.speculative_retry, v.comment) == ("50.00ms", "by v")  # the index's properties are its view's
    assert views["t_l_idx_index"].where_clause == views["t_fl_idx_index"].where_clause == ""  # as ScyllaDB: none
    columns = [(r.column_name, r.kind, r.position, r.type, r.clustering_order) for r in s.execute(
        "SELECT * FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 't_v_idx_index'")]
    # keyed by the value, then the base token (renamed: the base has an idx_token), the rest of the base key
    assert columns == [("c", "clustering", 3, "int", "desc"), ("d", "clustering", 4, "int", "asc"),
                       ("idx_token_1", "clustering", 0, "bigint", "asc"), ("p", "clustering", 1, "int", "asc"),
                       ("q", "clustering", 2, "int", "asc"), ("v", "partition_key", 0, "int", "none")]
    s.execute("DROP INDEX t_v_idx")
    assert [r.view_name for r in s.execute("SELECT view_name FROM system_schema.views")] == [
        "mv", "t_fl_idx_index", "t_l_idx_index"]


def test_the_view_of_an_index_is_in_no_other_schema_surface(s):
    s.execute("CREATE INDEX ON t (v)")
    with pytest.raises(InvalidRequest, match=r"Cannot use DESC TABLE on materialized View. \(Did you mean DESC "
                                             r"MATERIALIZED VIEW\)\?"):
        s.execute("DESC TABLE t_v_idx_index")
    with pytest.raises(InvalidRequest, match="unconfigured table t_v_idx_index"):
        s.execute("SELECT * FROM t_v_idx_index")
    with pytest.raises(InvalidRequest, match="Index 't_v_idx_index' could not be found"):
        s.execute("DROP INDEX t_v_idx_index")
    with pytest.raises(InvalidRequest, match="Table for existing index 't_v_idx_index' not found"):
        s.execute("DESC INDEX t_v_idx_index")
    assert [r.table_name for r in s.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'ks'")
            ] == ["t"]
    keyspace = "\n".join(r.create_statement for r in s.execute("DESC KEYSPACE ks"))
    assert "CREATE INDEX t_v_idx ON ks.t(v)" in keyspace and "MATERIALIZED VIEW" not in keyspace
    with pytest.raises(InvalidRequest, match="Materialized view 'nosuch_index' not found in keyspace 'ks'"):
        s.execute("DESC MATERIALIZED VIEW nosuch_index")
