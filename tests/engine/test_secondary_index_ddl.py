"""CREATE INDEX and DROP INDEX: ScyllaDB's default names, collection targets as ScyllaDB rewrites them, local
indexes, and each refusal with ScyllaDB's message (docs/views-and-indexes.md, "Secondary indexes").  A refused
statement changes nothing."""

from __future__ import annotations

import pytest

from logtide.errors import InvalidRequest

TABLE = ("CREATE TABLE t (p int, c int, v int, d duration, m map<int, text>, s set<int>, l list<int>, "
         "f frozen<list<int>>, st int static, PRIMARY KEY (p, c))")


@pytest.fixture
def t(session):
    session.execute(TABLE)
    return session


def indexes(session, table="t"):
    return [(ix.name, ix.kind, ix.target) for ix in session.db.catalog.table("ks", table).indexes]


def refused(session, query: str) -> str:
    before = session.db.catalog
    with pytest.raises(InvalidRequest) as e:
        session.execute(query)
    assert session.db.catalog is before  # nothing changed
    return str(e.value)


def test_an_unnamed_index_is_named_table_column_idx_and_announced_as_its_table_updated(t):
    r = t.execute("CREATE INDEX ON t (v)")
    assert (r.schema_change.change_type, r.schema_change.target, r.schema_change.name) == ("UPDATED", "TABLE", "t")
    assert indexes(t) == [("t_v_idx", "regular_values", "v")]


def test_collection_targets_are_kept_as_scylladb_rewrites_them(t):
    t.execute("CREATE INDEX ON t (keys(m))")
    t.execute("CREATE INDEX mv ON t (values(m))")
    t.execute("CREATE INDEX me ON t (entries(m))")
    t.execute("CREATE INDEX ON t (s)")  # a set's plain target indexes its elements: keys(s)
    t.execute("CREATE INDEX ON t (l)")  # a list's: values(l)
    t.execute("CREATE INDEX ON t (full(f))")  # a frozen collection whole: stored as the bare column
    assert indexes(t) == [("t_m_idx", "keys", "keys(m)"), ("mv", "values", "values(m)"),
                          ("me", "entries", "entries(m)"), ("t_s_idx", "keys", "keys(s)"),
                          ("t_l_idx", "values", "values(l)"), ("t_f_idx", "full", "f")]


def test_a_local_index_names_the_whole_partition_key(session):
    session.execute("CREATE TABLE t2 (a int, b int, c int, v int, PRIMARY KEY ((a, b), c))")
    session.execute("CREATE INDEX ON t2 ((a, b), v)")
    assert indexes(session, "t2") == [("t2_v_idx", "regular_values", '{"pk":["a","b"],"ck":["v"]}')]
    assert refused(session, "CREATE INDEX ON t2 ((a), v)") == \
        "Local index definition must contain full partition key only. Missing column: b"
    assert refused(session, "CREATE INDEX ON t2 ((a, c), v)") == \
        "Local index definition must contain full partition key only. Redundant column: c"
    assert refused(session, "CREATE INDEX ON t2 ((a, b))") == \
        "Local index definition must provide an indexed column, not just partition key"
    session.execute("CREATE INDEX ON t2 (a)")  # one column of a composite partition key may be indexed


def test_a_taken_default_name_gets_a_number(t):
    t.execute("CREATE TABLE t_v_idx_index (k int PRIMARY KEY)")  # the table ScyllaDB's hidden view would be
    t.execute("CREATE INDEX ON t (v)")
    assert indexes(t) == [("t_v_idx_1", "regular_values", "v")]


def test_duplicates_and_taken_names_are_refused_unless_if_not_exists(t):
    t.execute("CREATE INDEX i ON t (v)")
    assert refused(t, "CREATE INDEX ON t (v)") == "Index t_v_idx is a duplicate of existing index i"
    assert refused(t, "CREATE INDEX i ON t (c)") == "Index already exists"
    # IF NOT EXISTS of the same index does nothing; of another index under a taken name it is still an error
    assert t.execute("CREATE INDEX IF NOT EXISTS i ON t (v)").schema_change is None
    assert t.execute("CREATE INDEX IF NOT EXISTS ON t (v)").schema_change is None
    assert refused(t, "CREATE INDEX IF NOT EXISTS i ON t (c)") == \
        "Index i cannot be created, because table i_index already exists"
    assert indexes(t) == [("i", "regular_values", "v")]


