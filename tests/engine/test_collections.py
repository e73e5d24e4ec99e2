"""Non-frozen collections and UDTs as cells; collection tombstones at T-1 (overwrite) and T (DELETE)."""

from __future__ import annotations

import uuid

import pytest

from logtide.errors import InvalidRequest

from ..conftest import rows


@pytest.fixture
def c(session):
    session.execute("CREATE TABLE c (pk int PRIMARY KEY, m map<int, text>, s set<int>, l list<int>, "
                    "fm frozen<map<int, text>>)")
    return session


def one(session, col):
    return session.execute(f"SELECT {col} FROM c WHERE pk = 0").one()[0]


def test_map_put_and_remove(c):
    c.execute("UPDATE c SET m = m + {1: 'a', 2: 'b'} WHERE pk = 0")
    c.execute("UPDATE c SET m[3] = 'c' WHERE pk = 0")
    c.execute("UPDATE c SET m = m - {1} WHERE pk = 0")
    c.execute("DELETE m[2] FROM c WHERE pk = 0")
    assert dict(one(c, "m")) == {3: "c"}


def test_map_element_set_to_null_is_an_element_tombstone(c):
    c.execute("UPDATE c SET m = {1: 'a', 2: 'b'} WHERE pk = 0")
    c.execute("UPDATE c SET m[1] = null WHERE pk = 0")
    assert dict(one(c, "m")) == {2: "b"}


def test_set_add_remove_and_order(c):
    c.execute("UPDATE c SET s = s + {3, 1, 2} WHERE pk = 0")
    c.execute("UPDATE c SET s = s - {2} WHERE pk = 0")
    assert list(one(c, "s")) == [1, 3]


def test_list_append_prepend_and_order(c):
    c.execute("UPDATE c SET l = l + [1, 2] WHERE pk = 0")
    c.execute("UPDATE c SET l = [0] + l WHERE pk = 0")
    c.execute("UPDATE c SET l = [-2, -1] + l WHERE pk = 0")
    c.execute("UPDATE c SET l = l + [3] WHERE pk = 0")
    assert one(c, "l") == [-2, -1, 0, 1, 2, 3]


def test_list_set_and_delete_by_index(c):
    c.execute("UPDATE c SET l = [10, 20, 30] WHERE pk = 0")
    c.execute("UPDATE c SET l[1] = 21 WHERE pk = 0")
    c.execute("DELETE l[0] FROM c WHERE pk = 0")
    assert one(c, "l") == [21, 30]


def test_list_index_out_of_bound(c):
    c.execute("UPDATE c SET l = [10] WHERE pk = 0")
    with pytest.raises(InvalidRequest, match="List index 5 out of bound, list has size 1"):
        c.execute("UPDATE c SET l[5] = 1 WHERE pk = 0")


def test_list_remove_by_value_reads_first(c):
    c.execute("UPDATE c SET l = l + [1, 2, 1, 3] WHERE pk = 0")
    c.execute("UPDATE c SET l = l - [1] WHERE pk = 0")
    assert one(c, "l") == [2, 3]


def test_list_element_by_timeuuid_key(c, clock):
    clock.micros = 1_700_000_000_000_000  # 2023: appends get keys after the 2020 key below
    key = uuid.UUID("839e7120-2fe4-11eb-af55-000000000001")
    c.execute(f"UPDATE c SET l[SCYLLA_TIMEUUID_LIST_INDEX({key})] = 7 WHERE pk = 0")
    c.execute("UPDATE c SET l = l + [8] WHERE pk = 0")
    assert one(c, "l") == [7, 8]
    c.execute(f"UPDATE c SET l[SCYLLA_TIMEUUID_LIST_INDEX({key})] = null WHERE pk = 0")
    assert one(c, "l") == [8]


def test_overwrite_uses_tombstone_at_t_minus_1(c):
    c.execute("UPDATE c USING TIMESTAMP 100 SET m = m + {1: 'old'} WHERE pk = 0")
    c.execute("UPDATE c USING TIMESTAMP 101 SET m = {2: 'new'} WHERE pk = 0")
    assert dict(one(c, "m")) == {2: "new"}
    # an element written at T-1 = 100 is shadowed, at T = 101 it survives
    c.execute("UPDATE c USING TIMESTAMP 100 SET m = m + {3: 'x'} WHERE pk = 0")
    c.execute("UPDATE c USING TIMESTAMP 101 SET m = m + {4: 'y'} WHERE pk = 0")
    assert dict(one(c, "m")) == {2: "new", 4: "y"}


