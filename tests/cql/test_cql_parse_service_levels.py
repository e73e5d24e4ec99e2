"""Parsing ScyllaDB's service level statements (``SERVICE LEVEL`` or ``SERVICE_LEVEL``), ``CREATE ROLE ... WITH
HASHED PASSWORD`` and role grants between quoted role names."""

import pytest

from logtide.cql import ast, parse
from logtide.cql import service_level_ast as sl
from logtide.errors import SyntaxException


def stmt(text):
    return parse(text).statement


@pytest.mark.parametrize("text, expected", [
    ("CREATE SERVICE LEVEL Gold", sl.CreateServiceLevel("gold")),
    ("CREATE SERVICE_LEVEL IF NOT EXISTS \"Gold\" WITH timeout = 10ms AND workload_type = 'batch' AND shares = 5",
     sl.CreateServiceLevel("Gold", (("timeout", "10ms"), ("workload_type", "batch"), ("shares", 5)), True)),
    ("CREATE SERVICE LEVEL 'a b'", sl.CreateServiceLevel("a b")),
    ("ALTER SERVICE LEVEL driver WITH SHARES=123", sl.AlterServiceLevel("driver", (("shares", 123),))),
    ("ALTER SERVICE LEVEL x WITH timeout = null", sl.AlterServiceLevel("x", (("timeout", "null"),))),
    ("DROP SERVICE LEVEL IF EXISTS x", sl.DropServiceLevel("x", True)),
    ("DROP SERVICE_LEVEL default", sl.DropServiceLevel("default")),
    ("ATTACH SERVICE LEVEL gold TO \"Mike\"", sl.AttachServiceLevel("gold", "Mike")),
    ("DETACH SERVICE LEVEL FROM mike", sl.DetachServiceLevel("mike")),
    ("LIST SERVICE LEVEL driver", sl.ListServiceLevels("driver")),
    ("LIST ALL SERVICE LEVELS", sl.ListServiceLevels()),
    ("LIST ALL SERVICE_LEVELS", sl.ListServiceLevels()),
    ("LIST ATTACHED SERVICE LEVEL OF mike", sl.ListAttachedServiceLevels("mike")),
    ("LIST ALL ATTACHED SERVICE LEVELS", sl.ListAttachedServiceLevels()),
    ("LIST EFFECTIVE SERVICE LEVEL OF mike", sl.ListEffectiveServiceLevel("mike")),
])
def test_service_level_statements_parse_as_scylladb_writes_them(text, expected):
    assert stmt(text) == expected


def test_listings_of_roles_and_permissions_still_parse_after_list():
    assert stmt("LIST ALL PERMISSIONS OF r") == ast.ListPermissions("ALL", None, "r", True)
    assert stmt("LIST ALL") == ast.ListPermissions("ALL", None, None, True)
    assert stmt("LIST ROLES") == ast.ListRoles()


def test_a_service_level_name_cannot_be_a_bind_marker():
    with pytest.raises(SyntaxException, match="Bind variables cannot be used for service levels or role names"):
        parse("ATTACH SERVICE LEVEL ? TO r")


def test_alter_service_level_needs_options():
    with pytest.raises(SyntaxException, match="mismatched input '<EOF>' expecting K_WITH"):
        parse("ALTER SERVICE LEVEL x")


def test_create_role_with_hashed_password_is_one_option():
    assert stmt("CREATE ROLE r WITH HASHED PASSWORD = '$2a$10$x' AND LOGIN = true") == ast.CreateRole(
        "r", (("hashed password", "$2a$10$x"), ("login", True)))
    with pytest.raises(SyntaxException, match="expecting STRING_LITERAL"):
        parse("CREATE ROLE r WITH HASHED PASSWORD = 5")


def test_role_grants_between_quoted_names():
    assert stmt('GRANT "myRole" TO "Other"') == ast.GrantRole("myRole", "Other")
    assert stmt('REVOKE "ユーザー" FROM "私の猫"') == ast.RevokeRole("ユーザー", "私の猫")
