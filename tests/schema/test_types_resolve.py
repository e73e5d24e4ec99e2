"""Type objects, type strings and resolve_type validation."""

import pickle

import pytest

from logtide.cql import ast
from logtide.errors import InvalidRequest
from logtide.schema import types as T

UT = T.UserType("ks", "ut", ("a", "b"), (T.INT, T.TEXT), frozen=False)
UDTS = {("ks", "ut"): UT, ("ks", "Quoted"): T.UserType("ks", "Quoted", ("x",), (T.INT,), False)}


def lookup(ks, name):
    return UDTS.get((ks, name))


def E(name, *params, keyspace=None):
    return ast.TypeExpr(name, tuple(params), keyspace)


def resolve(expr, ks="ks"):
    return T.resolve_type(expr, ks, lookup)


def test_varchar_is_normalised_to_text():
    assert T.NativeType("varchar") == T.TEXT
    assert T.NativeType("varchar").cql() == "text"


def test_unknown_native_name_is_rejected():
    with pytest.raises(ValueError):
        T.NativeType("nope")


def test_types_are_hashable_and_compared_by_value():
    a = T.MapType(T.INT, T.ListType(T.TEXT, True), True)
    b = T.MapType(T.INT, T.ListType(T.TEXT, True), True)
    assert a == b and hash(a) == hash(b)
    assert {a: 1}[b] == 1
    assert T.ListType(T.INT, False) != T.ListType(T.INT, True)


def test_counter_type_is_native_counter():
    assert T.CounterType == T.NativeType("counter")
    assert T.CounterType.is_counter and not T.INT.is_counter


@pytest.mark.parametrize(
    "t, text",
    [
        (T.INT, "int"),
        (T.MapType(T.INT, T.TEXT), "map<int, text>"),
        (T.MapType(T.INT, T.TEXT, True), "frozen<map<int, text>>"),
        (T.ListType(T.SetType(T.INT, True), True), "frozen<list<frozen<set<int>>>>"),
        (T.TupleType((T.INT, T.TEXT)), "frozen<tuple<int, text>>"),
        (T.ListType(T.TupleType((T.INT,))), "list<frozen<tuple<int>>>"),
        (UT, "ut"),
        (UT.freeze(), "frozen<ut>"),
        (T.UserType("ks", "Quoted", ("x",), (T.INT,), True), 'frozen<"Quoted">'),
        (T.SetType(UT.freeze()), "set<frozen<ut>>"),
    ],
)
def test_cql_strings_match_system_schema_and_parse_back(t, text):
    assert t.cql() == text
    assert T.parse_type_string(text, "ks", lookup) == t


def test_properties_of_multicell_and_collections():
    assert T.ListType(T.INT).is_multicell and T.ListType(T.INT).is_collection
    assert not T.ListType(T.INT, True).is_multicell
    assert UT.is_multicell and not UT.is_collection
    assert not T.TupleType((T.INT,)).is_multicell
    assert not T.INT.is_multicell and not T.INT.is_collection


def test_freeze_only_changes_the_top_level():
    inner = T.ListType(T.INT, False)
    t = T.UserType("ks", "u2", ("l",), (inner,), False)
    assert t.freeze().frozen and t.freeze().field_types == (inner,)
    assert T.MapType(T.INT, T.TEXT).freeze().cql() == "frozen<map<int, text>>"


def test_cdc_log_column_of_non_frozen_map_is_frozen_map():
    assert T.MapType(T.INT, T.TEXT).freeze().cql() == "frozen<map<int, text>>"


def test_resolve_freezes_nested_collections_recursively():
    t = resolve(E("frozen", E("map", E("int"), E("list", E("text")))))
    assert t == T.MapType(T.INT, T.ListType(T.TEXT, True), True)
    assert t.cql() == "frozen<map<int, frozen<list<text>>>>"


def test_resolve_tuple_freezes_its_components():
    t = resolve(E("tuple", E("int"), E("list", E("text"))))
    assert t.cql() == "frozen<tuple<int, frozen<list<text>>>>"


def test_frozen_twice_is_frozen_once_as_in_scylladb():
    assert resolve(E("frozen", E("frozen", E("list", E("int"))))) == resolve(E("frozen", E("list", E("int"))))
    assert resolve(E("frozen", E("frozen", E("tuple", E("ut"), E("int"))))) == resolve(
        E("frozen", E("tuple", E("ut"), E("int"))))


def test_resolve_non_frozen_udt_at_top_level_is_allowed():
    assert resolve(E("ut")) == UT
    assert resolve(E("frozen", E("ut"))) == UT.freeze()
    assert resolve(E("ut", keyspace="ks")) == UT


