"""Codecs (serialize/deserialize through cassandra-driver) and the comparable() byte order."""

import datetime
import ipaddress
import math
import struct
import uuid
from decimal import Decimal

import pytest
from cassandra import util as cutil
from cassandra.cqltypes import EMPTY
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logtide.errors import InvalidRequest
from logtide.schema import types as T

UT = T.UserType("ks", "ut", ("a", "b"), (T.INT, T.TEXT), frozen=True)
UT2 = T.UserType("ks", "ut2", ("x", "l"), (T.BIGINT, T.ListType(T.UUID_TYPE, True)), frozen=True)


# ---------------------------------------------------------------------------
# codecs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "t, value",
    [
        (T.INT, 7),
        (T.BIGINT, -(2**63)),
        (T.SMALLINT, -5),
        (T.TINYINT, 127),
        (T.VARINT, 10**40),
        (T.DECIMAL, Decimal("1.50")),
        (T.DOUBLE, 1.5),
        (T.FLOAT, 0.5),
        (T.BOOLEAN, True),
        (T.TEXT, "héllo"),
        (T.ASCII, "abc"),
        (T.BLOB, b"\x00\xff"),
        (T.UUID_TYPE, uuid.UUID("6ba7b810-9dad-41d1-80b4-00c04fd430c8")),
        (T.TIMEUUID, uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")),
        (T.INET, "127.0.0.1"),
        (T.INET, "::1"),
        (T.TIMESTAMP, datetime.datetime(2020, 3, 23, 13, 10, 40, 910000)),
        (T.DATE, cutil.Date(18000)),
        (T.TIME, cutil.Time(45040123456789)),
        (T.DURATION, cutil.Duration(1, 2, 3)),
        (T.COUNTER, 5),
        (T.ListType(T.INT), [3, 1, 2]),
        (T.TupleType((T.INT, T.TEXT)), (1, "a")),
        (T.TupleType((T.INT, T.TEXT)), (1, None)),
        (UT, UT.make_value(1, "x")),
    ],
)
def test_round_trip_through_driver_codecs(t, value):
    data = t.serialize(value)
    assert isinstance(data, bytes)
    assert t.deserialize(data) == value


def test_serialized_bytes_match_the_driver():
    assert T.INT.serialize(1) == b"\x00\x00\x00\x01"
    assert T.INT.driver_type.serialize(1, 4) == T.INT.serialize(1)
    assert T.ListType(T.TEXT).serialize(["a"]) == b"\x00\x00\x00\x01\x00\x00\x00\x01a"


def test_null_and_empty_values():
    assert T.INT.serialize(None) is None
    assert T.INT.deserialize(None) is None
    assert T.INT.deserialize(b"") is EMPTY
    assert T.INT.serialize(EMPTY) == b""
    assert T.TEXT.deserialize(b"") == ""
    assert T.BLOB.deserialize(b"") == b""


def test_set_is_serialized_in_cassandra_order_and_deduplicated():
    t = T.SetType(T.INT, True)
    a = t.serialize({3, 1, 2})
    b = t.serialize([2, 3, 1, 1])
    assert a == b
    assert list(t.deserialize(a)) == [1, 2, 3]
    # uuid sets follow Cassandra's UUIDType order (version first), not Python's
    v4 = uuid.UUID("00000000-0000-4000-8000-000000000000")
    v1 = uuid.UUID("ffffffff-ffff-1fff-8000-000000000000")
    s = T.SetType(T.UUID_TYPE, True)
    assert list(s.deserialize(s.serialize({v4, v1}))) == [v1, v4]


def test_decimal_set_deduplicates_numerically_equal_values():
    t = T.SetType(T.DECIMAL, True)
    assert len(t.deserialize(t.serialize([Decimal("1.0"), Decimal("1.00")]))) == 1


def test_map_is_serialized_in_key_order():
    t = T.MapType(T.TEXT, T.INT, True)
    assert t.serialize({"b": 2, "a": 1}) == t.serialize({"a": 1, "b": 2})
    m = t.deserialize(t.serialize({"b": 2, "a": 1}))
    assert isinstance(m, cutil.OrderedMapSerializedKey)
    assert list(m.items()) == [("a", 1), ("b", 2)]
    assert m["b"] == 2


