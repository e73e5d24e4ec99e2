"""WHERE clauses of SELECT read as ScyllaDB reads them: NOT IN, LIKE, m[key] and l[index] filters, null
compared with anything matching nothing, a column restricted more than once, partition-key slices
with ALLOW FILTERING, IN partitions in key order (docs/compatibility.md, "Queries")."""

from __future__ import annotations

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (p1 int, p2 int, c int, v int, s text, PRIMARY KEY ((p1, p2), c))")
    for i in range(1, 6):
        v = "null" if i == 5 else i + 3
        session.execute(f"INSERT INTO t (p1, p2, c, v, s) VALUES ({i}, {i + 1}, {i + 2}, {v}, 'v{i}')")
    return session


def keys(result) -> set:
    return {r[0] for r in result}


def test_not_in_filters_rows_whose_value_is_none_of_the_values(t):
    assert keys(t.execute("SELECT p1 FROM t WHERE p1 NOT IN (2, 4) ALLOW FILTERING")) == {1, 3, 5}
    assert keys(t.execute("SELECT p1 FROM t WHERE c NOT IN (3, 5) ALLOW FILTERING")) == {2, 4, 5}
    assert keys(t.execute("SELECT p1 FROM t WHERE v NOT IN (5, 7) ALLOW FILTERING")) == {1, 3}  # null v: no match
    assert keys(t.execute("SELECT p1 FROM t WHERE v NOT IN (5, NULL) ALLOW FILTERING")) == set()
    assert keys(t.execute("SELECT p1 FROM t WHERE v NOT IN ? ALLOW FILTERING", [[4, 6]])) == {2, 4}
    with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
        t.execute("SELECT p1 FROM t WHERE p1 NOT IN (2, 4)")


def test_like_matches_whole_strings_with_percent_underscore_and_escapes(t):
    t.execute("INSERT INTO t (p1, p2, c, s) VALUES (9, 9, 9, 'a%b_c')")
    assert keys(t.execute("SELECT p1 FROM t WHERE s LIKE 'v%' ALLOW FILTERING")) == {1, 2, 3, 4, 5}
    assert keys(t.execute("SELECT p1 FROM t WHERE s LIKE '_3' ALLOW FILTERING")) == {3}
    assert keys(t.execute("SELECT p1 FROM t WHERE s LIKE 'v' ALLOW FILTERING")) == set()
    assert keys(t.execute(r"SELECT p1 FROM t WHERE s LIKE 'a\%b\_c' ALLOW FILTERING")) == {9}
    assert keys(t.execute(r"SELECT p1 FROM t WHERE s LIKE 'a\%b\_' ALLOW FILTERING")) == set()
    with pytest.raises(InvalidRequest, match="LIKE is allowed only on string types, which v is not"):
        t.execute("SELECT p1 FROM t WHERE v LIKE '1' ALLOW FILTERING")


def test_like_on_a_descending_clustering_column(session):
    session.execute("CREATE TABLE d (a int, b text, PRIMARY KEY (a, b)) WITH CLUSTERING ORDER BY (b DESC)")
    session.execute("INSERT INTO d (a, b) VALUES (1, 'one')")
    assert rows(session.execute("SELECT b FROM d WHERE b LIKE '%n%' ALLOW FILTERING")) == [("one",)]


def test_map_and_list_subscripts_filter_rows(session):
    session.execute("CREATE TABLE m (p int PRIMARY KEY, m map<int, int>, t map<text, text>, l list<text>, "
                    "s set<int>, f frozen<map<int, int>>)")
    session.execute("INSERT INTO m (p, m, t, l) VALUES (1, {1: 2, 3: 4}, {'dog': 'cat'}, ['zero', 'one'])")
    session.execute("INSERT INTO m (p, m) VALUES (2, {2: 3})")
    session.execute("INSERT INTO m (p) VALUES (3)")
    assert keys(session.execute("SELECT p FROM m WHERE m[1] = 2 ALLOW FILTERING")) == {1}
    assert keys(session.execute("SELECT p FROM m WHERE t['dog'] = 'cat' ALLOW FILTERING")) == {1}
    assert keys(session.execute("SELECT p FROM m WHERE m[?] = 3 ALLOW FILTERING", [2])) == {2}
    assert keys(session.execute("SELECT p FROM m WHERE l[1] = 'one' ALLOW FILTERING")) == {1}
    assert keys(session.execute("SELECT p FROM m WHERE l[5] = 'one' ALLOW FILTERING")) == set()
    assert keys(session.execute("SELECT p FROM m WHERE l[-1] = 'one' ALLOW FILTERING")) == set()
    assert keys(session.execute("SELECT p FROM m WHERE m[null] = 2 ALLOW FILTERING")) == set()
    assert keys(session.execute("SELECT p FROM m WHERE m[?] = 2 ALLOW FILTERING", [None])) == set()
    for query, message in [
        ("SELECT p FROM m WHERE s[2] = 3 ALLOW FILTERING", "Column s cannot be subscripted"),
        ("SELECT p FROM m WHERE f[2] = 3 ALLOW FILTERING", "Map-entry equality predicates on frozen map column f"),
        ("SELECT p FROM m WHERE m[1] > 3 ALLOW FILTERING", "Only EQ relations are supported on map/list entries"),
        ("SELECT p FROM m WHERE m['x'] = 3 ALLOW FILTERING", r"key\(m\)"),
        ("SELECT p FROM m WHERE l['x'] = 'a' ALLOW FILTERING", "Invalid STRING constant"),
        ("SELECT p FROM m WHERE m[1] = 2", "ALLOW FILTERING"),
    ]:
        with pytest.raises(InvalidRequest, match=message):
            session.execute(query)


