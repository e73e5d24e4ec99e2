"""GROUP BY and aggregates: groups of a primary-key prefix, first-row values, limits and pages that
count groups, and ScyllaDB's refusals (docs/compatibility.md, "Queries")."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (p int, c1 int, c2 int, v int, s int static, PRIMARY KEY (p, c1, c2))")
    for p in (0, 1):
        for c1 in (0, 1):
            for c2 in (0, 1):
                session.execute(f"INSERT INTO t (p, c1, c2, v) VALUES ({p}, {c1}, {c2}, {p * 4 + c1 * 2 + c2 + 1})")
    return session


def by_p(result) -> list[tuple]:
    return sorted(rows(result))


def test_group_by_partition_gives_each_partitions_first_row(t):
    assert by_p(t.execute("SELECT p, c1, c2, v FROM t GROUP BY p")) == [(0, 0, 0, 1), (1, 0, 0, 5)]
    assert rows(t.execute("SELECT * FROM t WHERE p = 0 GROUP BY p")) == [(0, 0, 0, None, 1)]


def test_group_by_after_filtering_takes_the_first_matching_row(t):
    got = by_p(t.execute("SELECT p, c1, c2, v FROM t WHERE c2 > 0 GROUP BY p ALLOW FILTERING"))
    assert got == [(0, 0, 1, 2), (1, 0, 1, 6)]


def test_group_by_a_clustering_prefix_gives_one_row_per_prefix(t):
    assert rows(t.execute("SELECT p, c1, c2, v FROM t WHERE p = 0 GROUP BY p, c1")) == [(0, 0, 0, 1), (0, 1, 0, 3)]
    assert rows(t.execute("SELECT p, c1, c2 FROM t WHERE p = 0 GROUP BY p, c1, c2")) == [
        (0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1)]


def test_equality_restricted_key_columns_may_be_left_out_of_group_by(t):
    assert rows(t.execute("SELECT c1, v FROM t WHERE p = 0 GROUP BY c1")) == [(0, 1), (1, 3)]
    assert rows(t.execute("SELECT c2, v FROM t WHERE p = 1 AND c1 = 1 GROUP BY c2")) == [(0, 7), (1, 8)]


def test_aggregates_are_computed_per_group_and_other_selectors_come_from_its_first_row(t):
    assert by_p(t.execute("SELECT p, count(*), sum(v), v FROM t GROUP BY p")) == [(0, 4, 10, 1), (1, 4, 26, 5)]
    assert rows(t.execute("SELECT c1, min(v), max(v), avg(v) FROM t WHERE p = 1 GROUP BY c1")) == [
        (0, 5, 6, 5), (1, 7, 8, 7)]


def test_limit_and_per_partition_limit_count_groups_not_rows(t):
    everything = rows(t.execute("SELECT p, c1, count(*) FROM t GROUP BY p, c1"))
    assert len(everything) == 4 and all(r[2] == 2 for r in everything)
    for n in range(1, 5):
        assert rows(t.execute(f"SELECT p, c1, count(*) FROM t GROUP BY p, c1 LIMIT {n}")) == everything[:n]
    assert by_p(t.execute("SELECT p, c1, count(*) FROM t GROUP BY p, c1 PER PARTITION LIMIT 1")) == [
        (0, 0, 2), (1, 0, 2)]


def test_a_query_matching_no_row_gives_no_group_but_one_row_of_empty_aggregates_without_group_by(t):
    assert rows(t.execute("SELECT p, count(*) FROM t WHERE p = 7 GROUP BY p")) == []
    assert rows(t.execute("SELECT p, count(*), count(v), min(v), sum(v), avg(v) FROM t WHERE p = 7")) == [
        (None, 0, 0, None, 0, 0)]
    assert rows(t.execute("SELECT count(*), min(v) FROM t WHERE p IN ()")) == [(0, None)]


def test_a_static_only_partition_is_a_group_with_null_clustering(t):
    t.execute("UPDATE t SET s = 3 WHERE p = 9")
    t.execute("UPDATE t SET s = 2 WHERE p = 0")
    got = by_p(t.execute("SELECT p, c1, s, count(c1), count(s) FROM t GROUP BY p"))
    assert got == [(0, 0, 2, 4, 4), (1, 0, None, 4, 0), (9, None, 3, 0, 1)]


def test_pages_of_a_grouped_query_end_after_whole_groups(t):
    unpaged = rows(t.execute("SELECT p, c1, sum(v) FROM t GROUP BY p, c1"))
    for size in (1, 2, 3):
        got, state = [], None
        while True:
            page = t.execute("SELECT p, c1, sum(v) FROM t GROUP BY p, c1", page_size=size, paging_state=state)
            assert len(page.rows) <= size
            got += rows(page)
            state = page.paging_state
            if state is None:
                break
        assert got == unpaged
    page = t.execute("SELECT p, c1, sum(v) FROM t GROUP BY p, c1 LIMIT 3", page_size=2)
    rest = t.execute("SELECT p, c1, sum(v) FROM t GROUP BY p, c1 LIMIT 3", page_size=2, paging_state=page.paging_state)
    assert rows(page) + rows(rest) == unpaged[:3] and rest.paging_state is None


def test_group_by_follows_order_by_desc(t):
    assert rows(t.execute("SELECT c1, v, count(*) FROM t WHERE p = 0 GROUP BY c1 ORDER BY c1 DESC")) == [
        (1, 4, 2), (0, 2, 2)]


def test_distinct_with_group_by_partition_counts_one_row_per_partition(t):
    assert by_p(t.execute("SELECT DISTINCT p, count(p) FROM t GROUP BY p")) == [(0, 1), (1, 1)]
    assert by_p(t.execute("SELECT DISTINCT p, count(p) FROM t GROUP BY p LIMIT 1")) in ([(0, 1)], [(1, 1)])


@pytest.mark.parametrize("query, message", [
    ("SELECT v FROM t GROUP BY zzz", "Group by unknown column zzz"),
    ("SELECT v FROM t GROUP BY v", "Group by non-primary-key column v"),
    ("SELECT v FROM t GROUP BY c1", "Group by column c1 is out of order"),
    ("SELECT v FROM t GROUP BY p, c2", "Group by column c2 is out of order"),
    ("SELECT v FROM t GROUP BY c1, p", "Group by column c1 is out of order"),
    ("SELECT v FROM t WHERE p IN (0, 1) GROUP BY c1", "Group by column c1 is out of order"),
    ("SELECT DISTINCT p FROM t GROUP BY p, c1", "Grouping on clustering columns is not allowed for SELECT DISTINCT queries"),
    ("SELECT DISTINCT p FROM t PER PARTITION LIMIT 1", "PER PARTITION LIMIT is not allowed with SELECT DISTINCT queries"),
    ("SELECT count(*) FROM t PER PARTITION LIMIT 1", "PER PARTITION LIMIT is not allowed with aggregate queries."),
    ("SELECT sum(count(*)) FROM t", "SELECT clause contains aggeregation of an aggregation"),
    ("SELECT * FROM t WHERE p = sum((int)4)", "Aggregation functions are not supported"),
    ("SELECT sum(c1) FROM t WHERE p = 0 GROUP BY", "mismatched input"),
])
def test_group_by_and_aggregate_refusals(t, query, message):
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        t.execute(query)


def test_scalar_functions_of_aggregates_see_the_aggregate(session):
    session.execute("CREATE TABLE u (a int, b timeuuid, PRIMARY KEY (a, b))")
    session.execute("INSERT INTO u (a, b) VALUES (0, 13814000-1dd2-11ff-8080-808080808080)")
    session.execute("INSERT INTO u (a, b) VALUES (0, 6b1b3620-33fd-11eb-8080-808080808080)")
    result = session.execute("SELECT todate(min(b)), todate(max(b)) FROM u WHERE a = 0")
    assert [c.name for c in result.columns] == ["system.todate(system.min(b))", "system.todate(system.max(b))"]
    assert [(str(x), str(y)) for x, y in rows(result)] == [("2020-12-01", "2038-09-06")]


def test_decimal_average_keeps_the_sums_scale_rounded_half_to_even(session):
    session.execute("CREATE TABLE d (p int, c int, dc decimal, PRIMARY KEY (p, c))")
    for p, values in enumerate([("1", "2"), ("1.0", "2.0"), ("1.1", "1.2"), ("1", "2", "2", "3"), ("2.5", "3.5")]):
        for c, v in enumerate(values):
            session.execute(f"INSERT INTO d (p, c, dc) VALUES ({p}, {c}, {v})")
    got = [rows(session.execute(f"SELECT avg(dc) FROM d WHERE p = {p}"))[0][0] for p in range(5)]
    assert got == [Decimal("2"), Decimal("1.5"), Decimal("1.2"), Decimal("2"), Decimal("3.0")]


def test_sums_of_large_decimals_are_exact(session):
    session.execute("CREATE TABLE d (p int, c int, dc decimal, PRIMARY KEY (p, c))")
    big = "123456789012345678901234567890.123456789"
    session.execute(f"INSERT INTO d (p, c, dc) VALUES (0, 0, {big})")
    session.execute("INSERT INTO d (p, c, dc) VALUES (0, 1, 0.000000001)")
    assert rows(session.execute("SELECT sum(dc) FROM d WHERE p = 0")) == [
        (Decimal("123456789012345678901234567890.123456790"),)]


def test_group_by_keeps_write_time_and_ttl_of_the_first_row(t, clock):
    t.execute("INSERT INTO t (p, c1, c2, v) VALUES (5, 0, 0, 1) USING TIMESTAMP 100 AND TTL 1000")
    t.execute("INSERT INTO t (p, c1, c2, v) VALUES (5, 0, 1, 2) USING TIMESTAMP 200")
    assert rows(t.execute("SELECT v, writetime(v), ttl(v) FROM t WHERE p = 5 GROUP BY p")) == [(1, 100, 1000)]


def test_count_of_a_literal_counts_rows(t):
    assert rows(t.execute("SELECT count(1), count('x'), count(*) FROM t WHERE p = 0")) == [(4, 4, 4)]
    with pytest.raises(InvalidRequest, match=r"count\(\) function is only valid when argument types are known"):
        t.execute("SELECT count(?) FROM t", [1])


def test_timestamps_out_of_datetime_range_from_functions_are_values_not_errors(session):
    session.execute("CREATE TABLE e (p int PRIMARY KEY, d date)")
    session.execute("INSERT INTO e (p, d) VALUES (0, 123)")
    (value,) = rows(session.execute("SELECT totimestamp(d) FROM e WHERE p = 0"))[0]
    assert not isinstance(value, datetime.datetime) and value < 0
