"""Parsing SELECT / INSERT / UPDATE / DELETE / BATCH and terms."""

import pytest

from logtide.cql import ast, parse, parse_many
from logtide.errors import InvalidRequest, SyntaxException

C = ast.Constant
Q = ast.QualifiedName


def stmt(text):
    return parse(text).statement


def where_of(text):
    return stmt("SELECT * FROM t WHERE " + text).where


def term(text):
    """The value of ``INSERT INTO t (a) VALUES (<text>)``."""
    return stmt(f"INSERT INTO t (a) VALUES ({text})").values[0]


# ---------------------------------------------------------------- terms


@pytest.mark.parametrize(
    "text,expected",
    [
        ("'abc'", C("string", "abc")),
        ("'it''s'", C("string", "it's")),
        ("$$it's$$", C("string", "it's")),
        ("42", C("integer", "42")),
        ("-42", C("integer", "-42")),
        ("1.5", C("float", "1.5")),
        ("-2e10", C("float", "-2e10")),
        ("NaN", C("float", "NaN")),
        ("Infinity", C("float", "Infinity")),
        ("-Infinity", C("float", "-Infinity")),
        ("true", C("boolean", "true")),
        ("FALSE", C("boolean", "false")),
        ("null", C("null", "null")),
        ("123e4567-e89b-12d3-a456-426614174000", C("uuid", "123e4567-e89b-12d3-a456-426614174000")),
        ("0xcafe", C("hex", "0xcafe")),
        ("1h30m", C("duration", "1h30m")),
        ("12mo3d", C("duration", "12mo3d")),
        ("P1DT2H", C("duration", "P1DT2H")),
        ("-1d", C("duration", "-1d")),
    ],
)
def test_constants_parse_to_untyped_constant_kinds(text, expected):
    assert term(text) == expected


def test_list_set_and_map_literals():
    assert term("[1, 2]") == ast.ListLiteral((C("integer", "1"), C("integer", "2")))
    assert term("[]") == ast.ListLiteral(())
    assert term("{1, 2}") == ast.SetLiteral((C("integer", "1"), C("integer", "2")))
    assert term("{'a': 1, 'b': 2}") == ast.MapLiteral(
        ((C("string", "a"), C("integer", "1")), (C("string", "b"), C("integer", "2")))
    )


def test_empty_braces_are_an_empty_map_literal():
    assert term("{}") == ast.MapLiteral(())


def test_braces_with_identifier_keys_are_a_udt_literal():
    assert term('{Street: \'x\', "Zip": 1}') == ast.UdtLiteral(
        (("street", C("string", "x")), ("Zip", C("integer", "1")))
    )


def test_map_with_boolean_keys_is_not_a_udt_literal():
    assert term("{true: 1}") == ast.MapLiteral(((C("boolean", "true"), C("integer", "1")),))


def test_tuple_literal_and_nested_collections():
    assert term("(1, 'a', [2])") == ast.TupleLiteral(
        (C("integer", "1"), C("string", "a"), ast.ListLiteral((C("integer", "2"),)))
    )


def test_type_hint_before_bind_marker_and_constant():
    assert term("(int) ?") == ast.TypeHint(ast.TypeExpr("int"), ast.BindMarker(0))
    assert term("(frozen<list<text>>) ['a']") == ast.TypeHint(
        ast.TypeExpr("frozen", (ast.TypeExpr("list", (ast.TypeExpr("text"),)),)),
        ast.ListLiteral((C("string", "a"),)),
    )


def test_function_calls_as_terms():
    assert term("now()") == ast.FunctionCall("now")
    assert term("toTimestamp(now())") == ast.FunctionCall("totimestamp", (ast.FunctionCall("now"),))
    assert term("blobAsInt(0x00000001)") == ast.FunctionCall("blobasint", (C("hex", "0x00000001"),))
    assert term("system.now()") == ast.FunctionCall("now", (), "system")