def test_nested_sets_inside_lists_and_udts_are_canonical():
    t = T.ListType(T.SetType(T.INT, True), True)
    assert t.serialize([{2, 1}]) == t.serialize([[1, 2]])
    assert list(t.deserialize(t.serialize([{2, 1}]))[0]) == [1, 2]
    u = T.UserType("ks", "us", ("s",), (T.SetType(T.TEXT, True),), True)
    v = u.deserialize(u.serialize(u.make_value({"b", "a"})))
    assert list(v.s) == ["a", "b"]


def test_udt_value_with_fewer_fields_reads_missing_fields_as_null():
    short = b"\x00\x00\x00\x04\x00\x00\x00\x05"  # only field a = 5
    v = UT.deserialize(short)
    assert v.a == 5 and v.b is None
    assert type(v) is UT.driver_type.tuple_type


def test_udt_serialize_accepts_dicts_and_named_tuples():
    assert UT.serialize({"a": 1, "b": "x"}) == UT.serialize(UT.make_value(1, "x"))


def test_tuple_with_too_many_items_is_rejected():
    with pytest.raises(InvalidRequest):
        T.TupleType((T.INT,)).serialize((1, 2))


def test_serialize_out_of_range_int_raises_invalid_request():
    with pytest.raises(InvalidRequest):
        T.INT.serialize(2**40)


def test_driver_types_are_cached_and_parameterised():
    t = T.MapType(T.INT, T.TEXT, True)
    assert t.driver_type is t.driver_type
    assert t.driver_type.cql_parameterized_type() == "map<int, text>"
    assert UT.driver_type.fieldnames == ("a", "b")


def test_timestamp_outside_datetime_range_deserializes_to_millis():
    data = struct.pack(">q", 2**62)
    assert T.TIMESTAMP.deserialize(data) == 2**62
    assert T.TIMESTAMP.serialize(2**62) == data


# ---------------------------------------------------------------------------
# comparable: specific rules
# ---------------------------------------------------------------------------


def cmp(t, a, b):
    return t.compare(t.serialize(a), t.serialize(b))


def test_empty_value_sorts_first():
    for t, v in [(T.INT, -(2**31)), (T.TEXT, "\x00"), (T.TIMESTAMP, -(2**62)), (T.UUID_TYPE, uuid.UUID(int=0))]:
        assert t.compare(b"", t.serialize(v)) == -1
        assert t.compare(b"", b"") == 0


def test_signed_integers_order():
    assert cmp(T.INT, -1, 0) == -1
    assert cmp(T.BIGINT, -(2**63), 2**63 - 1) == -1
    assert cmp(T.TINYINT, -128, 127) == -1


def test_decimal_compares_numerically():
    assert cmp(T.DECIMAL, Decimal("1.0"), Decimal("1.00")) == 0
    assert T.DECIMAL.comparable(T.DECIMAL.serialize(Decimal("1.0"))) == T.DECIMAL.comparable(
        T.DECIMAL.serialize(Decimal("1"))
    )
    assert cmp(T.DECIMAL, Decimal("-10"), Decimal("-9.99")) == -1
    assert cmp(T.DECIMAL, Decimal("0.12"), Decimal("0.123")) == -1
    assert cmp(T.DECIMAL, Decimal("-0.12"), Decimal("-0.123")) == 1
    assert cmp(T.DECIMAL, Decimal("0"), Decimal("0E+5")) == 0


def test_floats_follow_java_compare():
    for t in (T.FLOAT, T.DOUBLE):
        assert cmp(t, -0.0, 0.0) == -1
        assert cmp(t, math.inf, math.nan) == -1
        assert cmp(t, math.nan, math.nan) == 0
        assert cmp(t, -math.inf, -1e30) == -1


def test_date_compares_unsigned():
    assert cmp(T.DATE, cutil.Date(-5), cutil.Date(3)) == -1


def test_text_is_bytewise_with_shorter_prefix_first():
    assert cmp(T.TEXT, "a", "ab") == -1
    assert cmp(T.TEXT, "a\x00", "a") == 1
    assert cmp(T.BLOB, b"\x7f", b"\x80") == -1


