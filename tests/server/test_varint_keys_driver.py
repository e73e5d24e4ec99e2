"""A varint bound with redundant sign bytes, over cassandra-driver: a partition key is its bytes as sent (another
partition than the canonical one, with its own token, CDC stream and paging), a clustering key its value.

The driver always sends a varint's shortest form, so each test binds its statement and then puts the padded
bytes in place of a value (``BoundStatement.values`` holds the serialized values the driver sends).
"""

from __future__ import annotations

import pytest
from cassandra.query import BatchStatement

from .conftest import KEYSPACE_DDL, cluster

ONE = b"\x01"
PADDED_ONE = b"\x00\x01"  # 1 with a redundant 0x00 sign byte
PADDED_MINUS_TWO = b"\xff\xfe"  # -2 (0xfe) with a redundant 0xff sign byte


@pytest.fixture(scope="module")
def session(port):
    c = cluster(port)
    s = c.connect()
    s.execute(KEYSPACE_DDL.format("varints"))
    s.set_keyspace("varints")
    yield s
    c.shutdown()


def bound(stmt, values, sent):
    """``stmt`` bound to ``values``, then value ``i`` replaced by the bytes ``sent[i]``."""
    b = stmt.bind(values)
    for i, data in sent.items():
        b.values[i] = data
    return b


def two_partitions(session, table, clustering_type):
    """Table ``table`` (p varint, c CLUSTERING_TYPE, v text) with row (1, 1) in partition 1 sent canonical
    (v 'canonical') and in partition 1 sent padded (v 'padded')."""
    session.execute(f"CREATE TABLE {table} (p varint, c {clustering_type}, v text, PRIMARY KEY (p, c))")
    insert = session.prepare(f"INSERT INTO {table} (p, c, v) VALUES (?, ?, ?)")
    session.execute(insert, (1, 1, "canonical"))
    session.execute(bound(insert, (1, 1, "padded"), {0: PADDED_ONE}))


def test_a_padded_partition_key_is_another_partition_with_its_own_token(session):
    two_partitions(session, "pk", "varint")
    rows = session.execute("SELECT token(p) AS t, varintAsBlob(p) AS b, p, c, v FROM pk")
    by_bytes = {r.b: r for r in rows}
    assert set(by_bytes) == {ONE, PADDED_ONE}
    assert by_bytes[ONE].v == "canonical" and by_bytes[PADDED_ONE].v == "padded"
    assert by_bytes[ONE].p == by_bytes[PADDED_ONE].p == 1  # the value is the same number
    assert by_bytes[ONE].t != by_bytes[PADDED_ONE].t  # Murmur3 of the bytes as sent
    by_p = session.prepare("SELECT v FROM pk WHERE p = ?")
    assert [r.v for r in session.execute(by_p, (1,))] == ["canonical"]
    assert [r.v for r in session.execute(bound(by_p, (1,), {0: PADDED_ONE}))] == ["padded"]
    by_in = session.prepare("SELECT v FROM pk WHERE p IN (?, ?)")
    assert sorted(r.v for r in session.execute(bound(by_in, (1, 1), {1: PADDED_ONE}))) == ["canonical", "padded"]
    by_token = session.prepare("SELECT v FROM pk WHERE token(p) = token(?)")
    assert [r.v for r in session.execute(bound(by_token, (1,), {0: PADDED_ONE}))] == ["padded"]
    # SELECT JSON and casts show the number, whatever its bytes
    assert sorted(r[0] for r in session.execute("SELECT JSON p, v FROM pk")) == [
        '{"p": 1, "v": "canonical"}', '{"p": 1, "v": "padded"}']
    assert {r[0] for r in session.execute("SELECT CAST(p AS text) FROM pk")} == {"1"}


