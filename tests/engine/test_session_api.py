"""The embedded API: paging, prepared metadata, batches of bound statements, system_schema reads."""

from __future__ import annotations

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (pk int, ck int, v int, PRIMARY KEY (pk, ck))")
    ins = session.prepare("INSERT INTO t (pk, ck, v) VALUES (?, ?, ?)")
    for pk in range(5):
        for ck in range(7):
            session.execute(ins, [pk, ck, pk * 10 + ck])
    return session


def pages(session, query, size, params=None):
    out, state = [], None
    while True:
        r = session.execute(query, params, page_size=size, paging_state=state)
        out.append(rows(r))
        state = r.paging_state
        if state is None:
            return out


@pytest.mark.parametrize("size", [1, 3, 7, 10, 100])
def test_paging_returns_every_row_once_in_order(t, size):
    whole = rows(t.execute("SELECT pk, ck, v FROM t"))
    got = [r for page in pages(t, "SELECT pk, ck, v FROM t", size) for r in page]
    assert got == whole and len(whole) == 35


def test_paging_respects_limit_and_per_partition_limit(t):
    got = [r for p in pages(t, "SELECT pk, ck FROM t PER PARTITION LIMIT 2 LIMIT 7", 3) for r in p]
    assert got == rows(t.execute("SELECT pk, ck FROM t PER PARTITION LIMIT 2 LIMIT 7"))
    assert len(got) == 7


def test_paging_in_reverse_and_with_in(t):
    q = "SELECT pk, ck FROM t WHERE pk IN (1, 3) ORDER BY ck DESC"
    got = [r for p in pages(t, q, 4) for r in p]
    assert got == rows(t.execute(q)) and len(got) == 14


def test_paging_is_stable_while_the_table_changes(t):
    first = t.execute("SELECT pk, ck FROM t", page_size=10)
    t.execute("DELETE FROM t WHERE pk = 4")  # a partition ahead or behind the position
    t.execute("INSERT INTO t (pk, ck, v) VALUES (99, 0, 0)")
    rest = []
    state = first.paging_state
    while state is not None:
        r = t.execute("SELECT pk, ck FROM t", page_size=10, paging_state=state)
        rest.extend(rows(r))
        state = r.paging_state
    seen = rows(first) + rest
    assert len(seen) == len(set(seen))  # no row twice
    final = set(rows(t.execute("SELECT pk, ck FROM t")))
    assert set(rest) <= final


def test_garbage_paging_state_is_refused(t):
    with pytest.raises(InvalidRequest, match="paging state"):
        t.execute("SELECT * FROM t", page_size=2, paging_state=b"\x01garbage")


def test_prepared_metadata(t):
    p = t.prepare("SELECT v FROM t WHERE pk = ? AND ck IN ? LIMIT ?")
    assert [(s.name, s.type.cql()) for s in p.bind_specs] == [("pk", "int"), ("IN(ck)", "list<int>"), ("[limit]", "int")]
    assert p.pk_indexes == (0,)
    assert [(c.name, c.type.cql()) for c in p.result_columns] == [("v", "int")]
    assert len(p.id) == 16
    u = t.prepare("UPDATE t USING TTL ? SET v = :val WHERE pk = :p AND ck = 1")
    assert [(s.name, s.type.cql()) for s in u.bind_specs] == [("[ttl]", "int"), ("val", "int"), ("p", "int")]
    assert u.pk_indexes == (2,)


def test_prepared_collection_metadata(session):
    session.execute("CREATE TABLE c (pk int PRIMARY KEY, m map<text, int>, l list<int>)")
    p = session.prepare("UPDATE c SET m[?] = ?, l = l + ? WHERE pk = ?")
    assert [(s.name, s.type.cql()) for s in p.bind_specs] == [
        ("key(m)", "text"), ("value(m)", "int"), ("l", "list<int>"), ("pk", "int")]


def test_execute_batch_with_separate_values(t):
    ins = t.prepare("INSERT INTO t (pk, ck, v) VALUES (?, ?, ?)")
    t.execute_batch("UNLOGGED", [(ins, [7, 0, 1]), ("UPDATE t SET v = ? WHERE pk = ? AND ck = ?", [2, 7, 1])])
    assert rows(t.execute("SELECT ck, v FROM t WHERE pk = 7")) == [(0, 1), (1, 2)]
    stamps = {r[0] for r in t.execute("SELECT writetime(v) FROM t WHERE pk = 7")}
    assert len(stamps) == 1
    with pytest.raises(InvalidRequest, match="only UPDATE, INSERT and DELETE"):
        t.execute_batch("LOGGED", [("SELECT * FROM t", None)])


