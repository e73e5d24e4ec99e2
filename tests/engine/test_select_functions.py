"""Selectors and functions as ScyllaDB has them: literal selectors and SELECT without FROM, CAST
conversions, C-style casts that reinterpret or widen, overload resolution, set_intersection, list
subscripts, mintimeuuid's range (docs/compatibility.md, "Queries")."""

from __future__ import annotations

import datetime
import math
import uuid
from decimal import Decimal

import pytest
from cassandra.util import Date

from logtide.errors import InvalidRequest, SyntaxException
from logtide.schema import types as T

from ..conftest import rows


def one(session, query: str, params=None):
    return rows(session.execute(query, params))[0]


def test_literal_selectors_take_their_default_types(session):
    result = session.execute("SELECT 1, 3000000000, 99999999999999999999, 1.5, 'a', true, 0xff, "
                             "[1, 2, 3000000000], {1, 2}, {'a': 1}, (1, 'x') FROM system.local")
    assert [c.type.cql() for c in result.columns] == [
        "int", "bigint", "varint", "double", "text", "boolean", "blob", "frozen<list<bigint>>", "frozen<set<int>>",
        "frozen<map<text, int>>", "frozen<tuple<int, text>>"]
    assert rows(result) == [(1, 3000000000, 99999999999999999999, 1.5, "a", True, b"\xff", [1, 2, 3000000000],
                             {1, 2}, {"a": 1}, (1, "x"))]
    assert [c.name for c in result.columns][:5] == ["1", "3000000000", "99999999999999999999", "1.5", "'a'"]


def test_select_without_from_reads_one_row(session):
    assert one(session, "SELECT 1 AS one, 'hi' AS greeting") == (1, "hi")
    assert one(session, "SELECT CAST(1 AS bigint), toTimestamp(now()) IS NOT NULL".replace(" IS NOT NULL", ""))[0] == 1
    assert one(session, 'SELECT "system$dummy"') == ("",)
    assert rows(session.execute("SELECT 1 WHERE \"system$dummy\" = 'no'")) == []
    assert one(session, "SELECT count(1), count(*), sum(5), min('a'), 42") == (1, 1, 5, "a", 42)
    assert one(session, "SELECT JSON 1, 'hello' AS greeting") == ('{"1": 1, "greeting": "hello"}',)
    assert one(session, "SELECT 1 PER PARTITION LIMIT 1 LIMIT 5 ALLOW FILTERING BYPASS CACHE USING TIMEOUT 50ms") == (1,)


@pytest.mark.parametrize("query, error, message", [
    ("SELECT *", InvalidRequest, "SELECT \\* is not allowed without a FROM clause"),
    ("SELECT JSON *", InvalidRequest, "without a FROM clause"),
    ("SELECT col", InvalidRequest, "Unrecognized name col"),
    ("SELECT 1 WHERE x = 1", InvalidRequest, "Unrecognized name x"),
    ("SELECT 1 ORDER BY x", InvalidRequest, "ORDER BY"),
    ("SELECT 1 LIMIT 0", InvalidRequest, "LIMIT must be strictly positive"),
    ("SELECT DISTINCT 1", SyntaxException, "expecting K_FROM"),
    ("SELECT * FORM t", SyntaxException, "mismatched input 'FORM' expecting K_FROM"),
    ("SELECT ?", InvalidRequest, "Could not infer type of \\?"),
    ("SELECT :v", InvalidRequest, "Could not infer type of :v"),
    ("SELECT count(?)", InvalidRequest, "count\\(\\) function is only valid when argument types are known"),
    ("SELECT sum(*)", SyntaxException, "no viable alternative"),
])
def test_select_without_from_refusals(session, query, error, message):
    with pytest.raises(error, match=message):
        session.execute(query)


@pytest.fixture
def casts(session):
    session.execute("CREATE TABLE c (p int PRIMARY KEY, vi varint)")
    session.execute("CREATE TABLE n (p int PRIMARY KEY, n counter)")
    session.execute("CREATE TABLE a (p int PRIMARY KEY, f float, d double, dc decimal, ts timestamp, tu timeuuid, "
                    "dt date, b boolean, i int, t text)")
    return session


