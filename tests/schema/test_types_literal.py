"""term_to_value (Cassandra's literal conversion and messages) and python_to_value."""

import datetime
import uuid
from decimal import Decimal

import pytest
from cassandra import util as cutil

from logtide.cql import ast
from logtide.errors import InvalidRequest
from logtide.schema import types as T

UT = T.UserType("ks", "ut", ("a", "b"), (T.INT, T.TEXT), frozen=True)


def S(text):
    return ast.Constant("string", text)


def I(text):
    return ast.Constant("integer", str(text))


def F(text):
    return ast.Constant("float", text)


NULL = ast.Constant("null", "null")


def conv(term, t, receiver="v", resolve=None):
    return T.term_to_value(term, t, receiver, resolve)


def err(term, t, receiver="v", resolve=None):
    with pytest.raises(InvalidRequest) as e:
        conv(term, t, receiver, resolve)
    return e.value.message


# -- constants --------------------------------------------------------------


def test_null_is_none():
    assert conv(NULL, T.INT) is None
    assert conv(NULL, T.ListType(T.INT)) is None


def test_null_for_counter_is_refused():
    assert err(NULL, T.COUNTER) == "Invalid null value for counter increment/decrement"


@pytest.mark.parametrize(
    "term, t, message",
    [
        (S("abc"), T.INT, 'Invalid STRING constant (abc) for "v" of type int'),
        (I(1), T.TEXT, 'Invalid INTEGER constant (1) for "v" of type text'),
        (S("x"), T.BLOB, 'Invalid STRING constant (x) for "v" of type blob'),
        (F("1.5"), T.INT, 'Invalid FLOAT constant (1.5) for "v" of type int'),
        (F("NaN"), T.DECIMAL, "unable to make BigDecimal from 'NaN'"),
        (ast.Constant("boolean", "true"), T.INT, 'Invalid BOOLEAN constant (true) for "v" of type int'),
        (ast.Constant("hex", "0xcafe"), T.TEXT, 'Invalid HEX constant (0xcafe) for "v" of type text'),
        (S("a"), T.UUID_TYPE, 'Invalid STRING constant (a) for "v" of type uuid'),
        (I(1), T.ListType(T.INT), 'Invalid INTEGER constant (1) for "v" of type list<int>'),
        (I(1), UT, 'Invalid INTEGER constant (1) for "v" of type frozen<ut>'),
        (I(3000000000), T.INT, "Unable to make int from '3000000000'"),
        (I(40000), T.SMALLINT, "Unable to make short from '40000'"),
        (I(200), T.TINYINT, "Unable to make byte from '200'"),
        (I(2**63), T.BIGINT, "Unable to make long from '9223372036854775808'"),
        (I(2**63), T.COUNTER, "Unable to make long from '9223372036854775808'"),
        (ast.Constant("uuid", "6ba7b810-9dad-41d1-80b4-00c04fd430c8"), T.TIMEUUID, "TimeUUID supports only version 1 UUIDs"),
        (S("2020-13-01"), T.TIMESTAMP, "Unable to coerce '2020-13-01' to a formatted date (long)"),
        (S("yesterday"), T.DATE, "Unable to coerce 'yesterday' to a formatted date (long)"),
        (I(-1), T.DATE, "Unable to make unsigned int (for date) from: '-1'"),
        (S("25:00:00"), T.TIME, "(TimeType) Unable to coerce '25:00:00' to a formatted time (long)"),
        (I(86400000000000), T.TIME, "Unable to make long (for time) from: '86400000000000'"),
        (S("1.2.3.4.5"), T.INET, "Unable to make inet address from '1.2.3.4.5'"),
        (ast.Constant("hex", "0xabc"), T.BLOB, "cannot parse 'abc' as hex bytes"),
        (ast.Constant("duration", "1h1d"), T.DURATION, "Invalid duration. The hours should be after days"),
        (ast.Constant("duration", "1h2h"), T.DURATION, "Invalid duration. The hours are specified multiple times"),
        (I(5), T.DURATION, "Unable to convert '5' to a duration"),
        (S("é"), T.ASCII, "Invalid ASCII character in string literal: java.nio.charset.UnmappableCharacterException: Input length = 1"),
    ],
)
def test_constant_errors_use_cassandras_messages(term, t, message):
    assert err(term, t) == message