def test_uuid_orders_by_version_then_time():
    v1_late = uuid.UUID("00000000-0000-1fff-8000-000000000000")
    v1_early = uuid.UUID("ffffffff-ffff-1000-8000-000000000000")
    v4 = uuid.UUID("00000000-0000-4000-8000-000000000000")
    assert cmp(T.UUID_TYPE, v1_early, v1_late) == -1
    assert cmp(T.UUID_TYPE, v1_late, v4) == -1
    assert cmp(T.TIMEUUID, v1_early, v1_late) == -1


def test_uuid_lsb_compares_as_signed_bytes():
    lo = uuid.UUID("00000000-0000-4000-8000-000000000000")
    hi = uuid.UUID("00000000-0000-4000-7f00-000000000000")
    assert cmp(T.UUID_TYPE, lo, hi) == -1
    assert cmp(T.TIMEUUID, uuid.UUID("00000000-0000-1000-8000-000000000000"),
               uuid.UUID("00000000-0000-1000-0000-000000000000")) == -1


def test_tuple_null_component_sorts_first_and_trailing_nulls_equal_missing():
    t = T.TupleType((T.INT, T.INT))
    assert cmp(t, (None, 5), (1, 1)) == -1
    assert cmp(t, (1,), (1, 1)) == -1
    assert cmp(t, (1,), (1, None)) == 0


def test_collections_compare_elementwise_with_prefix_first():
    lt = T.ListType(T.INT, True)
    assert cmp(lt, [1], [1, 0]) == -1
    assert cmp(lt, [2], [1, 5]) == 1
    mt = T.MapType(T.INT, T.TEXT, True)
    assert cmp(mt, {1: "b"}, {1: "c"}) == -1
    assert cmp(mt, {1: "z"}, {2: "a"}) == -1


def test_duration_is_not_comparable():
    with pytest.raises(InvalidRequest):
        T.DURATION.comparable(T.DURATION.serialize(cutil.Duration(1, 1, 1)))


# ---------------------------------------------------------------------------
# comparable: property tests against a reference comparator on deserialized values
# ---------------------------------------------------------------------------

EPOCH = datetime.datetime(1970, 1, 1)


def signed_bytes(b):
    return tuple(x - 256 if x >= 128 else x for x in b)


def ref_key(t, v):
    """A Python sort key for a deserialized value following Cassandra's comparators."""
    if v is EMPTY or v is None:  # None: an empty element inside a collection, as the driver reads it
        return (0,)
    k = t.kind
    if k == "native":
        n = t.name
        if n in ("int", "bigint", "smallint", "tinyint", "varint", "counter", "boolean"):
            key = int(v)
        elif n == "decimal":
            key = v
        elif n in ("float", "double"):
            key = (1,) if math.isnan(v) else (0, v, math.copysign(1.0, v))
        elif n in ("text", "ascii"):
            key = v.encode("utf-8")
        elif n == "blob":
            key = bytes(v)
        elif n == "inet":
            a = ipaddress.ip_address(v)
            key = a.packed
        elif n == "timestamp":
            key = v if isinstance(v, int) else (v - EPOCH) // datetime.timedelta(milliseconds=1)
        elif n == "date":
            key = v.days_from_epoch
        elif n == "time":
            key = v.nanosecond_time
        elif n == "uuid":
            version = (v.int >> 76) & 0xF  # the nibble, whatever the variant
            key = (version, v.time if version == 1 else v.int >> 64, signed_bytes(v.bytes[8:]))
        elif n == "timeuuid":
            key = (v.time, signed_bytes(v.bytes[8:]))
        else:
            raise AssertionError(n)
        return (1, key)
    if k in ("list", "set"):
        return (1, [ref_key(t.element, x) for x in v])
    if k == "map":
        return (1, [(ref_key(t.key, a), ref_key(t.value, b)) for a, b in v.items()])
    if k in ("tuple", "udt"):
        vals = list(v) + [None] * (len(t.items) - len(v))
        return (1, [(0,) if x is None else (1, ref_key(ct, x)) for ct, x in zip(t.items, vals)])
    raise AssertionError(k)


def uuid_with_version(version):
    return st.integers(0, 2**128 - 1).map(
        lambda i: uuid.UUID(int=(i & ~(0xF << 76)) | (version << 76))
    )