def test_cast_converts_numbers_with_wraparound_and_overflow_to_infinity(casts):
    v = 32767456456456456456545678943512357658768763546575675
    casts.execute(f"INSERT INTO c (p, vi) VALUES (0, {v})")
    casts.execute(f"INSERT INTO c (p, vi) VALUES (1, {-v})")

    def wrap(n, bits):
        n %= 1 << bits
        return n - (1 << bits) if n >= 1 << (bits - 1) else n
    got = one(casts, "SELECT CAST(vi AS tinyint), CAST(vi AS smallint), CAST(vi AS int), CAST(vi AS bigint), "
                     "CAST(vi AS float), CAST(vi AS double), CAST(vi AS decimal), CAST(vi AS text) FROM c WHERE p = 0")
    assert got == (wrap(v, 8), wrap(v, 16), wrap(v, 32), wrap(v, 64), math.inf, float(v), Decimal(f"{v}.0"), str(v))
    assert one(casts, "SELECT CAST(vi AS float) FROM c WHERE p = 1") == (-math.inf,)


def test_cast_names_its_column_and_a_cast_to_the_same_type_is_the_value(casts):
    result = casts.execute("SELECT CAST(vi AS int), CAST(p AS int) FROM c")
    assert [c.name for c in result.columns] == ["cast(vi as int)", "p"]


def test_cast_of_counters_dates_times_and_text(casts):
    casts.execute("UPDATE n SET n = n + 1000 WHERE p = 5")
    assert one(casts, "SELECT CAST(n AS tinyint), CAST(n AS double), CAST(n AS decimal), CAST(n AS varchar), "
                      "CAST(n AS counter) FROM n WHERE p = 5") == (-24, 1000.0, Decimal("1000.0"), "1000", 1000)
    casts.execute("INSERT INTO a (p, f, ts, tu, dt, b) VALUES (0, 3.1415927, '2013-02-02 10:00:00.123+0000', "
                  "6b1b3620-33fd-11eb-8080-808080808080, '2020-12-01', true)")
    f_text, ts_text, ts_date, tu_ts, dt_ts, b_text = one(
        casts, "SELECT CAST(f AS text), CAST(ts AS text), CAST(ts AS date), CAST(tu AS timestamp), "
               "CAST(dt AS timestamp), CAST(b AS ascii) FROM a WHERE p = 0")
    assert float(f_text) == pytest.approx(3.1415927) and len(f_text) <= 11
    assert ts_text == "2013-02-02T10:00:00.123Z" and ts_date == Date("2013-02-02")
    assert tu_ts == datetime.datetime(2020, 12, 1, 17, 48, 28, 162000) and dt_ts == datetime.datetime(2020, 12, 1)
    assert b_text == "true"


@pytest.mark.parametrize("table, column, target", [("c", "vi", "blob"), ("c", "vi", "timestamp"),
                                                   ("c", "p", "counter"), ("n", "n", "uuid")])
def test_cast_refuses_other_pairs_with_scyllas_message(casts, table, column, target):
    with pytest.raises(InvalidRequest, match=r"org\.apache\.cassandra\.db\.marshal\.\w+ cannot be cast to "
                                             r"org\.apache\.cassandra\.db\.marshal\.\w+"):
        casts.execute(f"SELECT CAST({column} AS {target}) FROM {table}")