def test_a_comparison_with_null_matches_no_row(t):
    for op in ("=", ">", ">=", "<", "<="):
        assert rows(t.execute(f"SELECT p1 FROM t WHERE v {op} NULL ALLOW FILTERING")) == []
        with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
            t.execute(f"SELECT p1 FROM t WHERE p1 = 1 AND p2 = 2 AND v {op} NULL")
    assert rows(t.execute("SELECT p1 FROM t WHERE v IN ? ALLOW FILTERING", [None])) == []


def test_a_null_key_value_selects_nothing(t):
    assert rows(t.execute("SELECT p1 FROM t WHERE p1 = null AND p2 = 2")) == []
    assert rows(t.execute("SELECT p1 FROM t WHERE p1 IN ? AND p2 = 2", [None])) == []
    assert rows(t.execute("SELECT p1 FROM t WHERE p1 = 1 AND p2 = 2 AND c = null")) == []
    assert rows(t.execute("SELECT p1 FROM t WHERE p1 = 1 AND p2 = 2 AND (c) IN ?", [None])) == []
    assert rows(t.execute("SELECT count(*) FROM t WHERE p1 = null AND p2 = 2")) == [(0,)]


def test_contains_null_matches_no_row(session):
    session.execute("CREATE TABLE c (p int PRIMARY KEY, s set<int>, m map<int, int>)")
    session.execute("INSERT INTO c (p, s, m) VALUES (1, {1}, {1: 2})")
    assert rows(session.execute("SELECT p FROM c WHERE s CONTAINS NULL ALLOW FILTERING")) == []
    assert rows(session.execute("SELECT p FROM c WHERE m CONTAINS KEY NULL ALLOW FILTERING")) == []


def test_a_column_restricted_twice_selects_the_intersection(session):
    session.execute("CREATE TABLE r (a int, b int, PRIMARY KEY (a, b))")
    for b in (0, 3, 5):
        session.execute(f"INSERT INTO r (a, b) VALUES (1, {b})")

    def bs(where: str) -> list[int]:
        return [r[0] for r in session.execute(f"SELECT b FROM r WHERE a = 1 AND {where}")]
    assert bs("b = 3 AND b = 4") == [] and bs("b = 3 AND b = 3") == [3]
    assert bs("b = 3 AND b > 4") == [] and bs("b > 2 AND b = 3") == [3]
    assert bs("b = 3 AND b < 4") == [3] and bs("b < 2 AND b = 3") == []
    assert bs("b > 2 AND b > 1") == [3, 5] and bs("b > 1 AND b > 4") == [5]
    assert bs("b < 4 AND b < 1") == [0] and bs("b >= 3 AND b > 3") == [5]
    assert bs("b = 3 AND b IN (2, 3)") == [3] and bs("b IN (0, 3) AND b IN (3, 5)") == [3]
    assert rows(session.execute("SELECT b FROM r WHERE a = 1 AND a = 2")) == []
    assert rows(session.execute("SELECT b FROM r WHERE a = 1 AND a IN (1, 2) AND b = 0")) == [(0,)]


def test_multi_column_bounds_on_the_same_side_are_still_refused(session):
    session.execute("CREATE TABLE r (a int, b int, c int, PRIMARY KEY (a, b, c))")
    with pytest.raises(InvalidRequest, match="More than one restriction was found for the end bound on b"):
        session.execute("SELECT b FROM r WHERE a = 0 AND (b) < (1) AND (b, c) < (1, 2)")


