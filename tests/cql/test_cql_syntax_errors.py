"""Syntax errors: Cassandra-like messages with line, column and offending token."""

import pytest

from logtide.cql import parse
from logtide.errors import SyntaxException


def error(text):
    with pytest.raises(SyntaxException) as info:
        parse(text)
    return str(info.value)


def test_misspelt_keyword_reports_mismatched_input_and_expected_keyword():
    assert error("SELECT * FORM t").startswith("line 1:9 mismatched input 'FORM' expecting K_FROM (SELECT * [FORM]")


def test_missing_set_reports_expecting_k_set_with_context():
    assert error("UPDATE ks.t WHERE a = 1") == (
        "line 1:12 mismatched input 'WHERE' expecting K_SET (UPDATE ks.t [WHERE]...)"
    )


def test_unknown_statement_is_no_viable_alternative():
    assert error("SELEC * FROM t") == "line 1:0 no viable alternative at input 'SELEC'"


def test_error_position_on_multi_line_input():
    assert error("SELECT *\n  FROM t\n  WHERE a = = 1") == "line 3:12 no viable alternative at input '='"


def test_error_position_after_comments_on_earlier_lines():
    msg = error("-- comment line\n/* block\n comment */ INSERT INTO t (a) VALUES (1) USING TTL 5 AMD TIMESTAMP 3")
    assert msg.startswith("line 3:53 mismatched input 'AMD' expecting EOF")


def test_unterminated_string_reports_eof_position():
    assert error("SELECT * FROM t WHERE a = 'abc") == "line 1:30 mismatched character '<EOF>' expecting '''"


def test_unterminated_string_on_second_line():
    assert error("SELECT * FROM t\nWHERE a = 'ab\ncd") == "line 3:2 mismatched character '<EOF>' expecting '''"


def test_unterminated_quoted_identifier_and_dollar_string_and_comment():
    assert "expecting '\"'" in error('SELECT "abc FROM t')
    assert "expecting '$'" in error("SELECT * FROM t WHERE a = $$abc")
    assert "line 1:31 mismatched character '<EOF>'" in error("SELECT * FROM t /* unterminated")


def test_empty_statement_is_reported_clearly():
    assert error("") == "line 1:0 no viable alternative at input '<EOF>' (the statement is empty)"
    assert error("  -- only a comment\n  ") == (
        "line 2:2 no viable alternative at input '<EOF>' (the statement is empty)"
    )
    assert "statement is empty" in error(";")


def test_unexpected_end_of_input_names_eof():
    assert error("SELECT * FROM t WHERE").startswith("line 1:21 mismatched input '<EOF>' expecting IDENT")


def test_trailing_garbage_expects_eof():
    assert error("SELECT * FROM t LIMIT 1 extra").startswith("line 1:24 mismatched input 'extra' expecting EOF")


def test_missing_closing_parenthesis():
    assert error("INSERT INTO t (a, b VALUES (1, 2)").startswith(
        "line 1:20 mismatched input 'VALUES' expecting ')'"
    )


def test_bad_character_reports_token_recognition_error():
    assert error("SELECT * FROM t WHERE a = #") == "line 1:26 token recognition error at: '#'"


def test_malformed_number_reports_whole_word():
    assert error("SELECT * FROM t WHERE a = 12abc") == "line 1:26 token recognition error at: '12abc'"


def test_reserved_keyword_as_table_name_needs_quoting():
    assert error("SELECT * FROM table") == "line 1:14 no viable alternative at input 'table'"


def test_lone_minus_is_not_a_term():
    assert error("SELECT * FROM t WHERE a = - 1") == "line 1:26 no viable alternative at input '-'"


def test_batch_without_apply_reports_eof():
    assert error("BEGIN BATCH INSERT INTO t (a) VALUES (1);").startswith(
        "line 1:41 mismatched input '<EOF>' expecting K_APPLY"
    )


def test_every_syntax_error_names_line_and_column():
    bad = [
        "SELECT", "SELECT * FROM", "INSERT INTO t", "UPDATE t SET", "DELETE FROM t WHERE",
        "CREATE TABLE t (", "CREATE KEYSPACE ks WITH", "ALTER TABLE t", "DROP", "GRANT ON ks TO r",
        "SELECT * FROM t WHERE (a, b) IN", "SELECT * FROM t WHERE token(a) >", "BEGIN BATCH APPLY",
        "SELECT * FROM t WHERE a IN (1,", "SELECT a AS FROM t", "CREATE TABLE t (k map<int, PRIMARY KEY)",
    ]
    for text in bad:
        assert error(text).startswith("line 1:"), text


def test_a_duration_with_a_negative_part_is_two_terms():
    assert "mismatched input '-2mo' expecting ')'" in error("INSERT INTO t (p, d) VALUES (3, 1y-2mo)")


@pytest.mark.parametrize("literal", ["P1y2D", "p1Y2D", "P0001-03-00t02:10:00"])
def test_iso_8601_durations_are_case_sensitive(literal):
    with pytest.raises(SyntaxException):
        parse(f"INSERT INTO t (p, d) VALUES (3, {literal})")


@pytest.mark.parametrize("condition", ["l[0] CONTAINS 1", "l[?] CONTAINS KEY ?", "u.a CONTAINS 1"])
def test_contains_after_an_element_or_a_field_in_a_condition_is_a_syntax_error(condition):
    # ScyllaDB's columnCondition takes CONTAINS [KEY] only after a whole column
    assert "mismatched input 'CONTAINS' expecting '='" in error(f"DELETE FROM t WHERE k = 0 IF {condition}")
    parse("DELETE FROM t WHERE k = 0 IF l CONTAINS 1")


@pytest.mark.parametrize("text, expecting", [
    ("TRUNCATE t USING TTL 1", "mismatched input 'TTL' expecting K_TIMEOUT"),
    ("TRUNCATE t USING TIMEOUT 1h AND TTL 42", "mismatched input 'AND' expecting EOF"),
    ("DELETE FROM t USING TTL 1 WHERE k = 0", "mismatched input 'TTL' expecting K_TIMESTAMP"),
    ("DELETE FROM t USING TIMEOUT 60s AND TTL 42 WHERE k = 0", "mismatched input 'AND' expecting K_WHERE"),
])
def test_truncate_takes_only_a_timeout_and_delete_no_ttl(text, expecting):
    assert expecting in error(text)