def decimals():
    return st.builds(lambda u, s: Decimal(u).scaleb(-s), st.integers(-(10**25), 10**25), st.integers(-12, 12))


def strategy(t, top=True):
    k = t.kind
    if k == "native":
        n = t.name
        base = {
            "int": st.integers(-(2**31), 2**31 - 1),
            "bigint": st.integers(-(2**63), 2**63 - 1),
            "smallint": st.integers(-(2**15), 2**15 - 1),
            "tinyint": st.integers(-128, 127),
            "varint": st.integers(-(2**100), 2**100) | st.integers(-300, 300),
            "decimal": decimals(),
            "double": st.floats(),
            "float": st.floats(width=32),
            "boolean": st.booleans(),
            "text": st.text(max_size=8),
            "ascii": st.text(alphabet=st.characters(max_codepoint=127), max_size=8),
            "blob": st.binary(max_size=8),
            "inet": st.ip_addresses().map(str),
            "timestamp": st.integers(-(2**62), 2**62) | st.integers(-(10**13), 10**13),
            "date": st.integers(0, 2**32 - 1).map(lambda i: cutil.Date(i - 2**31)),
            "time": st.integers(0, 86400 * 10**9 - 1).map(cutil.Time),
            "uuid": st.uuids() | uuid_with_version(1) | st.integers(0, 2**128 - 1).map(lambda i: uuid.UUID(int=i)),
            "timeuuid": uuid_with_version(1),
        }[n]
        if n in ("text", "ascii", "blob") or not top:
            return base
        return st.one_of(st.just(EMPTY), base, base)
    if k == "list":
        return st.lists(strategy(t.element, False), max_size=4)
    if k == "set":
        return st.lists(strategy(t.element, False), max_size=4)
    if k == "map":
        return st.lists(st.tuples(strategy(t.key, False), strategy(t.value, False)), max_size=3).map(dict_of)
    if k == "tuple":
        n = len(t.items)
        return st.integers(0, n).flatmap(
            lambda m: st.tuples(*[st.none() | strategy(ct, False) for ct in t.items[:m]])
        )
    if k == "udt":
        return st.tuples(*[st.none() | strategy(ct, False) for ct in t.items]).map(lambda v: t.make_value(*v))
    raise AssertionError(k)


class dict_of(dict):
    """dict built from pairs whose keys may be unhashable-equal (EMPTY etc.)."""

    def __init__(self, pairs):
        super().__init__()
        self._pairs = pairs

    def items(self):
        return self._pairs

    def __len__(self):
        return len(self._pairs)


NATIVES = [T.NativeType(n) for n in sorted(T.NATIVE_TYPE_NAMES - {"duration", "counter", "varchar"})]
COMPOSITES = [
    T.ListType(T.INT, True),
    T.SetType(T.TEXT, True),
    T.MapType(T.INT, T.TEXT, True),
    T.TupleType((T.INT, T.TEXT)),
    T.TupleType((T.DECIMAL, T.DOUBLE, T.UUID_TYPE)),
    T.ListType(T.TupleType((T.VARINT, T.BLOB)), True),
    T.SetType(T.TIMEUUID, True),
    UT,
    UT2,
    T.MapType(T.TupleType((T.INT,)), T.SetType(T.INT, True), True),
]
ALL_TYPES = NATIVES + COMPOSITES


def type_and_values(n=2):
    return st.sampled_from(ALL_TYPES).flatmap(lambda t: st.tuples(st.just(t), st.lists(strategy(t), min_size=n, max_size=6)))


def canonical(t, v):
    return t.deserialize(t.serialize(v))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(type_and_values())
def test_sort_by_comparable_equals_sort_by_reference(tv):
    t, values = tv
    data = [t.serialize(v) for v in values]
    vals = [t.deserialize(d) for d in data]
    comps = [t.comparable(d) for d in data]
    refs = [ref_key(t, v) for v in vals]
    for i in range(len(vals)):
        for j in range(len(vals)):
            expect = (refs[i] > refs[j]) - (refs[i] < refs[j])
            got = (comps[i] > comps[j]) - (comps[i] < comps[j])
            assert got == expect, (t.cql(), vals[i], vals[j])
            assert t.compare(data[i], data[j]) == expect


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(type_and_values())
def test_comparable_is_prefix_free(tv):
    t, values = tv
    comps = [t.comparable(t.serialize(v)) for v in values]
    for a in comps:
        for b in comps:
            if a != b:
                assert not b.startswith(a)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(NATIVES), st.data()), min_size=1, max_size=3), st.data())