def test_c_style_casts_reinterpret_or_widen_typed_values(session):
    session.execute("CREATE TABLE w (p int PRIMARY KEY, b blob, g bigint)")
    session.execute("INSERT INTO w (p, b, g) VALUES (1, (int)1234, (bigint)blobasint(0xbeefdead))")
    session.execute("INSERT INTO w (p, b, g) VALUES (2, (blob)(blob)(tinyint)42, blobasint(0xbeefdead))")
    session.execute("INSERT INTO w (p, b) VALUES (3, blobasint(blobasint(0xFEEDF00D)))")
    session.execute("INSERT INTO w (p, b) VALUES (4, token(1234))")
    signed = int.from_bytes(bytes.fromhex("beefdead"), "big", signed=True)
    assert rows(session.execute("SELECT p, b, g FROM w WHERE p IN (1, 2, 3, 4)")) == [
        (1, (1234).to_bytes(4, "big"), signed), (2, b"\x2a", signed), (3, bytes.fromhex("feedf00d"), None),
        (4, (8821045555241575141).to_bytes(8, "big"), None)]
    assert rows(session.execute("SELECT p FROM w WHERE p = 1 AND b = (blob)(int)1234 ALLOW FILTERING")) == [(1,)]
    for bad, message in [("(blob)123", "Cannot cast value 123 to type blob"),
                         ("12", "Invalid INTEGER constant"),
                         ("blobasint((bigint)1234)", "blobasint, value 0x00000000000004d2 is not a valid")]:
        with pytest.raises(InvalidRequest, match=message):
            session.execute(f"INSERT INTO w (p, b) VALUES (5, {bad})")
    with pytest.raises(InvalidRequest, match=r"Cannot cast value \(blob\)0xbaaaaaad to type int"):
        session.execute("INSERT INTO w (p) VALUES ((int)(blob)0xbaaaaaad)")


def test_overloads_are_resolved_by_argument_types(session):
    session.execute("CREATE TABLE o (p int PRIMARY KEY, d date, t text, i int, ts timestamp)")
    with pytest.raises(InvalidRequest, match="Ambiguous call to function todate"):
        session.prepare("INSERT INTO o (p, d) VALUES (1, toDate(?))")
    prepared = session.prepare("INSERT INTO o (p, d) VALUES (1, toDate((timestamp)?))")
    session.execute(prepared, [datetime.datetime(1970, 1, 3)])
    assert one(session, "SELECT d FROM o WHERE p = 1") == (Date(2),)
    for column in ("t", "i"):
        with pytest.raises(InvalidRequest, match=f"Type error: {column} cannot be passed as argument 0 of function "
                                                 "system.mintimeuuid of type timestamp"):
            session.execute(f"SELECT mintimeuuid({column}) FROM o")


def test_selector_bind_markers_are_typed_by_their_receivers(session):
    prepared = session.prepare("SELECT intAsBlob(?), blobAsInt(intAsBlob(?)) FROM system.local")
    assert [(s.name, s.type.cql()) for s in prepared.bind_specs] == [
        ("arg0(system.intasblob)", "int"), ("arg0(system.intasblob)", "int")]
    assert rows(session.execute(prepared, [4, 5])) == [(b"\x00\x00\x00\x04", 5)]
    session.execute("CREATE TABLE m (p int PRIMARY KEY, m map<text, int>, l list<int>)")
    session.execute("INSERT INTO m (p, m, l) VALUES (1, {'a': 1}, [7, 8])")
    prepared = session.prepare("SELECT m[?], l[?] FROM m WHERE p = 1")
    assert [(s.name, s.type.cql()) for s in prepared.bind_specs] == [("key(m)", "text"), ("idx(l)", "int")]
    assert rows(session.execute(prepared, ["a", 1])) == [(1, 8)]
    assert rows(session.execute(prepared, [None, 9])) == [(None, None)]


def test_subscripts_of_lists_and_refusals_of_other_types(session):
    session.execute("CREATE TABLE m (p int PRIMARY KEY, l list<int>, fl frozen<list<int>>)")
    session.execute("INSERT INTO m (p, l, fl) VALUES (1, [7, 8], [9])")
    assert one(session, "SELECT l[0], l[1], l[2], l[-1], fl[0] FROM m WHERE p = 1") == (7, 8, None, None, 9)
    with pytest.raises(InvalidRequest, match="Column p is not a map/set/list, cannot be subscripted"):
        session.execute("SELECT p[0] FROM m")


