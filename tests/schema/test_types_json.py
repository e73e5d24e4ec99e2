"""to_json / from_json as Cassandra's toJson()/SELECT JSON and fromJson()/INSERT JSON."""

import datetime
import json
import math
import uuid
from decimal import Decimal

import pytest
from cassandra import util as cutil

from logtide.errors import InvalidRequest
from logtide.schema import types as T

UT = T.UserType("ks", "ut", ("a", "Bee"), (T.INT, T.TEXT), frozen=True)


@pytest.mark.parametrize(
    "t, value, text",
    [
        (T.TEXT, 'a"b\n\x01', '"a\\"b\\n\\u0001"'),
        (T.TEXT, "é", '"é"'),
        (T.INT, 5, "5"),
        (T.VARINT, 10**30, "1000000000000000000000000000000"),
        (T.DECIMAL, Decimal("1.50"), "1.50"),
        (T.DECIMAL, Decimal("1E+3"), "1E+3"),
        (T.BOOLEAN, True, "true"),
        (T.BLOB, b"\xca\xfe", '"0xcafe"'),
        (T.UUID_TYPE, uuid.UUID(int=1), '"00000000-0000-0000-0000-000000000001"'),
        (T.INET, "127.0.0.1", '"127.0.0.1"'),
        (T.INET, "::1", '"0:0:0:0:0:0:0:1"'),
        (T.TIMESTAMP, datetime.datetime(2020, 3, 23, 13, 10, 40, 910000), '"2020-03-23 13:10:40.910Z"'),
        (T.TIMESTAMP, datetime.datetime(1969, 12, 31, 23, 59, 59, 999000), '"1969-12-31 23:59:59.999Z"'),
        (T.DATE, cutil.Date(18344), '"2020-03-23"'),
        (T.TIME, cutil.Time(47440910000000), '"13:10:40.910000000"'),
        (T.DURATION, cutil.Duration(0, 0, 3720 * 10**9), '"1h2m"'),
        (T.DURATION, cutil.Duration(14, 3, 1001), '"1y2mo3d1us1ns"'),
        (T.DURATION, cutil.Duration(-1, 0, 0), '"-1mo"'),
        (T.DOUBLE, 1.0, "1.0"),
        (T.DOUBLE, 1e20, "1.0E20"),
        (T.DOUBLE, 1e-5, "1.0E-5"),
        (T.DOUBLE, 0.001, "0.001"),
        (T.DOUBLE, 1234567.5, "1234567.5"),
        (T.DOUBLE, 12345678.0, "1.2345678E7"),
        (T.DOUBLE, -0.0, "-0.0"),
        (T.DOUBLE, math.nan, "null"),
        (T.FLOAT, math.inf, "null"),
        (T.FLOAT, 0.10000000149011612, "0.1"),
        (T.FLOAT, 3.4028234663852886e38, "3.4028235E38"),
        (T.ListType(T.INT), [1, 2], "[1, 2]"),
        (T.SetType(T.TEXT), cutil.SortedSet(["a"]), '["a"]'),
        (T.MapType(T.INT, T.TEXT), {1: "a", 2: "b"}, '{"1": "a", "2": "b"}'),
        (T.MapType(T.TEXT, T.INT), {"k": 1}, '{"k": 1}'),
        (T.MapType(T.ListType(T.INT, True), T.INT, True), {(1, 2): 3}, '{"[1, 2]": 3}'),
        (T.MapType(T.TupleType((T.INT, T.TEXT)), T.INT, True), {(1, "a"): 3}, '{"[1, \\"a\\"]": 3}'),
        (T.TupleType((T.INT, T.TEXT)), (1, None), "[1, null]"),
        (T.TupleType((T.INT, T.TEXT)), (1,), "[1, null]"),
        (UT, UT.make_value(1, "x"), '{"a": 1, "\\"Bee\\"": "x"}'),
        (T.INT, None, "null"),
        (T.INT, T.EMPTY, '""'),
    ],
)
def test_to_json_matches_cassandra(t, value, text):
    assert T.to_json(t, value) == text


def test_to_json_of_deserialized_values():
    t = T.MapType(T.INT, T.SetType(T.TEXT, True), True)
    v = t.deserialize(t.serialize({2: {"b", "a"}, 1: set()}))
    assert T.to_json(t, v) == '{"1": [], "2": ["a", "b"]}'