def test_cast_as_term_holds_value_and_type():
    assert term("CAST(1 AS text)") == ast.FunctionCall("cast", (C("integer", "1"), ast.TypeExpr("text")))


def test_bind_markers_are_numbered_in_order_including_named_ones():
    parsed = parse("UPDATE t SET a = ?, b = :bee WHERE k = ? AND c IN :cs")
    assert parsed.bind_markers == (
        ast.BindMarker(0),
        ast.BindMarker(1, "bee"),
        ast.BindMarker(2),
        ast.BindMarker(3, "cs"),
    )
    assert parsed.statement.assignments[1] == ast.SetColumn("b", ast.BindMarker(1, "bee"))


def test_named_marker_with_quoted_name_keeps_case():
    assert parse('SELECT * FROM t WHERE k = :"Key"').bind_markers == (ast.BindMarker(0, "Key"),)


def test_bare_identifier_is_not_a_term():
    with pytest.raises(SyntaxException, match=r"line 1:26 no viable alternative at input 'b'"):
        parse("INSERT INTO t (a) VALUES (b)")


# ---------------------------------------------------------------- SELECT


def test_select_star_has_no_selectors():
    s = stmt("SELECT * FROM ks.t")
    assert s == ast.Select(Q("ks", "t"), None)


def test_select_keywords_are_case_insensitive_and_names_case_folded():
    s = stmt('select A, "B" from KS.Tab')
    assert s.table == Q("ks", "tab")
    assert [sel.expr for sel in s.selectors] == [ast.ColumnRef("a"), ast.ColumnRef("B")]


def test_selector_alias_and_source_text():
    [sel] = stmt("SELECT writetime(v)  AS wt FROM t").selectors
    assert sel == ast.Selector(ast.FunctionCall("writetime", (ast.ColumnRef("v"),)), "wt", "writetime(v)")


def test_selector_text_keeps_the_source_spelling():
    sels = stmt('SELECT "cdc$time", ttl( v ), Token(a, b), COUNT(1) FROM t').selectors
    assert [s.text for s in sels] == ['"cdc$time"', "ttl( v )", "Token(a, b)", "COUNT(1)"]
    assert sels[0].expr == ast.ColumnRef("cdc$time")
    assert sels[2].expr == ast.FunctionCall("token", (ast.ColumnRef("a"), ast.ColumnRef("b")))
    assert sels[3].expr == ast.FunctionCall("count", (C("integer", "1"),))


def test_count_star_selector_has_star_argument():
    [sel] = stmt("SELECT count(*) FROM t").selectors
    assert sel.expr == ast.FunctionCall("count", (ast.Star(),))


def test_cast_selector():
    [sel] = stmt("SELECT CAST(v AS text) FROM t").selectors
    assert sel.expr == ast.FunctionCall("cast", (ast.ColumnRef("v"), ast.TypeExpr("text")))


def test_nested_function_call_selectors():
    [sel] = stmt("SELECT toJson(toTimestamp(ts)), ks.fn(a) FROM t").selectors[:1]
    assert sel.expr == ast.FunctionCall(
        "tojson", (ast.FunctionCall("totimestamp", (ast.ColumnRef("ts"),)),)
    )
    assert stmt("SELECT ks.fn(a) FROM t").selectors[0].expr == ast.FunctionCall("fn", (ast.ColumnRef("a"),), "ks")


def test_field_and_element_selectors():
    sels = stmt("SELECT u.field, m['key'], u.a.b FROM t").selectors
    assert sels[0].expr == ast.FieldSelection(ast.ColumnRef("u"), "field")
    assert sels[1].expr == ast.ElementSelection(ast.ColumnRef("m"), C("string", "key"))
    assert sels[2].expr == ast.FieldSelection(ast.FieldSelection(ast.ColumnRef("u"), "a"), "b")


def test_constant_selectors():
    sels = stmt("SELECT 1, 'x', null FROM t").selectors
    assert [s.expr for s in sels] == [C("integer", "1"), C("string", "x"), C("null", "null")]