@pytest.mark.parametrize("query, message", [
    ("CREATE INDEX ON t (p)", "Cannot create secondary index on partition key column p"),
    ("CREATE INDEX ON t (nope)", "No column definition found for column nope"),
    ("CREATE INDEX ON t (d)", "Secondary indexes are not supported on duration columns"),
    ("CREATE INDEX ON t (full(m))", "full() indexes can only be created on frozen collections"),
    ("CREATE INDEX ON t (f)", "Cannot create index on value of frozen collection column f"),
    ("CREATE INDEX ON t (keys(f))", "Cannot create index on keys() of frozen collection column f"),
    ("CREATE INDEX ON t (keys(v))",
     "Cannot create index on keys() of column v; only non-frozen collections support keys() indexes"),
    ("CREATE INDEX ON t (keys(l))", "Cannot create secondary index on keys of column l with non-map type"),
    ("CREATE INDEX ON t (entries(s))", "Cannot create secondary index on entries of column s with non-map type"),
    ("CREATE INDEX ON t (v, c)", "Only CUSTOM indexes support multiple columns"),
    ("CREATE INDEX ON t ((p), m)", "Local secondary index on collection column m is not implemented yet."),
    ("CREATE INDEX ON t ((p), st)", "Local indexes containing static columns are not supported."),
    ("CREATE INDEX ON t ()", "Only CUSTOM indexes can be created without specifying a target column"),
    ("CREATE CUSTOM INDEX ON t (v)", "CUSTOM index requires specifying the index class"),
    ("CREATE INDEX ON t (v) WITH OPTIONS = {'a': 'b'}", "Cannot specify options for a non-CUSTOM index"),
    ("CREATE CUSTOM INDEX ON t (v) USING 'org.apache.cassandra.index.sasi.SASIIndex'",
     "Non-supported custom class 'org.apache.cassandra.index.sasi.SASIIndex' provided"),
    ("CREATE CUSTOM INDEX ON t (v) USING 'StorageAttachedIndex'",
     "StorageAttachedIndex (SAI) is only supported on vector columns; use a secondary index for non-vector columns"),
    ("CREATE INDEX ON t (v) WITH CLUSTERING ORDER BY (v DESC)", None),
    ("CREATE INDEX ON nope (v)", "unconfigured table nope"),
])
def test_what_scylladb_refuses_is_refused_with_its_message(t, query, message):
    try:
        got = refused(t, query)
    except Exception:
        if message is None:
            return  # a syntax error is a refusal too
        raise
    if message is not None:
        assert got == message


def test_a_vector_column_gets_no_vector_index(session):
    """ScyllaDB builds a vector index (ANN search) for SAI on a vector column; logtide says it has none."""
    session.execute("CREATE TABLE emb (p int PRIMARY KEY, v vector<float, 3>)")
    assert refused(session, "CREATE CUSTOM INDEX ON emb (v) USING 'sai'") == (
        "Vector indexes (StorageAttachedIndex on vector column v, for ANN search) are not supported by logtide")


def test_counter_tables_cannot_be_indexed(session):
    session.execute("CREATE TABLE cnt (p int PRIMARY KEY, n counter)")
    assert refused(session, "CREATE INDEX ON cnt (n)") == "Secondary indexes are not supported on counter tables"


def test_drop_index_finds_the_index_in_its_keyspace(t):
    t.execute("CREATE INDEX ON t (v)")
    r = t.execute("DROP INDEX t_v_idx")
    assert (r.schema_change.change_type, r.schema_change.name) == ("UPDATED", "t")
    assert indexes(t) == []
    assert refused(t, "DROP INDEX t_v_idx") == \
        "Index 't_v_idx' could not be found in any of the tables of keyspace 'ks'"
    assert t.execute("DROP INDEX IF EXISTS t_v_idx").schema_change is None


