"""Parsing schema statements, DESCRIBE and auth statements."""

import pytest

from logtide.cql import ast, parse
from logtide.errors import InvalidRequest, SyntaxException

Q = ast.QualifiedName
T = ast.TypeExpr


def stmt(text):
    return parse(text).statement


def column_type(type_text):
    return stmt(f"CREATE TABLE t (k int PRIMARY KEY, v {type_text})").columns[1].type


# ---------------------------------------------------------------- keyspaces


def test_create_keyspace_with_replication_map_and_durable_writes():
    s = stmt(
        "CREATE KEYSPACE IF NOT EXISTS Ks WITH replication = "
        "{'class': 'SimpleStrategy', 'replication_factor': 1} AND durable_writes = false"
    )
    assert s == ast.CreateKeyspace(
        "ks",
        (("replication", {"class": "SimpleStrategy", "replication_factor": 1}), ("durable_writes", False)),
        True,
    )


def test_create_keyspace_with_quoted_name_keeps_case():
    assert stmt("CREATE KEYSPACE \"MyKs\" WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': '3'}").name == "MyKs"


def test_alter_and_drop_keyspace():
    assert stmt("ALTER KEYSPACE ks WITH durable_writes = true") == ast.AlterKeyspace("ks", (("durable_writes", True),))
    assert stmt("DROP KEYSPACE IF EXISTS ks") == ast.DropKeyspace("ks", True)
    assert stmt("DROP KEYSPACE ks") == ast.DropKeyspace("ks", False)


def test_use_keyspace():
    assert stmt('USE "Ks"') == ast.UseKeyspace("Ks")
    assert stmt("use KS;") == ast.UseKeyspace("ks")


# ---------------------------------------------------------------- CREATE TABLE