def test_select_json_and_distinct_flags():
    s = stmt("SELECT JSON DISTINCT k FROM t")
    assert s.json and s.distinct
    assert s.selectors[0].expr == ast.ColumnRef("k")


def test_columns_named_json_and_distinct_are_selected_not_flags():
    s = stmt("SELECT json, distinct FROM t")
    assert not s.json and not s.distinct
    assert [x.expr for x in s.selectors] == [ast.ColumnRef("json"), ast.ColumnRef("distinct")]


def test_select_all_clauses():
    s = stmt(
        "SELECT a FROM t WHERE k = 1 GROUP BY k, c ORDER BY c DESC, d ASC PER PARTITION LIMIT 2 LIMIT ? ALLOW FILTERING"
    )
    assert s.group_by == ("k", "c")
    assert s.order_by == (ast.OrderBy("c", True), ast.OrderBy("d", False))
    assert s.per_partition_limit == C("integer", "2")
    assert s.limit == ast.BindMarker(0)
    assert s.allow_filtering


# ---------------------------------------------------------------- WHERE


def test_where_simple_comparisons():
    ops = ["=", "!=", "<", "<=", ">", ">="]
    rels = where_of(" AND ".join(f"c {op} 1" for op in ops))
    assert [r.op for r in rels] == ops
    assert rels[0] == ast.Relation(ast.ColumnRef("c"), "=", C("integer", "1"))


def test_where_in_list_and_in_bind_marker():
    a, b, c = where_of("a IN (1, 2) AND b IN ? AND c IN ()")
    assert a == ast.Relation(ast.ColumnRef("a"), "IN", ast.InValues((C("integer", "1"), C("integer", "2"))))
    assert b == ast.Relation(ast.ColumnRef("b"), "IN", ast.BindMarker(0))
    assert c.rhs == ast.InValues(())


def test_where_multi_column_relations():
    eq, gt, inn = where_of("(c1, c2) = (1, 2) AND (c1, c2) > (?, ?) AND (c1, c2) IN ((1, 2), (3, 4))")
    pair = ast.TupleLiteral((C("integer", "1"), C("integer", "2")))
    assert eq == ast.Relation(ast.ColumnTuple(("c1", "c2")), "=", pair)
    assert gt.op == ">" and gt.rhs == ast.TupleLiteral((ast.BindMarker(0), ast.BindMarker(1)))
    assert inn.rhs == ast.InValues((pair, ast.TupleLiteral((C("integer", "3"), C("integer", "4")))))


def test_where_token_relations():
    a, b = where_of("token(a, b) > token(1, 2) AND token(a) <= -100")
    assert a == ast.Relation(
        ast.TokenOf(("a", "b")), ">", ast.FunctionCall("token", (C("integer", "1"), C("integer", "2")))
    )
    assert b == ast.Relation(ast.TokenOf(("a",)), "<=", C("integer", "-100"))


def test_where_contains_contains_key_like_and_is_not_null():
    a, b, c, d = where_of("s CONTAINS 1 AND m CONTAINS KEY 'k' AND t LIKE 'x%' AND v IS NOT NULL")
    assert a.op == "CONTAINS" and b.op == "CONTAINS KEY" and c.op == "LIKE"
    assert d == ast.Relation(ast.ColumnRef("v"), "IS NOT", C("null", "null"))


def test_where_quoted_column_names():
    [rel] = where_of('"cdc$stream_id" = 0x01')
    assert rel.lhs == ast.ColumnRef("cdc$stream_id")


def test_non_reserved_keywords_are_usable_as_column_names():
    [rel] = where_of("key = 1")
    assert rel.lhs == ast.ColumnRef("key")
    s = stmt("SELECT type, ttl, writetime, timestamp, list FROM t")
    assert [x.expr.name for x in s.selectors] == ["type", "ttl", "writetime", "timestamp", "list"]


def test_reserved_keyword_as_column_name_needs_quotes():
    with pytest.raises(SyntaxException, match="'from'"):
        parse("SELECT from FROM t")
    assert stmt('SELECT "from" FROM t').selectors[0].expr == ast.ColumnRef("from")


