"""``vector<T, N>`` (Cassandra 5, ScyllaDB): columns and keys, literals, JSON, the CDC log, DESCRIBE,
system_schema, ScyllaDB's messages, and the vector similarity functions."""

from __future__ import annotations

import math

import pytest

import logtide
from logtide.errors import InvalidRequest, SyntaxException

from ..conftest import rows


@pytest.fixture
def v(session):
    session.execute("CREATE TABLE v (p int PRIMARY KEY, f vector<float, 3>, t vector<text, 2>, "
                    "s vector<set<int>, 2>) WITH cdc = {'enabled': true}")
    return session


def test_vector_columns_store_and_return_lists_of_their_element_type(v):
    v.execute("INSERT INTO v (p, f, t, s) VALUES (1, [1, 2.5, -3.0], ['a', 'bc'], [{2, 1}, {3}])")
    (row,) = rows(v.execute("SELECT f, t, s FROM v WHERE p = 1"))
    assert row[0] == [1.0, 2.5, -3.0]
    assert row[1] == ["a", "bc"]
    assert [list(x) for x in row[2]] == [[1, 2], [3]]


def test_a_vector_literal_must_have_the_dimension_and_element_type(v):
    with pytest.raises(InvalidRequest, match=r"^Invalid vector literal for f: type vector<float, 3> expects 3 "
                                             r"elements but got 2$"):
        v.execute("INSERT INTO v (p, f) VALUES (1, [1.0, 2.0])")
    with pytest.raises(InvalidRequest, match=r"^Invalid vector literal for f: value 'x' is not of type float$"):
        v.execute("INSERT INTO v (p, f) VALUES (1, [1.0, 'x', 2.0])")
    with pytest.raises(InvalidRequest, match="^null is not supported inside vectors$"):
        v.execute("INSERT INTO v (p, f) VALUES (1, [1.0, null, 2.0])")
    with pytest.raises(InvalidRequest, match="for \"f\" of type vector<float, 3>"):
        v.execute("INSERT INTO v (p, f) VALUES (1, 'abc')")
    assert rows(v.execute("SELECT * FROM v")) == []


def test_bind_markers_inside_a_vector_literal_take_the_element_type(v):
    prepared = v.prepare("INSERT INTO v (p, f) VALUES (?, [1.0, ?, (float) ?])")
    assert [m.type.cql() for m in prepared.bind_specs] == ["int", "float", "float"]
    v.execute(prepared, (1, 2.0, 3.0))
    assert rows(v.execute("SELECT f FROM v WHERE p = 1")) == [([1.0, 2.0, 3.0],)]


def test_a_bound_vector_of_the_wrong_size_is_refused(v):
    prepared = v.prepare("INSERT INTO v (p, f) VALUES (?, ?)")
    with pytest.raises(InvalidRequest, match="expected 3 elements, got 2"):
        v.execute(prepared, (1, [1.0, 2.0]))


@pytest.mark.parametrize("dimension, message", [
    ("0", "Vectors must have a dimension greater than 0"),
    ("-18", "Vectors must have a dimension greater than 0"),
    ("16001", "Vectors must have a dimension less than or equal to 16000"),
])
def test_vector_dimensions_outside_1_to_16000_are_refused_with_scylla_wording(session, dimension, message):
    with pytest.raises(InvalidRequest, match=f"^{message}$"):
        session.execute(f"CREATE TABLE bad (p int PRIMARY KEY, v vector<float, {dimension}>)")
    session.execute("CREATE TABLE good (p int PRIMARY KEY, v vector<float, 16000>)")


@pytest.mark.parametrize("dimension", ["dog", "1.5", "n"])
def test_a_vector_dimension_that_is_no_integer_is_a_syntax_error(session, dimension):
    with pytest.raises(SyntaxException):
        session.execute(f"CREATE TABLE bad (p int PRIMARY KEY, v vector<float, {dimension}>)")


def test_counters_are_refused_inside_vectors(session):
    with pytest.raises(InvalidRequest, match="Counters are not allowed inside vectors"):
        session.execute("CREATE TABLE bad (p int PRIMARY KEY, v vector<counter, 2>)")


def test_vectors_can_be_primary_key_columns_and_order_element_by_element(session):
    session.execute("CREATE TABLE k (p vector<int, 2>, c vector<text, 2>, PRIMARY KEY (p, c))")
    for c in ("['b', 'a']", "['a', 'z']", "['a', 'b']"):
        session.execute(f"INSERT INTO k (p, c) VALUES ([1, 2], {c})")
    assert rows(session.execute("SELECT c FROM k WHERE p = [1, 2]")) == [(["a", "b"],), (["a", "z"],), (["b", "a"],)]
    assert rows(session.execute("SELECT c FROM k WHERE p = [1, 2] AND c > ['a', 'z']")) == [(["b", "a"],)]


def test_vectors_in_json_are_arrays_of_exactly_the_dimension(v):
    v.execute("""INSERT INTO v JSON '{"p": 2, "f": [1, 2, 3.5], "t": ["x", "y"]}'""")
    assert rows(v.execute("SELECT JSON p, f, t FROM v WHERE p = 2")) == [
        ('{"p": 2, "f": [1.0, 2.0, 3.5], "t": ["x", "y"]}',)]
    with pytest.raises(InvalidRequest, match=r"Too few values \(2\) for vector with size 3"):
        v.execute("""INSERT INTO v JSON '{"p": 3, "f": [1, 2]}'""")
    with pytest.raises(InvalidRequest, match=r"Too many values \(4\) for vector with size 3"):
        v.execute("""INSERT INTO v JSON '{"p": 3, "f": [1, 2, 3, 4]}'""")
    with pytest.raises(InvalidRequest, match="vector_type must be represented as JSON Array"):
        v.execute("""INSERT INTO v JSON '{"p": 3, "f": 1}'""")