def test_set_intersection(session):
    session.execute("CREATE TABLE s (p int PRIMARY KEY, a set<int>, b set<int>, c set<tinyint>, f frozen<set<int>>)")
    session.execute("INSERT INTO s (p, a, b, c, f) VALUES (1, {1, 2, 3}, {2, 3, 4}, {1}, {-1, 2})")
    session.execute("INSERT INTO s (p, a) VALUES (2, {1})")
    assert rows(session.execute("SELECT set_intersection(a, b), set_intersection(a, f), "
                                "set_intersection(a, set_intersection(b, f)), set_intersection(a, {3, 9}) "
                                "FROM s WHERE p = 1")) == [({2, 3}, {2}, {2}, {3})]
    assert one(session, "SELECT set_intersection(a, b) FROM s WHERE p = 2") == (None,)
    for call, message in [("set_intersection(a)", "accepts 2 arguments only"),
                          ("set_intersection(a, p)", "both arguments are of set type"),
                          ("set_intersection(a, c)", "both arguments are of the same set type")]:
        with pytest.raises(InvalidRequest, match=message):
            session.execute(f"SELECT {call} FROM s")


def test_mintimeuuid_refuses_timestamps_a_timeuuid_cannot_hold(session):
    session.execute("CREATE TABLE u (p int PRIMARY KEY, t timestamp)")
    for ts in (-1706638779000, -123, 123, 1706638779000):
        session.execute(f"INSERT INTO u (p, t) VALUES (1, {ts})")
        assert one(session, "SELECT tounixtimestamp(mintimeuuid(t)), tounixtimestamp(maxtimeuuid(t)) "
                            "FROM u WHERE p = 1") == (ts, ts)
    for ts in (-2**63 + 123, -2**58, 2**62, 2**63 - 123):
        session.execute(f"INSERT INTO u (p, t) VALUES (1, {ts})")
        with pytest.raises(InvalidRequest, match="timestamp is out of range"):
            session.execute("SELECT mintimeuuid(t) FROM u WHERE p = 1")


def test_blob_of_nothing_is_an_empty_value(session):
    session.execute("CREATE TABLE e (p int PRIMARY KEY, l list<int>)")
    session.execute("INSERT INTO e (p, l) VALUES (1, [1, blobAsInt(0x)])")
    stored = one(session, "SELECT l FROM e WHERE p = 1")[0]
    assert len(stored) == 2 and stored[0] == 1  # a list holds no null: the second element is the empty int


def test_writetime_of_one_element_needs_a_non_frozen_collection(session):
    session.execute("CREATE TABLE w (p int PRIMARY KEY, x frozen<map<int, int>>, m map<int, int>)")
    session.execute("INSERT INTO w (p, x, m) VALUES (1, {1: 10}, {1: 10}) USING TIMESTAMP 5")
    assert one(session, "SELECT writetime(m[1]) FROM w") == (5,)
    with pytest.raises(InvalidRequest, match="WRITETIME on a subscript is only valid for non-frozen map or set columns"):
        session.execute("SELECT writetime(x[1]) FROM w")


def test_uuid_functions_accept_timeuuids_where_uuids_are_expected(session):
    session.execute("CREATE TABLE q (p int PRIMARY KEY, u uuid)")
    session.execute("INSERT INTO q (p, u) VALUES (1, now())")
    assert isinstance(one(session, "SELECT u FROM q")[0], uuid.UUID)


