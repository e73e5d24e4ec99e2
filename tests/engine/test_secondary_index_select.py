"""SELECT through a secondary index without ALLOW FILTERING, as ScyllaDB serves it (docs/views-and-indexes.md,
"Secondary indexes"): equality on an indexed column, CONTAINS / CONTAINS KEY / m[k] = v on collection indexes,
a local index with its partition key, rows in base token order then clustering order, paging that holds, rows
that no longer match (TTL) never returned, and ALLOW FILTERING required exactly where ScyllaDB requires it."""

from __future__ import annotations

import pytest

from logtide.errors import InvalidRequest
from logtide.query.restrictions import FILTERING_MESSAGE
from logtide.storage.keys import token_of

TABLE = "CREATE TABLE t (p int, c int, v int, w int, m map<int, text>, s set<int>, f frozen<set<int>>, " \
        "st int static, PRIMARY KEY (p, c))"


@pytest.fixture
def t(session):
    session.execute(TABLE)
    for p in range(6):
        for c in range(3):
            session.execute(f"INSERT INTO t (p, c, v, w, m, s, f, st) VALUES ({p}, {c}, {(p + c) % 3}, {c}, "
                            f"{{{c}: 'x{p}'}}, {{{p}, {c}}}, {{{c}}}, {p % 2})")
    return session


def pcs(result) -> list[tuple]:
    return [(r.p, r.c) for r in result]


def scan_order(rows: list[tuple]) -> list[tuple]:
    """Base token order, then clustering order: the order of a scan of the table."""
    return sorted(rows, key=lambda pc: (token_of(pc[0].to_bytes(4, "big", signed=True)), pc[1]))


def test_equality_on_an_indexed_column_returns_the_rows_in_base_token_then_clustering_order(t):
    t.execute("CREATE INDEX ON t (v)")
    got = pcs(t.execute("SELECT p, c FROM t WHERE v = 1"))
    expected = [(p, c) for p in range(6) for c in range(3) if (p + c) % 3 == 1]
    assert got == scan_order(expected)
    assert got == pcs(t.execute("SELECT p, c FROM t WHERE v = 1 ALLOW FILTERING"))


def test_collection_indexes_serve_contains_contains_key_and_map_entries(t):
    t.execute("CREATE INDEX ON t (keys(m))")
    t.execute("CREATE INDEX ON t (entries(m))")
    t.execute("CREATE INDEX ON t (s)")
    t.execute("CREATE INDEX ON t (full(f))")
    assert pcs(t.execute("SELECT p, c FROM t WHERE m CONTAINS KEY 2")) == scan_order([(p, 2) for p in range(6)])
    assert pcs(t.execute("SELECT p, c FROM t WHERE m[1] = 'x4'")) == [(4, 1)]
    assert pcs(t.execute("SELECT p, c FROM t WHERE s CONTAINS 5")) == scan_order([(5, 0), (5, 1), (5, 2)])
    assert pcs(t.execute("SELECT p, c FROM t WHERE f = {2}")) == scan_order([(p, 2) for p in range(6)])
    with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
        t.execute("SELECT p, c FROM t WHERE m CONTAINS 'x1'")  # values(m) is not indexed


def test_a_static_column_index_returns_every_row_of_the_matching_partitions(t):
    t.execute("CREATE INDEX ON t (st)")
    assert pcs(t.execute("SELECT p, c FROM t WHERE st = 1")) == scan_order([(p, c) for p in (1, 3, 5) for c in range(3)])


def test_an_index_on_a_clustering_column_serves_it_alone(t):
    t.execute("CREATE INDEX ON t (c)")
    assert pcs(t.execute("SELECT p, c FROM t WHERE c = 2")) == scan_order([(p, 2) for p in range(6)])


def test_a_local_index_serves_the_partition_it_is_given(t):
    t.execute("CREATE INDEX loc ON t ((p), w)")
    assert pcs(t.execute("SELECT p, c FROM t WHERE p = 4 AND w = 2")) == [(4, 2)]
    assert pcs(t.execute("SELECT p, c FROM t WHERE p IN (1, 4) AND w = 0")) == [(1, 0), (4, 0)]
    with pytest.raises(InvalidRequest, match="ALLOW FILTERING"):
        t.execute("SELECT p, c FROM t WHERE w = 0")  # a local index needs its partition