def test_partition_key_slices_need_allow_filtering(t):
    with pytest.raises(InvalidRequest, match=r"Only EQ and IN relation are supported on the partition key "
                                             r"\(unless you use the token\(\) function or ALLOW FILTERING\)"):
        t.execute("SELECT p1 FROM t WHERE p1 > 2")
    assert keys(t.execute("SELECT p1 FROM t WHERE p1 > 2 ALLOW FILTERING")) == {3, 4, 5}
    assert keys(t.execute("SELECT p1 FROM t WHERE p1 > 2 AND p2 <= 5 ALLOW FILTERING")) == {3, 4}


def test_in_on_the_partition_key_returns_partitions_in_key_order(session):
    session.execute("CREATE TABLE k (k int, c int, v int, PRIMARY KEY (k, c))")
    session.execute("CREATE TABLE kk (a int, b text, v int, PRIMARY KEY ((a, b)))")
    for k in (0, 1, 6, 7):
        session.execute(f"INSERT INTO k (k, c, v) VALUES ({k}, 0, {k})")
        session.execute(f"INSERT INTO kk (a, b, v) VALUES ({k % 2}, '{k}', {k})")
    assert rows(session.execute("SELECT k FROM k WHERE k IN (7, 1, 6, 0, 1)")) == [(0,), (1,), (6,), (7,)]
    assert rows(session.execute("SELECT a, b FROM kk WHERE a IN (1, 0) AND b IN ('7', '0', '1', '6')")) == [
        (0, "0"), (0, "6"), (1, "1"), (1, "7")]
    got, state = [], None
    while True:
        page = session.execute("SELECT k FROM k WHERE k IN (7, 1, 6, 0)", page_size=1, paging_state=state)
        got += rows(page)
        state = page.paging_state
        if state is None:
            break
    assert got == [(0,), (1,), (6,), (7,)]


@pytest.mark.parametrize("query, message", [
    ("SELECT * FROM t WHERE token(p1, p1) = 0", "The token\\(\\) function contains duplicate partition key components"),
    ("SELECT * FROM t WHERE token(p1) = 0", "must be applied to all partition key components or none of them"),
    ("SELECT * FROM t WHERE token(p2, p1) = 0", "The token function arguments must be in the partition key order"),
    ("SELECT * FROM t WHERE p1 = 0 AND p2 = 0 AND (c) IN ((1, 2))", "Expected 1 elements in value tuple, but got 2"),
    ("SELECT * FROM t WHERE p1 = 0 AND p2 = 0 AND (c) = (1, 2)", "Expected 1 elements in value tuple, but got 2"),
    ("SELECT * FROM t WHERE p1 = 0 AND p2 = 0 AND (c) IN ((null))", "Invalid null value in condition for column c"),
])
def test_restriction_refusals(t, query, message):
    with pytest.raises(InvalidRequest, match=message):
        t.execute(query)


def test_writes_keep_the_stricter_rules(t):
    with pytest.raises(InvalidRequest, match="Invalid null value in condition for column p1"):
        t.execute("DELETE FROM t WHERE p1 IN ? AND p2 = 1", [None])
    with pytest.raises(InvalidRequest, match="p1 cannot be restricted by more than one relation"):
        t.execute("DELETE FROM t WHERE p1 = 1 AND p1 = 1 AND p2 = 1")
    with pytest.raises(InvalidRequest, match="NOT IN restrictions are only supported in SELECT"):
        t.execute("DELETE FROM t WHERE p1 NOT IN (1) AND p2 = 1")


def test_durations_filter_by_equality_and_refuse_an_order(session):
    session.execute("CREATE TYPE span (d duration, i int)")
    session.execute("CREATE TABLE durs (k int PRIMARY KEY, d duration, l list<duration>, fl frozen<list<duration>>, "
                    "m map<int, duration>, tu frozen<tuple<int, duration>>, sp frozen<span>)")
    session.execute("INSERT INTO durs (k, d, l, fl, m, tu, sp) VALUES (0, 1s, [1s, 2s], [1s, 2s], {1: 1s}, (1, 1s), "
                    "{d: 1s, i: 1})")
    session.execute("INSERT INTO durs (k, d, l, fl, m, tu, sp) VALUES (1, 2s, [2s, 3s], [2s], {1: 2s}, (1, 2s), "
                    "{d: 2s, i: 1})")
    for where, keys in [("d = 1s", {0}), ("d IN (2s, 1s)", {0, 1}), ("d NOT IN (2s)", {0}), ("fl = [1s, 2s]", {0}),
                        ("l CONTAINS 3s", {1}), ("m[1] = 2s", {1}), ("tu = (1, 2s)", {1}),
                        ("sp = {d: 1s, i: 1}", {0}), ("d = 1mo", set())]:
        assert {r[0] for r in session.execute(f"SELECT k FROM durs WHERE {where} ALLOW FILTERING")} == keys, where
    for where, column in [("d > 1s", "d"), ("fl <= [1s]", "fl"), ("tu >= (1, 2s)", "tu"), ("sp < {d: 1s, i: 1}", "sp")]:
        with pytest.raises(InvalidRequest, match=f"^Duration type is unordered for {column}$"):
            session.execute(f"SELECT k FROM durs WHERE {where} ALLOW FILTERING")


