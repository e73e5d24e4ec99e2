"""Every CQL type as changefeed records show it: JSON/Debezium values and DynamoDB AttributeValues.

Expected renderings are in ``golden/values.txt``; the values are built here,
passed through the type's codec (serialize, then deserialize) so that each is
exactly what a stored row hands the renderer.
"""

from __future__ import annotations

import datetime
import decimal
import ipaddress
import json
import uuid
from pathlib import Path

import pytest
from cassandra.util import Date, Duration, Time
from hypothesis import given, settings
from hypothesis import strategies as st

from logtide.changefeed.values import dumps, to_attribute_value, to_json_value
from logtide.schema import types as T

GOLDEN = Path(__file__).parent / "golden" / "values.txt"

ADDRESS = T.UserType("ks", "address", ("street", "zip", "tags"),
                     (T.TEXT, T.INT, T.SetType(T.TEXT, True)), True)
QUOTED = T.UserType("ks", "q", ("Street",), (T.TEXT,), True)
U = uuid.UUID("550e8400-e29b-41d4-a716-446655440000")


def ty(text: str):
    return T.parse_type_string(text)


CASES = {
    "ascii": (T.ASCII, "abc"),
    "text": (T.TEXT, 'héllo "q"'),
    "varchar": (ty("varchar"), "v"),
    "boolean_true": (T.BOOLEAN, True),
    "boolean_false": (T.BOOLEAN, False),
    "tinyint": (T.TINYINT, -128),
    "smallint": (T.SMALLINT, 32767),
    "int": (T.INT, -2147483648),
    "bigint": (T.BIGINT, 2**63 - 1),
    "bigint_past_2_53": (T.BIGINT, 2**53 + 1),
    "varint": (T.VARINT, 123456789012345678901234567890),
    "varint_negative": (T.VARINT, -5),
    "counter": (T.COUNTER, 42),
    "decimal": (T.DECIMAL, decimal.Decimal("1.500")),
    "decimal_zero": (T.DECIMAL, decimal.Decimal("0.000")),
    "decimal_exponent": (T.DECIMAL, decimal.Decimal("1E+3")),
    "decimal_negative": (T.DECIMAL, decimal.Decimal("-0.0010")),
    "double": (T.DOUBLE, 0.1),
    "double_integral": (T.DOUBLE, 1.0),
    "double_large": (T.DOUBLE, 1e300),
    "double_nan": (T.DOUBLE, float("nan")),
    "double_inf": (T.DOUBLE, float("inf")),
    "double_minus_inf": (T.DOUBLE, float("-inf")),
    "float": (T.FLOAT, 0.1),
    "float_minus_inf": (T.FLOAT, float("-inf")),
    "blob": (T.BLOB, b"\x00\x01\xff"),
    "blob_empty": (T.BLOB, b""),
    "date": (T.DATE, Date(datetime.date(2022, 2, 22))),
    "date_epoch": (T.DATE, Date(0)),
    "date_out_of_range": (T.DATE, Date(-1_000_000_000)),
    "timestamp": (T.TIMESTAMP, datetime.datetime(2022, 12, 12)),
    "timestamp_millis": (T.TIMESTAMP, datetime.datetime(2022, 6, 24, 11, 35, 0, 123000)),
    "timestamp_before_1970": (T.TIMESTAMP, -1),
    "time": (T.TIME, Time(3723 * 10**9 + 1)),
    "time_midnight": (T.TIME, Time(0)),
    "uuid": (T.UUID_TYPE, U),
    "timeuuid": (T.TIMEUUID, uuid.UUID("fe2b4360-28c6-11e2-81c1-0800200c9a66")),
    "inet4": (T.INET, "127.0.0.1"),
    "inet6": (T.INET, "::1"),
    "duration": (T.DURATION, Duration(14, 3, ((4 * 60 + 5) * 60 + 6) * 10**9 + 7_008_009)),
    "duration_days": (T.DURATION, Duration(0, 3, 0)),
    "duration_negative": (T.DURATION, Duration(0, 0, -1_500_000_000)),
    "duration_zero": (T.DURATION, Duration(0, 0, 0)),
    "null_int": (T.INT, None),
    "empty_int": (T.INT, T.EMPTY),
    "list_int": (ty("list<int>"), [3, 1, 2]),
    "list_frozen_text": (ty("frozen<list<text>>"), ["a", "a"]),
    "set_text": (ty("set<text>"), {"b", "a"}),
    "set_int": (ty("set<int>"), {2, 1}),
    "set_double": (ty("set<double>"), {1.5, 0.5}),
    "set_blob": (ty("set<blob>"), {b"\x02", b"\x01"}),
    "set_uuid": (ty("set<uuid>"), {U}),
    "set_boolean": (ty("set<boolean>"), {True, False}),
    "set_frozen_empty": (ty("frozen<set<int>>"), set()),
    "set_of_lists": (ty("set<frozen<list<int>>>"), {(1, 2), (1,)}),
    "map_text_int": (ty("map<text, int>"), {"b": 2, "a": 1}),
    "map_int_text": (ty("map<int, text>"), {10: "ten", 1: "one"}),
    "map_uuid_boolean": (ty("map<uuid, boolean>"), {U: True}),
    "map_list_key": (ty("map<frozen<list<int>>, text>"), {(1, 2): "x"}),
    "map_date_key": (ty("map<date, int>"), {Date(datetime.date(2022, 2, 22)): 1}),
    "tuple": (ty("frozen<tuple<int, text, boolean>>"), (1, "a", None)),
    "tuple_short": (ty("frozen<tuple<int, text, boolean>>"), (1,)),
    "udt": (ADDRESS, {"street": "Main", "zip": 12345, "tags": {"x"}}),
    "udt_null_field": (ADDRESS, {"zip": 7}),
    "udt_quoted_field": (QUOTED, {"Street": "Elm"}),
    "nested": (T.MapType(T.TEXT, T.ListType(ADDRESS, True), True), {"k": [{"street": "A", "zip": 1}]}),
}