# ---------------------------------------------------------------- INSERT


def test_insert_values_with_if_not_exists_and_using():
    s = stmt("INSERT INTO ks.t (k, v) VALUES (1, 'a') IF NOT EXISTS USING TTL 10 AND TIMESTAMP 123")
    assert s == ast.Insert(
        Q("ks", "t"),
        ("k", "v"),
        (C("integer", "1"), C("string", "a")),
        if_not_exists=True,
        using=ast.Using(timestamp=C("integer", "123"), ttl=C("integer", "10")),
    )


def test_insert_json_with_default_unset_and_default_null():
    s = stmt("INSERT INTO t JSON '{\"k\": 1}' DEFAULT UNSET")
    assert s.json == C("string", '{"k": 1}') and s.json_default_unset
    s = stmt("INSERT INTO t JSON ? DEFAULT NULL USING TTL ?")
    assert s.json == ast.BindMarker(0) and not s.json_default_unset
    assert s.using.ttl == ast.BindMarker(1)


def test_insert_column_value_count_mismatch_is_invalid_request():
    with pytest.raises(InvalidRequest, match="Unmatched column names/values"):
        parse("INSERT INTO t (a, b) VALUES (1)")


def test_using_timeout_is_kept():
    assert stmt("INSERT INTO t (a) VALUES (1) USING TIMEOUT 5s").using.timeout == C("duration", "5s")


# ---------------------------------------------------------------- UPDATE


def assignments(text):
    return stmt(f"UPDATE t SET {text} WHERE k = 1").assignments


def test_update_with_plain_assignment():
    assert assignments("v = 'x'") == (ast.SetColumn("v", C("string", "x")),)


def test_update_with_map_append_parses_as_add_to():
    assert assignments("m = m + {'a': 1}") == (
        ast.AddTo("m", ast.MapLiteral(((C("string", "a"), C("integer", "1")),))),
    )


def test_update_with_list_prepend_parses_as_prepend_to():
    assert assignments("l = [1] + l") == (ast.PrependTo("l", ast.ListLiteral((C("integer", "1"),))),)


def test_update_with_set_removal_parses_as_subtract_from():
    assert assignments("s = s - {1}") == (ast.SubtractFrom("s", ast.SetLiteral((C("integer", "1"),))),)


def test_counter_increment_and_decrement():
    assert assignments("c = c + 5, d = d - 2, e = e -1") == (
        ast.AddTo("c", C("integer", "5")),
        ast.SubtractFrom("d", C("integer", "2")),
        ast.SubtractFrom("e", C("integer", "1")),
    )


def test_shorthand_plus_equals_and_minus_equals():
    assert assignments("c += 1, d -= 2") == (
        ast.AddTo("c", C("integer", "1")),
        ast.SubtractFrom("d", C("integer", "2")),
    )


def test_update_element_and_field_assignments():
    assert assignments("m['k'] = 1, l[0] = 'x', u.street = ?") == (
        ast.SetElement("m", C("string", "k"), C("integer", "1")),
        ast.SetElement("l", C("integer", "0"), C("string", "x")),
        ast.SetField("u", "street", ast.BindMarker(0)),
    )


def test_update_list_element_by_scylla_timeuuid_index():
    [a] = assignments("l[SCYLLA_TIMEUUID_LIST_INDEX(123e4567-e89b-12d3-a456-426614174000)] = 'x'")
    assert a == ast.SetElement(
        "l", ast.TimeuuidListIndex(C("uuid", "123e4567-e89b-12d3-a456-426614174000")), C("string", "x")
    )


def test_assignment_from_function_call_is_a_plain_set():
    assert assignments("ts = now()") == (ast.SetColumn("ts", ast.FunctionCall("now")),)


def test_adding_another_column_is_a_syntax_error():
    with pytest.raises(SyntaxException, match=r"line 1:17 .*X = X"):
        parse("UPDATE t SET a = b + 1 WHERE k = 1")


