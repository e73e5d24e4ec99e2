"""cassandra-driver reads per-element write times and TTLs, list keys and row markers over the native protocol."""

from __future__ import annotations

import uuid

import pytest
from cassandra import InvalidRequest

from .conftest import KEYSPACE_DDL, cluster


@pytest.fixture(scope="module")
def session(port):
    c = cluster(port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("meta_ks"))
    s.set_keyspace("meta_ks")
    s.execute("CREATE TYPE addr (street text, num int)")
    s.execute("CREATE TABLE t (pk int, ck int, s set<int>, m map<text, int>, l list<text>, u addr, "
              "PRIMARY KEY (pk, ck))")
    yield s
    c.shutdown()


def test_per_element_write_times_and_ttls_decode_as_lists_with_nulls(session):
    session.execute("INSERT INTO t (pk, ck) VALUES (0, 0) USING TIMESTAMP 3 AND TTL 1000")
    session.execute("UPDATE t USING TIMESTAMP 20 SET s = s + {3} WHERE pk = 0 AND ck = 0")
    session.execute("UPDATE t USING TIMESTAMP 10 AND TTL 500 SET s = s + {1} WHERE pk = 0 AND ck = 0")
    session.execute("UPDATE t USING TIMESTAMP 30 SET m['k'] = 1, u.num = 2 WHERE pk = 0 AND ck = 0")
    row = session.execute("SELECT logtide_element_writetimes(s), maxwritetime(s), logtide_original_ttl(s), "
                          "writetime(m['k']), logtide_element_writetimes(u), logtide_original_ttl(u), "
                          "logtide_marker_writetime(), logtide_marker_ttl() FROM t WHERE pk = 0 AND ck = 0").one()
    assert tuple(row) == ([10, 20], 20, [500, None], 30, [None, 30], [None, None], 3, 1000)
    ttl = session.execute("SELECT logtide_element_ttls(s) FROM t WHERE pk = 0 AND ck = 0").one()[0]
    assert ttl[1] is None and 0 < ttl[0] <= 500


def test_list_keys_come_back_as_timeuuids_usable_to_address_elements(session):
    session.execute("UPDATE t SET l = l + ['a', 'b'] WHERE pk = 1 AND ck = 0")
    keys = session.execute("SELECT logtide_list_keys(l) FROM t WHERE pk = 1 AND ck = 0").one()[0]
    assert [type(k) for k in keys] == [uuid.UUID, uuid.UUID] and keys[0] != keys[1]
    session.execute("UPDATE t SET l[SCYLLA_TIMEUUID_LIST_INDEX(%s)] = 'B' WHERE pk = 1 AND ck = 0", (keys[1],))
    assert session.execute("SELECT l FROM t WHERE pk = 1 AND ck = 0").one()[0] == ["a", "B"]


def test_prepared_metadata_types_are_lists(session):
    prepared = session.prepare("SELECT logtide_element_writetimes(s), logtide_element_ttls(m), logtide_list_keys(l), "
                               "maxwritetime(u) FROM t "
                               "WHERE pk = ? AND ck = ?")
    types = [c[3].cql_parameterized_type() for c in prepared.result_metadata]
    assert types == ["list<bigint>", "list<int>", "list<timeuuid>", "bigint"]


def test_refusals_keep_their_messages(session):
    with pytest.raises(InvalidRequest, match="WRITETIME is not legal on partition key component pk"):
        session.execute("SELECT writetime(pk) FROM t")
    with pytest.raises(InvalidRequest, match="TTL expects an atomic column, but s is a non-frozen collection"):
        session.prepare("SELECT ttl(s) FROM t WHERE pk = ?")
    with pytest.raises(InvalidRequest, match="it takes a non-frozen list column"):
        session.execute("SELECT logtide_list_keys(s) FROM t")
