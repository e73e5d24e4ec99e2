"""SELECT: order, restrictions, functions, limits, filtering, DISTINCT, aggregates."""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal

import pytest
from cassandra.metadata import Murmur3Token

from logtide.errors import InvalidRequest

from ..conftest import rows


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (pk int, ck1 int, ck2 text, v int, s int static, PRIMARY KEY (pk, ck1, ck2))")
    for pk in range(4):
        for ck1 in range(3):
            for ck2 in ("a", "b"):
                session.execute(f"INSERT INTO t (pk, ck1, ck2, v) VALUES ({pk}, {ck1}, '{ck2}', {pk * 100 + ck1 * 10})")
    return session


def token(i: int) -> int:
    return Murmur3Token.hash_fn(i.to_bytes(4, "big", signed=True))


def test_results_in_token_order_then_clustering_order(t):
    got = [(r.pk, r.ck1, r.ck2) for r in t.execute("SELECT pk, ck1, ck2 FROM t")]
    pks = sorted(range(4), key=token)
    assert got == [(pk, c1, c2) for pk in pks for c1 in range(3) for c2 in ("a", "b")]


def test_token_function_matches_cassandra(t):
    for r in t.execute("SELECT pk, token(pk) FROM t WHERE pk IN (0, 1, 2)"):
        assert r[1] == token(r.pk)
    assert rows(t.execute("SELECT token(pk) FROM t WHERE pk = 0 LIMIT 1")) == [(-3485513579396041028,)]


def test_token_range_restriction(t):
    lo = token(2)
    got = {r.pk for r in t.execute(f"SELECT pk FROM t WHERE token(pk) > {lo}")}
    assert got == {p for p in range(4) if token(p) > lo}
    got = {r.pk for r in t.execute(f"SELECT pk FROM t WHERE token(pk) >= {lo} AND token(pk) <= {lo}")}
    assert got == {2}


def test_partition_in_and_clustering_slices(t):
    q = "SELECT pk, ck1, ck2 FROM t WHERE pk IN (1, 0) AND ck1 = 1 AND ck2 > 'a'"
    assert sorted(rows(t.execute(q))) == [(0, 1, "b"), (1, 1, "b")]
    q = "SELECT ck1, ck2 FROM t WHERE pk = 0 AND ck1 >= 1 AND ck1 < 2"
    assert rows(t.execute(q)) == [(1, "a"), (1, "b")]
    q = "SELECT ck1, ck2 FROM t WHERE pk = 0 AND ck1 IN (2, 0) AND ck2 = 'b'"
    assert rows(t.execute(q)) == [(0, "b"), (2, "b")]


def test_multi_column_relations(t):
    q = "SELECT ck1, ck2 FROM t WHERE pk = 0 AND (ck1, ck2) > (1, 'a')"
    assert rows(t.execute(q)) == [(1, "b"), (2, "a"), (2, "b")]
    q = "SELECT ck1, ck2 FROM t WHERE pk = 0 AND (ck1, ck2) >= (0, 'b') AND (ck1, ck2) < (2, 'b')"
    assert rows(t.execute(q)) == [(0, "b"), (1, "a"), (1, "b"), (2, "a")]
    q = "SELECT ck1, ck2 FROM t WHERE pk = 0 AND (ck1, ck2) IN ((2, 'a'), (0, 'b'))"
    assert rows(t.execute(q)) == [(0, "b"), (2, "a")]


def test_order_by_reverses_clustering(t):
    q = "SELECT ck1, ck2 FROM t WHERE pk = 0 ORDER BY ck1 DESC, ck2 DESC LIMIT 3"
    assert rows(t.execute(q)) == [(2, "b"), (2, "a"), (1, "b")]
    with pytest.raises(InvalidRequest, match="ORDER BY is only supported when the partition key is restricted"):
        t.execute("SELECT * FROM t ORDER BY ck1 DESC")
    with pytest.raises(InvalidRequest, match="Unsupported order by relation"):
        t.execute("SELECT * FROM t WHERE pk = 0 ORDER BY ck1 DESC, ck2 ASC")