def test_update_with_using_where_and_if_exists():
    s = stmt("UPDATE ks.t USING TIMESTAMP 5 AND TTL 7 SET v = 1 WHERE k = 1 AND c = 2 IF EXISTS")
    assert s.using == ast.Using(timestamp=C("integer", "5"), ttl=C("integer", "7"))
    assert len(s.where) == 2 and s.if_exists and s.conditions == ()


def test_update_if_conditions():
    s = stmt("UPDATE t SET v = 1 WHERE k = 1 IF v = 2 AND w > 3 AND x != 4 AND y IN (1, 2) AND m['a'] = 1 AND u.f = 'z' AND n = null")
    assert s.conditions == (
        ast.Condition(ast.ColumnRef("v"), "=", C("integer", "2")),
        ast.Condition(ast.ColumnRef("w"), ">", C("integer", "3")),
        ast.Condition(ast.ColumnRef("x"), "!=", C("integer", "4")),
        ast.Condition(ast.ColumnRef("y"), "IN", ast.InValues((C("integer", "1"), C("integer", "2")))),
        ast.Condition(ast.ElementRef("m", C("string", "a")), "=", C("integer", "1")),
        ast.Condition(ast.FieldRef("u", "f"), "=", C("string", "z")),
        ast.Condition(ast.ColumnRef("n"), "=", C("null", "null")),
    )
    assert not s.if_exists


# ---------------------------------------------------------------- DELETE


def test_delete_whole_row():
    s = stmt("DELETE FROM ks.t WHERE k = 1")
    assert s == ast.Delete(Q("ks", "t"), (), (ast.Relation(ast.ColumnRef("k"), "=", C("integer", "1")),))


def test_delete_columns_elements_and_fields_with_timestamp_and_condition():
    s = stmt("DELETE a, m['k'], u.f FROM t USING TIMESTAMP 99 WHERE k = 1 IF a = 2")
    assert s.targets == (
        ast.ColumnRef("a"),
        ast.ElementRef("m", C("string", "k")),
        ast.FieldRef("u", "f"),
    )
    assert s.using.timestamp == C("integer", "99")
    assert s.conditions == (ast.Condition(ast.ColumnRef("a"), "=", C("integer", "2")),)


def test_delete_if_exists():
    assert stmt("DELETE FROM t WHERE k = 1 IF EXISTS").if_exists


# ---------------------------------------------------------------- BATCH


def test_logged_batch_with_semicolons_inside():
    parsed = parse(
        "BEGIN BATCH USING TIMESTAMP 10\n"
        "  INSERT INTO t (k) VALUES (?);\n"
        "  UPDATE t SET v = ? WHERE k = 1;\n"
        "  DELETE FROM t WHERE k = ?\n"
        "APPLY BATCH;"
    )
    b = parsed.statement
    assert b.kind == "LOGGED"
    assert [type(s) for s in b.statements] == [ast.Insert, ast.Update, ast.Delete]
    assert b.using.timestamp == C("integer", "10")
    assert [m.index for m in parsed.bind_markers] == [0, 1, 2]
    assert b.statements[2].where[0].rhs == ast.BindMarker(2)


def test_unlogged_and_counter_batches():
    assert stmt("BEGIN UNLOGGED BATCH INSERT INTO t (k) VALUES (1) APPLY BATCH").kind == "UNLOGGED"
    b = stmt("begin counter batch update t set c = c + 1 where k = 1; apply batch")
    assert b.kind == "COUNTER" and b.statements[0].assignments == (ast.AddTo("c", C("integer", "1")),)


def test_batch_rejects_select():
    with pytest.raises(SyntaxException, match=r"mismatched input 'SELECT' expecting K_APPLY"):
        parse("BEGIN BATCH SELECT * FROM t APPLY BATCH")


# ---------------------------------------------------------------- parse / parse_many