def test_system_schema_is_queryable(session):
    session.execute("CREATE TABLE x (pk int, ck timeuuid, m frozen<map<int, text>>, s set<int>, "
                    "PRIMARY KEY (pk, ck)) WITH CLUSTERING ORDER BY (ck DESC)")
    r = session.execute("SELECT column_name, kind, position, clustering_order, type FROM system_schema.columns "
                        "WHERE keyspace_name = 'ks' AND table_name = 'x'")
    got = {row.column_name: tuple(row)[1:] for row in r}
    assert got == {
        "pk": ("partition_key", 0, "none", "int"),
        "ck": ("clustering", 0, "desc", "timeuuid"),
        "m": ("regular", -1, "none", "frozen<map<int, text>>"),
        "s": ("regular", -1, "none", "set<int>"),
    }
    ks = session.execute("SELECT keyspace_name, replication FROM system_schema.keyspaces WHERE keyspace_name = 'ks'").one()
    assert dict(ks.replication) == {"class": "org.apache.cassandra.locator.SimpleStrategy", "replication_factor": "1"}
    tables = {r.table_name for r in session.execute("SELECT table_name FROM system_schema.tables")}
    assert {"x", "columns", "local"} <= tables


def test_system_local(session):
    r = session.execute("SELECT key, cluster_name, partitioner FROM system.local WHERE key = 'local'").one()
    assert r.key == "local" and r.partitioner == "org.apache.cassandra.dht.Murmur3Partitioner"


def test_describe_output_recreates_the_schema(session, tmp_path):
    import logtide
    session.execute("CREATE TYPE ut (a int, \"B\" frozen<list<text>>)")
    session.execute("CREATE TABLE x (pk int, \"Ck\" timeuuid, s int static, m map<int, frozen<ut>>, u ut, "
                    "t frozen<tuple<int, text>>, PRIMARY KEY ((pk), \"Ck\")) WITH CLUSTERING ORDER BY (\"Ck\" DESC) "
                    "AND comment = 'it''s' AND default_time_to_live = 7 AND cdc = {'enabled': true, 'preimage': 'full'}")
    script = "\n".join(r.create_statement for r in session.execute("DESCRIBE KEYSPACE ks"))
    with logtide.open(tmp_path / "copy") as other:
        s2 = other.session()
        from logtide.cql import parse_many
        for p in parse_many(script):
            if "_scylla_cdc_log" in p.text:
                continue
            s2.execute(p.text)
        again = "\n".join(r.create_statement for r in s2.execute("DESCRIBE KEYSPACE ks"))
    assert again == script


def test_a_whole_in_list_marker_is_named_as_scylla_names_it(t):
    p = t.prepare("SELECT v FROM t WHERE pk = ? AND ck NOT IN ? ALLOW FILTERING")
    assert [s.name for s in p.bind_specs] == ["pk", "NOT IN(ck)"]
    c = t.prepare("UPDATE t SET v = 1 WHERE pk = 0 AND ck = 0 IF v IN ?")
    assert [(s.name, s.type.cql()) for s in c.bind_specs] == [("IN(v)", "list<int>")]
    m = t.prepare("SELECT v FROM t WHERE pk = 0 AND (ck) IN ?")
    assert [(s.name, s.type.cql()) for s in m.bind_specs] == [("IN((ck))", "list<frozen<tuple<int>>>")]


def test_a_bind_marker_name_used_twice_is_one_variable(t):
    p = t.prepare("SELECT v FROM t WHERE ck = :x AND pk = :x")
    assert [s.name for s in p.bind_specs] == ["x"] and p.pk_indexes == (0,)
    assert rows(t.execute(p, {"x": 3})) == [(33,)]
    assert rows(t.execute(p, (4,))) == [(44,)]
    u = t.prepare("UPDATE t SET v = :v WHERE pk = :k AND ck = :k")
    assert [s.name for s in u.bind_specs] == ["v", "k"]
    t.execute(u, {"v": -1, "k": 2})
    assert rows(t.execute("SELECT v FROM t WHERE pk = 2 AND ck = 2")) == [(-1,)]
