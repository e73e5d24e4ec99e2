"""CREATE FUNCTION and CREATE AGGREGATE are checked as ScyllaDB checks them (argument types, the language,
the return type, in that order), then refused: logtide runs no user-defined code (docs/compatibility.md,
"Queries"). Nothing is created either way."""

from __future__ import annotations

import pytest

from logtide.errors import InvalidRequest

OTHER_KS = "CREATE KEYSPACE other WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"


@pytest.fixture
def two_keyspaces(session):
    session.execute(OTHER_KS)
    session.execute("CREATE TYPE ks.point (x int, y int)")
    return session


def refused(session, query: str) -> str:
    with pytest.raises(InvalidRequest) as e:
        session.execute(query)
    return str(e.value)


@pytest.mark.parametrize("language", ["java", "javascript", "python"])
def test_a_language_scylladb_does_not_know_is_named(session, language):
    assert refused(session, f"CREATE FUNCTION f (i int) CALLED ON NULL INPUT RETURNS int LANGUAGE {language} "
                            "AS 'return 42;'") == f"Language '{language}' is not supported"


def test_lua_and_wasm_functions_are_refused_by_the_statement_name(two_keyspaces):
    session = two_keyspaces
    assert refused(session, "CREATE FUNCTION f (i int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua "
                            "AS 'return i'") == "CREATE FUNCTION is not supported by logtide"
    assert refused(session, "CREATE OR REPLACE FUNCTION ks.f (p point) CALLED ON NULL INPUT RETURNS point "
                            "LANGUAGE wasm AS '(module)'") == "CREATE OR REPLACE FUNCTION is not supported by logtide"


def test_a_function_may_not_use_a_user_type_of_another_keyspace(two_keyspaces):
    message = ("Statement on keyspace other cannot refer to a user type in keyspace ks; "
               "user types can only be used in the keyspace they are defined in")
    assert refused(two_keyspaces, "CREATE FUNCTION other.f (p ks.point) CALLED ON NULL INPUT RETURNS text "
                                  "LANGUAGE lua AS 'return 1'") == message
    assert refused(two_keyspaces, "CREATE FUNCTION other.f (t text) CALLED ON NULL INPUT RETURNS ks.point "
                                  "LANGUAGE lua AS 'return nil'") == message
    # the argument types are checked before the language
    assert refused(two_keyspaces, "CREATE FUNCTION other.f (p ks.point) CALLED ON NULL INPUT RETURNS text "
                                  "LANGUAGE java AS 'return 1;'") == message


def test_function_types_are_checked_before_the_refusal(session):
    assert refused(session, "CREATE FUNCTION f (p frozen<nope>) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                            "AS 'return 1'") == "Unknown type ks.nope"
    session.execute("CREATE TYPE point (x int, y int)")
    assert refused(session, "CREATE FUNCTION f (p frozen<point>) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                            "AS 'return 1'") == "User defined argument and return types should not be frozen"
    assert refused(session, "CREATE FUNCTION f (i int) CALLED ON NULL INPUT RETURNS frozen<point> LANGUAGE lua "
                            "AS 'return 1'") == "User defined argument and return types should not be frozen"
    assert refused(session, "CREATE FUNCTION nowhere.f (i int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                            "AS 'return 1'") == "Keyspace 'nowhere' doesn't exist"


def test_an_aggregate_checks_its_types_then_is_refused(two_keyspaces):
    assert refused(two_keyspaces, "CREATE AGGREGATE other.total (ks.point) SFUNC plus STYPE int INITCOND 10") == (
        "Statement on keyspace other cannot refer to a user type in keyspace ks; "
        "user types can only be used in the keyspace they are defined in")
    assert refused(two_keyspaces, "CREATE AGGREGATE total (int) SFUNC plus STYPE nope") == "Unknown type ks.nope"
    assert refused(two_keyspaces, "CREATE AGGREGATE total (int) SFUNC plus STYPE int FINALFUNC f INITCOND 0") == (
        "CREATE AGGREGATE is not supported by logtide")
    assert refused(two_keyspaces, "CREATE OR REPLACE AGGREGATE total (point) SFUNC plus STYPE int") == (
        "CREATE OR REPLACE AGGREGATE is not supported by logtide")


def test_refused_functions_change_no_schema(two_keyspaces):
    before = two_keyspaces.execute("SELECT keyspace_name, type_name FROM system_schema.types").all()
    refused(two_keyspaces, "CREATE FUNCTION f (i int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'return i'")
    assert two_keyspaces.execute("SELECT keyspace_name, type_name FROM system_schema.types").all() == before
    assert two_keyspaces.execute("SELECT * FROM system_schema.functions").all() == []