def test_parse_allows_one_trailing_semicolon_and_text_excludes_it():
    parsed = parse("  SELECT * FROM t ;  ")
    assert parsed.text == "SELECT * FROM t"


def test_parse_rejects_two_statements():
    with pytest.raises(SyntaxException, match=r"line 1:17 mismatched input 'SELECT' expecting EOF"):
        parse("SELECT * FROM t; SELECT * FROM u")


def test_parse_many_parses_a_script_with_comments_and_empty_pieces():
    parsed = parse_many("-- setup\nUSE ks;;\n/* x */ SELECT * FROM t WHERE k = ?;\nSELECT a FROM u WHERE b = ?")
    assert [type(p.statement) for p in parsed] == [ast.UseKeyspace, ast.Select, ast.Select]
    assert parsed[1].text == "SELECT * FROM t WHERE k = ?"
    assert parsed[2].bind_markers == (ast.BindMarker(0),)


def test_parse_many_of_empty_script_is_empty():
    assert parse_many(" -- nothing\n") == []


def test_parse_many_reports_error_position_in_the_whole_script():
    with pytest.raises(SyntaxException, match=r"line 3:9 mismatched input 'FORM' expecting K_FROM"):
        parse_many("USE ks;\nSELECT * FROM t;\nSELECT * FORM t;")


def test_parsed_statements_are_frozen_and_hashable():
    parsed = parse("UPDATE t SET m = m + {'a': [1]} WHERE k IN (1, 2)")
    hash(parsed.statement.table)
    with pytest.raises(AttributeError):
        parsed.statement.table = None  # type: ignore[misc]


# ---------------------------------------------------------------- ScyllaDB's read-side syntax


def test_where_not_in_and_subscripts():
    a, b, c, d = where_of("a NOT IN (1, 2) AND b NOT IN ? AND m[1] = 2 AND l[?] LIKE 'x%'")
    assert a == ast.Relation(ast.ColumnRef("a"), "NOT IN", ast.InValues((C("integer", "1"), C("integer", "2"))))
    assert b == ast.Relation(ast.ColumnRef("b"), "NOT IN", ast.BindMarker(0))
    assert c == ast.Relation(ast.ElementRef("m", C("integer", "1")), "=", C("integer", "2"))
    assert d == ast.Relation(ast.ElementRef("l", ast.BindMarker(1)), "LIKE", C("string", "x%"))


def test_select_without_from_reads_system_one_row():
    s = stmt("SELECT 1 AS one, now() LIMIT 5")
    assert s.no_from and s.table == Q("system", "one_row")
    assert s.selectors[0] == ast.Selector(C("integer", "1"), "one", "1")
    assert s.limit == C("integer", "5")
    assert not stmt("SELECT 1 FROM t").no_from


@pytest.mark.parametrize("text", ["SELECT DISTINCT 1", "SELECT JSON DISTINCT 1", "SELECT 1 t", "SELECT sum(*) FROM t"])
def test_read_side_syntax_errors(text):
    with pytest.raises(SyntaxException):
        parse(text)


def test_a_relation_may_stand_in_parentheses_and_a_column_tuple_still_parses():
    assert where_of("((p = 1)) AND (c) > (2) AND ((c, d) IN ((1, 2)))") == where_of(
        "p = 1 AND (c) > (2) AND (c, d) IN ((1, 2))")
    assert where_of('(("Q" IN (1)))')[0].lhs == ast.ColumnRef("Q")
    with pytest.raises(SyntaxException, match="expecting '\\)'"):
        where_of("(p = 1")


def test_a_where_clause_holds_at_most_100_relations_as_in_scylla():
    assert len(where_of("p = 1" + " AND v = 1" * 99)) == 100
    with pytest.raises(SyntaxException, match=r"^line 1:\d+ too many relations in WHERE clause \(at most 100\)$"):
        where_of("p = 1" + " AND v = 1" * 100)
    with pytest.raises(SyntaxException, match="too many relations"):
        stmt("DELETE FROM t WHERE p = 1" + " AND v = 1" * 100)