def test_concatenated_encodings_compare_like_composite_keys(cols, data):
    types = [c[0] for c in cols]
    rows = []
    for _ in range(4):
        row = [data.draw(strategy(t)) for t in types]
        rows.append(row)
    enc = [b"".join(t.comparable(t.serialize(v)) for t, v in zip(types, r)) for r in rows]
    ref = [[ref_key(t, t.deserialize(t.serialize(v))) for t, v in zip(types, r)] for r in rows]
    for i in range(len(rows)):
        for j in range(len(rows)):
            assert ((enc[i] > enc[j]) - (enc[i] < enc[j])) == ((ref[i] > ref[j]) - (ref[i] < ref[j]))


@settings(max_examples=300, deadline=None)
@given(type_and_values(1))
def test_serialize_deserialize_round_trip_is_stable(tv):
    # deserialized tuples/UDTs are padded with trailing nulls, which compare equal to missing ones
    t, values = tv
    for v in values:
        d = t.serialize(v)
        assert t.compare(t.serialize(t.deserialize(d)), d) == 0


def test_a_text_value_that_is_not_utf8_fails_validation():
    with pytest.raises(InvalidRequest, match="Validation failed - non-UTF8 character in a UTF8 string, at byte offset 1"):
        T.TEXT.deserialize(b"a\xc0")


@pytest.mark.parametrize("ctype", [T.ListType(T.TEXT, False), T.SetType(T.TEXT, False), T.MapType(T.TEXT, T.TEXT, False)])
def test_a_collection_value_shorter_than_it_announces_is_refused(ctype):
    with pytest.raises(InvalidRequest, match="Not enough bytes to read a"):
        ctype.deserialize(b"\x00\x00\x00\x01")
    with pytest.raises(InvalidRequest, match="Not enough bytes to read a"):
        ctype.deserialize(b"")
    with pytest.raises(InvalidRequest, match="(?i)not enough bytes"):
        ctype.deserialize(struct.pack(">i", -1))


# ---------------------------------------------------------------------------
# vectors
# ---------------------------------------------------------------------------


def test_vector_of_fixed_size_elements_is_their_bytes_back_to_back():
    t = T.parse_type_string("vector<float, 2>")
    assert t.serialize([1.0, -2.0]) == struct.pack(">ff", 1.0, -2.0)
    assert t.deserialize(struct.pack(">ff", 1.0, -2.0)) == [1.0, -2.0]


def test_vector_of_variable_size_elements_prefixes_each_with_an_unsigned_vint():
    t = T.parse_type_string("vector<text, 2>")
    long = "x" * 200  # a length of 200 takes two vint bytes: 0x80 0xc8
    data = t.serialize(["ab", long])
    assert data == b"\x02ab" + b"\x80\xc8" + long.encode()
    assert t.deserialize(data) == ["ab", long]


@pytest.mark.parametrize("type_text, value", [
    ("vector<float, 3>", [1.0, 2.5, -3.0]), ("vector<bigint, 2>", [1, -(2**63)]), ("vector<text, 2>", ["", "é"]),
    ("vector<uuid, 1>", [uuid.UUID(int=5)]), ("vector<set<int>, 2>", [{1, 2}, {3}]),
    ("vector<varint, 2>", [10**30, -1]), ("vector<boolean, 3>", [True, False, True])])
def test_vector_bytes_are_what_the_driver_encodes_and_decodes(type_text, value):
    t = T.parse_type_string(type_text)
    data = t.serialize(value)
    assert data == t.driver_type.serialize(value, 4)
    assert t.deserialize(data) == t.driver_type.deserialize(data, 4)


@pytest.mark.parametrize("data, message", [
    (b"\x00" * 7, "expected 8 bytes"), (b"\x00" * 9, "expected 8 bytes")])
def test_a_fixed_size_vector_value_of_another_size_is_refused(data, message):
    with pytest.raises(InvalidRequest, match=message):
        T.parse_type_string("vector<int, 2>").deserialize(data)