@pytest.mark.parametrize("where, message", [
    ("b > 20 AND c = 33", 'Clustering column "c" cannot be restricted (preceding column "b" is restricted by a non-EQ '
                          'relation)'),
    ("a = 11 AND b > 12 AND c > 13 AND d = 17", 'Clustering column "c" cannot be restricted (preceding column "b" is '
                                                'restricted by a non-EQ relation)'),
    ("b > 20 AND l CONTAINS 2", 'Clustering column "l" cannot be restricted (preceding column "b" is restricted by a '
                                'non-EQ relation)'),
    ("c = 33", 'PRIMARY KEY column "c" cannot be restricted as preceding column "b" is not restricted'),
    ("c = 33 AND d = 1", 'PRIMARY KEY column "c" cannot be restricted as preceding column "b" is not restricted'),
    ("a = 21 AND b = 1 AND c = 2 AND l CONTAINS 2",
     "Cannot restrict clustering columns by a CONTAINS relation without a secondary index or filtering"),
    ("a = 1 AND d = 1", "Cannot execute this query as it might involve data filtering and thus may have unpredictable "
                        "performance. If you want to execute this query despite the performance unpredictability, use "
                        "ALLOW FILTERING"),
])
def test_clustering_restrictions_that_need_filtering_say_why_in_scylladbs_order(session, where, message):
    session.execute("CREATE TABLE gaps (a int, b int, c int, l frozen<list<int>>, d int, PRIMARY KEY (a, b, c, l))")
    with pytest.raises(InvalidRequest) as e:
        session.execute(f"SELECT * FROM gaps WHERE {where}")
    assert str(e.value) == message
    assert rows(session.execute(f"SELECT * FROM gaps WHERE {where} ALLOW FILTERING")) == []


def test_order_by_may_skip_clustering_columns_restricted_to_one_value(session):
    session.execute("CREATE TABLE ob (a int, b int, c int, d int, PRIMARY KEY (a, b, c))")
    for b in range(2):
        for c in range(3):
            session.execute(f"INSERT INTO ob (a, b, c, d) VALUES (0, {b}, {c}, {3 * b + c})")
    for where, order, expected in [("b = 0", "c", [0, 1, 2]), ("b = 0", "c DESC", [2, 1, 0]),
                                   ("b IN (1) AND c >= 1", "c DESC", [5, 4]), ("(b, c) = (0, 1)", "c DESC", [1]),
                                   ("b = 1", "b DESC, c DESC", [5, 4, 3])]:
        got = rows(session.execute(f"SELECT d FROM ob WHERE a = 0 AND {where} ORDER BY {order}"))
        assert got == [(d,) for d in expected], (where, order)
    for where, params in [("b IN (0, 1)", None), ("b < 1", None), ("(b, c) > (0, 0)", None), ("c = 1", None),
                          ("b IN ?", [[0]]), ("(b, c) IN ?", [[(0, 0)]])]:
        with pytest.raises(InvalidRequest, match="^Order by currently only supports the ordering of columns following "
                                                 "their declared order in the PRIMARY KEY$"):
            session.execute(f"SELECT d FROM ob WHERE a = 0 AND {where} ORDER BY c ALLOW FILTERING", params)


def test_a_partition_key_over_64k_is_refused_by_a_select_as_by_a_write(session):
    session.execute("CREATE TABLE big (a text, b text, PRIMARY KEY (a, b))")
    session.execute("CREATE TABLE big2 (a text, a2 text, b text, PRIMARY KEY ((a, a2), b))")
    with pytest.raises(InvalidRequest, match="^Key length of 66560 is longer than maximum of 65535$"):
        session.execute("SELECT * FROM big WHERE a = ?", ["x" * 66560])
    with pytest.raises(InvalidRequest, match="^Key length of 66564 is longer than maximum of 65535$"):
        session.execute("SELECT * FROM big2 WHERE a = ? AND a2 IN ('', 'y')", ["x" * 66560])
    assert rows(session.execute("SELECT * FROM big WHERE a = ?", ["x" * 65535])) == []


