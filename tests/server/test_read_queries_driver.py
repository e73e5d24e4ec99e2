"""cassandra-driver against the server for the read side where the wire matters: GROUP BY pages carried by
paging states, bind and result metadata of selectors, SELECT without FROM, the 1 MB page cutoff."""

from __future__ import annotations

import pytest
from cassandra import InvalidRequest
from cassandra.query import SimpleStatement

from .conftest import KEYSPACE_DDL, cluster


@pytest.fixture(scope="module")
def session(port):
    c = cluster(port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("reads"))
    s.set_keyspace("reads")
    s.execute("CREATE TABLE g (a int, b int, c int, PRIMARY KEY (a, b))")
    insert = s.prepare("INSERT INTO g (a, b, c) VALUES (?, ?, ?)")
    for a, n in ((293, 29), (317, 31), (379, 37), (419, 41)):
        for b in range(n):
            s.execute(insert, (a, b, a))
    yield s
    c.shutdown()


def test_group_by_pages_hold_whole_groups_and_follow_the_limit(session):
    order = [379, 293, 419, 317]  # token order of the partitions
    for fetch in (1, 3, 1000):
        stmt = session.prepare("SELECT a, count(a) FROM g GROUP BY a")
        stmt.fetch_size = fetch
        result = session.execute(stmt)
        assert len(result.current_rows) == min(fetch, 4)
        assert [tuple(r) for r in result] == [(a, {293: 29, 317: 31, 379: 37, 419: 41}[a]) for a in order]
        for limit in range(1, 6):
            stmt = session.prepare(f"SELECT a FROM g GROUP BY a LIMIT {limit}")
            stmt.fetch_size = fetch
            assert [r.a for r in session.execute(stmt)] == order[:limit]


def test_selector_bind_markers_get_metadata_and_literals_their_types(session):
    stmt = session.prepare("SELECT intAsBlob(?), blobAsInt(intAsBlob(?)) AS back FROM system.local")
    assert [c.type.typename for c in stmt.column_metadata] == ["int", "int"]
    row = session.execute(stmt, (4, 5)).one()
    assert row[0] == b"\x00\x00\x00\x04" and row.back == 5
    row = session.execute("SELECT 1 AS one, 'hi' AS greeting, [1, 2] AS l, toTimestamp(now()) AS ts").one()
    assert (row.one, row.greeting, row.l) == (1, "hi", [1, 2]) and row.ts is not None


def test_selector_errors_come_before_missing_values(session):
    with pytest.raises(InvalidRequest, match=r"Could not infer type of \?"):
        session.execute("SELECT ? AS qm")
    with pytest.raises(InvalidRequest, match="only valid when argument types are known"):
        session.prepare("SELECT count(?) FROM system.local")


def test_a_page_ends_at_one_megabyte_unless_paging_is_off(session):
    session.execute("CREATE TABLE big (p int, c int, s text, PRIMARY KEY (p, c))")
    insert = session.prepare("INSERT INTO big (p, c, s) VALUES (0, ?, ?)")
    for c in range(15):
        session.execute(insert, (c, "x" * 100_000))
    assert len(session.execute(SimpleStatement("SELECT * FROM big WHERE p = 0", fetch_size=3)).current_rows) == 3
    paged = session.execute(SimpleStatement("SELECT * FROM big WHERE p = 0", fetch_size=100_000))
    assert 10 <= len(paged.current_rows) < 15
    assert [r.c for r in paged] == list(range(15))
    assert len(session.execute(SimpleStatement("SELECT * FROM big WHERE p = 0", fetch_size=0)).current_rows) == 15


@pytest.mark.parametrize("query, message", [
    ("SELECT * FROM g WHERE a = ? AND nope = ?", "Unrecognized name nope"),
    ("SELECT * FROM g WHERE a = ? AND (b, nope) = (?, ?)", "Unrecognized name nope"),
    ("SELECT * FROM g WHERE a = ? AND nope IN (?, ?)", "Unrecognized name nope"),
    ("SELECT nope FROM g WHERE a = ?", "Unrecognized name nope"),
    ("SELECT nope FROM g WHERE other = ?", "Unrecognized name nope"),  # the selectors come first
    ("SELECT c AS x FROM g WHERE a = ? AND x = ?", "Aliases aren't allowed in the WHERE clause (name: 'x')"),
    ("SELECT a FROM g WHERE a = ? ORDER BY nope", "Order by on unknown column nope"),
    ("INSERT INTO g (a, b, nope) VALUES (?, ?, ?)", "Unknown identifier nope"),
    ("UPDATE g SET nope = ? WHERE a = ? AND b = ?", "Unknown identifier nope"),
    ("UPDATE g SET c = ? WHERE a = ? AND nope = ?", "Unrecognized name nope"),
    ("UPDATE g SET c = ? WHERE a = ? AND b = ? IF nope = ?", "Unrecognized name nope"),
    ("DELETE nope FROM g WHERE a = ? AND b = ?", "Unknown identifier nope"),
    ("DELETE nope[?] FROM g WHERE a = ? AND b = ?", "Unknown identifier nope"),
    ("DELETE FROM g WHERE a = ? AND nope = ?", "Unrecognized name nope"),
])
def test_prepare_names_an_unknown_column_as_scylladb_does(session, query, message):
    """PREPARE names the unknown column with ScyllaDB's words for the clause it is in, before any bind marker
    is left untyped; the statement run unprepared (with literals) says the same."""
    with pytest.raises(InvalidRequest) as e:
        session.prepare(query)
    assert message in str(e.value)
    with pytest.raises(InvalidRequest) as e:
        session.execute(query.replace("?", "1").replace("nope[1]", "nope[1]"))
    assert message in str(e.value)


@pytest.mark.parametrize("query, message", [
    ("SELECT * FROM wr WHERE u != {a: 0}", 'Unsupported "!=" relation: u != {a: 0}'),
    ("SELECT * FROM wr WHERE u IS NOT NULL", "Unsupported restriction: u IS NOT NULL"),
    ("SELECT * FROM wr WHERE k = ? AND s = ?", "Collection column 's' (set<int>) cannot be restricted by a '=' relation"),
    ("SELECT * FROM wr WHERE k = ? AND (c, d) > (?, ?)",
     "Clustering columns may not be skipped in multi-column relations. They should appear in the PRIMARY KEY order"),
    ("SELECT * FROM wr WHERE k = ? AND b = ? AND (b, c) > (?, ?)",
     "Mixing single column relations and multi column relations on clustering columns is not allowed"),
])
def test_prepare_refuses_a_where_clause_scylladb_refuses(session, query, message):
    """The rules of a WHERE clause that need no value are checked by PREPARE, as ScyllaDB checks them: the
    driver gets the server's error, not a failure to bind values to a statement with fewer markers."""
    session.execute("CREATE TYPE IF NOT EXISTS pt (a int)")
    session.execute("CREATE TABLE IF NOT EXISTS wr (k int, b int, c int, d int, s set<int>, u pt, "
                    "PRIMARY KEY (k, b, c, d))")
    with pytest.raises(InvalidRequest) as e:
        session.prepare(query)
    assert message in str(e.value)
