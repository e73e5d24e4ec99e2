"""Multi-column relations on clustering columns as Cassandra and ScyllaDB read them: a slice compares tuples value
by value, also over columns of mixed clustering order, and one column restricted by two multi-column relations
gets ScyllaDB's messages (docs/compatibility.md, "Queries")."""

from __future__ import annotations

import itertools
import operator

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows

COMPARE = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
VALUES = list(itertools.product(range(3), repeat=3))


@pytest.fixture
def mixed(session):
    """b descending, c ascending, d descending: every (b, c, d) in 0..2."""
    session.execute("CREATE TABLE t (a int, b int, c int, d int, PRIMARY KEY (a, b, c, d)) "
                    "WITH CLUSTERING ORDER BY (b DESC, c ASC, d DESC)")
    insert = session.prepare("INSERT INTO t (a, b, c, d) VALUES (0, ?, ?, ?)")
    for v in VALUES:
        session.execute(insert, v)
    return session


def clustering_order(values):
    return sorted(values, key=lambda v: (-v[0], v[1], -v[2]))


def tuple_text(bound):
    return "(" + ", ".join(map(str, bound)) + ")"


@pytest.mark.parametrize("op", sorted(COMPARE))
@pytest.mark.parametrize("bound", [(1, 1), (0, 2), (2, 0), (1, 1, 1), (1, 2, 0)])
def test_a_slice_over_mixed_order_columns_compares_tuples_value_by_value(mixed, op, bound):
    cols = "b, c, d"[:3 * len(bound) - 2]
    query = f"SELECT b, c, d FROM t WHERE a = 0 AND ({cols}) {op} {tuple_text(bound)}"
    expected = [v for v in clustering_order(VALUES) if COMPARE[op](v[:len(bound)], bound)]
    assert rows(mixed.execute(query)) == expected
    assert rows(mixed.execute(query + " ORDER BY b ASC, c DESC, d ASC")) == expected[::-1]


def test_two_bounds_over_mixed_order_columns_select_between_them(mixed):
    query = "SELECT b, c, d FROM t WHERE a = 0 AND (b, c, d) > (0, 1, 2) AND (b, c) <= (2, 0)"
    expected = [v for v in clustering_order(VALUES) if (0, 1, 2) < v and v[:2] <= (2, 0)]
    assert rows(mixed.execute(query)) == expected
    query = "SELECT b, c, d FROM t WHERE a = 0 AND (b) < (2) AND (b, c, d) >= (1, 1, 1)"
    assert rows(mixed.execute(query)) == [v for v in clustering_order(VALUES) if v[0] < 2 and v >= (1, 1, 1)]


def test_a_mixed_order_slice_pages_and_binds(mixed):
    query = mixed.prepare("SELECT b, c, d FROM t WHERE a = 0 AND (b, c) > ?")
    expected = [v for v in clustering_order(VALUES) if v[:2] > (0, 1)]
    got, state = [], None
    while True:
        page = mixed.execute(query, [(0, 1)], page_size=4, paging_state=state)
        got += rows(page)
        state = page.paging_state
        if state is None:
            break
    assert got == expected
    assert rows(mixed.execute(query, [None])) == []


def test_a_mixed_order_slice_in_a_delete_is_still_refused(mixed):
    with pytest.raises(InvalidRequest, match="Multi-column slice restrictions on clustering columns of mixed order"):
        mixed.execute("DELETE FROM t WHERE a = 0 AND (b, c) > (1, 1)")


@pytest.mark.parametrize("where, message", [
    ("(b) = (0) AND (b) > (0)", 'Column "b" cannot be restricted by both an equality and an inequality relation'),
    ("(b, c) IN ((0, 1)) AND (b) > (0)",
     'Column "b" cannot be restricted by both an equality and an inequality relation'),
    ("(b) > (0) AND (b) = (0)", "b cannot be restricted by more than one relation if it includes an Equal"),
    ("(b, c) > (0, 0) AND (b, c) IN ((1, 1))", "b ,c cannot be restricted by more than one relation if it includes a IN"),
    ("(b) > (0) AND (b) > (1)", "More than one restriction was found for the start bound on b"),
    ("(b) != (0)", 'Unsupported "!=" relation: (b) != (0)'),
])
def test_a_column_restricted_by_two_multi_column_relations(session, where, message):
    session.execute("CREATE TABLE t2 (a int, b int, c int, PRIMARY KEY (a, b, c))")
    with pytest.raises(InvalidRequest) as e:
        session.execute(f"SELECT * FROM t2 WHERE a = 0 AND {where}")
    assert str(e.value) == message
    session.execute("SELECT * FROM t2 WHERE a = 0 AND (b) > (0) AND (b) < (2)")


