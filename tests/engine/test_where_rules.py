"""The rules of a WHERE clause that need no bound value, as ScyllaDB checks them while it prepares a statement:
relations on whole non-frozen collections, operators no WHERE clause takes, relations on a non-frozen user type
(docs/compatibility.md, "Filtering and restrictions").  Each is refused by PREPARE as by the statement run
unprepared."""

from __future__ import annotations

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows


@pytest.fixture
def coll(session):
    session.execute("CREATE TYPE pt (a int)")
    session.execute("CREATE TABLE coll (k int PRIMARY KEY, s set<int>, l list<int>, m map<int, int>, "
                    "fs frozen<set<int>>, u pt, fu frozen<pt>, n int)")
    session.execute("INSERT INTO coll (k, s, l, m, fs, u, fu, n) VALUES (0, {0}, [0], {0: 0}, {0}, {a: 0}, {a: 0}, 0)")
    session.execute("INSERT INTO coll (k, s, l, m, fs, u, fu, n) VALUES (1, {1}, [1], {1: 1}, {1}, {a: 1}, {a: 1}, 1)")
    return session


def refused_everywhere(session, query: str, message: str, values=()) -> None:
    """Refused with exactly ``message`` by PREPARE (markers for the values) and run unprepared."""
    with pytest.raises(InvalidRequest) as e:
        session.prepare(query)
    assert str(e.value) == message
    with pytest.raises(InvalidRequest) as e:
        session.execute(query, list(values) or None)
    assert str(e.value) == message


@pytest.mark.parametrize("where, message", [
    ("s = {0}", "Collection column 's' (set<int>) cannot be restricted by a '=' relation"),
    ("l = [0]", "Collection column 'l' (list<int>) cannot be restricted by a '=' relation"),
    ("m = {0: 0}", "Collection column 'm' (map<int, int>) cannot be restricted by a '=' relation"),
    ("s > {0}", "Collection column 's' (set<int>) cannot be restricted by a '>' relation"),
    ("s <= {0}", "Collection column 's' (set<int>) cannot be restricted by a '<=' relation"),
    ("s IN ({0})", "Collection column 's' (set<int>) cannot be restricted by a 'IN' relation"),
    ("s NOT IN ({0})", "Collection column 's' (set<int>) cannot be restricted by a 'NOT IN' relation"),
    ("s IS NOT NULL", "Collection column 's' (set<int>) cannot be restricted by a 'IS NOT' relation"),
    ("s != {0}", 'Unsupported "!=" relation: s != {0}'),
    ("s LIKE 'a'", "LIKE is allowed only on string types, which s is not"),
    ("s CONTAINS KEY 0", "Cannot use CONTAINS KEY on non-map column s"),
])
def test_a_whole_non_frozen_collection_takes_only_contains(coll, where, message):
    """ScyllaDB refuses any other relation on a whole non-frozen collection, with or without ALLOW FILTERING
    and with an index on it; Cassandra's words are the same."""
    refused_everywhere(coll, f"SELECT k FROM coll WHERE {where} ALLOW FILTERING", message)


def test_contains_and_frozen_collections_still_filter(coll):
    def keys(where):
        return {r[0] for r in coll.execute(f"SELECT k FROM coll WHERE {where} ALLOW FILTERING")}
    assert keys("s CONTAINS 1") == {1}
    assert keys("m CONTAINS KEY 0") == {0}
    assert keys("m[1] = 1") == {1}
    assert keys("fs = {1}") == {1}
    assert keys("fs > {0}") == {1}


def test_a_bound_whole_collection_is_refused_before_a_value_is_bound(coll):
    coll.execute("CREATE INDEX ON coll (s)")
    refused_everywhere(coll, "SELECT k FROM coll WHERE k = ? AND s = ?",
                       "Collection column 's' (set<int>) cannot be restricted by a '=' relation", [0, {0}])