def test_the_cdc_log_has_vector_columns_of_the_same_type(v):
    v.execute("INSERT INTO v (p, f) VALUES (1, [1.0, 2.0, 3.0])")
    types = dict(rows(v.execute("SELECT column_name, type FROM system_schema.columns "
                                "WHERE keyspace_name = 'ks' AND table_name = 'v_scylla_cdc_log'")))
    assert types["f"] == "vector<float, 3>" and types["s"] == "vector<set<int>, 2>"
    assert rows(v.execute("SELECT p, f FROM v_scylla_cdc_log")) == [(1, [1.0, 2.0, 3.0])]


def test_describe_and_system_schema_name_vectors_as_scylla_does(v):
    create = v.execute("DESCRIBE TABLE v").one().create_statement
    assert "    f vector<float, 3>,\n    s vector<set<int>, 2>,\n    t vector<text, 2>,\n" in create
    types = dict(rows(v.execute("SELECT column_name, type FROM system_schema.columns "
                                "WHERE keyspace_name = 'ks' AND table_name = 'v'")))
    assert types == {"p": "int", "f": "vector<float, 3>", "t": "vector<text, 2>", "s": "vector<set<int>, 2>"}


def test_vector_columns_survive_reopening_the_database(tmp_path):
    db = logtide.open(tmp_path / "d", synchronous="OFF")
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TYPE ks.pt (y int)")
    s.execute("CREATE TABLE ks.t (p int PRIMARY KEY, v vector<double, 2>, u vector<frozen<pt>, 2>)")
    s.execute("INSERT INTO ks.t (p, v, u) VALUES (1, [0.5, 1e300], [{y: 1}, {y: 2}])")
    db.close()
    db = logtide.open(tmp_path / "d", synchronous="OFF")
    (row,) = db.session().execute("SELECT v, u FROM ks.t WHERE p = 1")
    assert row.v == [0.5, 1e300] and [x.y for x in row.u] == [1, 2]
    db.close()


def test_a_user_type_may_hold_a_vector_of_frozen_user_types(session):
    session.execute("CREATE TYPE b (y int)")
    session.execute("CREATE TYPE a (z vector<frozen<b>, 2>)")
    session.execute("CREATE TABLE t (p int PRIMARY KEY, v frozen<a>)")
    session.execute("INSERT INTO t (p, v) VALUES (0, {z: [{y: 1}, {y: 2}]})")
    assert [x.y for x in session.execute("SELECT v FROM t").one().v.z] == [1, 2]


# -- similarity functions -------------------------------------------------------------------------


@pytest.fixture
def sim(session):
    session.execute("CREATE TABLE sim (p int PRIMARY KEY, a vector<float, 2>, b vector<float, 2>, "
                    "c vector<float, 3>, t vector<text, 2>, i int)")
    session.execute("INSERT INTO sim (p, a, b, c) VALUES (0, [0.1, 0.2], [0.9, 0.8], [1, 2, 3])")
    return session


@pytest.mark.parametrize("function, expected", [
    ("similarity_cosine", 0.964238), ("similarity_euclidean", 0.5), ("similarity_dot_product", 0.625)])
def test_similarity_functions_score_two_float_vectors(sim, function, expected):
    assert sim.execute(f"SELECT {function}(a, b) FROM sim").one()[0] == pytest.approx(expected, rel=1e-6)
    assert sim.execute(f"SELECT {function}(a, [0.9, 0.8]) FROM sim").one()[0] == pytest.approx(expected, rel=1e-6)
    prepared = sim.prepare(f"SELECT {function}(?, b) FROM sim")
    assert [m.type.cql() for m in prepared.bind_specs] == ["vector<float, 2>"]
    assert sim.execute(prepared, ([0.1, 0.2],)).one()[0] == pytest.approx(expected, rel=1e-6)
    assert sim.execute(f"SELECT {function}(a, null) FROM sim").one()[0] is None


def test_cosine_similarity_of_a_zero_vector_is_nan_as_in_scylla(sim):
    assert math.isnan(sim.execute("SELECT similarity_cosine(a, [0, 0]) FROM sim").one()[0])


@pytest.mark.parametrize("args, message", [
    ("a, c", r"All arguments must have the same vector dimensions, but found vector<float, 2> and vector<float, 3>"),
    ("a, [1.0, 2.0, 3.0]", r"All arguments must have the same vector dimensions"),
    ("i, a", r"Function system.similarity_cosine requires a float vector argument, but found i of type int"),
    ("t, a", r"requires a float vector argument, but found t of type vector<text, 2>"),
    ("a, [1.0, null]", r"requires a float vector argument"),
    ("a, {1.0, 2.0}", r"requires a float vector argument"),
    ("a, 'dog'", r"requires a float vector argument"),
    ("null, null", r"Cannot infer type of argument null for function "
                   r"system.similarity_cosine\(vector<float, n>, vector<float, n>\)"),
    ("a", r"Invalid number of arguments for function system.similarity_cosine\(vector<float, n>, vector<float, n>\)"),
    ("a, a, a", r"Invalid number of arguments for function system.similarity_cosine"),
])
def test_similarity_functions_refuse_what_is_no_pair_of_float_vectors(sim, args, message):
    with pytest.raises(InvalidRequest, match=message):
        sim.execute(f"SELECT similarity_cosine({args}) FROM sim")


def test_similarity_of_two_bind_markers_cannot_be_prepared(sim):
    with pytest.raises(InvalidRequest, match=r"Cannot infer type of argument \?"):
        sim.prepare("SELECT similarity_euclidean(?, ?) FROM sim")