@pytest.mark.parametrize(
    "term, t, value",
    [
        (I(5), T.INT, 5),
        (I(-128), T.TINYINT, -128),
        (I(10**30), T.VARINT, 10**30),
        (I(5), T.DECIMAL, Decimal(5)),
        (F("1.50"), T.DECIMAL, Decimal("1.50")),
        (I(5), T.DOUBLE, 5.0),
        (F("NaN"), T.DOUBLE, None),  # checked below
        (F("0.1"), T.FLOAT, 0.10000000149011612),
        (I(7), T.COUNTER, 7),
        (ast.Constant("boolean", "false"), T.BOOLEAN, False),
        (ast.Constant("hex", "0xCAFE"), T.BLOB, b"\xca\xfe"),
        (ast.Constant("hex", "0x"), T.BLOB, b""),
        (S("abc"), T.TEXT, "abc"),
        (S("abc"), T.ASCII, "abc"),
        (S("127.0.0.1"), T.INET, "127.0.0.1"),
        (S("::1"), T.INET, "::1"),
        (S("2020-03-23 13:10:40.910+0000"), T.TIMESTAMP, datetime.datetime(2020, 3, 23, 13, 10, 40, 910000)),
        (S("2020-03-23T13:10:40Z"), T.TIMESTAMP, datetime.datetime(2020, 3, 23, 13, 10, 40)),
        (S("2020-03-23"), T.TIMESTAMP, datetime.datetime(2020, 3, 23)),
        (S("2020-03-23 15:10+0200"), T.TIMESTAMP, datetime.datetime(2020, 3, 23, 13, 10)),
        (S("2020-03-23T13:10:40.5+02:00"), T.TIMESTAMP, datetime.datetime(2020, 3, 23, 11, 10, 40, 500000)),
        (I(1584969040910), T.TIMESTAMP, datetime.datetime(2020, 3, 23, 13, 10, 40, 910000)),
        (S("1584969040910"), T.TIMESTAMP, datetime.datetime(2020, 3, 23, 13, 10, 40, 910000)),
        (S("2020-01-01"), T.DATE, cutil.Date(18262)),
        (I(2**31), T.DATE, cutil.Date(0)),
        (S("13:10:40.123456789"), T.TIME, cutil.Time(47440123456789)),
        (S("13:10:40"), T.TIME, cutil.Time(47440000000000)),
        (I(1000), T.TIME, cutil.Time(1000)),
        (ast.Constant("duration", "1h30m"), T.DURATION, cutil.Duration(0, 0, 5400 * 10**9)),
        (ast.Constant("duration", "1y2mo3w4d"), T.DURATION, cutil.Duration(14, 25, 0)),
        (ast.Constant("duration", "-2d10ms"), T.DURATION, cutil.Duration(0, -2, -10**7)),
        (ast.Constant("duration", "P1Y2M3DT4H5M6S"), T.DURATION, cutil.Duration(14, 3, (4 * 3600 + 5 * 60 + 6) * 10**9)),
        (ast.Constant("duration", "P2W"), T.DURATION, cutil.Duration(0, 14, 0)),
        (ast.Constant("duration", "P0001-02-03T04:05:06"), T.DURATION, cutil.Duration(14, 3, (4 * 3600 + 5 * 60 + 6) * 10**9)),
        (ast.Constant("uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"), T.TIMEUUID, uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")),
        (ast.Constant("uuid", "6ba7b810-9dad-41d1-80b4-00c04fd430c8"), T.UUID_TYPE, uuid.UUID("6ba7b810-9dad-41d1-80b4-00c04fd430c8")),
    ],
)
def test_constants_convert(term, t, value):
    got = conv(term, t)
    if value is None:
        assert got != got  # NaN
    else:
        assert got == value


def test_infinity_for_float_types_only():
    assert conv(F("-Infinity"), T.FLOAT) == float("-inf")
    assert err(F("Infinity"), T.INT) == 'Invalid FLOAT constant (Infinity) for "v" of type int'


# -- collections ------------------------------------------------------------


def test_list_literal():
    assert conv(ast.ListLiteral((I(1), I(2))), T.ListType(T.INT)) == [1, 2]
    assert conv(ast.ListLiteral(()), T.ListType(T.INT)) == []


def test_list_literal_errors():
    assert err(ast.ListLiteral((I(1),)), T.MapType(T.INT, T.TEXT)) == "Invalid list literal for v of type map<int, text>"
    assert err(ast.ListLiteral((S("a"),)), T.ListType(T.INT)) == "Invalid list literal for v: value 'a' is not of type int"
    assert err(ast.ListLiteral((NULL,)), T.ListType(T.INT)) == "null is not supported inside collections"
    assert err(ast.ListLiteral((ast.BindMarker(0),)), T.ListType(T.INT)) == (
        "Invalid list literal for v: bind variables are not supported inside collection literals"
    )
    assert err(ast.ListLiteral((I(3000000000),)), T.ListType(T.INT)) == "Unable to make int from '3000000000'"


def test_set_literal_is_sorted_and_deduplicated():
    v = conv(ast.SetLiteral((I(3), I(1), I(3))), T.SetType(T.INT))
    assert isinstance(v, cutil.SortedSet) and list(v) == [1, 3]


def test_set_literal_errors():
    assert err(ast.SetLiteral((I(1),)), T.ListType(T.INT)) == "Invalid set literal for v of type list<int>"
    assert err(ast.SetLiteral((S("x"),)), T.SetType(T.INT)) == "Invalid set literal for v: value 'x' is not of type int"


def test_empty_braces_are_an_empty_set_or_map():
    assert list(conv(ast.MapLiteral(()), T.SetType(T.INT))) == []
    assert dict(conv(ast.MapLiteral(()), T.MapType(T.INT, T.INT)).items()) == {}
    assert err(ast.MapLiteral(()), T.ListType(T.INT)) == "Invalid set literal for v of type list<int>"


def test_map_literal():
    m = conv(ast.MapLiteral(((I(2), S("b")), (I(1), S("a")))), T.MapType(T.INT, T.TEXT))
    assert list(m.items()) == [(1, "a"), (2, "b")]


def test_map_literal_errors():
    t = T.MapType(T.INT, T.TEXT)
    assert err(ast.MapLiteral(((S("k"), S("a")),)), t) == "Invalid map literal for v: key 'k' is not of type int"
    assert err(ast.MapLiteral(((I(1), I(2)),)), t) == "Invalid map literal for v: value 2 is not of type text"
    assert err(ast.MapLiteral(((I(1), S("a")),)), T.SetType(T.INT)) == "Invalid map literal for v of type set<int>"


def test_element_receivers_are_named_like_cassandra():
    seen = []

    def resolve(term, t, receiver):
        seen.append((receiver, t.cql()))
        return 1

    fn = ast.FunctionCall("f", ())
    conv(ast.MapLiteral(((fn, fn),)), T.MapType(T.INT, T.INT), resolve=resolve)
    conv(ast.ListLiteral((fn,)), T.ListType(T.INT), resolve=resolve)
    conv(ast.TupleLiteral((ast.BindMarker(0),)), T.TupleType((T.INT,)), resolve=resolve)
    conv(ast.UdtLiteral((("a", ast.BindMarker(0)),)), UT, resolve=resolve)
    assert seen == [("key(v)", "int"), ("value(v)", "int"), ("value(v)", "int"), ("v[0]", "int"), ("v.a", "int")]


def test_unset_inside_list_makes_the_value_unset():
    r = lambda term, t, receiver: T.UNSET  # noqa: E731
    assert conv(ast.ListLiteral((ast.FunctionCall("f"),)), T.ListType(T.INT), resolve=r) is T.UNSET
    assert err(ast.TupleLiteral((ast.BindMarker(0),)), T.TupleType((T.INT,)), resolve=r) == (
        "Invalid unset value for tuple field number 0"
    )


def test_top_level_bind_marker_uses_resolve():
    assert conv(ast.BindMarker(0), T.INT, resolve=lambda term, t, r: 42) == 42


# -- tuples and UDTs ----------------------------------------------------------


def test_tuple_literal():
    t = T.TupleType((T.INT, T.TEXT))
    assert conv(ast.TupleLiteral((I(1), S("a"))), t) == (1, "a")
    assert conv(ast.TupleLiteral((I(1), NULL)), t) == (1, None)
    assert conv(ast.TupleLiteral((I(1),)), t) == (1,)


def test_tuple_literal_errors():
    t = T.TupleType((T.INT, T.TEXT))
    assert err(ast.TupleLiteral((I(1), S("a"), I(3))), t) == (
        "Invalid tuple literal for v: too many elements. Type frozen<tuple<int, text>> expects 2 but got 3"
    )
    assert err(ast.TupleLiteral((S("a"),)), t) == "Invalid tuple literal for v: component 0 is not of type int"
    assert err(ast.TupleLiteral((I(1),)), T.INT) == "Invalid tuple type literal for v of type int"


def test_tuple_literal_gives_a_user_types_fields_in_order():
    # ScyllaDB: a user type is a tuple type, so (7) is a frozen<ut> whose first field is 7 and the rest null
    assert conv(ast.TupleLiteral((I(7),)), UT) == UT.make_value(7, None)
    assert conv(ast.TupleLiteral((I(7), S("x"))), UT) == UT.make_value(7, "x")
    assert err(ast.TupleLiteral((I(1), S("a"), I(3))), UT) == (
        "Invalid tuple literal for v: too many elements. Type frozen<ut> expects 2 but got 3")
    assert err(ast.TupleLiteral((S("a"),)), UT) == "Invalid tuple literal for v: component 0 is not of type int"


def test_udt_literal():
    v = conv(ast.UdtLiteral((("b", S("x")),)), UT)
    assert v == UT.make_value(None, "x") and v.b == "x" and v.a is None


def test_udt_literal_errors():
    assert err(ast.UdtLiteral((("x", I(1)),)), UT) == "Unknown field 'x' in value of user defined type ut"
    assert err(ast.UdtLiteral((("a", S("s")),)), UT) == "Invalid user type literal for v: field a is not of type int"
    assert err(ast.UdtLiteral((("a", I(1)),)), T.INT) == "Invalid user type literal for v of type int"


def test_nested_frozen_values():
    t = T.ListType(T.TupleType((T.INT, T.SetType(T.TEXT, True))), True)
    v = conv(ast.ListLiteral((ast.TupleLiteral((I(1), ast.SetLiteral((S("b"), S("a"))))),)), t)
    assert v[0][0] == 1 and list(v[0][1]) == ["a", "b"]
    u = T.MapType(T.TEXT, UT, True)
    m = conv(ast.MapLiteral(((S("k"), ast.UdtLiteral((("a", I(1)),))),)), u)
    assert m["k"].a == 1


# -- type hints -----------------------------------------------------------------


def test_type_hint():
    assert conv(ast.TypeHint(ast.TypeExpr("int"), I(5)), T.INT) == 5
    assert conv(ast.TypeHint(ast.TypeExpr("bigint"), I(5)), T.VARINT) == 5
    assert conv(ast.TypeHint(ast.TypeExpr("ascii"), S("x")), T.TEXT) == "x"


def test_type_hint_errors():
    assert err(ast.TypeHint(ast.TypeExpr("text"), I(5)), T.INT) == "Cannot cast value 5 to type text"
    assert err(ast.TypeHint(ast.TypeExpr("text"), S("a")), T.INT) == "Cannot assign value (text)'a' to v of type int"
    assert err(ast.TypeHint(ast.TypeExpr("int"), I(3000000000)), T.INT) == "Unable to make int from '3000000000'"


# -- python_to_value --------------------------------------------------------------


def test_python_values_accepted_like_the_driver():
    assert T.python_to_value(T.INT, 5, "v") == 5
    assert T.python_to_value(T.BLOB, bytearray(b"ab"), "v") == b"ab"
    assert T.python_to_value(T.DECIMAL, 1, "v") == Decimal(1)
    assert T.python_to_value(T.DECIMAL, 0.1, "v") == Decimal("0.1")
    assert T.python_to_value(T.DOUBLE, 2, "v") == 2.0
    assert T.python_to_value(T.TIMESTAMP, 1000, "v") == datetime.datetime(1970, 1, 1, 0, 0, 1)
    aware = datetime.datetime(2020, 1, 1, 2, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert T.python_to_value(T.TIMESTAMP, aware, "v") == datetime.datetime(2020, 1, 1)
    assert T.python_to_value(T.TIMESTAMP, datetime.date(2020, 1, 1), "v") == datetime.datetime(2020, 1, 1)
    assert T.python_to_value(T.DATE, datetime.date(1970, 1, 2), "v") == cutil.Date(1)
    assert T.python_to_value(T.DATE, 2**31 + 1, "v") == cutil.Date(1)
    assert T.python_to_value(T.TIME, datetime.time(0, 0, 1), "v") == cutil.Time(10**9)
    assert T.python_to_value(T.INET, "::ffff:1.2.3.4", "v") == "1.2.3.4"
    assert T.python_to_value(T.UUID_TYPE, uuid.UUID(int=5), "v") == uuid.UUID(int=5)
    assert list(T.python_to_value(T.SetType(T.INT), {3, 1}, "v")) == [1, 3]
    assert list(T.python_to_value(T.MapType(T.INT, T.TEXT), {2: "b", 1: "a"}, "v").items()) == [(1, "a"), (2, "b")]
    assert T.python_to_value(UT, {"a": 1}, "v") == UT.make_value(1, None)
    assert T.python_to_value(UT, (1, "x"), "v").b == "x"
    assert T.python_to_value(T.TupleType((T.INT, T.TEXT)), [1, "x"], "v") == (1, "x")
    assert T.python_to_value(T.INT, None, "v") is None
    assert T.python_to_value(T.INT, T.UNSET, "v") is T.UNSET


@pytest.mark.parametrize(
    "t, obj",
    [
        (T.INT, 2**31),
        (T.INT, "5"),
        (T.INT, 1.5),
        (T.TINYINT, 128),
        (T.TEXT, b"x"),
        (T.ASCII, "é"),
        (T.UUID_TYPE, "6ba7b810-9dad-41d1-80b4-00c04fd430c8"),
        (T.TIMEUUID, uuid.UUID("6ba7b810-9dad-41d1-80b4-00c04fd430c8")),
        (T.INET, "nope"),
        (T.FLOAT, 1e300),
        (T.DECIMAL, Decimal("NaN")),
        (T.BLOB, "x"),
        (T.ListType(T.INT), "abc"),
        (T.MapType(T.INT, T.INT), [1]),
        (T.DATE, -1),
        (T.TIME, 86400 * 10**9),
    ],
)
def test_python_values_rejected_name_receiver_and_type(t, obj):
    with pytest.raises(InvalidRequest) as e:
        T.python_to_value(t, obj, "col")
    assert '"col"' in e.value.message and t.cql() in e.value.message


def test_python_collection_element_errors():
    with pytest.raises(InvalidRequest, match="null is not supported inside collections"):
        T.python_to_value(T.ListType(T.INT), [None], "v")
    with pytest.raises(InvalidRequest, match='"value\\(v\\)" of type int'):
        T.python_to_value(T.ListType(T.INT), ["x"], "v")
    with pytest.raises(InvalidRequest, match="Unknown field 'z' in value of user defined type ut"):
        T.python_to_value(UT, {"z": 1}, "v")
    with pytest.raises(InvalidRequest, match="same sign"):
        T.python_to_value(T.DURATION, cutil.Duration(1, -1, 0), "v")


def test_a_timestamp_with_more_than_millisecond_digits_is_refused():
    from logtide.schema.types_literal import timestamp_millis_from_string
    with pytest.raises(InvalidRequest, match=r"Milliseconds length exceeds expected \(6\)"):
        timestamp_millis_from_string("2011-02-03 04:05:12.345678+0000")
    assert timestamp_millis_from_string("2011-02-03 04:05:12.345+0000") == 1296705912345


def test_a_timestamp_zone_may_have_blanks_around_it():
    from logtide.schema.types_literal import timestamp_millis_from_string
    assert timestamp_millis_from_string("2011-02-03  Z ") == timestamp_millis_from_string("2011-02-03Z")


@pytest.mark.parametrize("text", ["1e2147483649", "-1e2147483649", "1e-2147483648", "-1.5e-2147483647"])
def test_a_decimal_literal_whose_scale_needs_more_than_32_bits_is_refused(text):
    with pytest.raises(InvalidRequest, match=f"^unable to make BigDecimal from '{text}'$"):
        T.term_to_value(F(text), T.DECIMAL, "v")
    with pytest.raises(InvalidRequest, match="scale does not fit in 32 bits"):
        T.python_to_value(T.DECIMAL, Decimal(text), "v")


@pytest.mark.parametrize("text", ["1e2147483648", "1e-2147483647", "12.5e-2147483646"])
def test_a_decimal_literal_at_the_limits_of_its_scale_is_a_value(text):
    assert T.term_to_value(F(text), T.DECIMAL, "v") == Decimal(text)
    assert T.DECIMAL.deserialize(T.DECIMAL.serialize(Decimal(text))) == Decimal(text)