def golden() -> dict[str, tuple[str, str]]:
    out = {}
    for line in GOLDEN.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, js, dyn = (part.strip() for part in line.split(" | "))
        out[name] = (js, dyn)
    return out


def stored(ctype, value):
    """The value as a stored row returns it: through the type's codec."""
    if value is None or value is T.EMPTY:
        return value
    return ctype.deserialize(ctype.serialize(value))


def test_every_case_has_a_golden_line():
    assert set(golden()) == set(CASES)


def test_every_cql_type_is_covered():
    natives = {ct.name for ct, _ in CASES.values() if ct.kind == "native"}
    assert natives == set(T.NATIVE_TYPE_NAMES) - {"varchar"}
    assert {ct.kind for ct, _ in CASES.values()} == {"native", "list", "set", "map", "tuple", "udt"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_rendering(name):
    ctype, value = CASES[name]
    assert dumps(to_json_value(ctype, stored(ctype, value))) == golden()[name][0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamodb_rendering(name):
    ctype, value = CASES[name]
    av = to_attribute_value(ctype, stored(ctype, value))
    assert ("-" if av is None else dumps(av)) == golden()[name][1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_renderings_are_valid_json(name):
    js, dyn = golden()[name]
    json.loads(js)
    if dyn != "-":
        assert len(json.loads(dyn)) == 1


def test_numbers_past_2_53_stay_exact_json_numbers():
    assert json.loads(dumps(to_json_value(T.BIGINT, 2**63 - 1))) == 2**63 - 1


def test_doubles_keep_17_significant_digits():
    for x in (0.1, 1 / 3, 2.5e-308, 123456789.123):
        assert float(dumps(to_json_value(T.DOUBLE, x))) == x


def test_floats_keep_9_significant_digits():
    for x in (0.1, 1 / 3, 3.4e38):
        f = T.FLOAT.deserialize(T.FLOAT.serialize(x))
        assert T.FLOAT.deserialize(T.FLOAT.serialize(float(dumps(to_json_value(T.FLOAT, f))))) == f


def test_inet_values_are_canonical_strings():
    assert to_json_value(T.INET, stored(T.INET, "2001:db8::1")) == str(ipaddress.ip_address("2001:db8::1"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_write_paths_compiled_encoder_writes_the_same_json(name):
    """json_format.value_encoder (one encoder per column, used by the write path) gives the golden bytes."""
    from logtide.changefeed.json_format import value_encoder

    ctype, value = CASES[name]
    assert value_encoder(ctype)(stored(ctype, value)) == golden()[name][0]


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(st.characters(exclude_categories=("Cs",))),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(st.characters(exclude_categories=("Cs",))),
                                                                inner, max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_JSON_VALUES)
def test_msgspec_writes_the_bytes_pythons_json_wrote_before(value):
    """Debezium and DynamoDB records are written by msgspec (issue 25); before, by ``json`` with ``ensure_ascii=False``
    and compact separators: the same bytes for every value a record holds (escapes of control characters, quotes
    and backslashes, non-ASCII kept, big integers), and the same as the JSON write path's text encoder."""
    from json.encoder import encode_basestring

    assert dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, str):
        assert dumps(value) == encode_basestring(value)