def test_paging_through_an_index_returns_every_row_once_in_order(t):
    t.execute("CREATE INDEX ON t (w)")
    for p in range(6, 40):
        t.execute(f"INSERT INTO t (p, c, w) VALUES ({p}, 7, 1)")
    whole = pcs(t.execute("SELECT p, c FROM t WHERE w = 1"))
    pages, state = [], None
    while True:
        r = t.execute("SELECT p, c FROM t WHERE w = 1", page_size=4, paging_state=state)
        pages.append(pcs(r))
        state = r.paging_state
        if state is None:
            break
    assert [pc for page in pages for pc in page] == whole
    assert len(whole) == 40 and all(len(page) <= 4 for page in pages)


def test_limit_count_and_writes_after_the_index_are_seen(t):
    t.execute("CREATE INDEX ON t (v)")
    t.execute("UPDATE t SET v = 9 WHERE p = 0 AND c = 0")
    t.execute("DELETE FROM t WHERE p = 1")
    assert pcs(t.execute("SELECT p, c FROM t WHERE v = 9")) == [(0, 0)]
    assert t.execute("SELECT count(*) FROM t WHERE v = 0").one()[0] == 4  # 6, less (0, 0) and (1, 2)
    assert len(pcs(t.execute("SELECT p, c FROM t WHERE v = 0 LIMIT 2"))) == 2


def test_a_row_whose_value_expired_by_ttl_is_not_returned(t, clock):
    t.execute("CREATE INDEX ON t (w)")
    t.execute("INSERT INTO t (p, c, w) VALUES (100, 0, 42) USING TTL 10")
    assert pcs(t.execute("SELECT p, c FROM t WHERE w = 42")) == [(100, 0)]
    clock.advance(11)
    assert pcs(t.execute("SELECT p, c FROM t WHERE w = 42")) == []


@pytest.mark.parametrize("where, filtering", [
    ("v = 1", False),
    ("v = 1 AND w = 1", True),  # a second non-key restriction
    ("v = 1 AND c = 1", True),  # clustering restricted without the partition key
    ("p = 1 AND v = 1", False),
    ("p = 1 AND c = 1 AND v = 1", False),
    ("token(p) > 0 AND v = 1", False),
    ("token(p) > 0 AND v = 1 AND c = 1", True),
    ("v > 1", True),  # an index serves equality only
    ("v = 1 AND v < 2", True),  # a second restriction on the indexed column
])
def test_allow_filtering_is_required_where_scylladb_requires_it(t, where, filtering):
    t.execute("CREATE INDEX ON t (v)")
    query = f"SELECT p, c FROM t WHERE {where}"
    expected = pcs(t.execute(query + " ALLOW FILTERING"))
    if filtering:
        with pytest.raises(InvalidRequest) as e:
            t.execute(query)
        assert str(e.value) == FILTERING_MESSAGE
    else:
        assert pcs(t.execute(query)) == expected


def test_the_first_restriction_an_index_serves_picks_it_and_a_usable_local_index_comes_first(session):
    from logtide.query.index_lookup import choose
    from logtide.query.evaluate import TermEvaluator
    from logtide.query.restrictions import analyse
    session.execute("CREATE TABLE o (p int PRIMARY KEY, v1 int, v2 int, v3 int)")
    session.execute("CREATE INDEX i3 ON o (v3)")
    session.execute("CREATE INDEX i1 ON o (v1)")
    session.execute("CREATE INDEX i2 ON o ((p), v2)")
    table = session.db.catalog.table("ks", "o")

    def used(where: str) -> str:
        stmt = session.db.parse(f"SELECT * FROM o WHERE {where} ALLOW FILTERING").statement
        ev = TermEvaluator(session.db.functions, None)
        return choose(table, analyse(table, stmt.where, ev, select=True, allow_filtering=True), stmt.where).index.name
    assert used("v3 = 1 AND v1 = 2") == "i3"
    assert used("p = 1 AND v1 = 1 AND v3 = 2") == "i1"
    assert used("v2 = 1 AND v1 = 2") == "i1"  # a local index without its partition is skipped
    assert used("p = 1 AND v1 = 1 AND v3 = 2 AND v2 = 2") == "i2"