def test_an_indexed_column_cannot_be_dropped_but_the_table_can(t):
    t.execute("CREATE INDEX ON t (v)")
    assert refused(t, "ALTER TABLE t DROP v") == \
        "Cannot drop column v from base table ks.t: materialized view t_v_idx_index needs this column"
    t.execute("DROP TABLE t")
    t.execute(TABLE)
    assert indexes(t) == []


def test_indexes_survive_a_restart(tmp_path):
    import logtide
    with logtide.open(tmp_path / "d") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (p int PRIMARY KEY, v int)")
        s.execute("CREATE INDEX ON ks.t (v)")
    with logtide.open(tmp_path / "d") as db:
        assert [ix.name for ix in db.catalog.table("ks", "t").indexes] == ["t_v_idx"]


def test_system_schema_indexes_has_a_composites_row_with_the_target_per_index(t):
    t.execute("CREATE INDEX ON t (v)")
    t.execute("CREATE INDEX ON t (keys(m))")
    t.execute("CREATE INDEX loc ON t ((p), c)")
    got = [(r.table_name, r.index_name, r.kind, dict(r.options))
           for r in t.execute("SELECT * FROM system_schema.indexes WHERE keyspace_name = 'ks'")]
    assert got == [("t", "loc", "COMPOSITES", {"target": '{"pk":["p"],"ck":["c"]}'}),
                   ("t", "t_m_idx", "COMPOSITES", {"target": "keys(m)"}),
                   ("t", "t_v_idx", "COMPOSITES", {"target": "v"})]


def test_describe_prints_each_index_after_its_table_as_scylladb_does(t):
    t.execute("CREATE INDEX ON t (v)")
    t.execute("CREATE INDEX ON t (s)")
    t.execute("CREATE INDEX ON t (full(f))")
    t.execute("CREATE INDEX loc ON t ((p), c) WITH gc_grace_seconds = 5")
    rows = list(t.execute("DESC TABLE t"))
    # by name, as ScyllaDB sorts a table's indexes (describe_statement.cc: ``table``)
    assert [(r.type, r.name) for r in rows] == [("table", "t"), ("index", "loc"), ("index", "t_f_idx"),
                                                ("index", "t_s_idx"), ("index", "t_v_idx")]
    heads = [r.create_statement.split(" WITH ")[0] for r in rows[1:]]
    assert heads == ["CREATE INDEX loc ON ks.t((p), c)", "CREATE INDEX t_f_idx ON ks.t(full(f))",
                     "CREATE INDEX t_s_idx ON ks.t(values(s))", "CREATE INDEX t_v_idx ON ks.t(v)"]
    [one] = t.execute("DESC INDEX loc")
    assert "\n    AND gc_grace_seconds = 5\n" in one.create_statement
    assert one.create_statement == rows[1].create_statement
    assert [r.name for r in t.execute("DESC ks.t_v_idx")] == ["t_v_idx"]
    with pytest.raises(InvalidRequest):
        t.execute("DESC INDEX nosuch")


def test_a_described_index_recreates_the_same_index(t):
    t.execute("CREATE INDEX i ON t (values(m)) WITH comment = 'x'")
    [row] = t.execute("DESC INDEX i")
    t.execute("DROP INDEX i")
    t.execute(row.create_statement)
    assert indexes(t) == [("i", "values", "values(m)")]
    assert t.db.catalog.table("ks", "t").indexes[0].options == {"comment": "x"}


def test_system_indexinfo_lists_each_built_index_under_its_keyspace_name(t):
    t.execute("CREATE INDEX ON t (v)")
    t.execute("CREATE INDEX other ON t (c)")
    rows = [(r.table_name, r.index_name) for r in t.execute('SELECT * FROM system."IndexInfo"')]
    assert rows == [("ks", "other"), ("ks", "t_v_idx")]  # table_name holds the keyspace, as in ScyllaDB


def test_a_key_column_an_index_uses_cannot_be_renamed(t):
    t.execute("CREATE INDEX ON t (c)")
    t.execute("CREATE INDEX loc ON t ((p), v)")
    assert refused(t, "ALTER TABLE t RENAME c TO c2") == \
        "Cannot rename column c because it has dependent secondary indexes (t_c_idx)"
    assert refused(t, "ALTER TABLE t RENAME p TO p2") == \
        "Cannot rename column p because it has dependent secondary indexes (loc)"