def test_batch_append_then_overwrite_keeps_elements(c):
    c.execute("BEGIN UNLOGGED BATCH "
              "UPDATE c SET m = m + {1: 'v1', 2: 'v2'} WHERE pk = 0; "
              "UPDATE c SET m = {} WHERE pk = 0; "
              "APPLY BATCH")
    assert dict(one(c, "m")) == {1: "v1", 2: "v2"}


def test_column_delete_uses_statement_timestamp(c):
    c.execute("BEGIN UNLOGGED BATCH "
              "DELETE m FROM c WHERE pk = 0; "
              "UPDATE c SET m = m + {1: 'v1', 2: 'v2'} WHERE pk = 0; "
              "APPLY BATCH")
    assert rows(c.execute("SELECT * FROM c")) == []


def test_set_to_null_and_empty_both_delete(c):
    c.execute("INSERT INTO c (pk) VALUES (0)")
    c.execute("UPDATE c SET s = {1} WHERE pk = 0")
    c.execute("UPDATE c SET s = null WHERE pk = 0")
    assert one(c, "s") is None
    c.execute("UPDATE c SET s = {1} WHERE pk = 0")
    c.execute("UPDATE c SET s = {} WHERE pk = 0")
    assert one(c, "s") is None


def test_frozen_collection_is_one_value(c):
    c.execute("UPDATE c SET fm = {1: 'a'} WHERE pk = 0")
    with pytest.raises(InvalidRequest, match="frozen collection column fm"):
        c.execute("UPDATE c SET fm = fm + {2: 'b'} WHERE pk = 0")
    assert dict(one(c, "fm")) == {1: "a"}


def test_udt_fields_as_cells(session):
    session.execute("CREATE TYPE ut (a int, b int, c int)")
    session.execute("CREATE TABLE u (pk int PRIMARY KEY, v ut)")
    session.execute("UPDATE u SET v.a = 0, v.b = 1 WHERE pk = 0")
    v = session.execute("SELECT v FROM u").one().v
    assert (v.a, v.b, v.c) == (0, 1, None)
    session.execute("UPDATE u SET v.a = null WHERE pk = 0")
    v = session.execute("SELECT v FROM u").one().v
    assert (v.a, v.b, v.c) == (None, 1, None)
    session.execute("UPDATE u SET v = {c: 5} WHERE pk = 0")
    v = session.execute("SELECT v FROM u").one().v
    assert (v.a, v.b, v.c) == (None, None, 5)


def test_udt_unknown_field_is_refused(session):
    session.execute("CREATE TYPE ut (a int)")
    session.execute("CREATE TABLE u (pk int PRIMARY KEY, v ut)")
    with pytest.raises(InvalidRequest, match="does not have a field named zz"):
        session.execute("UPDATE u SET v.zz = 1 WHERE pk = 0")


def test_writing_a_field_of_a_frozen_udt_or_of_another_type_is_refused_in_scylladbs_words(session):
    session.execute("CREATE TYPE ut (a int)")
    session.execute("CREATE TABLE u (pk int PRIMARY KEY, f frozen<ut>, i int, v ut)")
    session.execute("INSERT INTO u (pk, f, i, v) VALUES (0, {a: 1}, 2, {a: 3})")
    for query, message in [("DELETE f.a FROM u WHERE pk = 0", "Frozen UDT column f does not support field deletions"),
                           ("DELETE i.a FROM u WHERE pk = 0", "Invalid deletion operation for non-UDT column i"),
                           ("UPDATE u SET f.a = 0 WHERE pk = 0", "Invalid operation (f.a = 0) for frozen UDT column f"),
                           ("UPDATE u SET i.a = 1 WHERE pk = 0", "Invalid operation (i.a = 1) for non-UDT column i")]:
        with pytest.raises(InvalidRequest) as e:
            session.execute(query)
        assert str(e.value) == message
    session.execute("DELETE v.a FROM u WHERE pk = 0")
    assert tuple(session.execute("SELECT f.a, i FROM u").one()) == (1, 2)


def test_udt_added_field_gets_next_index(session):
    session.execute("CREATE TYPE ut (a int, b int)")
    session.execute("CREATE TABLE u (pk int PRIMARY KEY, v ut)")
    session.execute("UPDATE u SET v.b = 2 WHERE pk = 0")
    session.execute("ALTER TYPE ut ADD d int")
    session.execute("ALTER TYPE ut RENAME a TO aa")
    session.execute("UPDATE u SET v.d = 4 WHERE pk = 0")
    v = session.execute("SELECT v FROM u").one().v
    assert (v.aa, v.b, v.d) == (None, 2, 4)