def test_writes_and_conditions_address_the_padded_partition(session):
    two_partitions(session, "w", "int")
    update = session.prepare("UPDATE w SET v = ? WHERE p = ? AND c = 1")
    session.execute(bound(update, ("updated", 1), {1: PADDED_ONE}))
    conditional = session.prepare("UPDATE w SET v = ? WHERE p = ? AND c = 1 IF v = ?")
    assert session.execute(bound(conditional, ("lwt", 1, "updated"), {1: PADDED_ONE})).one()[0] is True
    assert session.execute(conditional, ("lwt", 1, "updated")).one()[0] is False  # the canonical row is not it
    if_not_exists = session.prepare("INSERT INTO w (p, c, v) VALUES (?, 2, 'new') IF NOT EXISTS")
    assert session.execute(bound(if_not_exists, (1,), {0: PADDED_ONE})).one()[0] is True
    assert session.execute(bound(if_not_exists, (1,), {0: PADDED_ONE})).one()[0] is False
    rows = {(r.b, r.c): r.v for r in session.execute("SELECT varintAsBlob(p) AS b, c, v FROM w")}
    assert rows == {(ONE, 1): "canonical", (PADDED_ONE, 1): "lwt", (PADDED_ONE, 2): "new"}
    session.execute(bound(session.prepare("DELETE FROM w WHERE p = ?"), (1,), {0: PADDED_ONE}))
    assert [(r.b, r.v) for r in session.execute("SELECT varintAsBlob(p) AS b, v FROM w")] == [(ONE, "canonical")]


def test_a_batch_writes_canonical_and_padded_partitions_apart(session):
    session.execute("CREATE TABLE b (p varint PRIMARY KEY, v varint)")
    insert = session.prepare("INSERT INTO b (p, v) VALUES (?, ?)")
    batch = BatchStatement()
    batch.add(insert.bind((1, 1)))
    batch.add(bound(insert, (1, -2), {0: PADDED_ONE, 1: PADDED_MINUS_TWO}))
    session.execute(batch)
    rows = {r.p_bytes: (r.v, r.v_bytes) for r in session.execute(
        "SELECT varintAsBlob(p) AS p_bytes, v, varintAsBlob(v) AS v_bytes FROM b")}
    assert rows == {ONE: (1, ONE), PADDED_ONE: (-2, PADDED_MINUS_TWO)}  # a regular cell keeps its bytes too


def test_a_padded_partition_pages_on_its_own(session):
    session.execute("CREATE TABLE pages (p varint, c int, PRIMARY KEY (p, c))")
    insert = session.prepare("INSERT INTO pages (p, c) VALUES (?, ?)")
    for c in range(5):
        session.execute(insert, (1, c))
        session.execute(bound(insert, (1, c + 10), {0: PADDED_ONE}))
    by_p = session.prepare("SELECT c FROM pages WHERE p = ?")
    by_p.fetch_size = 2
    assert [r.c for r in session.execute(bound(by_p, (1,), {0: PADDED_ONE}))] == [10, 11, 12, 13, 14]
    everything = session.prepare("SELECT varintAsBlob(p) AS b, c FROM pages")
    everything.fetch_size = 3
    rows = [(r.b, r.c) for r in session.execute(everything)]
    assert sorted(rows) == sorted([(ONE, c) for c in range(5)] + [(PADDED_ONE, c + 10) for c in range(5)])
    assert len(rows) == 10


def test_a_padded_clustering_key_is_the_same_row_by_value(session):
    session.execute("CREATE TABLE ck (p int, c varint, v text, PRIMARY KEY (p, c))")
    insert = session.prepare("INSERT INTO ck (p, c, v) VALUES (0, ?, ?)")
    session.execute(insert, (1, "first"))
    session.execute(bound(insert, (1, "second"), {0: PADDED_ONE}))
    session.execute(insert, (2, "two"))
    # one row: the value overwritten, the clustering bytes of the first write kept
    assert [(r.b, r.v) for r in session.execute("SELECT varintAsBlob(c) AS b, v FROM ck WHERE p = 0")] == [
        (ONE, "second"), (b"\x02", "two")]
    by_c = session.prepare("SELECT v FROM ck WHERE p = 0 AND c = ?")
    assert [r.v for r in session.execute(bound(by_c, (1,), {0: PADDED_ONE}))] == ["second"]
    by_in = session.prepare("SELECT v FROM ck WHERE p = 0 AND c IN (?, ?)")
    assert [r.v for r in session.execute(bound(by_in, (1, 1), {1: PADDED_ONE}))] == ["second"]
    from_c = session.prepare("SELECT v FROM ck WHERE p = 0 AND c > ?")
    assert [r.v for r in session.execute(bound(from_c, (1,), {0: PADDED_ONE}))] == ["two"]
    session.execute(bound(session.prepare("DELETE FROM ck WHERE p = 0 AND c = ?"), (1,), {0: PADDED_ONE}))
    assert [r.v for r in session.execute("SELECT v FROM ck WHERE p = 0")] == ["two"]