def test_java_double_and_float_formatting():
    assert T.java_double_to_string(100.0) == "100.0"
    assert T.java_double_to_string(1e7) == "1.0E7"
    assert T.java_double_to_string(-1.5e-7) == "-1.5E-7"
    assert T.java_float_to_string(1.100000023841858) == "1.1"


@pytest.mark.parametrize(
    "t, obj, value",
    [
        (T.INT, 5, 5),
        (T.INT, "5", 5),
        (T.BIGINT, 2**40, 2**40),
        (T.SMALLINT, 5, 5),
        (T.TINYINT, "5", 5),
        (T.VARINT, "123456789012345678901234567890", 123456789012345678901234567890),
        (T.VARINT, 12, 12),
        (T.DECIMAL, 1.5, Decimal("1.5")),
        (T.DECIMAL, "1.50", Decimal("1.50")),
        (T.DECIMAL, 7, Decimal(7)),
        (T.DOUBLE, 1, 1.0),
        (T.DOUBLE, "NaN", None),
        (T.FLOAT, 0.1, 0.10000000149011612),
        (T.BOOLEAN, True, True),
        (T.BOOLEAN, "true", True),
        (T.TEXT, "x", "x"),
        (T.BLOB, "0xcafe", b"\xca\xfe"),
        (T.UUID_TYPE, "00000000-0000-0000-0000-000000000001", uuid.UUID(int=1)),
        (T.TIMESTAMP, "2020-03-23 13:10:40.910Z", datetime.datetime(2020, 3, 23, 13, 10, 40, 910000)),
        (T.TIMESTAMP, 1584969040910, datetime.datetime(2020, 3, 23, 13, 10, 40, 910000)),
        (T.DATE, "2020-03-23", cutil.Date(18344)),
        (T.TIME, "13:10:40.910000000", cutil.Time(47440910000000)),
        (T.INET, "::1", "::1"),
        (T.DURATION, "1h2m", cutil.Duration(0, 0, 3720 * 10**9)),
        (T.ListType(T.INT), [1, "2"], [1, 2]),
        (T.ListType(T.INT), "[1, 2]", [1, 2]),
        (T.TupleType((T.INT, T.TEXT)), [1, None], (1, None)),
        (T.INT, None, None),
    ],
)
def test_from_json_accepts_what_cassandra_accepts(t, obj, value):
    got = T.from_json(t, obj, "v")
    if value is None and obj is not None:
        assert got != got
    else:
        assert got == value


def test_from_json_collections():
    s = T.from_json(T.SetType(T.INT), [3, 1, 3], "v")
    assert list(s) == [1, 3]
    m = T.from_json(T.MapType(T.INT, T.TEXT), {"2": "b", "1": "a"}, "v")
    assert list(m.items()) == [(1, "a"), (2, "b")]
    u = T.from_json(UT, {"a": 1, '"Bee"': "x"}, "v")
    assert u == UT.make_value(1, "x")
    assert T.from_json(UT, {"A": 1}, "v") == UT.make_value(1, None)
    k = T.from_json(T.MapType(T.ListType(T.INT, True), T.INT, True), {"[1, 2]": 3}, "v")
    assert list(k.items()) == [([1, 2], 3)]


