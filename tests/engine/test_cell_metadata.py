"""Write times and TTLs of non-frozen collections and UDTs: ScyllaDB's WRITETIME / TTL (of an element or
field; a whole collection refused), Cassandra 5.0's MAXWRITETIME, and logtide's LOGTIDE_ELEMENT_WRITETIMES,
LOGTIDE_ELEMENT_TTLS, LOGTIDE_ORIGINAL_TTL, LOGTIDE_LIST_KEYS and LOGTIDE_MARKER_* selectors
(docs/semantics.md)."""

from __future__ import annotations

import re
import uuid

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows


@pytest.fixture
def t(session):
    session.execute("CREATE TYPE addr (street text, num int, zip text)")
    session.execute("CREATE TABLE t (pk int, ck int, v int, s set<int>, m map<text, int>, l list<text>, "
                    "u addr, fl frozen<list<int>>, st int static, PRIMARY KEY (pk, ck))")
    return session


@pytest.mark.parametrize("column, kind", [("s", "set"), ("m", "map"), ("l", "list"), ("u", "UDT"), ("st2", "static")])
def test_writetime_and_ttl_of_a_whole_non_frozen_collection_are_refused_as_scylladb_does(t, column, kind):
    """ScyllaDB refuses WRITETIME/TTL of a whole non-frozen collection or UDT (Cassandra 5.0 answers a list);
    logtide's per-element form has its own name."""
    t.execute("ALTER TABLE t ADD st2 set<int> static")
    t.execute("UPDATE t USING TIMESTAMP 3 SET s = {1}, m = {'a': 1}, l = ['x'], u = {num: 1}, st2 = {2} "
              "WHERE pk = 0 AND ck = 0")
    for fn in ("WRITETIME", "TTL"):
        with pytest.raises(InvalidRequest) as e:
            t.execute(f"SELECT {fn.lower()}({column}) FROM t")
        assert str(e.value) == f"{fn} expects an atomic column, but {column} is a non-frozen collection", kind
    assert rows(t.execute(f"SELECT logtide_element_writetimes({column}), logtide_element_ttls({column}) FROM t")) == [
        ([3] if column != "u" else [None, 3, None], [None] if column != "u" else [None, None, None])]


def test_element_writetimes_of_a_non_frozen_set_are_one_entry_per_element_in_element_order(t):
    t.execute("UPDATE t USING TIMESTAMP 20 SET s = s + {3} WHERE pk = 0 AND ck = 0")
    t.execute("UPDATE t USING TIMESTAMP 10 SET s = s + {1, 5} WHERE pk = 0 AND ck = 0")
    r = t.execute("SELECT logtide_element_writetimes(s), maxwritetime(s), logtide_element_ttls(s) FROM t")
    assert r.column_names == ["logtide_element_writetimes(s)", "maxwritetime(s)", "logtide_element_ttls(s)"]
    assert rows(r) == [([10, 20, 10], 20, [None, None, None])]


def test_ttl_of_map_elements_is_remaining_and_original_ttl_is_as_written(t, clock):
    t.execute("UPDATE t USING TIMESTAMP 5 AND TTL 100 SET m['b'] = 2 WHERE pk = 0 AND ck = 0")
    t.execute("UPDATE t USING TIMESTAMP 6 SET m['a'] = 1 WHERE pk = 0 AND ck = 0")
    clock.advance(seconds=30)
    assert rows(t.execute("SELECT m, logtide_element_writetimes(m), logtide_element_ttls(m), "
                          "logtide_original_ttl(m) FROM t")) == [
        ({"a": 1, "b": 2}, [6, 5], [None, 70], [None, 100])]
    assert rows(t.execute("SELECT writetime(m['b']), ttl(m['b']), ttl(m['a']), writetime(m['zz']) FROM t")) == [
        (5, 70, None, None)]


def test_udt_fields_give_one_entry_per_declared_field_null_where_unset(t):
    t.execute("UPDATE t USING TIMESTAMP 7 SET u.num = 4 WHERE pk = 0 AND ck = 0")
    t.execute("UPDATE t USING TIMESTAMP 8 AND TTL 50 SET u.zip = 'z' WHERE pk = 0 AND ck = 0")
    assert rows(t.execute("SELECT logtide_element_writetimes(u), maxwritetime(u), logtide_original_ttl(u), "
                          "writetime(u.zip), writetime(u.street) FROM t")) == [([None, 7, 8], 8, [None, None, 50], 8, None)]


def test_list_write_times_and_keys_follow_the_elements(t):
    t.execute("UPDATE t USING TIMESTAMP 1 SET l = l + ['x'] WHERE pk = 0 AND ck = 0")
    t.execute("UPDATE t USING TIMESTAMP 2 SET l = l + ['y'] WHERE pk = 0 AND ck = 0")
    t.execute("UPDATE t USING TIMESTAMP 3 SET l = ['w'] + l WHERE pk = 0 AND ck = 0")
    (l, wts, keys), = rows(t.execute("SELECT l, logtide_element_writetimes(l), logtide_list_keys(l) FROM t"))
    assert l == ["w", "x", "y"] and wts == [3, 1, 2]
    assert all(isinstance(k, uuid.UUID) and k.version == 1 for k in keys) and len(set(keys)) == 3
    t.execute("UPDATE t USING TIMESTAMP 9 SET l[SCYLLA_TIMEUUID_LIST_INDEX(?)] = 'X' WHERE pk = 0 AND ck = 0",
              (keys[1],))
    assert rows(t.execute("SELECT l, logtide_element_writetimes(l), logtide_list_keys(l) FROM t")) == [
        (["w", "X", "y"], [3, 9, 2], keys)]