@pytest.mark.parametrize("where, message", [
    ("u != {a: 0}", 'Unsupported "!=" relation: u != {a: 0}'),
    ("u IS NOT NULL", "Unsupported restriction: u IS NOT NULL"),
    ("u CONTAINS 0", 'Cannot use CONTAINS on non-collection column "u"'),
    ("u LIKE 'a'", "LIKE is allowed only on string types, which u is not"),
    ("n != 0", 'Unsupported "!=" relation: n != 0'),
    ("token(k) != 0", 'Unsupported "!=" relation: token(k) != 0'),
    ("m[0] > 0", "Only EQ relations are supported on map/list entries"),
    ("m[0] != 0", 'Unsupported "!=" relation: m[0] != 0'),
    ("n[0] = 0", "Column n cannot be subscripted"),
])
def test_operators_no_where_clause_takes_are_refused_at_prepare(coll, where, message):
    """A relation on a non-frozen user type is read as ScyllaDB reads it (a filter); the operators refused
    whatever the column are refused before any value is bound."""
    refused_everywhere(coll, f"SELECT k FROM coll WHERE {where} ALLOW FILTERING", message)


def test_a_non_frozen_user_type_is_filtered_by_value(coll):
    assert rows(coll.execute("SELECT k FROM coll WHERE u = {a: 1} ALLOW FILTERING")) == [(1,)]
    assert rows(coll.execute("SELECT k FROM coll WHERE fu = {a: 0} ALLOW FILTERING")) == [(0,)]
    with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
        coll.execute("SELECT k FROM coll WHERE u = {a: 1}")


def test_writes_keep_the_rules_of_their_where_clause(coll):
    refused_everywhere(coll, "DELETE FROM coll WHERE k = 0 AND s = {0}",
                       "Collection column 's' (set<int>) cannot be restricted by a '=' relation")
    refused_everywhere(coll, "UPDATE coll SET n = 1 WHERE k != 0", 'Unsupported "!=" relation: k != 0')
    assert rows(coll.execute("SELECT n FROM coll WHERE k = 0")) == [(0,)]


@pytest.fixture
def ck(session):
    session.execute("CREATE TABLE ck (a int, b int, c int, d int, PRIMARY KEY (a, b, c, d))")
    session.execute("INSERT INTO ck (a, b, c, d) VALUES (0, 1, 2, 3)")
    return session


@pytest.mark.parametrize("where, message", [
    ("b > 0 AND c = 2", 'Clustering column "c" cannot be restricted (preceding column "b" is restricted by a non-EQ '
                        'relation)'),
    ("b > 0 AND d = 3 AND c = 2", 'Clustering column "d" cannot be restricted (preceding column "b" is restricted '
                                  'by a non-EQ relation)'),
    ("c = 2 AND b > 0", 'PRIMARY KEY column "c" cannot be restricted (preceding column "b" is restricted by a non-EQ '
                        'relation)'),
    ("d = 3 AND b = 1 AND c > 0", 'PRIMARY KEY column "d" cannot be restricted (preceding column "c" is restricted '
                                  'by a non-EQ relation)'),
])
def test_clustering_relations_after_a_slice_are_named_in_the_order_written(ck, where, message):
    """Without ALLOW FILTERING, ScyllaDB names the columns of a clustering relation after a slice in the order the
    relations are written, at PREPARE; with it, the rows are filtered."""
    refused_everywhere(ck, f"SELECT * FROM ck WHERE a = 0 AND {where}", message)
    assert rows(ck.execute(f"SELECT b, c, d FROM ck WHERE a = 0 AND {where} ALLOW FILTERING")) == [(1, 2, 3)]


def test_a_delete_refuses_contains_on_a_clustering_column_in_scylladb_words(session):
    session.execute("CREATE TABLE fk (a int, b frozen<map<int, int>>, c int, PRIMARY KEY (a, b))")
    session.execute("INSERT INTO fk (a, b, c) VALUES (1, {1: 1}, 3)")
    for where in ("b CONTAINS 1", "b CONTAINS KEY 1"):
        with pytest.raises(InvalidRequest, match="^Cannot restrict clustering columns by a CONTAINS relation without a "
                                                 "secondary index or filtering$"):
            session.execute(f"DELETE FROM fk WHERE a = 1 AND {where}")
    assert rows(session.execute("SELECT c FROM fk")) == [(3,)]
