"""CREATE INDEX and DROP INDEX parse as ScyllaDB's grammar writes them (createIndexStatement, indexIdent,
dropIndexStatement): every target form, names with and without a keyspace, USING and WITH."""

from __future__ import annotations

import pytest

from logtide.cql import ast, parse
from logtide.errors import SyntaxException

T = ast.QualifiedName


def stmt(text: str):
    return parse(text).statement


def test_an_unnamed_index_on_a_column_has_no_name_and_one_regular_target():
    assert stmt("CREATE INDEX ON ks.t (v)") == ast.CreateIndex(T("ks", "t"), None,
                                                               (ast.IndexTarget("regular_values", "v"),))


@pytest.mark.parametrize("target, kind", [("keys(m)", "keys"), ("VALUES(m)", "values"), ("entries(m)", "entries"),
                                          ("full(m)", "full"), ("m", "regular_values"), ('"M"', "regular_values")])
def test_each_target_function_names_its_kind(target, kind):
    [t] = stmt(f"CREATE INDEX i ON t ({target})").targets
    assert t.kind == kind and t.column in ("m", "M")


def test_a_local_index_names_the_partition_key_in_parentheses_first():
    s = stmt("CREATE INDEX IF NOT EXISTS loc ON t ((p1, p2), v)")
    assert s.if_not_exists and s.name == "loc"
    assert s.targets == (ast.IndexTarget("columns", columns=("p1", "p2")), ast.IndexTarget("regular_values", "v"))


def test_an_index_name_may_carry_its_keyspace():
    s = stmt("CREATE INDEX ks.i ON ks.t (v)")
    assert (s.name_keyspace, s.name) == ("ks", "i")


def test_custom_class_and_properties_are_kept_for_the_checks():
    s = stmt("CREATE CUSTOM INDEX ON t (v) USING 'sai' WITH OPTIONS = {'similarity_function': 'dot_product'}")
    assert s.custom and s.custom_class == "sai"
    assert s.options == (("options", {"similarity_function": "dot_product"}),)


def test_drop_index_takes_an_optional_keyspace_and_if_exists():
    assert stmt("DROP INDEX IF EXISTS ks.i") == ast.DropIndex(T("ks", "i"), True)
    assert stmt("DROP INDEX i") == ast.DropIndex(T(None, "i"), False)


@pytest.mark.parametrize("text", ["CREATE INDEX ON t v", "CREATE INDEX i t (v)", "CREATE INDEX ON t (v) USING x",
                                  "DROP INDEX"])
def test_malformed_index_statements_are_syntax_errors(text):
    with pytest.raises(SyntaxException):
        parse(text)