@pytest.fixture
def plain(session):
    session.execute("CREATE TABLE p (a int, b int, c int, d int, v int, PRIMARY KEY (a, b, c, d))")
    insert = session.prepare("INSERT INTO p (a, b, c, d, v) VALUES (0, ?, ?, ?, ?)")
    for b, c, d in VALUES:
        session.execute(insert, (b, c, d, b * 100 + c * 10 + d))
    return session


def test_a_multi_column_in_selects_the_rows_of_its_tuples(plain):
    assert rows(plain.execute("SELECT v FROM p WHERE a = 0 AND (b, c, d) IN ((1, 2, 0), (0, 1, 2), (9, 9, 9))")) == [
        (12,), (120,)]
    assert rows(plain.execute("SELECT v FROM p WHERE a = 0 AND (b, c) IN ((2, 2), (0, 1)) ORDER BY b DESC")) == [
        (222,), (221,), (220,), (12,), (11,), (10,)]
    prepared = plain.prepare("SELECT v FROM p WHERE a = 0 AND (b, c, d) IN ?")
    assert rows(plain.execute(prepared, ([(2, 0, 1), (1, 1, 1)],))) == [(111,), (201,)]
    assert rows(plain.execute("SELECT v FROM p WHERE a = 0 AND (b, c, d) IN ()")) == []


@pytest.mark.parametrize("where, message", [
    ("(b, c, d) IN ((1, 2), (0, 1, 2))", r"^Expected 3 elements in value tuple, but got 2: \(1, 2\)$"),
    ("(b, c, d) = (1, 2)", r"^Expected 3 elements in value tuple, but got 2: \(1, 2\)$"),
    ("(c, d) IN ((1, 2))", "^Clustering columns may not be skipped in multi-column relations. "
                           "They should appear in the PRIMARY KEY order$"),
    ("(b, d) IN ((1, 2))", "^Clustering columns must appear in the PRIMARY KEY order in multi-column relations$"),
    ("(b, v) IN ((1, 2))", "^Multi-column relations can only be applied to clustering columns but was applied to: v$"),
])
def test_a_multi_column_relation_is_refused_with_scylla_messages(plain, where, message):
    with pytest.raises(InvalidRequest, match=message):
        plain.execute(f"SELECT v FROM p WHERE a = 0 AND {where}")


@pytest.mark.parametrize("where", [
    "(b) > (0) AND b > 1", "b <= 2 AND (b, c) < (0, 1)", "b = 1 AND (b, c, d) = (1, 2, 0)", "b = 1 AND (b, c) = (1, 2)",
    "(b, c) = (1, 2) AND d = 0", "(b, c) IN ((1, 2)) AND d >= 0", "(b) > (1) AND b < 3 AND c = 0 AND d = 0",
    "(b, c) > (1, 0) AND d = 1", "b IN (1, 2) AND (b) IN ((1))", "(b, c) > (1, 1) AND c NOT IN (0)",
])
def test_single_and_multi_column_relations_on_clustering_columns_do_not_mix(plain, where):
    """ScyllaDB refuses every mix of the two forms on clustering columns, with or without ALLOW FILTERING
    (its issue #4244), where Cassandra reads some; the refusal comes at PREPARE, before any value is bound."""
    for allow in ("", " ALLOW FILTERING"):
        with pytest.raises(InvalidRequest) as e:
            plain.execute(f"SELECT * FROM p WHERE a = 0 AND {where}{allow}")
        assert str(e.value) == ("Mixing single column relations and multi column relations on clustering columns is "
                                "not allowed")
    with pytest.raises(InvalidRequest, match="^Mixing single column relations"):
        plain.prepare(f"SELECT * FROM p WHERE a = ? AND {where}")


def test_multi_column_relations_mix_with_relations_on_other_columns(plain):
    assert rows(plain.execute("SELECT b, c, d FROM p WHERE a = 0 AND (b, c) > (2, 1) AND v = 222 ALLOW FILTERING")) \
        == [(2, 2, 2)]
    assert rows(plain.execute("SELECT b, c, d FROM p WHERE a IN (0, 1) AND (b, c, d) >= (2, 2, 1)")) == [
        (2, 2, 1), (2, 2, 2)]


@pytest.mark.parametrize("where", ["(c, d) > (1, 1) AND v = 0", "b = 1 AND (d) < (2) AND v = 0",
                                   "(b, c) > (1, 0) AND (d) < (2)", "(c) = (1)"])
def test_a_multi_column_relation_after_an_unrestricted_clustering_column_is_refused(plain, where):
    """A multi-column relation starts at the first clustering column, with or without ALLOW FILTERING
    (ScyllaDB's rule; Cassandra says "Multi-column slice restrictions cannot be used for filtering")."""
    with pytest.raises(InvalidRequest) as e:
        plain.execute(f"SELECT * FROM p WHERE a = 0 AND {where} ALLOW FILTERING")
    assert str(e.value) == ("Clustering columns may not be skipped in multi-column relations. They should appear in "
                            "the PRIMARY KEY order")