@pytest.fixture
def one_partition(session):
    session.execute("CREATE TABLE op (p int, c1 int, c2 text, c3 int, v int, s int STATIC, "
                    "PRIMARY KEY (p, c1, c2, c3))")
    for p in (0, 1):
        for c1 in range(3):
            session.execute(f"INSERT INTO op (p, c1, c2, c3, v) VALUES ({p}, {c1}, 'x{c1}', {c1 * 10}, {c1})")
    return session


@pytest.mark.parametrize("where, params, expected", [
    ("p = 0 AND c1 NOT IN ?", [[1]], [(0, 0), (0, 2)]),
    ("p = 0 AND c1 NOT IN (0, 2)", None, [(0, 1)]),
    ("p IN (0, 1) AND c1 NOT IN (0, 2)", None, [(0, 1), (1, 1)]),
    ("p = 0 AND c1 = 1 AND c2 LIKE 'x%'", None, [(0, 1)]),
    ("p = 0 AND c1 NOT IN (0) AND c2 = 'x2'", None, [(0, 2)]),  # both filtered: still a prefix
    ("p = 0 AND c1 NOT IN (0) AND c2 LIKE '%1' AND c3 >= 0", None, [(0, 1)]),
    ("p = 0 AND c1 > 0 AND c1 NOT IN (2)", None, [(0, 1)]),
])
def test_a_filter_on_a_clustering_prefix_inside_named_partitions_needs_no_allow_filtering(one_partition, where,
                                                                                           params, expected):
    """ScyllaDB filters the rows of the partitions the key names without ALLOW FILTERING when the restricted
    clustering columns are a prefix of the clustering key, whatever the relations on them."""
    assert rows(one_partition.execute(f"SELECT p, c1 FROM op WHERE {where}", params)) == expected


@pytest.mark.parametrize("where, message", [
    ("c1 NOT IN (1)", "use ALLOW FILTERING"),  # no partition named: a scan
    ("token(p) > 0 AND c1 NOT IN (1)", "use ALLOW FILTERING"),
    ("p = 0 AND v NOT IN (1)", "use ALLOW FILTERING"),  # a regular column
    ("p = 0 AND s = 1", "use ALLOW FILTERING"),  # a static column
    ("p > 0 AND c1 NOT IN (1)", "Only EQ and IN relation are supported on the partition key"),
    ("p = 0 AND c2 NOT IN ('x1')", 'PRIMARY KEY column "c2" cannot be restricted as preceding column "c1" is not '
                                   'restricted'),
    ("p = 0 AND c1 = 0 AND c3 NOT IN (1)", 'PRIMARY KEY column "c3" cannot be restricted as preceding column "c2" '
                                           'is not restricted'),
    ("p = 0 AND c3 = 1", 'PRIMARY KEY column "c3" cannot be restricted as preceding column "c1" is not restricted'),
    ("p = 0 AND c1 > 0 AND c2 NOT IN ('x')", 'Clustering column "c2" cannot be restricted (preceding column "c1" is '
                                             'restricted by a non-EQ relation)'),
])
def test_filters_still_refused_without_allow_filtering(one_partition, where, message):
    """What ScyllaDB still refuses without ALLOW FILTERING: a scan, a regular or static column, a gap in the
    clustering columns (named by the first missing column), a column after a slice."""
    with pytest.raises(InvalidRequest) as e:
        one_partition.execute(f"SELECT p, c1 FROM op WHERE {where}")
    assert message in str(e.value)
    one_partition.execute(f"SELECT p, c1 FROM op WHERE {where} ALLOW FILTERING")


def test_a_select_refuses_a_clustering_key_longer_than_a_key_may_be(session):
    """As ScyllaDB (its issue #10366): a clustering value over 64 KiB in a SELECT is refused as a partition key's
    is, by equality, IN or a slice bound; Cassandra reads nothing."""
    session.execute("CREATE TABLE big_ck (a text, b text, PRIMARY KEY (a, b))")
    too_big = "x" * 65 * 1024
    for where in ("b = ?", "b IN ('a', ?)", "b > ?", "(b) <= (?)"):
        with pytest.raises(InvalidRequest, match="^Key length of 66560 is longer than maximum of 65535$"):
            session.execute(f"SELECT * FROM big_ck WHERE a = 'k' AND {where}", [too_big])
    assert rows(session.execute("SELECT * FROM big_ck WHERE a = 'k' AND b = ?", ["x" * 65535])) == []