def test_the_cdc_log_keeps_the_padded_key_in_its_partitions_stream(session):
    session.execute("CREATE TABLE logged (p varint PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    insert = session.prepare("INSERT INTO logged (p, v) VALUES (?, ?)")
    session.execute(insert, (1, 1))
    session.execute(bound(insert, (1, 2), {0: PADDED_ONE}))
    tokens = {r.b: r.t for r in session.execute("SELECT varintAsBlob(p) AS b, token(p) AS t FROM logged")}
    log = {r.b: r.s for r in session.execute(
        "SELECT varintAsBlob(p) AS b, \"cdc$stream_id\" AS s FROM logged_scylla_cdc_log")}
    assert set(log) == set(tokens) == {ONE, PADDED_ONE}
    assert tokens[ONE] != tokens[PADDED_ONE]
    vnodes = sorted((r.range_end, r.streams) for r in session.execute(
        "SELECT range_end, streams FROM system_distributed.cdc_streams_descriptions_v2"))
    for key, token in tokens.items():  # each change in a stream of the vnode that owns its partition's token
        owner = next((streams for end, streams in vnodes if token <= end), vnodes[0][1])
        assert log[key] in owner


def test_in_names_the_canonical_and_the_padded_partition_and_pages_through_both(session):
    session.execute("CREATE TABLE both_pages (p varint, c int, PRIMARY KEY (p, c))")
    insert = session.prepare("INSERT INTO both_pages (p, c) VALUES (?, ?)")
    for c in range(3):  # interleaved clustering values: a page's position in one says nothing of the other
        session.execute(insert, (1, 2 * c))
        session.execute(bound(insert, (1, 2 * c + 1), {0: PADDED_ONE}))
    by_in = session.prepare("SELECT varintAsBlob(p) AS b, c FROM both_pages WHERE p IN (?, ?)")
    everything = sorted([(ONE, 2 * c) for c in range(3)] + [(PADDED_ONE, 2 * c + 1) for c in range(3)])
    for fetch_size in (1, 2, 100):
        by_in.fetch_size = fetch_size
        rows = [(r.b, r.c) for r in session.execute(bound(by_in, (1, 1), {1: PADDED_ONE}))]
        assert sorted(rows) == everything and len(rows) == 6
    one_column = session.prepare("SELECT c FROM both_pages WHERE p IN (?, ?)")  # the plain-column read path
    one_column.fetch_size = 1
    assert sorted(r.c for r in session.execute(bound(one_column, (1, 1), {1: PADDED_ONE}))) == list(range(6))


def test_a_padded_varint_inside_a_frozen_key_keeps_its_bytes(session):
    session.execute("CREATE TABLE nested (p frozen<tuple<varint, text>>, q int, v text, PRIMARY KEY ((p, q)))")
    insert = session.prepare("INSERT INTO nested (p, q, v) VALUES (?, 0, ?)")
    session.execute(insert, ((1, "a"), "canonical"))
    padded_tuple = b"\x00\x00\x00\x02" + PADDED_ONE + b"\x00\x00\x00\x01a"
    session.execute(bound(insert, ((1, "a"), "padded"), {0: padded_tuple}))
    assert sorted(r.v for r in session.execute("SELECT v FROM nested")) == ["canonical", "padded"]
    by_p = session.prepare("SELECT p, v FROM nested WHERE p = ? AND q = 0")
    assert [tuple(r) for r in session.execute(bound(by_p, ((1, "a"),), {0: padded_tuple}))] == [((1, "a"), "padded")]
    assert [r.v for r in session.execute(by_p, ((1, "a"),))] == ["canonical"]