def test_a_full_page_of_groups_through_an_index_says_where_the_next_starts(t):
    t.execute("CREATE INDEX ON t (w)")
    r = t.execute("SELECT p FROM t WHERE w = 1 GROUP BY p", page_size=6)
    assert len(list(r)) == 6 and r.paging_state is not None  # a full page, as a page of rows
    r = t.execute("SELECT p FROM t WHERE w = 1 GROUP BY p", page_size=6, paging_state=r.paging_state)
    assert list(r) == [] and r.paging_state is None


def test_a_value_too_long_to_be_an_index_key_is_refused_at_lookup(session):
    session.execute("CREATE TABLE big (p int PRIMARY KEY, v text)")
    big = "x" * 66536
    session.execute("INSERT INTO big (p, v) VALUES (1, %s)" % ("'" + big + "'"))
    session.execute("INSERT INTO big (p, v) VALUES (2, 'small')")
    session.execute("CREATE INDEX ON big (v)")
    with pytest.raises(InvalidRequest, match="Key length of 66536 is longer than maximum of 65535"):
        session.execute("SELECT p FROM big WHERE v = ?", [big])
    assert pcs_p(session.execute("SELECT p FROM big WHERE v = 'small'")) == [2]


def pcs_p(result) -> list[int]:
    return [r.p for r in result]


def test_with_an_index_in_use_the_refusal_names_allow_filtering(session):
    session.execute("CREATE TABLE f (p int, c1 frozen<list<int>>, c2 int, PRIMARY KEY (p, c1, c2))")
    session.execute("CREATE INDEX ON f (c2)")
    with pytest.raises(InvalidRequest) as e:
        session.execute("SELECT * FROM f WHERE p = 0 AND c1 CONTAINS 1 AND c2 = 0")
    assert str(e.value) == FILTERING_MESSAGE


def test_contains_key_bound_on_an_indexed_frozen_list_is_refused_by_name(session):
    session.execute("CREATE TABLE fl (a int, b frozen<list<int>>, PRIMARY KEY (a, b))")
    session.execute("CREATE INDEX ON fl (full(b))")
    with pytest.raises(InvalidRequest, match="Cannot use CONTAINS KEY on non-map column b"):
        session.execute(session.prepare("SELECT * FROM fl WHERE b CONTAINS KEY ?"), [1])


def test_select_distinct_restricted_by_an_indexed_or_clustering_column_is_refused(t):
    t.execute("CREATE INDEX ON t (v)")
    for where in ("v = 1", "c >= 1 ALLOW FILTERING"):
        with pytest.raises(InvalidRequest) as e:
            t.execute(f"SELECT DISTINCT p FROM t WHERE {where}")
        assert str(e.value) == "SELECT DISTINCT with WHERE clause only supports restriction by partition key."
    assert [r.p for r in t.execute("SELECT DISTINCT p FROM t WHERE p IN (1, 2)")] == [1, 2]


@pytest.mark.parametrize("index, where", [("st", "st = 1"), ("v", "v = 1"), ("c", "c = 2"), ("keys(m)", "m CONTAINS KEY 2"),
                                          ("s", "s CONTAINS 1"), ("(p), w", "p = 3 AND w = 1")])
def test_every_page_size_gives_the_same_rows_through_every_kind_of_index(t, index, where):
    """A resumed page seeks to the entry the last page ended at: a static column's entry (one per partition,
    at its start), a row's, a collection element's, a local index's."""
    t.execute(f"CREATE INDEX ON t ({index})")
    whole = pcs(t.execute(f"SELECT p, c FROM t WHERE {where}"))
    assert whole
    for size in (1, 2, 3, 4, 100):
        got, state = [], None
        while True:
            r = t.execute(f"SELECT p, c FROM t WHERE {where}", page_size=size, paging_state=state)
            got += pcs(r)
            state = r.paging_state
            if state is None:
                break
        assert got == whole, size