def test_create_table_with_inline_primary_key():
    s = stmt("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
    assert s == ast.CreateTable(
        Q("ks", "t"), (ast.ColumnDef("k", T("int")), ast.ColumnDef("v", T("text"))), ("k",)
    )


def test_create_table_with_composite_partition_key_and_clustering_columns():
    s = stmt("CREATE TABLE t (a int, b int, c int, d int, s int static, PRIMARY KEY ((a, b), c, d))")
    assert s.partition_key == ("a", "b")
    assert s.clustering_key == ("c", "d")
    assert s.columns[4] == ast.ColumnDef("s", T("int"), static=True)


def test_create_table_with_simple_primary_key_clause():
    s = stmt("CREATE TABLE IF NOT EXISTS t (a int, c int, PRIMARY KEY (a, c))")
    assert (s.partition_key, s.clustering_key, s.if_not_exists) == (("a",), ("c",), True)


def test_create_table_with_options_clustering_order_and_compact_storage():
    s = stmt(
        "CREATE TABLE t (a int, c int, d int, PRIMARY KEY (a, c, d)) WITH CLUSTERING ORDER BY (c DESC, d ASC) "
        "AND compaction = {'class': 'LeveledCompactionStrategy'} AND comment = 'x' "
        "AND cdc = {'enabled': true} AND default_time_to_live = 10 AND bloom_filter_fp_chance = 0.01 "
        "AND COMPACT STORAGE"
    )
    assert s.clustering_order == (ast.OrderBy("c", True), ast.OrderBy("d", False))
    assert s.options == (
        ("compaction", {"class": "LeveledCompactionStrategy"}),
        ("comment", "x"),
        ("cdc", {"enabled": True}),
        ("default_time_to_live", 10),
        ("bloom_filter_fp_chance", 0.01),
    )
    assert s.compact_storage


def test_create_table_without_primary_key_is_invalid():
    with pytest.raises(InvalidRequest, match="No PRIMARY KEY"):
        parse("CREATE TABLE t (a int, b int)")


def test_create_table_with_two_primary_keys_is_invalid():
    with pytest.raises(InvalidRequest, match="Multiple PRIMARY KEYs"):
        parse("CREATE TABLE t (a int PRIMARY KEY, b int, PRIMARY KEY (b))")


@pytest.mark.parametrize(
    "name",
    "ascii bigint blob boolean counter date decimal double duration float inet int smallint "
    "text time timestamp timeuuid tinyint uuid varchar varint".split(),
)
def test_native_types(name):
    assert column_type(name.upper()) == T(name)


def test_collection_tuple_frozen_and_udt_types():
    assert column_type("list<int>") == T("list", (T("int"),))
    assert column_type("set<text>") == T("set", (T("text"),))
    assert column_type("map<int, frozen<list<text>>>") == T(
        "map", (T("int"), T("frozen", (T("list", (T("text"),)),)))
    )
    assert column_type("tuple<int, text, uuid>") == T("tuple", (T("int"), T("text"), T("uuid")))
    assert column_type("frozen<Address>") == T("frozen", (T("address"),))
    assert column_type("ks.address") == T("address", (), "ks")
    assert column_type('frozen<"Addr">') == T("frozen", (T("Addr"),))


def test_map_with_one_type_argument_is_a_syntax_error():
    with pytest.raises(SyntaxException, match=r"line 1:44 mismatched input '>' expecting ','"):
        parse("CREATE TABLE t (k int PRIMARY KEY, v map<int>)")


# ---------------------------------------------------------------- ALTER / DROP TABLE


def test_alter_table_add_single_static_and_parenthesised_columns():
    assert stmt("ALTER TABLE ks.t ADD v int static") == ast.AlterTableAdd(
        Q("ks", "t"), (ast.ColumnDef("v", T("int"), True),)
    )
    assert stmt("ALTER TABLE t ADD (a int, b list<text>)").columns == (
        ast.ColumnDef("a", T("int")),
        ast.ColumnDef("b", T("list", (T("text"),))),
    )
    assert stmt("ALTER TABLE t ADD IF NOT EXISTS a int").if_not_exists


def test_scylladb_per_row_ttl_column_marker_and_alter_table_ttl():
    created = stmt('CREATE TABLE t (p int, c int, e timestamp TTL, "S" int TTL STATIC, PRIMARY KEY (p, c))')
    assert created.columns[2] == ast.ColumnDef("e", T("timestamp"), False, True)
    assert created.columns[3] == ast.ColumnDef("S", T("int"), True, True)
    assert stmt("CREATE TABLE t (e timestamp TTL PRIMARY KEY)").partition_key == ("e",)
    assert stmt("ALTER TABLE ks.t TTL Expiration") == ast.AlterTableTtl(Q("ks", "t"), "expiration")
    assert stmt('ALTER TABLE t TTL "null"') == ast.AlterTableTtl(Q(None, "t"), "null")
    assert stmt("ALTER TABLE t TTL NULL") == ast.AlterTableTtl(Q(None, "t"), None)
    with pytest.raises(SyntaxException):
        stmt("ALTER TABLE t ADD e timestamp TTL")  # only CREATE TABLE marks a column (ScyllaDB's grammar)


def test_parse_cassandra_rule_makes_each_use_of_a_bind_name_a_variable():
    same = parse("SELECT * FROM t WHERE p = :x AND c = :x")
    assert len(same.bind_markers) == 1
    separate = parse("SELECT * FROM t WHERE p = :x AND c = :x", same_name_same_variable=False)
    assert [(m.index, m.name) for m in separate.bind_markers] == [(0, "x"), (1, "x")]


def test_alter_table_drop_columns():
    assert stmt("ALTER TABLE t DROP v") == ast.AlterTableDrop(Q(None, "t"), ("v",))
    assert stmt("ALTER TABLE t DROP (a, b)").columns == ("a", "b")
    assert stmt("ALTER TABLE t DROP IF EXISTS a").if_exists


def test_alter_table_rename_several_columns():
    assert stmt("ALTER TABLE t RENAME a TO b AND c TO d") == ast.AlterTableRename(
        Q(None, "t"), (("a", "b"), ("c", "d"))
    )


def test_alter_table_with_options():
    assert stmt("ALTER TABLE t WITH comment = 'c' AND cdc = {'enabled': 'false'}") == ast.AlterTableWith(
        Q(None, "t"), (("comment", "c"), ("cdc", {"enabled": "false"}))
    )


def test_alter_table_alter_column_type():
    assert stmt("ALTER TABLE t ALTER v TYPE blob") == ast.AlterTableAlterType(Q(None, "t"), "v", T("blob"))


def test_drop_table_and_truncate():
    assert stmt("DROP TABLE IF EXISTS ks.t") == ast.DropTable(Q("ks", "t"), True)
    assert stmt("TRUNCATE ks.t") == ast.Truncate(Q("ks", "t"))
    assert stmt("TRUNCATE TABLE t") == ast.Truncate(Q(None, "t"))
    assert stmt("TRUNCATE t USING TIMEOUT 5s") == ast.Truncate(Q(None, "t"), ast.Using(timeout=ast.Constant("duration", "5s")))


# ---------------------------------------------------------------- TYPES


def test_create_alter_and_drop_type():
    assert stmt("CREATE TYPE IF NOT EXISTS ks.addr (street text, zip int)") == ast.CreateType(
        Q("ks", "addr"), (("street", T("text")), ("zip", T("int"))), True
    )
    assert stmt("ALTER TYPE addr ADD country text") == ast.AlterTypeAdd(Q(None, "addr"), "country", T("text"))
    assert stmt("ALTER TYPE addr RENAME a TO b AND c TO d") == ast.AlterTypeRename(
        Q(None, "addr"), (("a", "b"), ("c", "d"))
    )
    assert stmt("DROP TYPE IF EXISTS addr") == ast.DropType(Q(None, "addr"), True)


def test_create_type_takes_a_trailing_comma_and_empty_items_as_scylladb():
    want = ast.CreateType(Q(None, "addr"), (("street", T("text")), ("zip", T("int"))), False)
    assert stmt("CREATE TYPE addr (street text, zip int,)") == want
    assert stmt("CREATE TYPE addr (street text,, zip int)") == want
    for bad in ("CREATE TYPE addr ()", "CREATE TYPE addr (, street text)"):
        with pytest.raises(SyntaxException):
            stmt(bad)


# ---------------------------------------------------------------- DESCRIBE


@pytest.mark.parametrize(
    "text,expected",
    [
        ("DESCRIBE KEYSPACES", ast.Describe("keyspaces")),
        ("DESC KEYSPACE", ast.Describe("keyspace")),
        ("DESCRIBE KEYSPACE Ks", ast.Describe("keyspace", Q(None, "ks"))),
        ("DESCRIBE TABLES", ast.Describe("tables")),
        ("DESCRIBE TABLE ks.t", ast.Describe("table", Q("ks", "t"))),
        ("DESC TABLE t", ast.Describe("table", Q(None, "t"))),
        ("DESCRIBE TYPES", ast.Describe("types")),
        ("DESCRIBE TYPE ks.addr", ast.Describe("type", Q("ks", "addr"))),
        ("DESCRIBE SCHEMA", ast.Describe("schema")),
        ("DESCRIBE FULL SCHEMA", ast.Describe("full schema")),
        ("DESCRIBE CLUSTER;", ast.Describe("cluster")),
        ("DESCRIBE something", ast.Describe("name", Q(None, "something"))),
        ("DESC ks.t", ast.Describe("name", Q("ks", "t"))),
    ],
)
def test_describe_forms(text, expected):
    assert stmt(text) == expected


# ---------------------------------------------------------------- auth


def test_create_role_with_options():
    assert stmt("CREATE ROLE IF NOT EXISTS alice WITH PASSWORD = 'p' AND LOGIN = true AND SUPERUSER = false") == (
        ast.CreateRole("alice", (("password", "p"), ("login", True), ("superuser", False)), True)
    )
    assert stmt("CREATE ROLE 'Bob'") == ast.CreateRole("Bob")


def test_create_user_is_a_login_role():
    assert stmt("CREATE USER u WITH PASSWORD 'p' SUPERUSER") == ast.CreateRole(
        "u", (("password", "p"), ("superuser", True), ("login", True))
    )
    assert stmt("CREATE USER IF NOT EXISTS u NOSUPERUSER").options == (("superuser", False), ("login", True))


def test_alter_and_drop_role():
    assert stmt("ALTER ROLE r WITH PASSWORD = 'x'") == ast.AlterRole("r", (("password", "x"),))
    assert stmt("DROP ROLE IF EXISTS \"R\"") == ast.DropRole("R", True)
    assert stmt("DROP USER u") == ast.DropRole("u")


def test_list_roles():
    assert stmt("LIST ROLES") == ast.ListRoles()
    assert stmt("LIST ROLES OF alice NORECURSIVE") == ast.ListRoles("alice", recursive=False)


@pytest.mark.parametrize(
    "perm", ["SELECT", "MODIFY", "CREATE", "ALTER", "DROP", "AUTHORIZE", "DESCRIBE"]
)
def test_grant_each_permission_on_keyspace(perm):
    assert stmt(f"GRANT {perm.lower()} ON KEYSPACE ks TO r") == ast.Grant(perm, ast.Resource("keyspace", "ks"), "r")


def test_grant_all_permissions_on_all_keyspaces_and_tables():
    assert stmt("GRANT ALL PERMISSIONS ON ALL KEYSPACES TO 'r'") == ast.Grant("ALL", ast.Resource("all keyspaces"), "r")
    assert stmt("GRANT ALL ON TABLE ks.t TO r").resource == ast.Resource("table", "ks", "t")
    assert stmt("GRANT SELECT ON ks.t TO r").resource == ast.Resource("table", "ks", "t")


def test_revoke():
    assert stmt("REVOKE MODIFY ON ks.t FROM r") == ast.Revoke("MODIFY", ast.Resource("table", "ks", "t"), "r")


def test_list_permissions():
    assert stmt("LIST ALL PERMISSIONS") == ast.ListPermissions("ALL")
    assert stmt("LIST ALL PERMISSIONS ON KEYSPACE ks OF r") == ast.ListPermissions(
        "ALL", ast.Resource("keyspace", "ks"), "r"
    )
    assert stmt("LIST SELECT ON ALL KEYSPACES") == ast.ListPermissions("SELECT", ast.Resource("all keyspaces"))


# ---------------------------------------------------------------- unsupported


@pytest.mark.parametrize("text, message", [
    ("CREATE TRIGGER x ON t USING 'c'", "CREATE TRIGGER is not supported by logtide"),
    ("DROP TRIGGER x ON t", "DROP TRIGGER is not supported by logtide"),
])
def test_unsupported_statements_are_refused_by_their_whole_name(text, message):
    with pytest.raises(InvalidRequest) as e:
        parse(text)
    assert str(e.value) == message


def test_drop_function_and_aggregate_parse_with_and_without_a_signature():
    assert stmt("DROP FUNCTION IF EXISTS ks.f (int, frozen<list<text>>)") == ast.DropFunction(
        ast.QualifiedName("ks", "f"), (ast.TypeExpr("int"), ast.TypeExpr("frozen", (ast.TypeExpr(
            "list", (ast.TypeExpr("text"),)),))), False, True)
    assert stmt("DROP AGGREGATE a") == ast.DropFunction(ast.QualifiedName(None, "a"), None, True, False)
    assert stmt("DROP FUNCTION f()") == ast.DropFunction(ast.QualifiedName(None, "f"), (), False, False)


def test_create_function_parses_as_scylladb_writes_it():
    s = stmt("CREATE FUNCTION ks.f (a int, b frozen<list<text>>) RETURNS NULL ON NULL INPUT RETURNS bigint "
             "LANGUAGE Lua AS $$return a$$")
    assert s == ast.CreateFunction(ast.QualifiedName("ks", "f"),
                                   (("a", ast.TypeExpr("int")),
                                    ("b", ast.TypeExpr("frozen", (ast.TypeExpr("list", (ast.TypeExpr("text"),)),)))),
                                   False, ast.TypeExpr("bigint"), "lua", "return a")
    s = stmt("CREATE OR REPLACE FUNCTION f () CALLED ON NULL INPUT RETURNS int LANGUAGE wasm AS '(module)'")
    assert (s.arguments, s.called_on_null_input, s.or_replace, s.if_not_exists) == ((), True, True, False)
    assert stmt("CREATE FUNCTION IF NOT EXISTS f () CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS ''").if_not_exists


def test_create_function_syntax_errors_name_what_is_missing():
    with pytest.raises(SyntaxException, match="no viable alternative at input 'IF'"):
        parse("CREATE OR REPLACE FUNCTION IF NOT EXISTS f () CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS ''")
    with pytest.raises(SyntaxException, match="mismatched input '1' expecting STRING_LITERAL"):
        parse("CREATE FUNCTION f () CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 1")
    with pytest.raises(SyntaxException, match="expecting K_ON"):
        parse("CREATE FUNCTION f () CALLED INPUT RETURNS int LANGUAGE lua AS ''")


def test_create_aggregate_parses_every_clause():
    s = stmt("CREATE OR REPLACE AGGREGATE IF NOT EXISTS ks.a (int, text) SFUNC acc STYPE map<int, int> "
             "REDUCEFUNC r FINALFUNC fin INITCOND {}")
    assert s == ast.CreateAggregate(ast.QualifiedName("ks", "a"), (ast.TypeExpr("int"), ast.TypeExpr("text")), "acc",
                                    ast.TypeExpr("map", (ast.TypeExpr("int"), ast.TypeExpr("int"))), "r", "fin",
                                    ast.MapLiteral(()), True, True)
    s = stmt("CREATE AGGREGATE a () SFUNC acc STYPE int")
    assert (s.argument_types, s.reduce_function, s.final_function, s.initial_condition) == ((), None, None, None)


def test_a_half_named_unsupported_statement_is_a_syntax_error():
    with pytest.raises(SyntaxException, match="no viable alternative at input 'foo'"):
        parse("CREATE MATERIALIZED foo")


def test_alter_changefeed_without_disable_or_set_says_what_it_expects():
    with pytest.raises(SyntaxException, match=r"expecting DISABLE or SET \(ALTER CHANGEFEED f DISABLE\)"):
        parse("ALTER TABLE t ALTER CHANGEFEED f")
    assert parse("ALTER TABLE t ALTER changefeed TYPE int").statement.column == "changefeed"
    assert parse("ALTER TABLE t ALTER CHANGEFEED type DISABLE").statement.name == "type"


def test_create_table_accepts_empty_column_definitions():
    """Cassandra's and ScyllaDB's grammar, ``( ',' cfamColumns? )*``, lets a definition list hold empty entries."""
    s = stmt("CREATE TABLE t (k int, , v text,, PRIMARY KEY (k),)")
    assert [c.name for c in s.columns] == ["k", "v"] and s.partition_key == ("k",)


def test_describe_options_parse():
    assert stmt("DESC ONLY KEYSPACE ks") == ast.Describe("keyspace", Q(None, "ks"), only=True)
    assert stmt("DESCRIBE TABLE ks.t WITH INTERNALS") == ast.Describe("table", Q("ks", "t"), internals=True)
    assert stmt("DESC SCHEMA WITH INTERNALS AND PASSWORDS") == ast.Describe("schema", internals=True, passwords=True)
    assert stmt("DESC KEYSPACE WITH INTERNALS") == ast.Describe("keyspace", internals=True)
    assert stmt("DESC FUNCTION ks.f") == ast.Describe("function", Q("ks", "f"))
    assert stmt("DESC MATERIALIZED VIEW ks.v") == ast.Describe("materialized view", Q("ks", "v"))


def test_grant_on_role_resources_parse():
    assert stmt("GRANT ALTER ON ALL ROLES TO r").resource == ast.Resource("all roles")
    assert stmt("GRANT DROP ON ROLE 'x' TO r").resource == ast.Resource("role", role="x")
    assert stmt("GRANT SELECT ON role TO r").resource == ast.Resource("table", None, "role")


def test_vector_type_parses_element_and_dimension():
    assert column_type("vector<float, 3>") == T("vector", (T("float"),), dimension=3)
    assert column_type("VECTOR<frozen<set<int>>, 2>") == T("vector", (T("frozen", (T("set", (T("int"),)),)),),
                                                          dimension=2)
    assert column_type("vector<float, -18>").dimension == -18  # its range is checked when the type is resolved
    assert column_type("vector").name == "vector"  # without '<' it is a user type's name


@pytest.mark.parametrize("dimension", ["dog", "1.5", "", "3, 4"])
def test_vector_dimension_must_be_an_integer(dimension):
    with pytest.raises(SyntaxException):
        column_type(f"vector<float, {dimension}>")