def test_token_of_values_in_where_is_the_token_of_that_partition_key(session):
    session.execute("CREATE TABLE tk (k int PRIMARY KEY, v int)")
    for i in range(12):
        session.execute(f"INSERT INTO tk (k, v) VALUES ({i}, {i})")
    ring = sorted((t, k) for t, k in rows(session.execute("SELECT token(k), k FROM tk")))
    lo, hi = ring[3], ring[8]
    between = rows(session.execute(f"SELECT k FROM tk WHERE token(k) >= token({lo[1]}) AND token(k) < token({hi[1]})"))
    assert between == [(k,) for _, k in ring[3:8]]
    assert rows(session.execute(f"SELECT k FROM tk WHERE token(k) = token({lo[1]})")) == [(lo[1],)]
    prepared = session.prepare("SELECT k FROM tk WHERE token(k) > token(?)")
    assert [(s.name, s.type.cql()) for s in prepared.bind_specs] == [("arg0(system.token)", "int")]
    assert rows(session.execute(prepared, [hi[1]])) == [(k,) for _, k in ring[9:]]
    with pytest.raises(InvalidRequest, match="Invalid null value for partition key token"):
        session.execute("SELECT k FROM tk WHERE token(k) > token(null)")


def test_token_as_a_selector_takes_the_partition_key_types(session):
    session.execute("CREATE TABLE tk2 (k1 uuid, k2 text, c int, PRIMARY KEY ((k1, k2), c))")
    key = uuid.UUID("6bddc89a-5644-11e4-97fc-56847afe9799")
    session.execute("INSERT INTO tk2 (k1, k2, c) VALUES (%s, 'x', 0)" % key)
    own, literal = one(session, f"SELECT token(k1, k2), token({key}, 'x') FROM tk2")
    assert own == literal
    for query, message in [
        ("SELECT token(k2, k1) FROM tk2", "Type error: k2 cannot be passed as argument 0 of function system.token of type uuid"),
        ("SELECT token(k1) FROM tk2", "Invalid number of arguments in call to function system.token: 2 required but 1 "
                                      "provided"),
        ("SELECT token(s1, k1) FROM tk2", "Unrecognized name s1"),
    ]:
        with pytest.raises(InvalidRequest) as e:
            session.execute(query)
        assert str(e.value) == message


def test_blob_as_ascii_refuses_bytes_that_are_not_ascii(session):
    session.execute("CREATE TABLE a (k int PRIMARY KEY, t ascii)")
    session.execute("INSERT INTO a (k, t) VALUES (1, blobAsAscii(0x41207e))")
    assert rows(session.execute("SELECT t FROM a")) == [("A ~",)]
    with pytest.raises(InvalidRequest, match=r"^In call to function system.blobasascii, value 0xc3a9 is not a valid "
                                             r"binary representation for type ascii$"):
        session.execute("INSERT INTO a (k, t) VALUES (2, blobAsAscii(0xc3a9))")


def test_counter_as_blob_and_back_take_counters_only(session):
    session.execute("CREATE TABLE cn (k int PRIMARY KEY, c counter)")
    session.execute("CREATE TABLE bi (k int PRIMARY KEY, i bigint, v int)")
    session.execute("UPDATE cn SET c = c + 1000 WHERE k = 1")
    session.execute("INSERT INTO bi (k, i, v) VALUES (1, 1000, 7)")
    assert rows(session.execute("SELECT counterasblob(c) FROM cn")) == [((1000).to_bytes(8, "big"),)]
    assert rows(session.execute("SELECT blobascounter(bigintasblob(i)) FROM bi")) == [(1000,)]
    with pytest.raises(InvalidRequest, match="function system.counterasblob of type counter"):
        session.execute("SELECT counterasblob(i) FROM bi")
    with pytest.raises(InvalidRequest, match="blobascounter, value 0x00000007 is not a valid binary representation"):
        session.execute("SELECT blobascounter(intasblob(v)) FROM bi")


def test_an_unset_function_argument_in_where_is_refused(session):
    """``token(?)`` and ``blobAsInt(?)`` bound to UNSET are refused with a message naming the unset value (the
    marker inside ``token()`` is ScyllaDB's ``arg0(system.token)``, no routing-key column)."""
    session.execute("CREATE TABLE tu (k int PRIMARY KEY, v int)")
    for query in ("SELECT k FROM tu WHERE token(k) >= token(?)", "SELECT k FROM tu WHERE k = blobAsInt(?)"):
        with pytest.raises(InvalidRequest, match="unset"):
            session.execute(session.prepare(query), [T.UNSET])
