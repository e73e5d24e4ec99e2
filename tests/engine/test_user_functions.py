"""Lua user-defined functions and aggregates as ScyllaDB has them (docs/compatibility.md "User-defined
functions"): CREATE [OR REPLACE] FUNCTION / AGGREGATE with ScyllaDB's checks and messages, calls in SELECT with
ScyllaDB's mapping of CQL values to Lua and back, RETURNS NULL / CALLED ON NULL INPUT, DROP by signature or by
name, system_schema.functions / aggregates / scylla_aggregates, DESCRIBE, and a sandboxed Lua state whose calls
are bounded in time and memory."""

from __future__ import annotations

import sys

import pytest

from logtide.errors import ConfigurationException, InvalidRequest

OTHER_KS = "CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"


@pytest.fixture
def two_keyspaces(session):
    session.execute(OTHER_KS)
    session.execute("CREATE TYPE ks.point (x int, y int)")
    return session


@pytest.fixture
def table(session):
    session.execute("CREATE TABLE t (p int, c int, v int, s text, l list<int>, PRIMARY KEY (p, c))")
    for c in range(4):
        session.execute(f"INSERT INTO t (p, c, v, s, l) VALUES (1, {c}, {c * 10}, 'x{c}', [{c}, {c + 1}])")
    session.execute("INSERT INTO t (p, c) VALUES (1, 9)")  # v, s and l null
    return session


def refused(session, query: str) -> str:
    with pytest.raises(InvalidRequest) as e:
        session.execute(query)
    return str(e.value)


def values(session, query: str) -> list:
    return [tuple(r)[0] if len(tuple(r)) == 1 else tuple(r) for r in session.execute(query)]


@pytest.mark.parametrize("language", ["java", "javascript", "python"])
def test_a_language_scylladb_does_not_know_is_named(session, language):
    assert refused(session, f"CREATE FUNCTION f (i int) CALLED ON NULL INPUT RETURNS int LANGUAGE {language} "
                            "AS 'return 42;'") == f"Language '{language}' is not supported"


def test_wasm_is_refused_naming_lua(session):
    assert refused(session, "CREATE FUNCTION f (i int) CALLED ON NULL INPUT RETURNS int LANGUAGE wasm "
                            "AS '(module)'") == "Language 'wasm' is not supported by logtide: use LANGUAGE lua"


def test_a_function_may_not_use_a_user_type_of_another_keyspace(two_keyspaces):
    message = ("Statement on keyspace other cannot refer to a user type in keyspace ks; "
               "user types can only be used in the keyspace they are defined in")
    assert refused(two_keyspaces, "CREATE FUNCTION other.f (p ks.point) CALLED ON NULL INPUT RETURNS text "
                                  "LANGUAGE lua AS 'return 1'") == message
    assert refused(two_keyspaces, "CREATE FUNCTION other.f (t text) CALLED ON NULL INPUT RETURNS ks.point "
                                  "LANGUAGE lua AS 'return nil'") == message
    assert refused(two_keyspaces, "CREATE AGGREGATE other.total (ks.point) SFUNC plus STYPE int INITCOND 10") == (
        message)