@pytest.mark.parametrize(
    "t, obj, detail",
    [
        (T.INT, "x", "Unable to make int from 'x'"),
        (T.INT, 1.5, "Expected an int value, but got a Double: 1.5"),
        (T.INT, 3000000000, "Expected an int value, but got a Long: 3000000000"),
        (T.INT, True, "Expected an int value, but got a Boolean: true"),
        (T.BIGINT, 2**70, "Expected a bigint value, but got a BigInteger: 1180591620717411303424"),
        (T.SMALLINT, 1.5, "Unable to make short from '1.5'"),
        (T.SMALLINT, [1], "Expected a short value, but got a ArrayList: [1]"),
        (T.VARINT, 1.5, "Value '1.5' is not a valid representation of a varint value"),
        (T.DECIMAL, "abc", "Value 'abc' is not a valid representation of a decimal value"),
        (T.DOUBLE, [1], "Expected a double value, but got a ArrayList: [1]"),
        (T.FLOAT, "x", "Unable to make float from 'x'"),
        (T.BOOLEAN, 1, "Expected a boolean value, but got a Integer: 1"),
        (T.BOOLEAN, "yes", "Unable to make boolean from 'yes'"),
        (T.TEXT, 5, "Expected a UTF-8 string, but got a Integer: 5"),
        (T.ASCII, 5, "Expected an ascii string, but got a Integer: 5"),
        (T.BLOB, "cafe", "Value 'cafe' is not a valid blob representation: String representation of blob is missing 0x prefix: cafe"),
        (T.UUID_TYPE, 5, "Expected a string representation of a uuid, but got a Integer: 5"),
        (T.UUID_TYPE, "x", "Unable to make UUID from 'x'"),
        (T.TIMEUUID, "x", "Unknown timeuuid representation: x"),
        (T.TIMESTAMP, 1.5, "Expected a long or a datestring representation of a timestamp value, but got a Double: 1.5"),
        (T.DATE, 5, "Expected a string representation of a date value, but got a Integer: 5"),
        (T.TIME, 5, "Expected a string representation of a time value, but got a Integer: 5"),
        (T.INET, 5, "Expected a string representation of an inet value, but got a Integer: 5"),
        (T.DURATION, 5, "Expected a string representation of a duration, but got a Integer: 5"),
        (T.ListType(T.INT), {"a": 1}, "Expected a list, but got a LinkedHashMap: {a=1}"),
        (T.ListType(T.INT), [None], "Invalid null element in list"),
        (T.SetType(T.INT), 5, "Expected a list (representing a set), but got a Integer: 5"),
        (T.SetType(T.INT), [None], "Invalid null element in set"),
        (T.MapType(T.INT, T.INT), [1], "Expected a map, but got a ArrayList: [1]"),
        (T.MapType(T.INT, T.INT), {"1": None}, "Invalid null value in map"),
        (T.MapType(T.INT, T.INT), {"x": 1}, "Unable to make int from 'x'"),
        (T.TupleType((T.INT,)), [1, 2], "Tuple contains extra items (expected 1): [1, 2]"),
        (T.TupleType((T.INT, T.INT)), [1], "Tuple is missing items (expected 2): [1]"),
        (T.TupleType((T.INT,)), 5, "Expected a list representation of a tuple, but got a Integer: 5"),
        (UT, {"zz": 1}, "Unknown field 'zz' in value of user defined type ut"),
        (UT, [1], "Expected a map, but got a ArrayList: [1]"),
    ],
)
def test_from_json_errors_use_cassandras_messages(t, obj, detail):
    with pytest.raises(InvalidRequest) as e:
        T.from_json(t, obj, "v")
    assert e.value.message == f"Error decoding JSON value for v: {detail}"
    assert e.value.detail == detail
    with pytest.raises(InvalidRequest) as e2:
        T.from_json(t, obj, None)
    assert e2.value.message == detail


@pytest.mark.parametrize(
    "t, value",
    [
        (T.MapType(T.INT, T.ListType(T.TEXT, True), True), {1: ["a"], 2: []}),
        (T.TupleType((T.TIMESTAMP, T.UUID_TYPE, T.BLOB)), (datetime.datetime(2001, 1, 1), uuid.UUID(int=3), b"x")),
        (UT, UT.make_value(3, "q")),
        (T.SetType(T.DATE, True), [cutil.Date(3)]),
        (T.MapType(T.TIMEUUID, T.DOUBLE), {uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8"): 2.5}),
    ],
)
def test_json_round_trip(t, value):
    canonical = t.deserialize(t.serialize(value))
    back = T.from_json(t, json.loads(T.to_json(t, canonical)), "v")
    assert t.serialize(back) == t.serialize(canonical)


@pytest.mark.parametrize("ctype, obj, value", [
    (T.INT, 1e6, 1_000_000), (T.BIGINT, 1.23456789e9, 1_234_567_890), (T.INT, Decimal("2E+3"), 2000)])
def test_a_whole_number_in_scientific_notation_is_an_integer(ctype, obj, value):
    assert T.from_json(ctype, obj, "v") == value


@pytest.mark.parametrize("ctype, obj", [(T.INT, 1.5), (T.INT, 3e9), (T.INT, ""), (T.BIGINT, "")])
def test_a_fraction_an_out_of_range_number_or_an_empty_string_is_no_integer(ctype, obj):
    with pytest.raises(InvalidRequest):
        T.from_json(ctype, obj, "v")