def test_limit_and_per_partition_limit(t):
    assert len(t.execute("SELECT * FROM t LIMIT 5")) == 5
    got = rows(t.execute("SELECT pk, ck1, ck2 FROM t PER PARTITION LIMIT 1"))
    assert len(got) == 4 and all(r[1:] == (0, "a") for r in got)
    with pytest.raises(InvalidRequest, match="LIMIT must be strictly positive"):
        t.execute("SELECT * FROM t LIMIT 0")


def test_filtering_needs_allow_filtering(t):
    with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
        t.execute("SELECT * FROM t WHERE v = 10")
    got = rows(t.execute("SELECT pk, ck1, ck2 FROM t WHERE v = 110 ALLOW FILTERING"))
    assert got == [(1, 1, "a"), (1, 1, "b")]
    with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
        t.execute("SELECT * FROM t WHERE ck1 = 1")
    assert len(t.execute("SELECT * FROM t WHERE ck1 = 1 ALLOW FILTERING")) == 8


def test_clustering_gap_needs_filtering(t):
    with pytest.raises(InvalidRequest, match='PRIMARY KEY column "ck2" cannot be restricted as preceding column "ck1" is not restricted'):
        t.execute("SELECT * FROM t WHERE pk = 0 AND ck2 = 'a'")
    assert len(t.execute("SELECT * FROM t WHERE pk = 0 AND ck2 = 'a' ALLOW FILTERING")) == 3


def test_distinct_and_static(t):
    t.execute("UPDATE t SET s = 7 WHERE pk = 3")
    got = rows(t.execute("SELECT DISTINCT pk, s FROM t"))
    assert sorted(got) == [(0, None), (1, None), (2, None), (3, 7)]
    with pytest.raises(InvalidRequest, match="SELECT DISTINCT queries must only request partition key columns"):
        t.execute("SELECT DISTINCT pk, v FROM t")


def test_distinct_may_leave_out_the_partition_key_only_when_the_key_names_the_partitions(t):
    """ScyllaDB: all partition-key columns must be selected by a DISTINCT over a range of partitions, not by one
    over the partitions the key names."""
    t.execute("UPDATE t SET s = 7 WHERE pk = 3")
    assert rows(t.execute("SELECT DISTINCT s FROM t WHERE pk = 3")) == [(7,)]
    assert rows(t.execute("SELECT DISTINCT s FROM t WHERE pk IN (0, 3)")) == [(None,), (7,)]
    for where in ("", " WHERE token(pk) > 0"):
        with pytest.raises(InvalidRequest) as e:
            t.execute(f"SELECT DISTINCT s FROM t{where}")
        assert str(e.value) == "SELECT DISTINCT queries must request all the partition key columns (missing pk)"


def test_count_and_aggregates(t):
    assert rows(t.execute("SELECT COUNT(*) FROM t")) == [(24,)]
    assert t.execute("SELECT count(*) FROM t").column_names == ["count"]
    assert rows(t.execute("SELECT min(v), max(v), sum(v) FROM t WHERE pk = 1")) == [(100, 120, 660)]
    assert rows(t.execute("SELECT count(*) FROM t WHERE pk = 9")) == [(0,)]


def test_aliases_and_column_names(t):
    r = t.execute("SELECT pk AS k, writetime(v), ttl(v), token(pk) FROM t WHERE pk = 0 LIMIT 1")
    assert r.column_names == ["k", "writetime(v)", "ttl(v)", "system.token(pk)"]


def test_time_functions(session):
    session.execute("CREATE TABLE f (pk int PRIMARY KEY, u timeuuid, ts timestamp, d date)")
    session.execute("INSERT INTO f (pk, u, ts, d) VALUES (0, b223c55e-6d07-11ea-7654-24e4fb3f20b9, "
                    "'2020-03-23 13:10:40.910+0000', '2020-03-23')")
    r = session.execute("SELECT tounixtimestamp(u), totimestamp(u), todate(u), tounixtimestamp(ts), "
                        "totimestamp(d), dateof(u), unixtimestampof(u) FROM f").one()
    assert r[0] == 1584969040910
    assert r[1] == datetime.datetime(2020, 3, 23, 13, 10, 40, 910000)
    assert str(r[2]) == "2020-03-23"
    assert r[3] == 1584969040910
    assert r[4] == datetime.datetime(2020, 3, 23)
    assert r.column_names if hasattr(r, "column_names") else True
    cols = session.execute("SELECT tounixtimestamp(u) FROM f").column_names
    assert cols == ["system.tounixtimestamp(u)"]