@pytest.mark.parametrize("data, message", [
    (b"\x01a", "not enough bytes for 2 elements"), (b"\x01a\x01b\x01c", "2 bytes remain")])
def test_a_variable_size_vector_value_must_hold_exactly_its_elements(data, message):
    with pytest.raises(InvalidRequest, match=message):
        T.parse_type_string("vector<text, 2>").deserialize(data)


def test_vectors_order_element_by_element():
    t = T.parse_type_string("vector<int, 2>")
    ordered = [[-5, 9], [-1, -3], [0, 0], [0, 1], [2, -7]]
    assert sorted(ordered[::-1], key=lambda v: t.comparable(t.serialize(v))) == ordered
    texts = T.parse_type_string("vector<text, 2>")
    assert texts.compare(texts.serialize(["a", "z"]), texts.serialize(["ab", "a"])) < 0


# ---------------------------------------------------------------------------
# varints keep the bytes they were read from (ScyllaDB keys a partition by its key's bytes as sent)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("value, data", [
    (0, b"\x00"), (1, b"\x01"), (-1, b"\xff"), (127, b"\x7f"), (128, b"\x00\x80"), (-128, b"\x80"),
    (-129, b"\xff\x7f"), (255, b"\x00\xff"), (2**63, b"\x00\x80" + bytes(7)), (-(2**64), b"\xff" + bytes(8)),
])
def test_a_canonical_varint_reads_as_a_plain_int_and_serializes_to_the_same_bytes(value, data):
    # the stored form of every varint written before padded varints were kept: unchanged
    v = T.VARINT.deserialize(data)
    assert type(v) is int and v == value
    assert T.VARINT.serialize(v) == data == T.VARINT.serialize(value)


@pytest.mark.parametrize("value, data", [
    (1, b"\x00\x01"), (1, b"\x00\x00\x01"), (-1, b"\xff\xff"), (-2, b"\xff\xfe"), (0, b"\x00\x00"),
    (128, b"\x00\x00\x80"), (-129, b"\xff\xff\x7f"),
])
def test_a_padded_varint_keeps_its_bytes_and_compares_by_value(value, data):
    v = T.VARINT.deserialize(data)
    assert v == value and hash(v) == hash(value)
    assert T.VARINT.serialize(v) == data  # a key, a cell, a log value keep the bytes as sent
    assert T.VARINT.compare(data, T.VARINT.serialize(value)) == 0  # clustering order sees the number
    assert T.VARINT.comparable(data) == T.VARINT.comparable(T.VARINT.serialize(value))
    assert type(v + 1) is int and T.VARINT.serialize(v + 1) == T.VARINT.serialize(value + 1)
    assert T.python_to_value(T.VARINT, v, "p") is v  # binding keeps it
    assert T.python_to_value(T.BIGINT, v, "p") == value and T.BIGINT.serialize(v) == T.BIGINT.serialize(value)


def test_a_padded_varint_survives_pickling_and_copying():
    import copy
    import pickle

    v = T.VARINT.deserialize(b"\x00\x07")
    for w in (pickle.loads(pickle.dumps(v)), copy.deepcopy(v)):
        assert w == 7 and T.VARINT.serialize(w) == b"\x00\x07"


@pytest.mark.parametrize("ctype", [
    T.ListType(T.VARINT, True), T.ListType(T.VARINT, False), T.SetType(T.VARINT, True),
    T.TupleType((T.VARINT, T.TEXT)), T.UserType("ks", "v", ("a", "b"), (T.VARINT, T.TEXT), frozen=True),
    T.MapType(T.INT, T.VARINT, True),
])
def test_a_padded_varint_inside_a_composite_value_keeps_its_bytes(ctype):
    padded = T.VARINT.deserialize(b"\x00\x01")
    value = {1: padded} if ctype.kind == "map" else [padded] if ctype.kind in ("list", "set") else (padded, "x")
    data = ctype.serialize(value)
    assert b"\x00\x00\x00\x02\x00\x01" in data
    assert ctype.serialize(ctype.deserialize(data)) == data
    canonical = ctype.serialize({1: 1} if ctype.kind == "map" else [1] if ctype.kind in ("list", "set") else (1, "x"))
    assert ctype.compare(data, canonical) == 0 and data != canonical