def test_function_types_are_checked_first(session):
    assert refused(session, "CREATE FUNCTION f (p frozen<nope>) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                            "AS 'return 1'") == "Unknown type ks.nope"
    session.execute("CREATE TYPE point (x int, y int)")
    assert refused(session, "CREATE FUNCTION f (p frozen<point>) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                            "AS 'return 1'") == "User defined argument and return types should not be frozen"
    assert refused(session, "CREATE FUNCTION nowhere.f (i int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                            "AS 'return 1'") == "Keyspace 'nowhere' doesn't exist"


def test_a_function_is_called_in_a_select_by_keyspace_or_in_the_current_one(table):
    table.execute("CREATE FUNCTION plus (a int, b int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua "
                  "AS 'return a + b'")
    result = table.execute("SELECT ks.plus(c, v), plus(c, 1) FROM t WHERE p = 1")
    assert result.column_names == ["ks.plus(c, v)", "ks.plus(c, 1)"]
    assert [tuple(r) for r in result] == [(0, 1), (11, 2), (22, 3), (33, 4), (None, 10)]


def test_a_prepared_write_calls_a_function_with_a_bound_argument(table):
    table.execute("CREATE FUNCTION twice (x int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua AS 'return 2 * x'")
    for query in ("INSERT INTO t (p, c, v) VALUES (2, 0, twice(?))",
                  "UPDATE ks.t SET v = ks.twice(?) WHERE p = 2 AND c = 1"):
        prepared = table.prepare(query)
        assert [(s.name, s.type.cql()) for s in prepared.bind_specs] == [("arg0(ks.twice)", "int")]
        table.execute(prepared, [21])
    assert values(table, "SELECT v FROM t WHERE p = 2") == [42, 42]
    with pytest.raises(InvalidRequest, match='for "arg0\\(ks.twice\\)" of type int'):
        table.execute(prepared, ["x"])


def test_returns_null_on_null_input_skips_the_body_and_called_runs_it(table):
    table.execute("CREATE FUNCTION strict (v int) RETURNS NULL ON NULL INPUT RETURNS text LANGUAGE lua "
                  "AS 'return \"ran\"'")
    table.execute("CREATE FUNCTION lenient (v int) CALLED ON NULL INPUT RETURNS text LANGUAGE lua "
                  "AS 'if v == nil then return \"nil\" end return \"ran\"'")
    assert values(table, "SELECT strict(v), lenient(v) FROM t WHERE p = 1 AND c = 9") == [(None, "nil")]
    assert values(table, "SELECT strict(v), lenient(v) FROM t WHERE p = 1 AND c = 1") == [("ran", "ran")]


def test_cql_values_reach_lua_as_scylladb_maps_them_and_come_back(session):
    session.execute("CREATE TYPE point (x int, y int)")
    session.execute("CREATE TABLE v (k int PRIMARY KEY, l list<int>, s set<text>, m map<text, int>, pt point, "
                    "b blob, ts timestamp, d double)")
    session.execute("INSERT INTO v (k, l, s, m, pt, b, ts, d) VALUES (1, [3, 1, 2], {'a', 'b'}, {'x': 1, 'y': 2}, "
                    "{x: 4, y: 5}, 0x6869, '2024-01-02T00:00:00Z', 1.5)")
    functions = {
        "total(l list<int>) RETURNS bigint": "local n = 0 for _, x in ipairs(l) do n = n + x end return n",
        "members(s set<text>) RETURNS text": "local k = {} for x, t in pairs(s) do table.insert(k, x) end "
                                             "table.sort(k) return table.concat(k, \",\")",
        "keys(m map<text, int>) RETURNS map<int, text>": "local r = {} for k, x in pairs(m) do r[x] = k end return r",
        "norm(pt point) RETURNS point": "return {x = pt.y, y = pt.x}",
        "blobtext(b blob) RETURNS text": "return b",
        "millis(ts timestamp) RETURNS bigint": "return ts",
        "half(d double) RETURNS double": "return d / 2",
        "sorted(l list<int>) RETURNS list<int>": "table.sort(l) return l",
    }
    for head, body in functions.items():
        name_args, returns = head.split(" RETURNS ")
        session.execute(f"CREATE FUNCTION {name_args} CALLED ON NULL INPUT RETURNS {returns} LANGUAGE lua "
                        f"AS $${body}$$")
    row = session.execute("SELECT total(l), members(s), keys(m), norm(pt), blobtext(b), millis(ts), half(d), "
                          "sorted(l) FROM v WHERE k = 1").one()
    assert tuple(row)[:2] == (6, "a,b")
    assert dict(row[2]) == {1: "x", 2: "y"}
    assert tuple(row[3]) == (5, 4)  # a user type's value: its fields in order
    assert tuple(row)[4:] == ("hi", 1704153600000, 0.75, [1, 2, 3])


def test_a_wrong_return_value_is_scylladbs_error(table):
    for returns, body, message in (
            ("int", "return \"abc\"", "value is not an integer"),
            ("int", "return 1.5", "value is not an integer"),
            ("list<int>", "return 3", "value is not a table"),
            ("int", "return 1, 2", "2 values returned, expected 1"),
            ("int", "error(\"boom\")", "lua execution failed: <internal>:2: boom"),
            ("text", "return \"ok\\xc2\"", "value is not valid utf8, invalid character at byte offset 2"),
            ("ascii", "return \"\\xc3\\xa9\"", "value is not valid ascii"),
    ):
        table.execute(f"CREATE OR REPLACE FUNCTION bad (v int) CALLED ON NULL INPUT RETURNS {returns} LANGUAGE lua "
                      f"AS '{body}'")
        assert refused(table, "SELECT bad(v) FROM t WHERE p = 1 AND c = 1") == message


def test_a_body_that_does_not_compile_is_refused_and_nothing_is_created(session):
    assert refused(session, "CREATE FUNCTION f (a int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                            "AS 'return a +'") == "could not compile: <internal>:2: unexpected symbol near <eof>"
    assert session.execute("SELECT * FROM system_schema.functions").all() == []


def test_the_lua_state_is_a_sandbox(table):
    for body in ("return os.time()", "return io.open(\"/etc/passwd\")", "return require(\"os\")",
                 "return load(\"return 1\")()", "return debug.getinfo(1)", "return dofile(\"/etc/passwd\")",
                 "return math.pi"):
        table.execute(f"CREATE OR REPLACE FUNCTION escape (v int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                      f"AS '{body}'")
        assert refused(table, "SELECT escape(v) FROM t WHERE p = 1 AND c = 1").startswith(
            "lua execution failed: <internal>:2: attempt to "), body


@pytest.mark.parametrize("body, message", [
    ("while true do end", "lua execution timeout: "),
    ("while true do pcall(function() while true do end end) end", "lua execution timeout: "),
    ("local co = coroutine.create(function() while true do end end) coroutine.resume(co) return 1",
     "lua execution timeout: "),
    # a growing table meets the memory bound, or the time bound first on a busy machine: either stops it
    ("local t = {} for i = 1, 1e9 do t[i] = i end return 1", ("lua execution failed: not enough memory",
                                                               "lua execution timeout: ")),
    ("return #string.rep(\"x\", 1e9)", "lua execution failed: not enough memory"),
])
def test_a_runaway_function_is_an_error_bounded_in_time_and_memory(table, body, message):
    """ScyllaDB bounds a call at 10 ms and 1 MiB; a function past either fails the query, and the next works."""
    table.execute(f"CREATE FUNCTION runaway (v int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS '{body}'")
    assert refused(table, "SELECT runaway(v) FROM t WHERE p = 1 AND c = 1").startswith(message)  # str or tuple
    table.execute("CREATE FUNCTION fine (v int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'return v'")
    assert values(table, "SELECT fine(v) FROM t WHERE p = 1 AND c = 1") == [10]


def test_create_or_replace_and_if_not_exists(table):
    create = "FUNCTION f (v int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'return {}'"
    table.execute("CREATE " + create.format(1))
    assert refused(table, "CREATE " + create.format(2)) == "The function 'ks.f(int)' already exists"
    table.execute("CREATE FUNCTION IF NOT EXISTS " + create.format(2)[len("FUNCTION "):])
    assert values(table, "SELECT f(v) FROM t WHERE p = 1 AND c = 1") == [1]
    table.execute("CREATE OR REPLACE " + create.format(3))
    assert values(table, "SELECT f(v) FROM t WHERE p = 1 AND c = 1") == [3]


def test_overloads_are_chosen_by_argument_types_and_dropped_by_signature(table):
    table.execute("CREATE FUNCTION kind (v int) CALLED ON NULL INPUT RETURNS text LANGUAGE lua AS 'return \"int\"'")
    table.execute("CREATE FUNCTION kind (v text) CALLED ON NULL INPUT RETURNS text LANGUAGE lua AS 'return \"text\"'")
    assert values(table, "SELECT kind(v), kind(s) FROM t WHERE p = 1 AND c = 1") == [("int", "text")]
    assert refused(table, "DROP FUNCTION kind") == "There are multiple functions named ks.kind"
    assert refused(table, "DROP FUNCTION kind(bigint)") == "User function ks.kind(bigint) doesn't exist"
    table.execute("DROP FUNCTION kind(text)")
    table.execute("DROP FUNCTION kind")
    assert refused(table, "DROP FUNCTION kind") == "No function named ks.kind found"
    table.execute("DROP FUNCTION IF EXISTS kind")


def test_an_aggregate_folds_rows_with_its_state_and_final_functions(table):
    table.execute("CREATE FUNCTION acc (st tuple<int, bigint>, v int) CALLED ON NULL INPUT RETURNS tuple<int, bigint> "
                  "LANGUAGE lua AS 'if v == nil then return st end return {st[1] + 1, st[2] + v}'")
    table.execute("CREATE FUNCTION fin (st tuple<int, bigint>) CALLED ON NULL INPUT RETURNS double LANGUAGE lua "
                  "AS 'return st[2] / st[1]'")
    table.execute("CREATE AGGREGATE average (int) SFUNC acc STYPE tuple<int, bigint> FINALFUNC fin INITCOND (0, 0)")
    result = table.execute("SELECT average(v) FROM t WHERE p = 1")
    assert result.column_names == ["ks.average(v)"] and [tuple(r) for r in result] == [(15.0,)]
    # without a final function the state is the result; the state starts null without INITCOND
    table.execute("CREATE FUNCTION cat (st text, s text) CALLED ON NULL INPUT RETURNS text LANGUAGE lua "
                  "AS 'return (st or \"\") .. (s or \"-\")'")
    table.execute("CREATE AGGREGATE joined (text) SFUNC cat STYPE text")
    assert values(table, "SELECT joined(s) FROM t WHERE p = 1") == ["x0x1x2x3-"]


def test_an_aggregate_has_a_state_per_group(table):
    table.execute("INSERT INTO t (p, c, v) VALUES (2, 0, 7)")
    table.execute("CREATE FUNCTION acc (st bigint, v int) CALLED ON NULL INPUT RETURNS bigint LANGUAGE lua "
                  "AS 'return st + (v or 0)'")
    table.execute("CREATE AGGREGATE total (int) SFUNC acc STYPE bigint INITCOND 0")
    assert values(table, "SELECT p, total(v) FROM t GROUP BY p ALLOW FILTERING") == [(1, 60), (2, 7)]


def test_aggregate_checks_and_drops_follow_scylladb(table):
    table.execute("CREATE FUNCTION plus (st int, v int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua "
                  "AS 'return st + v'")
    table.execute("CREATE FUNCTION half (st int) RETURNS NULL ON NULL INPUT RETURNS double LANGUAGE lua "
                  "AS 'return st / 2'")
    assert refused(table, "CREATE AGGREGATE a (int) SFUNC nope STYPE int") == "State function nope(int, int) not found"
    assert refused(table, "CREATE AGGREGATE a (int) SFUNC half STYPE int") == "State function half(int, int) not found"
    assert refused(table, "CREATE AGGREGATE a (int) SFUNC plus STYPE int FINALFUNC nope") == (
        "Final function nope(int) not found")
    assert refused(table, "CREATE AGGREGATE a (int) SFUNC plus STYPE int REDUCEFUNC half") == (
        "Scalar reduce function half for state type int not found.")
    table.execute("CREATE AGGREGATE a (int) SFUNC plus STYPE int REDUCEFUNC plus FINALFUNC half INITCOND 0")
    assert values(table, "SELECT a(v) FROM t WHERE p = 1 AND c < 9") == [30.0]
    # a null state stays null under a RETURNS NULL ON NULL INPUT state function (the row whose v is null)
    assert values(table, "SELECT a(v) FROM t WHERE p = 1") == [None]
    assert refused(table, "DROP FUNCTION half") == ("Cannot delete function ks.half(int), as it is used by "
                                                    "user-defined aggregate ks.a(int)")
    assert refused(table, "DROP AGGREGATE plus") == "'ks.plus(int, int)' is not a user defined aggregate"
    assert refused(table, "CREATE OR REPLACE FUNCTION a (v int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                          "AS 'return v'") == "Cannot replace 'ks.a(int)' which is not a user defined function"
    assert refused(table, "CREATE OR REPLACE AGGREGATE plus (int, int) SFUNC plus STYPE int") == (
        "Cannot replace 'ks.plus(int, int)' which is not a user defined aggregate")
    table.execute("DROP AGGREGATE a")
    table.execute("DROP FUNCTION half")


def test_system_schema_and_describe_list_functions_and_aggregates(table):
    table.execute("CREATE FUNCTION plus (st int, v int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua "
                  "AS 'return st + v'")
    table.execute("CREATE AGGREGATE total (int) SFUNC plus STYPE int REDUCEFUNC plus INITCOND 0")
    assert values(table, "SELECT * FROM system_schema.functions") == [
        ("ks", "plus", ["int", "int"], ["st", "v"], "return st + v", False, "lua", "int")]
    assert values(table, "SELECT * FROM system_schema.aggregates") == [
        ("ks", "total", ["int"], None, "0", "int", "plus", "int")]
    assert values(table, "SELECT reduce_func, state_type FROM system_schema.scylla_aggregates") == [("plus", "int")]
    assert [r.create_statement for r in table.execute("DESC FUNCTION plus")] == [
        "CREATE FUNCTION ks.plus(st int, v int)\nRETURNS NULL ON NULL INPUT\nRETURNS int\nLANGUAGE lua\n"
        "AS $$return st + v$$;"]
    assert [r.create_statement for r in table.execute("DESC AGGREGATE total")] == [
        "CREATE AGGREGATE ks.total(int)\nSFUNC plus\nSTYPE int\nREDUCEFUNC plus\nINITCOND 0;"]
    assert [(r.type, r.name) for r in table.execute("DESC KEYSPACE ks")][1:3] == [("function", "plus"),
                                                                                ("aggregate", "total")]
    # DESCRIBE of a bare name finds functions, then aggregates, last (ScyllaDB's generic DESCRIBE)
    assert list(table.execute("DESC ks.plus")) == list(table.execute("DESC FUNCTION plus"))
    assert list(table.execute("DESC total")) == list(table.execute("DESC AGGREGATE ks.total"))


def test_describe_of_a_bare_name_finds_functions_then_aggregates(table):
    table.execute("CREATE FUNCTION plus (st int, v int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua "
                  "AS 'return st + v'")
    table.execute("CREATE FUNCTION plus (st bigint, v bigint) RETURNS NULL ON NULL INPUT RETURNS bigint "
                  "LANGUAGE lua AS 'return st + v'")
    table.execute("CREATE AGGREGATE total (int) SFUNC plus STYPE int INITCOND 0")
    for name, kind in (("plus", "FUNCTION"), ("ks.plus", "FUNCTION"), ("total", "AGGREGATE")):
        generic = [tuple(r) for r in table.execute(f"DESC {name}")]
        assert generic == [tuple(r) for r in table.execute(f"DESC {kind} {name}")]
    assert [(r.type, r.name) for r in table.execute("DESC plus")] == [("function", "plus")] * 2  # both overloads
    assert refused(table, "DESC nothere") == "'nothere' not found in keyspace 'ks'"


def test_decimals_and_varints_reach_lua_exact_as_scylladb_decimals(session):
    session.execute("CREATE TABLE n (k int PRIMARY KEY, d decimal, v varint)")
    session.execute("INSERT INTO n (k, d, v) VALUES (1, 1234567890.12345678901234567890, "
                    "123456789012345678901234567890)")
    session.execute("INSERT INTO n (k, d, v) VALUES (2, 2.5, 7)")
    defined = {
        "d_plus": ("d decimal", "decimal", "return d + 1"),
        "d_minus": ("d decimal", "decimal", "return '0.1' - d"),
        "d_half": ("d decimal", "double", "return d + 0.5"),  # a number that is no integer: a double
        "v_twice": ("v varint", "varint", "return v + v"),
        "v_text": ("v varint", "text", "return v"),
        "v_kind": ("v varint", "text", "return type(v) .. ' ' .. getmetatable(v) .. ' ' .. tostring(v - 7)"),
        "d_int": ("d decimal", "int", "return d"),
        "d_float": ("d decimal", "decimal", "return 1.5"),
        "d_string": ("d decimal", "decimal", "return '3.25'"),
        "d_table": ("d decimal", "decimal", "return d + {}"),
        "d_times": ("d decimal", "decimal", "return d * 2"),
    }
    for name, (arg, returns, body) in defined.items():
        session.execute(f"CREATE FUNCTION {name} ({arg}) RETURNS NULL ON NULL INPUT RETURNS {returns} "
                        f"LANGUAGE lua AS $${body}$$")

    def call(name, k=1):
        column = "v" if name.startswith("v") else "d"
        return values(session, f"SELECT {name}({column}) FROM n WHERE k = {k}")[0]

    from decimal import Decimal
    assert call("d_plus") == Decimal("1234567891.12345678901234567890")
    assert call("d_minus") == Decimal("-1234567890.02345678901234567890")
    assert call("d_half") == 1234567890.6234567
    assert call("v_twice") == 246913578024691357802469135780
    assert call("v_text") == "123456789012345678901234567890"
    assert call("v_kind", 2) == "table Scylla.decimal 0"
    assert refused(session, "SELECT d_int(d) FROM n WHERE k = 2") == "value is not an integer"
    assert refused(session, "SELECT d_float(d) FROM n WHERE k = 1") == "value is not a decimal"
    assert call("d_string") == Decimal("3.25")
    assert refused(session, "SELECT d_table(d) FROM n WHERE k = 1") == "lua execution failed: value is not a number"
    assert refused(session, "SELECT d_times(d) FROM n WHERE k = 1") == (
        "lua execution failed: <internal>:2: attempt to perform arithmetic on a Scylla.decimal value (local 'd')")


def test_a_user_type_a_function_uses_cannot_be_dropped(session):
    session.execute("CREATE TYPE point (x int, y int)")
    session.execute("CREATE FUNCTION px (p point) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'return p.x'")
    assert refused(session, "DROP TYPE point") == "Cannot drop user type ks.point as it is still used by function ks.px"


def test_dropping_a_keyspace_drops_its_functions_and_a_missing_one_is_scylladbs_error(two_keyspaces):
    two_keyspaces.execute("CREATE FUNCTION other.f (v int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                          "AS 'return v'")
    two_keyspaces.execute("DROP KEYSPACE other")
    assert two_keyspaces.execute("SELECT * FROM system_schema.functions").all() == []
    with pytest.raises(ConfigurationException, match="^Cannot drop non existing keyspace 'other'.$"):
        two_keyspaces.execute("DROP KEYSPACE other")


def test_without_lupa_create_function_names_the_extra(session, monkeypatch):
    monkeypatch.setitem(sys.modules, "lupa", None)  # as if the udf extra were not installed
    assert refused(session, "CREATE FUNCTION f (v int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                            "AS 'return v'") == ("Lua user-defined functions need the lupa package: "
                                                 "pip install 'logtide[udf]'")