def test_min_and_max_timeuuid_bound_a_time_range(session):
    session.execute("CREATE TABLE tl (pk int, t timeuuid, PRIMARY KEY (pk, t))")
    session.execute("INSERT INTO tl (pk, t) VALUES (0, b223c55e-6d07-11ea-7654-24e4fb3f20b9)")
    q = ("SELECT t FROM tl WHERE pk = 0 AND t > minTimeuuid('2020-03-23 13:10:40.910+0000') "
         "AND t < maxTimeuuid('2020-03-23 13:10:40.910+0000')")
    assert rows(session.execute(q)) == [(uuid.UUID("b223c55e-6d07-11ea-7654-24e4fb3f20b9"),)]
    q = "SELECT t FROM tl WHERE pk = 0 AND t > maxTimeuuid('2020-03-23 13:10:40.910+0000')"
    assert rows(session.execute(q)) == []


def test_now_uuid_and_blob_conversions(session):
    session.execute("CREATE TABLE b (pk int PRIMARY KEY, u timeuuid, id uuid, bl blob)")
    session.execute("INSERT INTO b (pk, u, id, bl) VALUES (0, now(), uuid(), intAsBlob(7))")
    r = session.execute("SELECT u, id, bl, blobAsInt(bl), toJson(bl) FROM b").one()
    assert r.u.version == 1 and r.id.version == 4 and r.bl == b"\x00\x00\x00\x07" and r[3] == 7
    assert r[4] == '"0x00000007"'
    session.execute("INSERT INTO b (pk, bl) VALUES (1, textAsBlob('hi'))")
    assert rows(session.execute("SELECT blobAsText(bl) FROM b WHERE pk = 1")) == [("hi",)]


def test_contains_filters(session):
    session.execute("CREATE TABLE cc (pk int PRIMARY KEY, m map<text, int>, s set<int>)")
    session.execute("INSERT INTO cc (pk, m, s) VALUES (0, {'a': 1}, {5})")
    session.execute("INSERT INTO cc (pk, m, s) VALUES (1, {'b': 2}, {6})")
    assert rows(session.execute("SELECT pk FROM cc WHERE m CONTAINS KEY 'a' ALLOW FILTERING")) == [(0,)]
    assert rows(session.execute("SELECT pk FROM cc WHERE s CONTAINS 6 ALLOW FILTERING")) == [(1,)]


def test_static_only_partition_row(session):
    session.execute("CREATE TABLE st (pk int, ck int, s int static, c int, PRIMARY KEY (pk, ck))")
    session.execute("UPDATE st SET s = 0 WHERE pk = 0")
    assert rows(session.execute("SELECT * FROM st")) == [(0, None, 0, None)]
    assert rows(session.execute("SELECT * FROM st WHERE pk = 0 AND ck = 1")) == []


def test_partitions_of_equal_keys_in_other_bytes_are_paged_apart(session):
    # 1.0 and 1.00 are one value but two partitions (a key is its bytes): IN names both, and a page that ends in
    # one of them resumes without taking the other for it
    session.execute("CREATE TABLE d (p decimal, c int, PRIMARY KEY (p, c))")
    insert = session.prepare("INSERT INTO d (p, c) VALUES (?, ?)")
    for c in range(3):
        session.execute(insert, [Decimal("1.0"), 2 * c])
        session.execute(insert, [Decimal("1.00"), 2 * c + 1])
    query = session.prepare("SELECT p, c FROM d WHERE p IN (?, ?)")
    for size in (1, 2, 4):
        got, state = [], None
        while True:
            page = session.execute(query, [Decimal("1.00"), Decimal("1.0")], page_size=size, paging_state=state)
            got += [(str(r.p), r.c) for r in page]
            state = page.paging_state
            if state is None:
                break
        assert sorted(got) == [("1.0", 0), ("1.0", 2), ("1.0", 4), ("1.00", 1), ("1.00", 3), ("1.00", 5)]