def test_empty_collections_and_missing_rows_give_null(t):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 1) USING TIMESTAMP 4")
    assert rows(t.execute("SELECT logtide_element_writetimes(s), maxwritetime(m), logtide_element_ttls(u), "
                          "logtide_list_keys(l), writetime(fl) FROM t")) == [(None, None, None, None, None)]


def test_atomic_and_frozen_columns_keep_one_value(t, clock):
    t.execute("INSERT INTO t (pk, ck, v, fl) VALUES (0, 0, 1, [1, 2]) USING TIMESTAMP 4 AND TTL 60")
    clock.advance(seconds=10)
    assert rows(t.execute("SELECT writetime(v), maxwritetime(v), ttl(v), logtide_original_ttl(v), writetime(fl), "
                          "ttl(fl) FROM t")) == [(4, 4, 50, 60, 4, 50)]


def test_row_marker_write_time_and_original_ttl(t, clock):
    t.execute("INSERT INTO t (pk, ck, v) VALUES (0, 0, 1) USING TIMESTAMP 4 AND TTL 60")
    t.execute("UPDATE t USING TIMESTAMP 5 SET v = 2 WHERE pk = 0 AND ck = 1")
    t.execute("UPDATE t USING TIMESTAMP 6 SET st = 3 WHERE pk = 1")
    clock.advance(seconds=10)
    assert sorted(rows(t.execute("SELECT pk, ck, logtide_marker_writetime(), logtide_marker_ttl() FROM t"))) == [
        (0, 0, 4, 60), (0, 1, None, None), (1, None, None, None)]


def test_static_collections_read_the_static_row(t):
    t.execute("CREATE TABLE ss (pk int, ck int, s set<int> static, PRIMARY KEY (pk, ck))")
    t.execute("UPDATE ss USING TIMESTAMP 11 SET s = s + {1} WHERE pk = 0")
    t.execute("INSERT INTO ss (pk, ck) VALUES (0, 0) USING TIMESTAMP 12")
    assert rows(t.execute("SELECT ck, logtide_element_writetimes(s) FROM ss")) == [(0, [11])]


def test_metadata_functions_refuse_keys_counters_and_wrong_arguments(t):
    t.execute("CREATE TABLE c (pk int PRIMARY KEY, n counter)")
    for query, message in [
        ("SELECT writetime(pk) FROM t", "WRITETIME is not legal on partition key component pk"),
        ("SELECT ttl(ck) FROM t", "TTL is not legal on partition key component ck"),
        ("SELECT maxwritetime(pk) FROM t", "maxwritetime on PRIMARY KEY part pk"),
        ("SELECT writetime(n) FROM c", "Cannot use selection function writeTime on counter column n"),
        ("SELECT writetime(l[0]) FROM t", "WRITETIME on a subscript is only valid for non-frozen map or set columns"),
        ("SELECT ttl(fl[0]) FROM t", "TTL on a subscript is only valid for non-frozen map or set columns"),
        ("SELECT writetime(u.nope) FROM t", "addr has no field nope"),
        ("SELECT writetime(v, v) FROM t", "writeTime requires exactly one column argument"),
        ("SELECT logtide_list_keys(s) FROM t", "logtide_list_keys on s: it takes a non-frozen list column"),
        ("SELECT logtide_list_keys(fl) FROM t", "it takes a non-frozen list column"),
        ("SELECT logtide_marker_ttl(v) FROM t", "logtide_marker_ttl takes no arguments"),
        ("SELECT writetime(nope) FROM t", "Unrecognized name nope"),
    ]:
        with pytest.raises(InvalidRequest, match=message.replace("(", r"\(").replace("[", r"\[")):
            t.execute(query)


def test_an_element_or_field_of_a_frozen_key_has_no_write_time_or_ttl(session):
    session.execute("CREATE TYPE pt (a int)")
    session.execute("CREATE TABLE fk (pk frozen<map<int, int>>, ck frozen<pt>, v int, PRIMARY KEY (pk, ck))")
    for query, message in [("SELECT WRITETIME(pk[1]) FROM fk", "WRITETIME is not legal on primary key component pk"),
                           ("SELECT TTL(ck.a) FROM fk", "TTL is not legal on primary key component ck"),
                           ("SELECT TTL(ck) FROM fk", "TTL is not legal on partition key component ck")]:
        with pytest.raises(InvalidRequest, match=f"^{re.escape(message)}$"):
            session.execute(query)


def test_write_time_and_ttl_take_aliases_and_name_their_json_keys(t):
    t.execute("UPDATE t USING TIMESTAMP 7 AND TTL 100 SET v = 1 WHERE pk = 0 AND ck = 0")
    result = t.execute("SELECT writetime(v) AS w, ttl(v) AS left FROM t")
    assert list(result.column_names) == ["w", "left"] and rows(result) == [(7, 100)]
    assert rows(t.execute("SELECT JSON writetime(v), ttl(v) AS left FROM t")) == [('{"writetime(v)": 7, "left": 100}',)]