@pytest.mark.parametrize(
    "expr, message",
    [
        (E("list", E("set", E("int"))), "Non-frozen collections are not allowed inside collections: list<set<int>>"),
        (E("map", E("int"), E("list", E("int"))), "Non-frozen collections are not allowed inside collections: map<int, list<int>>"),
        (E("map", E("set", E("int")), E("int")), "Non-frozen collections are not allowed inside collections: map<set<int>, int>"),
        (E("list", E("ut")), "Non-frozen UDTs are not allowed inside collections: list<ut>"),
        (E("frozen", E("text")), "frozen<> is only allowed on collections, tuples, and user-defined types (got text)"),
        (E("frozen", E("frozen", E("int"))), "frozen<> is only allowed on collections, tuples, and user-defined types (got int)"),
        (E("list", E("counter")), "Counters are not allowed inside collections: list<counter>"),
        (E("map", E("counter"), E("int")), "Counters are not allowed inside collections: map<counter, int>"),
        (E("set", E("duration")), "Durations are not allowed inside sets: set<duration>"),
        (E("map", E("duration"), E("int")), "Durations are not allowed as map keys: map<duration, int>"),
        (E("tuple", E("int"), E("counter")), "Counters are not allowed inside tuples"),
        (E("nope"), "Unknown type ks.nope"),
        (E("nope", keyspace="ks"), "Unknown type ks.nope"),
        (E("ut", keyspace="other"), "Statement on keyspace ks cannot refer to a user type in keyspace other; user types can only be used in the keyspace they are defined in"),
    ],
)
def test_resolve_rejects_like_cassandra(expr, message):
    with pytest.raises(InvalidRequest) as e:
        resolve(expr)
    assert e.value.message == message


def test_list_of_duration_and_map_of_duration_values_are_allowed():
    assert resolve(E("list", E("duration"))).cql() == "list<duration>"
    assert resolve(E("map", E("int"), E("duration"))).cql() == "map<int, duration>"


def test_frozen_collections_may_nest_frozen_collections():
    t = resolve(E("list", E("frozen", E("set", E("int")))))
    assert t.cql() == "list<frozen<set<int>>>"


def test_parse_type_string_is_case_insensitive_for_keywords():
    assert T.parse_type_string("FROZEN<MAP<INT, VARCHAR>>") == T.MapType(T.INT, T.TEXT, True)


def test_parse_type_string_reports_unknown_udt():
    with pytest.raises(InvalidRequest, match="Unknown type ks.zzz"):
        T.parse_type_string("frozen<zzz>", "ks", lookup)


def test_types_pickle_after_codec_use():
    t = T.MapType(T.INT, UT.freeze(), True)
    t.serialize({1: UT.make_value(1, "a")})
    t2 = pickle.loads(pickle.dumps(t))
    assert t2 == t
    assert t2.deserialize(t.serialize({1: UT.make_value(1, "a")}))[1] == UT.make_value(1, "a")


def test_maybe_quote():
    assert T.maybe_quote("ut") == "ut"
    assert T.maybe_quote("Ut") == '"Ut"'
    assert T.maybe_quote("select") == '"select"'
    assert T.maybe_quote('a"b') == '"a""b"'


def test_resolve_vector_freezes_its_element_and_prints_it_as_scylla_does():
    t = resolve(ast.TypeExpr("vector", (E("set", E("int")),), dimension=2))
    assert t == T.VectorType(T.SetType(T.INT, True), 2)
    assert t.cql() == "vector<set<int>, 2>" and t.is_frozen and not t.is_multicell
    assert T.parse_type_string(t.cql()) == t
    u = resolve(ast.TypeExpr("vector", (E("ut"),), dimension=3))
    assert u.cql() == "vector<ut, 3>" and u.element.frozen
    assert T.parse_type_string("vector<frozen<ut>, 3>", "ks", lookup) == u
    assert pickle.loads(pickle.dumps(t)) == t


@pytest.mark.parametrize("dimension, message", [
    (0, "Vectors must have a dimension greater than 0"), (-1, "Vectors must have a dimension greater than 0"),
    (16001, "Vectors must have a dimension less than or equal to 16000")])
def test_resolve_vector_checks_the_dimension_with_scylla_wording(dimension, message):
    with pytest.raises(InvalidRequest, match=f"^{message}$"):
        resolve(ast.TypeExpr("vector", (E("float"),), dimension=dimension))
    assert resolve(ast.TypeExpr("vector", (E("float"),), dimension=16000)).dimension == 16000
